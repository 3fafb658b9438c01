-- the theta engine's pair estimate (EXPLAIN's "Planned Pairs", shown with
-- costs): bands and inequalities between the two sides are estimated from
-- the columns' statistics, where PostgreSQL takes a third of the cross
-- product for each comparison.  Tables smaller than ANALYZE's sample are
-- read whole, so the statistics do not depend on chance; each estimate is
-- checked against the real count, within a tolerance.
LOAD 'simjoin';
SET jit = off;
-- the node is planned whatever the device's costs (the estimate is the same)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET max_parallel_workers_per_gather = 0;

CREATE TABLE pe_l AS
SELECT i AS id, CASE WHEN i % 10 = 0 THEN NULL ELSE i END AS k,
       (i * 0.37)::float8 AS f, i % 50 AS g,
       timestamp '2026-01-01' + i * interval '1 minute' AS t,
       date '2000-01-01' + i % 3000 AS d, md5(i::text) AS s
FROM generate_series(1, 20000) i;
CREATE TABLE pe_r AS
SELECT i AS id, (i * 7919) % 20000 AS k, ((i * 7919) % 20000 * 0.37)::float8 AS f,
       i % 40 AS g,
       timestamp '2026-01-01' + (i * 7919) % 20000 * interval '1 minute'
           + interval '30 seconds' AS t,
       CASE WHEN i <= 20 THEN timestamp 'infinity'
            ELSE timestamp '2026-01-01' + i * interval '1 minute' END AS ti,
       date '2000-01-01' + i % 1000 * 3 AS d, md5((i * 3)::text) AS s
FROM generate_series(1, 20000) i;
ANALYZE pe_l, pe_r;

-- pe_planned(q): the pairs the node planned (sj_node: 00_setup)
CREATE FUNCTION pe_planned(q text) RETURNS float8 LANGUAGE sql
AS $$ SELECT (sj_node(q) ->> 'Planned Pairs')::float8 $$;
-- pe_fallback(q): the estimate is PostgreSQL's own, the join's Plan Rows
CREATE FUNCTION pe_fallback(q text) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN n IS NULL THEN 'no node planned'
                WHEN abs((n ->> 'Planned Pairs')::float8 - (n ->> 'Plan Rows')::float8)
                     <= 1e-6 * (n ->> 'Plan Rows')::float8 THEN 'PostgreSQL''s estimate'
                ELSE format('planned %s, PostgreSQL %s', n ->> 'Planned Pairs', n ->> 'Plan Rows') END
    FROM sj_node(q) n $$;
-- pe_actual(q): the pairs counted (by the node's counting form: the engines'
-- counts equal PostgreSQL's plans in 30_theta_join and 50_customscan, which
-- take far longer over inequalities of 20,000 x 20,000 rows)
CREATE FUNCTION pe_actual(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE n float8;
BEGIN
    EXECUTE 'SELECT count(*) FROM (' || q || ') pe_q' INTO n;
    RETURN n;
END $$;
-- pe_check(q, tolerance): planned within tolerance (a fraction) of actual
CREATE FUNCTION pe_check(q text, tolerance float8 DEFAULT 0.03) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE planned float8 := pe_planned(q); actual float8 := pe_actual(q);
BEGIN
    IF planned IS NULL THEN RETURN 'no node planned'; END IF;
    IF abs(planned - actual) <= tolerance * actual THEN
        RETURN format('ok (%s pairs)', actual);
    END IF;
    RETURN format('planned %s, actual %s', planned, actual);
END $$;

-- bands: integers (NULLs on one side), strict ends, floats, timestamps
-- with intervals, dates
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.k BETWEEN l.k - 5 AND l.k + 5');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.k > l.k - 5 AND r.k < l.k + 5');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON l.k BETWEEN r.k AND r.k + 2');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.f BETWEEN l.f - 2 AND l.f + 2');
SELECT pe_check($$SELECT 1 FROM pe_l l JOIN pe_r r
                  ON r.t BETWEEN l.t - interval '10 minutes' AND l.t + interval '10 minutes'$$);
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.d BETWEEN l.d - 2 AND l.d + 2');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.d > l.d AND r.d <= l.d + 3');
-- one-sided inequalities, with and without an offset, either operand order
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON l.k < r.k - 19000');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.f >= l.f');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.ti > l.t');   -- infinities
-- two groups, and a band under an equality PostgreSQL estimates
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON l.g < r.g AND l.k <= r.k');
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON l.g = r.g AND r.k BETWEEN l.k - 50 AND l.k + 50',
                0.05);
-- integers against few common values: a window holds as many values
-- wherever it falls (histogram buckets of 24 values put its ends on them)
CREATE TABLE pe_a AS SELECT i AS k FROM generate_series(1, 2400) i;
CREATE TABLE pe_m AS SELECT i % 50 * 48 + 1 AS k FROM generate_series(1, 20000) i;
ANALYZE pe_a, pe_m;
SELECT pe_check('SELECT 1 FROM pe_a a JOIN pe_m m ON m.k BETWEEN a.k AND a.k');
SELECT pe_check('SELECT 1 FROM pe_a a JOIN pe_m m ON m.k BETWEEN a.k - 2 AND a.k + 2');
SELECT pe_check('SELECT 1 FROM pe_m m JOIN pe_a a ON a.k BETWEEN m.k - 2 AND m.k + 2');
-- a LEFT join's engine forms the inner join's pairs
SELECT pe_check('SELECT 1 FROM pe_l l LEFT JOIN pe_r r ON r.k BETWEEN l.k - 5 AND l.k + 5 WHERE r.id IS NOT NULL');
-- an empty band
SELECT pe_planned('SELECT 1 FROM pe_l l JOIN pe_r r ON r.k > l.k + 5 AND r.k < l.k - 5') AS empty_band;

-- PostgreSQL's estimate where the statistics cannot say: text columns, a
-- table never analyzed, a parameter's offset in a generic plan, and a user
-- whom row-level security keeps from the statistics
SELECT pe_fallback('SELECT 1 FROM pe_l l JOIN pe_r r ON r.s > l.s') AS text_inequality;
CREATE TABLE pe_fresh AS SELECT * FROM pe_r;
SELECT pe_fallback('SELECT 1 FROM pe_l l JOIN pe_fresh r ON r.k BETWEEN l.k - 5 AND l.k + 5') AS never_analyzed;
PREPARE pe_band(int) AS SELECT 1 FROM pe_l l JOIN pe_r r ON r.k BETWEEN l.k - $1 AND l.k + $1;
SET plan_cache_mode = force_generic_plan;
SELECT pe_fallback('EXECUTE pe_band(5)') AS generic_plan;
SET plan_cache_mode = force_custom_plan;
SELECT pe_planned('EXECUTE pe_band(5)') =
       pe_planned('SELECT 1 FROM pe_l l JOIN pe_r r ON r.k BETWEEN l.k - 5 AND l.k + 5') AS custom_plan;
RESET plan_cache_mode;
DEALLOCATE pe_band;
CREATE ROLE regress_sj_pe;
GRANT SELECT ON pe_l, pe_r TO regress_sj_pe;
ALTER TABLE pe_r ENABLE ROW LEVEL SECURITY;
CREATE POLICY pe_r_all ON pe_r FOR SELECT USING (true);
SET ROLE regress_sj_pe;
SELECT pe_fallback('SELECT 1 FROM pe_l l JOIN pe_r r ON r.k BETWEEN l.k - 5 AND l.k + 5') AS row_security;
RESET ROLE;
ALTER TABLE pe_r DISABLE ROW LEVEL SECURITY;
SET ROLE regress_sj_pe;
SELECT pe_check('SELECT 1 FROM pe_l l JOIN pe_r r ON r.k BETWEEN l.k - 5 AND l.k + 5') AS granted;
RESET ROLE;

-- COSTS OFF shows no estimate
EXPLAIN (COSTS OFF) SELECT 1 FROM pe_l l JOIN pe_r r ON r.k BETWEEN l.k - 5 AND l.k + 5;

DROP POLICY pe_r_all ON pe_r;
DROP TABLE pe_l, pe_r, pe_fresh, pe_a, pe_m;
DROP FUNCTION pe_planned(text), pe_fallback(text), pe_actual(text),
    pe_check(text, float8);
DROP ROLE regress_sj_pe;
