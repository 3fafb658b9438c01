-- cosine_distance, <=>, the metric argument of eps_join / eps_join_count and
-- the custom scan of cosine conditions.  Nothing printed depends on the
-- device (the engines agree bit for bit with cosine_distance).
SET jit = off;

-- cosine_distance and <=> on float8[] and float4[]: 1 - cos, in [0, 2]
SELECT cosine_distance('{1,0}'::float8[], '{0,1}'::float8[]) AS orthogonal,
       cosine_distance('{1,0}'::float8[], '{-3,0}'::float8[]) AS opposite,
       cosine_distance('{1,2}'::float8[], '{2,4}'::float8[]) AS parallel,
       '{1,2}'::float4[] <=> '{2,4}'::float4[] AS parallel4;
SELECT round(('{1,1}'::float8[] <=> '{1,0}'::float8[])::numeric, 12) AS quarter,
       round(('{1,2,3}'::float4[] <=> '{-1,0.5,2}'::float4[])::numeric, 12) AS f4;
-- a zero vector has no direction: NaN, with any vector, itself included
SELECT cosine_distance('{0,0}'::float8[], '{1,1}'::float8[]) AS zero,
       '{0,0}'::float4[] <=> '{0,0}'::float4[] AS both_zero,
       '{-0.0,0}'::float8[] <=> '{1,0}'::float8[] AS minus_zero;
SELECT cosine_distance('{NaN,1}'::float8[], '{1,1}'::float8[]) AS nan,
       cosine_distance('{Infinity,1}'::float8[], '{1,1}'::float8[]) AS inf,
       cosine_distance('{1}'::float8[], NULL) AS null_arg;
-- float4 is widened to double first; the result commutes exactly
SELECT cosine_distance('{0.1,0.7}'::float4[], '{0.3,-0.2}'::float4[])
     = cosine_distance('{0.1,0.7}'::float4[]::float8[], '{0.3,-0.2}'::float4[]::float8[]) AS widened;
SELECT cosine_distance('{0.1,0.7,-3.3}'::float8[], '{2.9,1e-3,5}'::float8[])
     = ('{2.9,1e-3,5}'::float8[] <=> '{0.1,0.7,-3.3}'::float8[]) AS symmetric;
-- scale-free: a vector far from the origin and a tiny one
SELECT cosine_distance('{1e150,2e150}'::float8[], '{1e-150,2e-150}'::float8[]) AS scaled;
-- bad vectors, as for l2_distance
SELECT sj_err($$SELECT cosine_distance('{1,2}'::float8[], '{1,2,3}'::float8[])$$);
SELECT sj_err($$SELECT '{1,NULL}'::float4[] <=> '{1,2}'::float4[]$$);
SELECT sj_err($$SELECT cosine_distance('{}'::float8[], '{}'::float8[])$$);

-- eps_join with metric 'cosine' on hand-checked vectors
CREATE TABLE cos_pts (id int, v float8[]);
INSERT INTO cos_pts VALUES
    (1, '{1,0}'), (2, '{0,1}'), (3, '{2,0}'),        -- 3: the direction of 1
    (4, '{-1,0}'), (5, '{1,1}'), (6, '{0,0}'),        -- 6: zero vector
    (7, NULL), (8, '{NaN,1}'), (9, '{Infinity,0}'),
    (10, '{1e200,0}'), (11, '{3,4}');                 -- 10: |x|^2 overflows
SELECT left_id, right_id, distance
FROM eps_join('cos_pts', 'id', 'v', 0, 'cosine') ORDER BY 1, 2;
-- pairs exactly at eps = 1 (orthogonal) are in
SELECT left_id, right_id, round(distance::numeric, 12) AS distance
FROM eps_join('cos_pts', 'id', 'v', 1, 'cosine') ORDER BY 1, 2;
-- eps >= 2: every pair but those with the zero, NULL, NaN or infinite vectors
SELECT eps_join_count('cos_pts', 'id', 'v', 2, 'cosine') AS all_pairs,
       eps_join_count('cos_pts', 'id', 'v', 1e6, 'cosine') AS huge_eps;
-- the distance column is cosine_distance, bit for bit
SELECT count(*), bool_and(j.distance = cosine_distance(a.v, b.v)) AS exact
FROM eps_join('cos_pts', 'id', 'v', 2, 'cosine') j
JOIN cos_pts a ON a.id = j.left_id JOIN cos_pts b ON b.id = j.right_id;
-- the default and 'l2' are the Euclidean join
SELECT eps_join_count('cos_pts', 'id', 'v', 1.5) AS dflt,
       eps_join_count('cos_pts', 'id', 'v', 1.5, 'l2') AS l2,
       eps_join_count('cos_pts', 'id', 'v', 1.5, metric => 'cosine') AS cosine;

-- two-table form, float4 on one side
CREATE TABLE cos_q (k bigint, v real[]);
INSERT INTO cos_q VALUES (100, '{0.5,0}'), (101, '{0,0}'), (102, '{-2,-2}'),
    (103, '{3,4.0001}'), (104, NULL);
SELECT left_id, right_id, round(distance::numeric, 12) AS distance
FROM eps_join('cos_q', 'k', 'v', 'cos_pts', 'id', 'v', 0.5, 'cosine') ORDER BY 1, 2;
SELECT eps_join_count('cos_q', 'k', 'v', 'cos_pts', 'id', 'v', 0.5, 'cosine') AS cnt,
       eps_join_count('cos_pts', 'id', 'v', 'cos_q', 'k', 'v', 0.5, 'cosine') AS swapped;

-- the metric argument: 'l2' or 'cosine', anything else is refused (22023)
SELECT sj_err($$SELECT * FROM eps_join('cos_pts', 'id', 'v', 1, 'dot')$$);
SELECT sj_err($$SELECT * FROM eps_join('cos_q', 'k', 'v', 'cos_pts', 'id', 'v', 1, 'L2')$$);
SELECT sj_err($$SELECT eps_join_count('cos_pts', 'id', 'v', 1, '')$$);
SELECT sj_err($$SELECT eps_join_count('cos_q', 'k', 'v', 'cos_pts', 'id', 'v', 1, 'cos')$$);
SELECT sj_err($$SELECT eps_join_count('cos_pts', 'id', 'v', -1, 'cosine')$$);
SELECT sj_err($$SELECT eps_join_count('cos_pts', 'id', 'v', 'NaN', 'cosine')$$);
SELECT eps_join_count('cos_pts', 'id', 'v', 1, NULL) AS null_metric;

-- against a plain SQL nested loop: random directions in 3 and 40
-- dimensions, clustered so that many pairs lie near eps, with zero vectors,
-- duplicates, scaled copies and mixed magnitudes
SELECT setseed(0.15);
CREATE TABLE cos_r (id int, v3 float8[], v40 real[]);
INSERT INTO cos_r
SELECT i,
       ARRAY(SELECT (c % 5 - 2) + 0.3 * (random() - 0.5) FROM generate_series(1, 3)),
       ARRAY(SELECT ((c % 3) - 1) * 0.5 + random() - 0.5 FROM generate_series(1, 40))::real[]
FROM (SELECT i, (random() * 7)::int AS c FROM generate_series(1, 400) i) s;
UPDATE cos_r SET v3 = '{0,0,0}', v40 = array_fill(0::real, ARRAY[40]) WHERE id % 97 = 0;
INSERT INTO cos_r SELECT id + 1000, ARRAY(SELECT x * 1e6 FROM unnest(v3) x),
                         ARRAY(SELECT x * 1e-3 FROM unnest(v40) x)::real[]
FROM cos_r WHERE id % 10 = 0;
INSERT INTO cos_r SELECT id + 2000, v3, v40 FROM cos_r WHERE id % 50 = 1;
CREATE FUNCTION cos_diff(col text, eps float8) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; bad bigint; cnt bigint;
BEGIN
    EXECUTE format($q$
        WITH o AS (SELECT a.id AS l, b.id AS r, cosine_distance(a.%1$I, b.%1$I) AS d
                   FROM cos_r a, cos_r b
                   WHERE a.id < b.id AND cosine_distance(a.%1$I, b.%1$I) <= %2$s),
             j AS (SELECT left_id AS l, right_id AS r, distance AS d
                   FROM eps_join('cos_r', 'id', %1$L, %2$s, 'cosine'))
        SELECT (SELECT count(*) FROM o),
               (SELECT count(*) FROM ((TABLE o EXCEPT ALL TABLE j)
                                      UNION ALL (TABLE j EXCEPT ALL TABLE o)) x),
               eps_join_count('cos_r', 'id', %1$L, %2$s, 'cosine')$q$, col, eps)
        INTO n, bad, cnt;
    RETURN format('pairs=%s differing=%s count_ok=%s', n, bad, cnt = n);
END $$;
SELECT col, eps, cos_diff(col, eps)
FROM unnest(ARRAY['v3', 'v40']) col, unnest(ARRAY[0, 1e-3, 0.05, 0.4, 1, 2]::float8[]) eps
ORDER BY 1, 2;

-- the custom scan: cosine_distance(a, b) <= c and a <=> b <= c (also <,
-- either order); EXPLAIN names the metric; results equal PostgreSQL's plan
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM cos_r a JOIN cos_r b ON a.v3 <=> b.v3 <= 0.01;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM cos_r a JOIN cos_pts b ON 0.2 > cosine_distance(b.v, a.v3);
CREATE FUNCTION cos_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE used bool := false; ln text; extra bigint; missing bigint; n bigint;
BEGIN
    FOR ln IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF ln LIKE '%Custom Scan (SimJoin)%' THEN used := true; END IF;
    END LOOP;
    EXECUTE 'CREATE TEMP TABLE cos_on AS SELECT x::text AS r FROM (' || q || ') x';
    SET LOCAL simjoin.enable_customscan = off;
    EXECUTE 'CREATE TEMP TABLE cos_off AS SELECT x::text AS r FROM (' || q || ') x';
    SET LOCAL simjoin.enable_customscan = on;
    SELECT count(*) INTO n FROM cos_off;
    SELECT count(*) INTO extra FROM (TABLE cos_on EXCEPT ALL TABLE cos_off) d;
    SELECT count(*) INTO missing FROM (TABLE cos_off EXCEPT ALL TABLE cos_on) d;
    DROP TABLE cos_on, cos_off;
    RETURN format('rows=%s simjoin=%s same=%s', n, used, extra = 0 AND missing = 0);
END $$;
SELECT cos_check($$SELECT a.id, b.id, a.v3 <=> b.v3 FROM cos_r a JOIN cos_r b ON a.v3 <=> b.v3 <= 0.01$$);
SELECT cos_check($$SELECT a.id, b.id FROM cos_r a JOIN cos_r b ON cosine_distance(b.v40, a.v40) < 0.3$$);
SELECT cos_check($$SELECT a.id, b.id FROM cos_r a JOIN cos_r b ON 0.05 >= a.v3 <=> b.v3 AND a.id < b.id$$);
CREATE TABLE cos_p4 AS SELECT id, v::real[] AS v FROM cos_pts WHERE id <> 10;
SELECT cos_check($$SELECT a.id, b.k FROM cos_p4 a JOIN cos_q b ON b.v <=> a.v <= 0.5$$);
SELECT cos_check($$SELECT count(*) FROM cos_pts a JOIN cos_pts b ON cosine_distance(a.v, b.v) <= 1$$);
SELECT cos_check($$SELECT a.id, b.id FROM cos_pts a LEFT JOIN cos_pts b ON a.v <=> b.v <= 0.001$$);
SELECT cos_check($$SELECT a.id FROM cos_r a WHERE NOT EXISTS (SELECT FROM cos_r b WHERE a.v40 <=> b.v40 < 0.2 AND a.id <> b.id)$$);
SELECT cos_check($$SELECT a.id FROM cos_pts a WHERE EXISTS (SELECT FROM cos_pts b WHERE a.v <=> b.v <= 0 AND a.id <> b.id)$$);
-- thresholds outside the engine's domain: NaN (NaN <= NaN holds), +inf, < 0
SELECT cos_check($$SELECT a.id, b.id FROM cos_pts a JOIN cos_pts b ON a.v <=> b.v <= 'NaN'$$);
SELECT cos_check($$SELECT a.id, b.id FROM cos_pts a JOIN cos_pts b ON a.v <=> b.v < 'Infinity'$$);
SELECT cos_check($$SELECT a.id, b.id FROM cos_pts a JOIN cos_pts b ON a.v <=> b.v <= -1$$);
-- l2 and cosine conditions together: one is the engine's, the other a filter
SELECT cos_check($$SELECT a.id, b.id FROM cos_r a JOIN cos_r b ON a.v3 <=> b.v3 <= 0.01 AND a.v3 <-> b.v3 <= 1e5$$);

-- a parallel plan: the outer split across workers, the inner read together
-- (no shared index under cosine: each participant grids the inner itself)
CREATE TABLE cos_pa AS SELECT i AS id,
       ARRAY[(i % 97)::float8 - 40, (i % 89)::float8 - 40, (i % 7)::float8] AS v
FROM generate_series(1, 6000) i;
CREATE TABLE cos_pb AS SELECT i AS id,
       ARRAY[(i % 83)::float8 - 40, (i % 79)::float8 - 40, (i % 5)::float8] AS v
FROM generate_series(1, 600) i;
UPDATE cos_pb SET v = '{0,0,0}' WHERE id % 101 = 0;
VACUUM ANALYZE cos_pa, cos_pb;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET simjoin.device = cpu;
SELECT cos_check($$SELECT a.id, b.id FROM cos_pa a JOIN cos_pb b ON a.v <=> b.v <= 0.001$$);
SELECT cos_check($$SELECT count(*) FROM cos_pa a JOIN cos_pb b ON cosine_distance(b.v, a.v) < 0.01$$);
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET simjoin.device;
DROP TABLE cos_pa, cos_pb;

DROP FUNCTION cos_check(text);
DROP FUNCTION cos_diff(text, float8);
DROP TABLE cos_pts, cos_p4, cos_q, cos_r;
