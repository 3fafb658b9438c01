-- jaccard_join and jaccard_join_count
CREATE TABLE docs (id int, toks int4[]);
INSERT INTO docs VALUES
    (1, '{1,2,3,4}'), (2, '{1,2,3,5}'), (3, '{1,2,3,4}'), (4, '{9}'),
    (5, '{}'), (6, NULL), (7, '{1,1,2,2,3,3,4,4}'), (8, '{10,11}'), (9, '{}');

SELECT * FROM jaccard_join('docs', 'id', 'toks', 0.6) ORDER BY 1, 2;
SELECT jaccard_join_count('docs', 'id', 'toks', 0.6);
-- the boundary is included (3/5 = 0.6 joins); a hair above it excludes those pairs
SELECT * FROM jaccard_join('docs', 'id', 'toks', 1) ORDER BY 1, 2;
SELECT count(*) FROM jaccard_join('docs', 'id', 'toks', 0.6000000001);
-- empty sets are similar to nothing, even each other
SELECT count(*) FROM jaccard_join('docs', 'id', 'toks', 0.01) WHERE left_id IN (5, 9) OR right_id IN (5, 9);
-- similarity equals jaccard() exactly
SELECT bool_and(j.similarity = jaccard(a.toks, b.toks)) AS exact, count(*)
FROM jaccard_join('docs', 'id', 'toks', 0.01) j
JOIN docs a ON a.id = j.left_id JOIN docs b ON b.id = j.right_id;

-- two-table, int8 with int4, and text sets
CREATE TABLE q8 (k bigint, toks int8[]);
INSERT INTO q8 VALUES (100, '{1,2,3}'), (101, '{10,11,12}'), (102, '{}');
SELECT * FROM jaccard_join('q8', 'k', 'toks', 'docs', 'id', 'toks', 0.5) ORDER BY 1, 2;
SELECT jaccard_join_count('docs', 'id', 'toks', 'q8', 'k', 'toks', 0.5);
CREATE TABLE titles (id int, title text);
INSERT INTO titles VALUES
    (1, 'The Art of Computer Programming'), (2, 'the art of computer programming, vol. 2'),
    (3, 'Art of Computer Programming'), (4, 'Database System Concepts'),
    (5, 'Database Systems: Concepts'), (6, '');
CREATE TABLE title_words AS SELECT id, simjoin_words(title) AS w FROM titles;
SELECT left_id, right_id, round(similarity::numeric, 4)
FROM jaccard_join('title_words', 'id', 'w', 0.5) ORDER BY 1, 2;
CREATE TABLE title_grams AS SELECT id, simjoin_qgrams(title) AS g FROM titles;
SELECT left_id, right_id, round(similarity::numeric, 4)
FROM jaccard_join('title_grams', 'id', 'g', 0.5) ORDER BY 1, 2;
-- the same as pg_trgm's similarity over the same strings
SELECT count(*) AS differ FROM (
    SELECT j.left_id, j.right_id FROM jaccard_join('title_grams', 'id', 'g', 0.3) j
    EXCEPT
    SELECT a.id, b.id FROM titles a JOIN titles b ON a.id < b.id AND similarity(a.title, b.title) >= 0.3) x;

-- a random collection against a plain SQL oracle (unnest, overlap counts)
SELECT setseed(0.11);
CREATE TABLE rs AS
SELECT i AS id, array(SELECT DISTINCT (random() * 30)::int FROM generate_series(1, 2 + i % 9)) AS s
FROM generate_series(1, 600) i;
CREATE TABLE rs_elems AS SELECT id, unnest(s) AS e FROM rs;
CREATE TABLE rs_sizes AS SELECT id, cardinality(s) AS n FROM rs;
WITH overlap AS (
    SELECT a.id AS l, b.id AS r, count(*) AS inter
    FROM rs_elems a JOIN rs_elems b ON a.e = b.e AND a.id < b.id GROUP BY 1, 2),
o AS (
    SELECT l, r, inter::float8 / (sa.n + sb.n - inter)::float8 AS sim
    FROM overlap JOIN rs_sizes sa ON sa.id = l JOIN rs_sizes sb ON sb.id = r),
j AS (SELECT * FROM jaccard_join('rs', 'id', 's', 0.4))
SELECT (SELECT count(*) FROM j) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM j EXCEPT SELECT * FROM o WHERE sim >= 0.4) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM o WHERE sim >= 0.4 EXCEPT SELECT * FROM j) x) AS missing;
SELECT jaccard_join_count('rs', 'id', 's', 'rs', 'id', 's', 0.7)
     = (SELECT count(*) FROM rs a JOIN rs b ON jaccard(a.s, b.s) >= 0.7) AS two_table_count;

-- bad input
CREATE TABLE badsets (id int, s int4[], t text[], f float8[], k text);
INSERT INTO badsets VALUES (1, '{1,NULL}', '{a}', '{1}', 'x');
SELECT sj_err($$SELECT * FROM jaccard_join('badsets', 'id', 's', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('badsets', 'id', 'f', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('badsets', 'k', 't', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('badsets', 'id', 'nope', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('docs', 'id', 'toks', 'badsets', 'id', 't', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('docs', 'id', 'toks', 0)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('docs', 'id', 'toks', 1.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('docs', 'id', 'toks', -0.1)$$);
SELECT sj_err($$SELECT jaccard_join_count('docs', 'id', 'toks', 'NaN')$$);
SELECT count(*) FROM jaccard_join('docs', 'id', 'toks', NULL);

-- NULL elements in int8 and text sets, and a NaN threshold, in both forms
CREATE TABLE badsets2 (id int, b int8[], t text[]);
INSERT INTO badsets2 VALUES (1, '{1,2}', '{a,b}'), (2, '{1,NULL}', '{a,NULL}');
SELECT sj_err($$SELECT * FROM jaccard_join('badsets2', 'id', 'b', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('badsets2', 'id', 't', 0.5)$$);
SELECT sj_err($$SELECT jaccard_join_count('badsets2', 'id', 't', 'badsets2', 'id', 't', 0.5)$$);
SELECT sj_err($$SELECT * FROM jaccard_join('docs', 'id', 'toks', 'NaN')$$);
SELECT sj_err($$SELECT * FROM jaccard_join('docs', 'id', 'toks', 'q8', 'k', 'toks', 'NaN')$$);
-- thresholds met exactly: 1/2 and 9/10 join, a hair above does not
CREATE TABLE exact_sets (id int, s int4[]);
INSERT INTO exact_sets VALUES
    (1, '{1,2,3}'), (2, '{2,3,4,5}'),                                  -- 2/5: below both
    (3, '{10,11}'), (4, '{10,11,12,13}'),                              -- 2/4 = 1/2
    (5, '{20,21,22,23,24,25,26,27,28,29}'), (6, '{20,21,22,23,24,25,26,27,28}');  -- 9/10
SELECT left_id, right_id, similarity FROM jaccard_join('exact_sets', 'id', 's', 0.5) ORDER BY 1, 2;
SELECT left_id, right_id, similarity FROM jaccard_join('exact_sets', 'id', 's', 0.9) ORDER BY 1, 2;
SELECT count(*) FROM jaccard_join('exact_sets', 'id', 's', 0.5000000001);
SELECT count(*) FROM jaccard_join('exact_sets', 'id', 's', 0.9000000001);
DROP TABLE badsets2, exact_sets;
