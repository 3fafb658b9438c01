-- eps_join and eps_join_count on small, hand-checked data
CREATE TABLE pts (id int PRIMARY KEY, v float8[]);
INSERT INTO pts VALUES
    (1, '{0,0}'), (2, '{3,4}'), (3, '{0,1}'), (4, '{0,0}'),     -- 4 duplicates 1
    (5, '{10,10}'), (6, NULL), (7, '{NaN,0}'), (8, '{Infinity,0}'),
    (9, '{0.6,0.8}');                                          -- exactly 1 from 1 and 4

-- self-join: each unordered pair of distinct rows once, left_id <= right_id
SELECT * FROM eps_join('pts', 'id', 'v', 1.0) ORDER BY 1, 2;
SELECT eps_join_count('pts', 'id', 'v', 1.0);
-- eps = 0: only identical vectors
SELECT * FROM eps_join('pts', 'id', 'v', 0) ORDER BY 1, 2;
-- boundary included: distance exactly 5
SELECT * FROM eps_join('pts', 'id', 'v', 5) ORDER BY 1, 2;
SELECT * FROM eps_join('pts', 'id', 'v', 4.999999) WHERE left_id IN (1, 4) AND right_id = 2;
-- huge eps: every pair of the 6 finite vectors
SELECT eps_join_count('pts', 'id', 'v', 1e6);
-- distance equals l2_distance exactly
SELECT bool_and(j.distance = l2_distance(a.v, b.v)) AS exact, count(*)
FROM eps_join('pts', 'id', 'v', 100) j
JOIN pts a ON a.id = j.left_id JOIN pts b ON b.id = j.right_id;

-- two-table form; float4 on one side, smallint and bigint keys
CREATE TABLE q4 (k smallint, v real[]);
INSERT INTO q4 VALUES (100, '{0,0.5}'), (101, '{3,3.5}'), (102, '{100,100}'), (103, NULL);
CREATE TABLE p8 (k bigint, v double precision[]);
INSERT INTO p8 SELECT id + 5000000000, v FROM pts;
SELECT * FROM eps_join('q4', 'k', 'v', 'pts', 'id', 'v', 0.6) ORDER BY 1, 2;
SELECT left_id, right_id, round(distance::numeric, 6)
FROM eps_join('pts', 'id', 'v', 'q4', 'k', 'v', 1.0) ORDER BY 1, 2;
SELECT eps_join_count('pts', 'id', 'v', 'q4', 'k', 'v', 1.0);
SELECT * FROM eps_join('p8', 'k', 'v', 'pts', 'id', 'v', 0) ORDER BY 1, 2;
-- the same table on both sides gives both orientations and self-pairs
SELECT count(*) FROM eps_join('pts', 'id', 'v', 'pts', 'id', 'v', 1.0);

-- empty and one-row inputs
CREATE TABLE empty_t (id int, v float8[]);
SELECT count(*) FROM eps_join('empty_t', 'id', 'v', 1);
SELECT eps_join_count('empty_t', 'id', 'v', 'pts', 'id', 'v', 1);
SELECT eps_join_count('pts', 'id', 'v', 'empty_t', 'id', 'v', 1);
CREATE TABLE one_t (id int, v float8[]);
INSERT INTO one_t VALUES (1, '{1,2,3}');
SELECT count(*) FROM eps_join('one_t', 'id', 'v', 10);
-- all rows NULL or non-finite
CREATE TABLE none_t (id int, v float8[]);
INSERT INTO none_t VALUES (1, NULL), (2, '{NaN}'), (3, '{-Infinity}');
SELECT eps_join_count('none_t', 'id', 'v', 1e300);

-- duplicate keys are returned as they are
CREATE TABLE dupkeys (id int, v float8[]);
INSERT INTO dupkeys VALUES (7, '{1}'), (7, '{1.5}'), (3, '{1.2}');
SELECT * FROM eps_join('dupkeys', 'id', 'v', 1) ORDER BY 1, 2, 3;

-- statistics of the last join (device-independent columns)
SELECT eps_join_count('pts', 'id', 'v', 1.0);
SELECT operator, left_rows, right_rows, pairs FROM simjoin_last_stats();

-- a larger random set against independent oracles: cube distances and a
-- plain SQL join, in 3 dimensions
SELECT setseed(0.42);
CREATE TABLE r3 AS
SELECT i AS id, ARRAY[round(random()*20)/2, round(random()*20)/2, round(random()*20)/2]::float8[] AS v
FROM generate_series(1, 1500) i;
CREATE TABLE r3b AS
SELECT i AS id, ARRAY[random()*10, random()*10, random()*10]::float4[] AS v
FROM generate_series(1, 700) i;
-- self-join vs cube (grid-valued points: many pairs at exactly eps)
WITH j AS (SELECT left_id, right_id FROM eps_join('r3', 'id', 'v', 1.0)),
     o AS (SELECT a.id AS left_id, b.id AS right_id FROM r3 a JOIN r3 b
           ON a.id < b.id AND cube_distance(cube(a.v), cube(b.v)) <= 1.0)
SELECT (SELECT count(*) FROM j) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM j EXCEPT SELECT * FROM o) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM o EXCEPT SELECT * FROM j) x) AS missing;
-- two-table, float4 vs float8, vs plain SQL with l2_distance
WITH j AS (SELECT * FROM eps_join('r3b', 'id', 'v', 'r3', 'id', 'v', 0.75)),
     o AS (SELECT a.id AS left_id, b.id AS right_id, l2_distance(a.v::float8[], b.v) AS distance
           FROM r3b a JOIN r3 b ON l2_distance(a.v::float8[], b.v) <= 0.75)
SELECT (SELECT count(*) FROM j) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM j EXCEPT SELECT * FROM o) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM o EXCEPT SELECT * FROM j) x) AS missing;
SELECT eps_join_count('r3b', 'id', 'v', 'r3', 'id', 'v', 0.75)
     = (SELECT count(*) FROM eps_join('r3b', 'id', 'v', 'r3', 'id', 'v', 0.75)) AS count_matches;
-- high dimension (40) with clusters
CREATE TABLE r40 AS
SELECT i AS id, array_agg((i % 25) * 3 + random() * 0.2 ORDER BY d)::float8[] AS v
FROM generate_series(1, 400) i, generate_series(1, 40) d GROUP BY i;
WITH j AS (SELECT left_id, right_id FROM eps_join('r40', 'id', 'v', 0.9)),
     o AS (SELECT a.id, b.id FROM r40 a JOIN r40 b
           ON a.id < b.id AND cube_distance(cube(a.v), cube(b.v)) <= 0.9)
SELECT (SELECT count(*) FROM j) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM j EXCEPT SELECT * FROM o) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM o EXCEPT SELECT * FROM j) x) AS missing;
