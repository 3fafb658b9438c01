-- compare.sql: one workload per operator and strategy, timed on the GPU and
-- on the CPU engine, to compare two builds of simjoin on the same data
-- (issue 19: "no operator slower than before").  compare.sh drives it:
--
--     psql -f common.sql -f compare.sql -v step=data [-v scale=0.01]
--     psql -f compare.sql -v tag=after      # the build installed now
--     psql -f compare.sql -v tag=before     # after swapping the library in
--
-- step=data generates the tables (deterministic: sjb_u and the generators
-- of common.sql) and the list of workloads, sjc_workloads; the default
-- step runs each workload on each device with sjb_time (median of three
-- after a warm-up) and copies the row into sjc_results with the tag.  Both
-- tables and every function here are plain objects, not members of the
-- extension, so they survive DROP EXTENSION simjoin CASCADE; every simjoin
-- function called exists with the same signature in both builds.  Without
-- a usable GPU the gpu rows are skipped (a note says so).  JIT is off for
-- both builds alike.  scale multiplies every table's rows (key ranges
-- follow, so the pairs a row stay about the same); timeout bounds each
-- workload on each device (sjb_time records it as 'timed out'); only (a
-- regular expression) runs the workloads whose "workload, form" match.
\set ON_ERROR_STOP 1
\if :{?scale}
\else
\set scale 1
\endif
\if :{?step}
\else
\set step run
\endif
\if :{?timeout}
\else
\set timeout 90s
\endif
\if :{?only}
\else
\set only ''
\endif
SET max_parallel_workers_per_gather = 8;
SET jit = off;
SET client_min_messages = warning;

CREATE TABLE IF NOT EXISTS sjc_results (
    tag text, ord int, workload text, form text, device text, ms float8,
    result bigint, strategy text, plan text, at timestamptz DEFAULT now());

-- time one workload on one device (sjb_time) and keep its row under tag;
-- a row with ms NULL where sjb_time recorded none (no usable GPU)
CREATE OR REPLACE FUNCTION sjc_time(p_tag text, p_ord int, p_workload text, p_form text,
                                    p_device text, p_q text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
    PERFORM sjb_time(p_workload, p_form, p_device, p_q, 3);
    -- sjb_time's row carries this transaction's now()
    INSERT INTO sjc_results(tag, ord, workload, form, device, ms, result, strategy, plan)
    SELECT p_tag, p_ord, p_workload, p_form, p_device, r.ms, r.result, r.strategy, r.plan
    FROM sjb_results r
    WHERE r.workload = p_workload AND r.form = p_form AND r.engine = p_device
      AND r.at = now();
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        INSERT INTO sjc_results(tag, ord, workload, form, device, strategy)
        VALUES (p_tag, p_ord, p_workload, p_form, p_device, 'skipped: no usable GPU');
    END IF;
END $$;

SELECT :'step' = 'data' AS sjc_data \gset
\if :sjc_data

-- eps, 2-D: Syn2D2M, 2 M points uniform in [0, 100]^2 (eps_bench.sql)
SELECT sjb_ids(greatest(100, 2000000 * :scale)::int) \gset sjc_
DROP TABLE IF EXISTS cmp_2d;
CREATE TABLE cmp_2d AS
SELECT i AS id, ARRAY[sjb_u(i, 1) * 100, sjb_u(i, 2) * 100] AS v FROM sjb_id;
-- eps, high-dimensional (hd_bench.sql): (a) 1 M x 128-D clustered, L2;
-- 200 K x 384-D Gaussian mixture, cosine
SELECT sjb_clustered('cmp_hd128', greatest(100, 1000000 * :scale)::int, 128, 0.01) \gset sjc_
SELECT sjb_mixture('cmp_hd384c', greatest(100, 200000 * :scale)::int, 384) \gset sjc_
-- jaccard: 1 M sets of 1 to 9 Zipf-like tokens (P(k) ~ 1/k) of 50 K
-- (jaccard_bench.sql's z50k5)
SELECT sjb_ids(greatest(100, 1000000 * :scale)::int) \gset sjc_
DROP TABLE IF EXISTS cmp_z50k5;
CREATE TABLE cmp_z50k5 AS
SELECT i AS id, array(SELECT floor(exp(sjb_u(i, 100 + g) * ln(50000)))::int
                      FROM generate_series(1, 1 + i % 9) g) AS s
FROM sjb_id;
-- theta (theta_bench.sql): equi 10 M x 10 M, band 1 M x 1 M (no index on
-- the inner side, so that the plain SQL join is planned as SimJoin),
-- l.a > r.a 500 K x 50 K, an OR condition 30 K x 30 K
SELECT sjb_ids(greatest(100, 10000000 * :scale)::int) \gset sjc_
DROP TABLE IF EXISTS cmp_eq_r, cmp_eq_s, cmp_band_r, cmp_band_s, cmp_ineq_r, cmp_ineq_s, cmp_mp_r, cmp_mp_s;
CREATE TABLE cmp_eq_r AS SELECT i AS id, (sjb_u(i, 11) * 10000000 * :scale)::bigint AS k FROM sjb_id;
CREATE TABLE cmp_eq_s AS SELECT i AS id, (sjb_u(i, 12) * 10000000 * :scale)::bigint AS k FROM sjb_id;
SELECT sjb_ids(greatest(100, 1000000 * :scale)::int) \gset sjc_
CREATE TABLE cmp_band_r AS SELECT i AS id, (sjb_u(i, 21) * 100000000 * :scale)::bigint AS k FROM sjb_id;
CREATE TABLE cmp_band_s AS SELECT i AS id, (sjb_u(i, 22) * 100000000 * :scale)::bigint AS k FROM sjb_id;
SELECT sjb_ids(greatest(100, 500000 * :scale)::int) \gset sjc_
CREATE TABLE cmp_ineq_r AS SELECT i AS id, (sjb_u(i, 31) * 1000000)::int AS a FROM sjb_id;
CREATE TABLE cmp_ineq_s AS SELECT i AS id, (sjb_u(i, 32) * 1000000)::int AS a FROM sjb_id WHERE i < greatest(10, 50000 * :scale);
SELECT sjb_ids(greatest(100, 30000 * :scale)::int) \gset sjc_
CREATE TABLE cmp_mp_r AS SELECT i AS id, (sjb_u(i, 41) * 1000)::int AS a, sjb_u(i, 42) * 100 AS f FROM sjb_id;
CREATE TABLE cmp_mp_s AS SELECT i AS id, (sjb_u(i, 43) * 1000)::int AS a, sjb_u(i, 44) * 100 AS f FROM sjb_id;
-- PostGIS (where installed): 2 M geometry points uniform in [0, 1000]^2
-- (postgis_bench.sql's gis2m: d = 0.9 gives 5 neighbours a point, 2.8 50)
SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'postgis') AS sjc_gis \gset
DROP TABLE IF EXISTS cmp_gis;
\if :sjc_gis
CREATE EXTENSION IF NOT EXISTS postgis;
SELECT sjb_ids(greatest(100, 2000000 * :scale)::int) \gset sjc_
CREATE TABLE cmp_gis AS
SELECT i AS id, ST_SetSRID(ST_MakePoint(sjb_u(i, 51) * 1000 * sqrt(:scale),
                                        sjb_u(i, 52) * 1000 * sqrt(:scale)), 3857)::geometry(Point, 3857) AS g
FROM sjb_id;
VACUUM ANALYZE cmp_gis;
\endif
DROP TABLE sjb_id;
DROP TABLE IF EXISTS sjb_comp;
VACUUM ANALYZE cmp_2d, cmp_hd128, cmp_hd384c, cmp_z50k5, cmp_eq_r, cmp_eq_s, cmp_band_r,
    cmp_band_s, cmp_ineq_r, cmp_ineq_s, cmp_mp_r, cmp_mp_s;
SELECT relname AS "table", reltuples::bigint AS "rows", pg_size_pretty(pg_total_relation_size(oid)) AS size
FROM pg_class WHERE relname LIKE 'cmp\_%' AND relkind = 'r' ORDER BY relname;

-- The workloads, in the order they run (the 384-D cosine join last: its
-- CPU engine's brute force takes the longest).  'sql ...' forms are plain
-- SQL joins, meant to run as Custom Scan (SimJoin); sjb_time records them
-- as skipped where the plan has none.  'sql rows' forms every pair in the
-- executor under Gather (the parallel protocol).
DROP TABLE IF EXISTS sjc_workloads;
CREATE TABLE sjc_workloads (ord int PRIMARY KEY, workload text, form text, q text);
INSERT INTO sjc_workloads VALUES
(10, 'eps 2-D 2M uniform eps=0.2', 'count', $$SELECT eps_join_count('cmp_2d', 'id', 'v', 0.2)$$),
(11, 'eps 2-D 2M uniform eps=0.2', 'sql count, l2_distance()', $$SELECT count(*) FROM cmp_2d a JOIN cmp_2d b ON l2_distance(a.v, b.v) <= 0.2$$),
(20, 'eps 128-D 1M clustered L2 eps=0.1', 'count', $$SELECT eps_join_count('cmp_hd128', 'id', 'v', 0.1)$$),
(30, 'jaccard 1M sets size 1-9 t=0.9', 'count', $$SELECT jaccard_join_count('cmp_z50k5', 'id', 's', 0.9)$$),
(31, 'jaccard 1M sets size 1-9 t=0.9', 'sql count, jaccard()', $$SELECT count(*) FROM cmp_z50k5 a JOIN cmp_z50k5 b ON jaccard(a.s, b.s) >= 0.9$$),
(40, 'theta equi 10M x 10M (hash)', 'count', $$SELECT theta_join_count('cmp_eq_r', 'id', 'cmp_eq_s', 'id', 'l.k = r.k')$$),
(50, 'theta band 1M x 1M +-5 (range)', 'count', $$SELECT theta_join_count('cmp_band_r', 'id', 'cmp_band_s', 'id', 'r.k BETWEEN l.k - 5 AND l.k + 5')$$),
(51, 'theta band 1M x 1M +-5 (range)', 'count(*) of pairs', $$SELECT count(*) FROM theta_join('cmp_band_r', 'id', 'cmp_band_s', 'id', 'r.k BETWEEN l.k - 5 AND l.k + 5')$$),
(52, 'theta band 1M x 1M +-5 (range)', 'sql count', $$SELECT count(*) FROM cmp_band_r l JOIN cmp_band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5$$),
(53, 'theta band 1M x 1M +-5 (range)', 'sql rows', $$SELECT sum(l.id + r.id) FROM cmp_band_r l JOIN cmp_band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5$$),
(60, 'theta l.a > r.a 500K x 50K (sorted ranges)', 'count', $$SELECT theta_join_count('cmp_ineq_r', 'id', 'cmp_ineq_s', 'id', 'l.a > r.a')$$),
(70, 'theta OR 30K x 30K (nested loop)', 'count', $$SELECT theta_join_count('cmp_mp_r', 'id', 'cmp_mp_s', 'id', 'l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)')$$),
(80, 'eps 384-D 200K mixture cosine eps=0.002', 'count', $$SELECT eps_join_count('cmp_hd384c', 'id', 'v', 0.002, 'cosine')$$);
\if :sjc_gis
-- plain SQL over PostGIS points: the custom scan under Gather, every pair formed
INSERT INTO sjc_workloads VALUES
(90, 'postgis 2M uniform d=0.9 (5 a point)', 'sql rows, a.id < b.id', $$SELECT sum(a.id + b.id) FROM cmp_gis a JOIN cmp_gis b ON ST_DWithin(a.g, b.g, 0.9) AND a.id < b.id$$),
(91, 'postgis 2M uniform d=2.8 (50 a point)', 'sql rows, a.id < b.id', $$SELECT sum(a.id + b.id) FROM cmp_gis a JOIN cmp_gis b ON ST_DWithin(a.g, b.g, 2.8) AND a.id < b.id$$);
\endif

\else

SET client_min_messages = notice;
\if :{?tag}
\else
\echo 'compare.sql: give -v tag=after or -v tag=before (or -v step=data)'
\quit
\endif
SELECT CASE WHEN EXISTS (SELECT FROM simjoin_devices()) THEN '{gpu,cpu}' ELSE '{cpu}' END AS sjc_devices,
       NOT EXISTS (SELECT FROM simjoin_devices()) AS sjc_no_gpu \gset
\if :sjc_no_gpu
\echo 'compare.sql: no usable GPU visible: the gpu rows are skipped'
\endif
\echo 'compare.sql:' :tag 'on' :sjc_devices
SET statement_timeout = :'timeout';
-- one statement a workload and device (statement_timeout bounds each);
-- an error in one (a build that fails it) leaves the others to run
\set ON_ERROR_STOP 0
\o /dev/null
SELECT format('SELECT FROM sjc_time(%L, %s, %L, %L, %L, %L)', :'tag', ord, workload, form, d, q)
FROM sjc_workloads, unnest(:'sjc_devices'::text[]) WITH ORDINALITY AS x(d, o)
WHERE workload || ', ' || form ~ :'only'
ORDER BY ord, o \gexec
\o
\endif
