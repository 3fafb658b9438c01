-- planner integration: a join planned as Custom Scan (SimJoin) returns exactly
-- what PostgreSQL's own plan returns (simjoin.enable_customscan = off), as a
-- multiset, for inner, left, semi and anti joins, aggregates, parameters,
-- rescans, cursors, errors, privileges and row-level security.  Nothing printed
-- here depends on the device, the engine's strategy or timings.
LOAD 'simjoin';
SET jit = off;

-- cs_uses(q): whether the plan of q contains the node (or a line LIKE pattern)
CREATE FUNCTION cs_uses(q text, pattern text DEFAULT '%Custom Scan (SimJoin)%')
RETURNS bool LANGUAGE plpgsql AS $$
DECLARE ln text;
BEGIN
    FOR ln IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF ln LIKE pattern THEN RETURN true; END IF;
    END LOOP;
    RETURN false;
END $$;
-- cs_check(q): runs q with the node allowed and with it disabled and compares
-- the two results as multisets of row texts (never depending on row order)
CREATE FUNCTION cs_check(q text, show_plan bool DEFAULT true) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    saved text := current_setting('simjoin.enable_customscan');
    used bool; n_on bigint; n_off bigint; extra bigint; missing bigint;
BEGIN
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    used := cs_uses(q);
    EXECUTE 'CREATE TEMP TABLE cs_res_on AS SELECT cs_row__::text AS r FROM (' || q || ') cs_row__';
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    EXECUTE 'CREATE TEMP TABLE cs_res_off AS SELECT cs_row__::text AS r FROM (' || q || ') cs_row__';
    PERFORM set_config('simjoin.enable_customscan', saved, true);
    EXECUTE 'SELECT count(*) FROM cs_res_on' INTO n_on;
    EXECUTE 'SELECT count(*) FROM cs_res_off' INTO n_off;
    EXECUTE 'SELECT count(*) FROM (TABLE cs_res_on EXCEPT ALL TABLE cs_res_off) d' INTO extra;
    EXECUTE 'SELECT count(*) FROM (TABLE cs_res_off EXCEPT ALL TABLE cs_res_on) d' INTO missing;
    DROP TABLE cs_res_on, cs_res_off;
    RETURN 'rows=' || n_off
        || CASE WHEN NOT show_plan THEN '' WHEN used THEN ' simjoin=t' ELSE ' simjoin=f' END
        || CASE WHEN extra = 0 AND missing = 0 THEN ' same=t'
                ELSE format(' same=f (node: %s rows, %s extra, %s missing)', n_on, extra, missing) END;
END $$;
-- cs_exec(stmt, setting): the one row an EXECUTE of a prepared statement
-- returns, as text, run with simjoin.enable_customscan = setting
CREATE FUNCTION cs_exec(stmt text, setting text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    saved text := current_setting('simjoin.enable_customscan');
    rec record;
BEGIN
    PERFORM set_config('simjoin.enable_customscan', setting, true);
    EXECUTE stmt INTO rec;
    PERFORM set_config('simjoin.enable_customscan', saved, true);
    RETURN rec::text;
END $$;

-- two ~1000-row sides: 2-D integer vectors (many pairs at exactly distance 5),
-- NULL, NaN and infinite vectors; int4 and text sets (pairs at exactly 1/2),
-- NULL and empty sets, duplicate elements; theta columns of every type with
-- NULLs and NaN; a few duplicated rows
CREATE TABLE cs_a (id int, grp int, v float8[], r real[], s int4[], t text[], k int,
                   k8 bigint, f float8, n numeric, c text, d date, ts timestamp, b bool);
CREATE TABLE cs_b (LIKE cs_a);
INSERT INTO cs_a
SELECT id, grp, v, v::real[], s, CASE WHEN s IS NOT NULL THEN ARRAY(SELECT 'w' || e FROM unnest(s) e) END,
       k, k8, f, n, c, d, ts, b
FROM (SELECT i AS id, i % 5 AS grp,
        CASE WHEN i % 97 = 0 THEN NULL WHEN i = 7 THEN '{NaN,3}' WHEN i = 11 THEN '{Infinity,5}'
             ELSE ARRAY[(i * 7919) % 100, (i * 6007) % 97]::float8[] END AS v,
        CASE WHEN i % 89 = 0 THEN NULL WHEN i % 83 = 0 THEN '{}'
             ELSE ARRAY[i % 20, 100 + (i / 20) % 20, 200 + (i * 7) % 11]
                  || CASE WHEN i % 3 = 0 THEN ARRAY[300 + i % 4] ELSE '{}' END
                  || CASE WHEN i % 7 = 0 THEN ARRAY[i % 20] ELSE '{}' END END AS s,
        CASE WHEN i % 53 = 0 THEN NULL ELSE (i * 7919) % 300 END AS k,
        (i * 31) % 1000 + 5000000000 AS k8,
        CASE WHEN i % 61 = 0 THEN 'NaN' WHEN i % 67 = 0 THEN NULL ELSE ((i * 37) % 1000) / 10.0 END::float8 AS f,
        ((i * 13) % 500) / 4.0 AS n, chr(97 + i % 26) || i % 7 AS c,
        date '2024-01-01' + (i * 11) % 60 AS d,
        timestamp '2024-01-01' + ((i * 17) % 2000) * interval '1 minute' AS ts,
        CASE WHEN i % 10 = 0 THEN NULL ELSE i % 3 = 0 END AS b
      FROM generate_series(1, 1000) i) g;
INSERT INTO cs_b
SELECT id, grp, v, v::real[], s, CASE WHEN s IS NOT NULL THEN ARRAY(SELECT 'w' || e FROM unnest(s) e) END,
       k, k8, f, n, c, d, ts, b
FROM (SELECT i AS id, i % 4 AS grp,
        CASE WHEN i % 101 = 0 THEN NULL WHEN i = 13 THEN '{NaN,NaN}' WHEN i = 17 THEN '{-Infinity,2}'
             WHEN i = 19 THEN '{Infinity,5}' ELSE ARRAY[(i * 4973) % 100, (i * 3001) % 97]::float8[] END AS v,
        CASE WHEN i % 79 = 0 THEN NULL WHEN i % 73 = 0 THEN '{}'
             ELSE ARRAY[(i * 3) % 20, 100 + (i / 7) % 20, 200 + i % 11]
                  || CASE WHEN i % 4 = 0 THEN ARRAY[300 + i % 3] ELSE '{}' END END AS s,
        CASE WHEN i % 59 = 0 THEN NULL ELSE (i * 4973) % 300 END AS k,
        (i * 17) % 1000 + 5000000000 AS k8,
        CASE WHEN i % 71 = 0 THEN 'NaN' WHEN i % 43 = 0 THEN NULL ELSE ((i * 53) % 1000) / 10.0 END::float8 AS f,
        ((i * 7) % 400) / 3.0 AS n, chr(97 + (i * 3) % 26) || i % 5 AS c,
        date '2024-01-01' + (i * 7) % 60 AS d,
        timestamp '2024-01-01' + ((i * 13) % 2000) * interval '1 minute' AS ts,
        CASE WHEN i % 9 = 0 THEN NULL ELSE i % 2 = 0 END AS b
      FROM generate_series(1, 1100) i) g;
INSERT INTO cs_a SELECT * FROM cs_a WHERE id % 400 = 0;     -- duplicate rows
INSERT INTO cs_b SELECT * FROM cs_b WHERE id % 550 = 0;
-- five rows a side, every edge case by hand
CREATE TABLE cs_ta (id int, v float8[], s int4[], k int);
INSERT INTO cs_ta VALUES (1, '{0,0}', '{1,2,3}', 1), (2, '{3,4}', '{1,2}', 2), (3, NULL, NULL, NULL),
    (4, '{NaN,0}', '{}', 4), (5, '{0,0}', '{3,2,1,1}', 1);
CREATE TABLE cs_tb (LIKE cs_ta);
INSERT INTO cs_tb VALUES (1, '{0,0}', '{2,3,4}', 1), (2, '{6,8}', '{1,2,3}', 3), (3, '{Infinity,0}', '{}', NULL),
    (4, NULL, NULL, 5), (5, '{3,0}', '{1,2,3,4}', 2);
CREATE TABLE cs_cfg (eps float8, sim float8, band int);
INSERT INTO cs_cfg VALUES (1, 0.5, 1), (2, 0.75, 2);
ANALYZE cs_a, cs_b, cs_ta, cs_tb, cs_cfg;
SELECT count(*), count(v), count(s), count(k) FROM cs_a;
SELECT count(*), count(v), count(s), count(k) FROM cs_b;

-- default costs: the node wins a large similarity join, not a 5 x 5 one,
-- and never when disabled
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM cs_ta a JOIN cs_tb b ON a.v <-> b.v <= 5;
SET simjoin.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5;
RESET simjoin.enable_customscan;
-- EXPLAIN ANALYZE adds the pairs the engine produced (phases with TIMING)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5 AND a.id < b.id;
SELECT cs_uses('SELECT count(*) FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5') AS jaccard_count_uses;
-- whatever plan the costs choose, the results are the same
SELECT cs_check('SELECT a.id, b.id, a.v <-> b.v FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5', false);
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5', false);
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.k = b.k AND a.grp < b.grp', false);
SELECT cs_check('SELECT a.id, b.id FROM cs_ta a JOIN cs_tb b ON a.v <-> b.v <= 5', false);

-- from here on, native join methods are discouraged: the node is used
-- wherever it is offered
SET enable_nestloop = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;

-- eps: inner joins with residual conditions, the distance projected
SELECT cs_check('SELECT a.id, b.id, a.v <-> b.v AS dist FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5 AND a.grp <> b.grp');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON l2_distance(a.v, b.v) <= 5');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON l2_distance(a.v, b.v) < 5');
-- the pairs at exactly 5
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5 AND NOT a.v <-> b.v < 5');
-- either operand order, the constant on the left, real[] vectors
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON 5 >= b.v <-> a.v');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON 3 > l2_distance(b.v, a.v)');
SELECT cs_check('SELECT a.id, b.id, a.r <-> b.r FROM cs_a a JOIN cs_b b ON a.r <-> b.r <= 3');
-- left and right joins (unmatched rows null-extended), a filter above the join
SELECT cs_check('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_b b ON a.v <-> b.v <= 1.5');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_b b ON a.v <-> b.v <= 3 AND a.id < b.id WHERE b.id IS NULL OR a.grp = b.grp');
SELECT cs_check('SELECT a.id FROM cs_a a LEFT JOIN cs_b b ON a.v <-> b.v <= 2 WHERE b.v IS NULL');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a RIGHT JOIN cs_b b ON a.v <-> b.v <= 1 AND b.grp = 1');
-- semi and anti joins
SELECT cs_check('SELECT a.id FROM cs_a a WHERE EXISTS (SELECT FROM cs_b b WHERE a.v <-> b.v <= 1 AND b.grp <> a.grp)');
SELECT cs_check('SELECT a.id, a.v FROM cs_a a WHERE NOT EXISTS (SELECT FROM cs_b b WHERE b.v <-> a.v < 2)');
-- aggregates and GROUP BY on top; a CTE; a filtered subquery as an input
SELECT cs_check('SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5');
SELECT cs_check('SELECT count(*), sum(a.id * 10000 + b.id), max(a.v <-> b.v) FROM cs_a a JOIN cs_b b ON a.v <-> b.v < 4');
SELECT cs_check('SELECT a.grp, b.grp, count(*), min(a.v <-> b.v), max(b.id) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 3 GROUP BY 1, 2');
SELECT cs_check('WITH near AS MATERIALIZED (SELECT a.id AS aid, b.id AS bid FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 2)
                 SELECT aid, count(*) FROM near GROUP BY aid HAVING count(*) > 1');
SELECT cs_check('SELECT a.id, b.v FROM (SELECT id, v FROM cs_a WHERE grp IN (1, 3)) a JOIN (SELECT DISTINCT v FROM cs_b) b ON a.v <-> b.v <= 2');
-- thresholds from an initplan (one of them NULL), a NULL constant
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= (SELECT max(eps) FROM cs_cfg)');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_b b ON a.v <-> b.v <= (SELECT max(eps) FROM cs_cfg WHERE eps > 100)');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= NULL');
-- a self-join, three tables, the hand-made edge cases
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 2 AND a.id < b.id');
SELECT cs_check('SELECT count(*), sum(a.id + b.id + c.id) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 2 JOIN cs_a c ON jaccard(c.s, b.s) >= 0.75 AND c.k <> a.k');
SELECT cs_check('SELECT a.id, b.id, a.v <-> b.v FROM cs_ta a LEFT JOIN cs_tb b ON a.v <-> b.v <= 5');

-- jaccard
SELECT cs_check('SELECT a.id, b.id, jaccard(a.s, b.s) FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5 AND a.grp <> b.grp');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) > 0.5');
-- the pairs at exactly 1/2; either operand order; text sets
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5 AND NOT jaccard(a.s, b.s) > 0.5');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON 0.5 <= jaccard(b.s, a.s)');
SELECT cs_check('SELECT a.id, b.id, jaccard(a.t, b.t) FROM cs_a a JOIN cs_b b ON jaccard(a.t, b.t) >= 0.6');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_b b ON jaccard(a.s, b.s) >= 0.75 WHERE b.id IS NULL OR b.grp = 0');
SELECT cs_check('SELECT a.id FROM cs_a a WHERE EXISTS (SELECT FROM cs_b b WHERE jaccard(a.t, b.t) > 0.7)');
SELECT cs_check('SELECT a.id FROM cs_a a WHERE NOT EXISTS (SELECT FROM cs_b b WHERE jaccard(b.s, a.s) >= 0.5)');
SELECT cs_check('SELECT count(*) FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5');
SELECT cs_check('SELECT a.grp, count(*), sum(b.id), min(jaccard(a.s, b.s)) FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5 GROUP BY a.grp');
SELECT cs_check('WITH sim AS (SELECT a.id AS aid, b.id AS bid FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.75) SELECT bid, count(*) FROM sim GROUP BY bid');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= (SELECT max(sim) FROM cs_cfg)');
SELECT cs_check('SELECT a.id, b.id FROM cs_b a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.75 AND a.id <> b.id');
-- threshold 0: every non-NULL pair, empty sets included (jaccard is 0 there)
SELECT cs_check('SELECT a.id, b.id, jaccard(a.s, b.s) FROM cs_ta a JOIN cs_tb b ON jaccard(a.s, b.s) >= 0');

-- theta: equi, band, inequality, OR; residuals the engine cannot evaluate
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.k = b.k AND substr(a.c, 1, 1) <= substr(b.c, 1, 1)');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON b.k BETWEEN a.k - 1 AND a.k + 1');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.k BETWEEN b.k - 5 AND b.k + 5 AND a.id < b.id');
SELECT cs_check('SELECT count(*), sum(a.id - b.id) FROM cs_a a JOIN cs_b b ON a.f > b.f');
SELECT cs_check('SELECT count(*) FROM cs_a a JOIN cs_b b ON a.f >= b.f');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.k = b.k OR a.f < b.f - 99');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.ts BETWEEN b.ts - interval ''3 minutes'' AND b.ts + interval ''3 minutes''');
-- calendar months: the bounds are derived columns computed by PostgreSQL
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.ts BETWEEN b.ts - interval ''1 mon'' + interval ''31 days'' - interval ''3 minutes'' AND b.ts + interval ''1 month'' - interval ''31 days 3 minutes''');
SELECT cs_check('SELECT count(*), sum(a.id - b.id) FROM cs_a a JOIN cs_b b ON a.ts > b.ts + interval ''1 mon'' - interval ''31 days 5 hours''');
SELECT cs_check('SELECT count(*), sum(a.id + b.id) FROM cs_a a JOIN cs_b b ON a.d = b.d AND a.b = b.b');
SELECT cs_check('SELECT count(*), sum(a.id + b.id) FROM cs_a a JOIN cs_b b ON a.n >= b.n AND a.grp = b.grp');
SELECT cs_check('SELECT count(*), sum(a.id + b.id) FROM cs_a a JOIN cs_b b ON a.c < b.c COLLATE "C" AND a.k8 < b.k8');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.k8 - 5000000000 = b.k');
-- left join with a filter above, semi (EXISTS, IN) and anti joins
SELECT cs_check('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_b b ON a.k = b.k AND a.grp < b.grp WHERE b.id IS NULL OR b.b');
SELECT cs_check('SELECT a.id FROM cs_a a WHERE EXISTS (SELECT FROM cs_b b WHERE b.ts BETWEEN a.ts AND a.ts + interval ''1 minute'')');
SELECT cs_check('SELECT a.id FROM cs_a a WHERE a.k IN (SELECT b.k FROM cs_b b WHERE b.grp = 2)');
SELECT cs_check('SELECT a.id, a.k FROM cs_a a WHERE NOT EXISTS (SELECT FROM cs_b b WHERE b.k = a.k)');
SELECT cs_check('SELECT a.id FROM cs_a a WHERE a.k NOT IN (SELECT b.k FROM cs_b b WHERE b.k IS NOT NULL)');
-- aggregates, GROUP BY, a CTE, an initplan, a self-join, three tables
SELECT cs_check('SELECT count(*) FROM cs_a a JOIN cs_b b ON a.k = b.k');
SELECT cs_check('SELECT a.grp, count(*), sum(b.id) FROM cs_a a JOIN cs_b b ON a.k = b.k GROUP BY a.grp');
SELECT cs_check('WITH m AS (SELECT a.k, b.id FROM cs_a a JOIN cs_b b ON a.k = b.k) SELECT k, count(*) FROM m GROUP BY k HAVING count(*) > 60');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.k BETWEEN b.k - (SELECT max(band) FROM cs_cfg) AND b.k + (SELECT max(band) FROM cs_cfg)');
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.k = b.k AND a.id < b.id');
SELECT cs_check('SELECT count(*), sum(a.id + b.id + c.id) FROM cs_a a JOIN cs_b b ON a.k = b.k JOIN cs_a c ON c.ts BETWEEN b.ts - interval ''1 minute'' AND b.ts + interval ''1 minute''');

-- prepared statements: the threshold is a parameter of a generic plan; each
-- EXECUTE with the node equals the same statement without it (SQL semantics:
-- NaN is greater than everything, so d <= 'NaN' holds for every distance)
SET plan_cache_mode = force_generic_plan;
PREPARE cs_eps_on(float8) AS SELECT $1 AS eps, count(*), sum(a.id * 10000 + b.id)
    FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= $1 WHERE a.id <= 300;
PREPARE cs_eps_off(float8) AS SELECT $1 AS eps, count(*), sum(a.id * 10000 + b.id)
    FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= $1 WHERE a.id <= 300;
SELECT cs_uses('EXECUTE cs_eps_on(1)') AS generic_plan_uses;
SELECT e, cs_exec(format('EXECUTE cs_eps_on(%L)', e), 'on') AS node,
       cs_exec(format('EXECUTE cs_eps_off(%L)', e), 'off') AS native
FROM unnest('{5,4.999,0,-1,NaN,Infinity,-Infinity,NULL}'::float8[]) e;
PREPARE cs_epsn_on(float8) AS SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v < $1;
PREPARE cs_epsn_off(float8) AS SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v < $1;
SELECT e, cs_exec(format('EXECUTE cs_epsn_on(%L)', e), 'on') AS node,
       cs_exec(format('EXECUTE cs_epsn_off(%L)', e), 'off') AS native
FROM unnest('{2,NaN,Infinity,-1}'::float8[]) e;
PREPARE cs_jac_on(float8) AS SELECT $1 AS t, count(*), sum(a.id * 10000 + b.id)
    FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= $1 WHERE a.id <= 300;
PREPARE cs_jac_off(float8) AS SELECT $1 AS t, count(*), sum(a.id * 10000 + b.id)
    FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= $1 WHERE a.id <= 300;
SELECT e, cs_exec(format('EXECUTE cs_jac_on(%L)', e), 'on') AS node,
       cs_exec(format('EXECUTE cs_jac_off(%L)', e), 'off') AS native
FROM unnest('{0.5,0,1,1.5,-1,NaN,NULL}'::float8[]) e;
PREPARE cs_band_on(int) AS SELECT $1 AS band, count(*), sum(a.id * 10000 + b.id)
    FROM cs_a a JOIN cs_b b ON a.k BETWEEN b.k - $1 AND b.k + $1;
PREPARE cs_band_off(int) AS SELECT $1 AS band, count(*), sum(a.id * 10000 + b.id)
    FROM cs_a a JOIN cs_b b ON a.k BETWEEN b.k - $1 AND b.k + $1;
SELECT e, cs_exec(format('EXECUTE cs_band_on(%L)', e), 'on') AS node,
       cs_exec(format('EXECUTE cs_band_off(%L)', e), 'off') AS native
FROM unnest('{0,2,-1,NULL}'::int[]) e;
SELECT cs_uses('EXECUTE cs_epsn_on(1)') AS count_uses, cs_uses('EXECUTE cs_jac_on(0.5)') AS jaccard_uses,
       cs_uses('EXECUTE cs_band_on(1)') AS band_uses;
DEALLOCATE cs_eps_on; DEALLOCATE cs_eps_off; DEALLOCATE cs_epsn_on; DEALLOCATE cs_epsn_off;
DEALLOCATE cs_jac_on; DEALLOCATE cs_jac_off; DEALLOCATE cs_band_on; DEALLOCATE cs_band_off;
RESET plan_cache_mode;

-- rescans: the node under a correlated subquery and inside a lateral subquery
-- (the inner side of a nested loop), with the threshold or a filter changing
SELECT cs_check('SELECT x, (SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= x::float8) FROM generate_series(0, 3) x');
SELECT cs_check('SELECT x, (SELECT count(*) FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= x) FROM unnest(''{0.5,0.75,1}''::float8[]) x');
SELECT cs_check('SELECT x, (SELECT count(*) FROM cs_a a JOIN cs_b b ON a.k BETWEEN b.k - x AND b.k + x) FROM generate_series(0, 2) x');
SELECT cs_check('SELECT t.id, j.* FROM cs_ta t CROSS JOIN LATERAL
                 (SELECT a.id AS aid, b.id AS bid FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 2 WHERE a.k = t.k OFFSET 0) j');
SELECT cs_check('SELECT c.eps, j.n, j.s FROM cs_cfg c CROSS JOIN LATERAL
                 (SELECT count(*) AS n, sum(b.id) AS s FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= c.eps AND jaccard(a.s, b.s) >= c.sim) j');

-- a cursor fetched partway, and a scroll cursor, in a transaction (each row
-- printed is true by construction, whichever pair it is)
BEGIN;
DECLARE cs_cur CURSOR FOR SELECT a.v <-> b.v <= 5 AS near FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 5 AND a.grp <> b.grp;
FETCH 3 FROM cs_cur;
FETCH 2 FROM cs_cur;
CLOSE cs_cur;
DECLARE cs_scroll SCROLL CURSOR FOR SELECT jaccard(a.s, b.s) >= 0.5 AS similar FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.5;
FETCH 2 FROM cs_scroll;
FETCH BACKWARD 1 FROM cs_scroll;
CLOSE cs_scroll;
SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 1;
COMMIT;

-- errors are PostgreSQL's own, the same with the node as without it
CREATE TABLE cs_d3 (id int, v float8[], s int4[]);
INSERT INTO cs_d3 VALUES (1, '{1,2,3}', '{1,NULL}'), (2, '{0,0,0}', '{2,NULL}');
SELECT cs_uses('SELECT a.id, b.id FROM cs_a a JOIN cs_d3 b ON a.v <-> b.v <= 5') AS uses;
SELECT a.id, b.id FROM cs_a a JOIN cs_d3 b ON a.v <-> b.v <= 5;
SELECT count(*) FROM cs_a a JOIN cs_d3 b ON l2_distance(b.v, a.v) <= 5;
SELECT a.id, b.id FROM cs_a a JOIN cs_d3 b ON jaccard(a.s, b.s) >= 0.5;
SELECT count(*) FROM cs_a a JOIN cs_b b ON a.k / (b.k - b.k) > 0;
SET simjoin.enable_customscan = off;
SELECT a.id, b.id FROM cs_a a JOIN cs_d3 b ON a.v <-> b.v <= 5;
SELECT count(*) FROM cs_a a JOIN cs_d3 b ON l2_distance(b.v, a.v) <= 5;
SELECT a.id, b.id FROM cs_a a JOIN cs_d3 b ON jaccard(a.s, b.s) >= 0.5;
SELECT count(*) FROM cs_a a JOIN cs_b b ON a.k / (b.k - b.k) > 0;
RESET simjoin.enable_customscan;

-- statement_timeout stops the node (about 4 * 10^10 pairs to emit), and the
-- session goes on
CREATE TABLE cs_big AS SELECT i AS id, ARRAY[(i % 500)::float8, (i / 500)::float8] AS v
FROM generate_series(1, 200000) i;
SELECT cs_uses('SELECT sum(a.id::bigint + b.id) FROM cs_big a JOIN cs_big b ON a.v <-> b.v <= 1e6') AS uses;
SET statement_timeout = '100ms';
SELECT sum(a.id::bigint + b.id) FROM cs_big a JOIN cs_big b ON a.v <-> b.v <= 1e6;
RESET statement_timeout;
SELECT cs_check('SELECT count(*), sum(a.id * 10000 + b.id) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 1');
DROP TABLE cs_big;

-- privileges: without SELECT on a joined column the query fails exactly as
-- without the node; on the granted columns it runs
CREATE ROLE regress_cs_reader;
GRANT SELECT (id, grp, s) ON cs_a TO regress_cs_reader;
GRANT SELECT ON cs_b TO regress_cs_reader;
SET ROLE regress_cs_reader;
SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 1;
SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 1;
SET simjoin.enable_customscan = off;
SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 1;
SELECT count(*) FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 1;
RESET simjoin.enable_customscan;
SELECT cs_check('SELECT a.id, b.id FROM cs_a a JOIN cs_b b ON jaccard(a.s, b.s) >= 0.75');
RESET ROLE;
-- row-level security: the node sees only the rows the policy lets through
CREATE TABLE cs_rls AS SELECT id, grp, v, s, k FROM cs_a WHERE id <= 600;
ALTER TABLE cs_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY cs_rls_grp ON cs_rls USING (grp <> 2);
GRANT SELECT ON cs_rls TO regress_cs_reader;
ANALYZE cs_rls;
SELECT count(*) AS owner_sees FROM cs_rls a JOIN cs_rls b ON a.v <-> b.v <= 10;
SELECT count(*) AS policy_allows FROM cs_rls a JOIN cs_rls b ON a.v <-> b.v <= 10 WHERE a.grp <> 2 AND b.grp <> 2;
SET ROLE regress_cs_reader;
SELECT cs_uses('SELECT count(*) FROM cs_rls a JOIN cs_rls b ON a.v <-> b.v <= 10') AS uses;
SELECT count(*) AS reader_sees FROM cs_rls a JOIN cs_rls b ON a.v <-> b.v <= 10;
SELECT cs_check('SELECT a.id, b.id FROM cs_rls a JOIN cs_rls b ON a.v <-> b.v <= 10');
SELECT cs_check('SELECT a.id, b.id FROM cs_rls a LEFT JOIN cs_rls b ON jaccard(a.s, b.s) >= 0.5 AND a.k < b.k');
RESET ROLE;

-- a table joined with itself by an eps or Jaccard condition (the same
-- filters, columns and argument on both sides): the node reads it once,
-- the engine computes each pair of distinct rows once, and the node forms
-- both orders and each row with itself (EXPLAIN's "Self-Join"); any
-- difference between the sides, an outer join or a volatile filter, and
-- both sides are read as two inputs (other join clauses, volatile or not,
-- are decided on each pair either way)
CREATE TABLE cs_part (id int, v float8[], r real[]) PARTITION BY RANGE (id);
CREATE TABLE cs_part1 PARTITION OF cs_part FOR VALUES FROM (MINVALUE) TO (500);
CREATE TABLE cs_part2 PARTITION OF cs_part FOR VALUES FROM (500) TO (MAXVALUE);
INSERT INTO cs_part SELECT id, v, r FROM cs_a;
ANALYZE cs_part;
SELECT cs_uses(q, '%Self-Join: %') AS self, cs_check(q), q FROM (VALUES
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5'),
    ('SELECT a.id, b.id, a.v <-> b.v FROM cs_a a JOIN cs_a b ON a.v <-> b.v < 5'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 0'),
    ('SELECT a.id, b.id, a.r <=> b.r FROM cs_a a JOIN cs_a b ON a.r <=> b.r <= 0.001'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON 0 >= a.r <=> b.r'),
    ('SELECT a.id, b.id FROM cs_ta a JOIN cs_ta b ON a.v <=> b.v <= 1'),
    ('SELECT a.id, b.id FROM cs_ta a JOIN cs_ta b ON a.v <-> b.v < 5'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5 AND a.id < b.id'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5 AND a.grp + b.grp = 3'),
    ('SELECT count(*) FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5'),
    ('SELECT count(*) FROM cs_a a JOIN cs_a b ON a.r <=> b.r <= 0.001'),
    ('SELECT count(*) FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5 AND a.k <> b.k'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5 WHERE a.grp = 1 AND b.grp = 1'),
    ('SELECT a.id % 7, count(*), sum(b.id) FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 200 GROUP BY 1'),
    ('SELECT a.id, b.id FROM cs_part a JOIN cs_part b ON a.r <-> b.r <= 3'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5 WHERE a.grp = 1 AND b.grp = 2'),
    ('SELECT a.id, b.k FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5'),
    ('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_a b ON a.v <-> b.v <= 5'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5
      WHERE a.grp + random() * 0 < 3 AND b.grp + random() * 0 < 3'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 5 AND a.r <-> b.r < 4'),
    ('SELECT a.id, b.id, jaccard(a.s, b.s) FROM cs_a a JOIN cs_a b ON jaccard(a.s, b.s) >= 0.5'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON jaccard(b.t, a.t) > 0.5 AND a.id <> b.id'),
    ('SELECT a.id, b.id FROM cs_a a JOIN cs_a b ON jaccard(a.s, b.s) >= 1'),
    ('SELECT count(*) FROM cs_a a JOIN cs_a b ON jaccard(a.s, b.s) >= 0.4'),
    ('SELECT a.id, b.id FROM cs_ta a JOIN cs_ta b ON jaccard(a.s, b.s) > 0.1'),
    ('SELECT a.id, b.id FROM cs_a a LEFT JOIN cs_a b ON jaccard(a.s, b.s) >= 0.5')
) t(q);
-- a threshold from the outer query: the node runs again for each value
SELECT g, (SELECT count(*) FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= g) AS node
FROM generate_series(0, 3) g;
SET simjoin.enable_customscan = off;
SELECT g, (SELECT count(*) FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= g) AS postgres
FROM generate_series(0, 3) g;
RESET simjoin.enable_customscan;
-- vectors of different lengths: the error PostgreSQL's plan raises
CREATE TABLE cs_dims (id int, v float8[]);
INSERT INTO cs_dims VALUES (1, '{1,2}'), (2, '{1,2,3}');
SELECT cs_uses('SELECT a.id, b.id FROM cs_dims a JOIN cs_dims b ON a.v <-> b.v <= 5', '%Self-Join: %') AS self;
SELECT a.id, b.id FROM cs_dims a JOIN cs_dims b ON a.v <-> b.v <= 5;
SET simjoin.enable_customscan = off;
SELECT a.id, b.id FROM cs_dims a JOIN cs_dims b ON a.v <-> b.v <= 5;
RESET simjoin.enable_customscan;
DROP TABLE cs_part, cs_dims;

RESET enable_nestloop;
RESET enable_hashjoin;
RESET enable_mergejoin;
DROP TABLE cs_a, cs_b, cs_ta, cs_tb, cs_cfg, cs_d3, cs_rls;
DROP ROLE regress_cs_reader;
DROP FUNCTION cs_check(text, bool), cs_uses(text, text), cs_exec(text, text);
RESET jit;
