-- multi_bench.sql: one GPU against two (or every visible one), the same
-- joins in one run (issue #22): compute-bound joins that should scale with
-- the devices (high-dimensional cosine eps_joins, the tensor-core filter,
-- at 200 K and 1 M rows of 384-D and 200 K of 1,536-D; jaccard_join at
-- t = 0.5 on 1 M sets; a theta join whose OR runs the nested loop)
-- and scan-bound ones that must be no slower (a 2-D eps_join over 2 M
-- points, an equi join, and the high-dimensional suite's 1 M x 128-D L2
-- join, which the grid answers in 20 to 50 ms of engine time), and
-- jaccard_join at t = 0.3, a lower threshold than the issue's, and the 200 K
-- and 1 M x 384-D counts in plain SQL (no targets).  Data
-- generated in SQL, deterministic (hashes, no random()), in parallel.  Run
-- after common.sql:
--     psql -v mb_scale=1 -f test/bench/multi_bench.sql
-- Each join runs on the GPU under each device list of -v mb_lists
-- (simjoin.devices values separated by ';', default '0;all'), the lists
-- alternating run by run after a warm-up of each, median of mb_reps (5)
-- runs each; the table at the end gives each list's time against the
-- first list's, the ratio, the engine's own wall time (the median run's
-- simjoin_last_stats() total_ms less scan_ms and emit_ms: what the devices
-- scale; the rest is mostly PostgreSQL's scan), the devices' busy time
-- (build + probe, summed over the devices) and each device's share
-- (simjoin_last_stats().devices).  The targets (at least 1.8x for the
-- compute-bound joins, no slower for the others) apply to a list of two
-- distinct devices against a first list of one.  -v mb_suite=off leaves
-- out the 1 M x 128-D and 200 K x 1,536-D rows (the latter twice: its
-- vectors out of line, TOAST's default, and in the row, SET STORAGE
-- PLAIN) and the t = 0.3 row (about two minutes of data generation and
-- runs).  Sizes keep the whole file under about 6 minutes on an H100
-- pair, data generation included: the issue's joins as named, except the
-- equi join, 5 M x 5 M here (theta_bench.sql's is 10 M x 10 M; it is
-- scan-bound either way).  -v mb_scale=0.01 shrinks every table (a check
-- of the script).  Without a usable GPU, or with simjoin.device = cpu, the
-- joins run on the CPU engine and are labelled cpu (a check of the SQL:
-- simjoin.devices means nothing there); -v mb_engine=gpu|cpu forces
-- either.  A list naming a device that is not visible is skipped
-- ("skipped: 1 device(s) visible"), as is all after the first list where
-- one device is visible ("skipped: one device").  A join past -v mb_timeout (90s) is recorded as
-- timed out and the file goes on.  -v mb_workers (8) is
-- max_parallel_workers_per_gather: the workers that read a large table
-- (the server's max_parallel_workers must allow them).
\set ON_ERROR_STOP 1
\if :{?mb_scale}
\else
\set mb_scale 1
\endif
\if :{?mb_reps}
\else
\set mb_reps 5
\endif
\if :{?mb_timeout}
\else
\set mb_timeout 90s
\endif
\if :{?mb_workers}
\else
\set mb_workers 8
\endif
\if :{?mb_lists}
\else
\set mb_lists '0;all'
\endif
\if :{?mb_suite}
\else
\set mb_suite on
\endif
SET max_parallel_workers_per_gather = :mb_workers;
SET client_min_messages = notice;

SELECT count(*) AS mb_ndev FROM simjoin_devices() \gset
\if :{?mb_engine}
\else
SELECT CASE WHEN :mb_ndev > 0 AND coalesce(current_setting('simjoin.device', true), 'auto') <> 'cpu'
            THEN 'gpu' ELSE 'cpu' END AS mb_engine \gset
\endif
SELECT set_config('sjm.engine', :'mb_engine', false) AS engine,
       set_config('sjm.reps', :'mb_reps', false) AS reps,
       set_config('sjm.lists', :'mb_lists', false) AS lists,
       :mb_ndev AS devices_visible,
       current_setting('max_parallel_workers_per_gather') AS workers_per_gather,
       current_setting('max_parallel_workers') AS max_parallel_workers,
       clock_timestamp() AS mb_t0 \gset
SELECT CASE WHEN :'mb_engine' = 'cpu'
            THEN 'multi_bench: the joins run on the CPU engine (no usable GPU, or simjoin.device = cpu); '
                 || 'labelled cpu, their ratios mean nothing'
            WHEN :mb_ndev < 2 THEN 'multi_bench: one GPU visible; lists naming others, and all after the first, are skipped'
            ELSE format('multi_bench: %s GPUs visible; device lists %s', :mb_ndev, :'mb_lists') END AS note;

-- the runs of this file: one row per join and device list
DROP TABLE IF EXISTS sjm_runs;
CREATE TABLE sjm_runs (
    n serial, workload text, kind text, devs text, ndevs int, engine text, ms float8,
    engine_ms float8, busy_ms float8, result bigint, strategy text, devices text);

-- 1 M x 384-D, 100 K centres x 10 jittered copies; cosine: the size of
-- hd_bench's (c), whose filter dominates the engine (the compute-bound
-- member of the high-dimensional suite); sjm_hd is its first 200 K rows
-- (20 K centres x 10), the size whose end-to-end time is mostly the scan.
-- sjb_clustered (common.sql) leaves sjb_id, rows 0 .. n-1, for the tables
-- below.
SELECT sjb_clustered('sjm_hd1m', (1000000 * :mb_scale)::int, 384, 0.01);
DROP TABLE IF EXISTS sjm_hd;
CREATE TABLE sjm_hd AS SELECT * FROM sjm_hd1m WHERE id < (200000 * :mb_scale)::int;
ANALYZE sjm_hd;

-- 1 M sets (sjb_zipf_sets: common.sql)
SELECT sjb_zipf_sets('sjm_sets');

-- 100 K x 100 K rows; an OR of an equality and a sum: the nested loop
DROP TABLE IF EXISTS sjm_t;
CREATE TABLE sjm_t AS
    SELECT i AS id, hashint4(i) & 1048575 AS a, hashint4(i + 7) & 1048575 AS b
    FROM generate_series(1, (100000 * :mb_scale)::int) i;
ANALYZE sjm_t;

-- 5 M x 5 M rows, keys in [0, 5 M): about one match a row (scan-bound)
DROP TABLE IF EXISTS sjm_eq_l, sjm_eq_r;
CREATE TABLE sjm_eq_l AS
    SELECT i * 5 + g AS id, (hashint8(i * 5 + g) & 2147483647) % (5000000 * :mb_scale)::int AS k
    FROM sjb_id, generate_series(0, 4) g;
CREATE TABLE sjm_eq_r AS
    SELECT i * 5 + g AS id, (hashint8(i * 5 + g + 100000000) & 2147483647) % (5000000 * :mb_scale)::int AS k
    FROM sjb_id, generate_series(0, 4) g;
ANALYZE sjm_eq_l, sjm_eq_r;

-- 2 M x 2-D uniform points (scan-bound)
DROP TABLE IF EXISTS sjm_2d;
CREATE TABLE sjm_2d AS
    SELECT i * 2 + g AS id, ARRAY[sjb_u(i * 2 + g, 1) * 100, sjb_u(i * 2 + g, 2) * 100]::float8[] AS v
    FROM sjb_id, generate_series(0, 1) g;
ANALYZE sjm_2d;

-- the distinct devices a list of simjoin.devices names ('all': those
-- visible; '0,0' is one device), and whether the host has them all
CREATE OR REPLACE FUNCTION sjm_list_devices(list text, ndev int) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN list = 'all' THEN ndev
                ELSE (SELECT count(DISTINCT trim(d)) FROM unnest(string_to_array(list, ',')) d)::int END $$;
CREATE OR REPLACE FUNCTION sjm_list_fits(list text, ndev int) RETURNS bool
LANGUAGE sql IMMUTABLE AS $$
    SELECT list = 'all' OR (SELECT max(trim(d)::int) < ndev FROM unnest(string_to_array(list, ',')) d) $$;

-- One join under each device list of mb_lists ('0' and 'all' by default),
-- alternating run by run (0, all, 0, all, ... after a warm-up of each), so
-- that every list sees the same drift of the host (the scan-bound rows run
-- on one card either way and differ only by it): each list's median wall
-- time, the engine's wall time and busy time (build + probe) of that
-- median run, each device's share (its last run).  A list naming a device
-- that is not visible is skipped, as is all after the first list where one
-- device is visible.
CREATE OR REPLACE FUNCTION sjm_both(workload text, kind text, q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    d text; ms float8; st record; i int; k int; med int; res bigint;
    eng text := current_setting('sjm.engine');
    reps int := current_setting('sjm.reps')::int;
    ndev int := (SELECT count(*) FROM simjoin_devices());
    lists text[] := string_to_array(current_setting('sjm.lists'), ';');
    nl int := cardinality(lists);
    runs float8[][];     -- [list][run]: wall ms
    engs float8[][];     -- engine ms (total - scan - emit)
    busy float8[][];     -- build + probe
    devs text[] := array_fill(NULL::text, ARRAY[nl]);
    strat text[] := array_fill(NULL::text, ARRAY[nl]);
    result bigint[] := array_fill(NULL::bigint, ARRAY[nl]);
    failed text[] := array_fill(NULL::text, ARRAY[nl]);
BEGIN
    FOR k IN 1..nl LOOP
        IF eng = 'gpu' AND NOT sjm_list_fits(lists[k], ndev) THEN
            failed[k] := format('skipped: %s device(s) visible', ndev);
        ELSIF eng = 'gpu' AND k > 1 AND lists[k] = 'all' AND ndev < 2 THEN
            failed[k] := 'skipped: one device';
        END IF;
        IF failed[k] IS NOT NULL THEN
            RAISE NOTICE '% | devices=% | %', workload, lists[k], failed[k];
        END IF;
    END LOOP;
    runs := array_fill(NULL::float8, ARRAY[nl, reps]);
    engs := array_fill(NULL::float8, ARRAY[nl, reps]);
    busy := array_fill(NULL::float8, ARRAY[nl, reps]);
    FOR i IN 0..reps LOOP           -- run 0: each list's warm-up
        FOR k IN 1..nl LOOP
            CONTINUE WHEN failed[k] IS NOT NULL;
            d := lists[k];
            PERFORM set_config('simjoin.devices', d, false);
            ms := sjb_time(workload || ' devices=' || d || CASE WHEN i = 0 THEN ' (warm-up)' ELSE '' END,
                           'count', eng, q, 1);
            IF ms IS NULL THEN
                failed[k] := 'skipped or timed out (see NOTICE)';
                CONTINUE;
            END IF;
            CONTINUE WHEN i = 0;
            SELECT * INTO st FROM simjoin_last_stats();
            runs[k][i] := ms;
            engs[k][i] := st.total_ms - st.scan_ms - coalesce(st.emit_ms, 0);
            busy[k][i] := st.build_ms + st.probe_ms;
            devs[k] := st.devices;
            strat[k] := st.strategy;
            SELECT r.result INTO res FROM sjb_results r
            WHERE r.workload = sjm_both.workload || ' devices=' || d AND r.engine = eng
            ORDER BY r.at DESC LIMIT 1;
            IF result[k] IS NOT NULL AND result[k] IS DISTINCT FROM res THEN
                RAISE NOTICE '% | devices=% | COUNTS DIFFER between runs: % vs %', workload, d, result[k], res;
            END IF;
            result[k] := res;
        END LOOP;
    END LOOP;
    FOR k IN 1..nl LOOP
        IF failed[k] IS NOT NULL THEN
            INSERT INTO sjm_runs(workload, kind, devs, ndevs, engine, strategy)
            VALUES (workload, kind, lists[k], sjm_list_devices(lists[k], ndev), eng, failed[k]);
            CONTINUE;
        END IF;
        SELECT g INTO med FROM generate_series(1, reps) g
        ORDER BY runs[k][g] OFFSET (reps - 1) / 2 LIMIT 1;
        INSERT INTO sjm_runs(workload, kind, devs, ndevs, engine, ms, engine_ms, busy_ms, result,
                             strategy, devices)
        VALUES (workload, kind, lists[k], sjm_list_devices(lists[k], ndev), eng, runs[k][med],
                engs[k][med], busy[k][med], result[k], strat[k], devs[k]);
        RAISE NOTICE '% | devices=% | median % ms of % (alternating) | engine % ms | %',
            workload, lists[k], round(runs[k][med]::numeric, 1),
            (SELECT string_agg(round(runs[k][g]::numeric, 1)::text, ' ') FROM generate_series(1, reps) g),
            round(engs[k][med]::numeric, 1), coalesce(devs[k], '');
    END LOOP;
    PERFORM set_config('simjoin.devices', 'all', false);
END $$;

-- a join past mb_timeout is recorded as timed out and the file goes on
SET statement_timeout = :'mb_timeout';
SELECT sjm_both('hd 200K x 384-D cosine eps=0.0003', 'compute',
                $q$SELECT eps_join_count('sjm_hd', 'id', 'v', 0.0003, 'cosine')$q$);
SELECT sjm_both('hd 1M x 384-D cosine eps=0.0003', 'compute',
                $q$SELECT eps_join_count('sjm_hd1m', 'id', 'v', 0.0003, 'cosine')$q$);
-- the same two joins in plain SQL (the custom scan's count of a table
-- joined with itself; each pair counted in both orders, and each row with
-- itself): no target of their own
SELECT sjm_both('plain SQL hd 200K x 384-D cosine count', 'extra',
                $q$SELECT count(*) FROM sjm_hd a JOIN sjm_hd b ON a.v <=> b.v <= 0.0003$q$);
SELECT sjm_both('plain SQL hd 1M x 384-D cosine count', 'extra',
                $q$SELECT count(*) FROM sjm_hd1m a JOIN sjm_hd1m b ON a.v <=> b.v <= 0.0003$q$);
SELECT sjm_both('jaccard 1M sets avg 25 t=0.5', 'compute',
                $q$SELECT jaccard_join_count('sjm_sets', 'id', 's', 0.5)$q$);
SELECT sjm_both('theta OR 100K x 100K', 'compute',
                $q$SELECT theta_join_count('sjm_t', 'id', 'sjm_t', 'id', 'l.a = r.b OR l.a + r.b = 1000000')$q$);
SELECT sjm_both('2-D 2M eps=0.05', 'scan',
                $q$SELECT eps_join_count('sjm_2d', 'id', 'v', 0.05)$q$);
SELECT sjm_both('equi 5M x 5M', 'scan',
                $q$SELECT theta_join_count('sjm_eq_l', 'id', 'sjm_eq_r', 'id', 'l.k = r.k')$q$);
DROP TABLE sjm_hd1m, sjm_hd, sjm_t, sjm_eq_l, sjm_eq_r, sjm_2d;

-- the rest of the high-dimensional suite (hd_bench.sql's (a) and (d), the
-- data of the engine benchmark eps_gpu_hd_bench) and a lower threshold on
-- the same sets, each table made just before its join
\if :mb_suite
SELECT sjm_both('jaccard 1M sets avg 25 t=0.3', 'extra',
                $q$SELECT jaccard_join_count('sjm_sets', 'id', 's', 0.3)$q$);
RESET statement_timeout;     -- the tables' generation is not a join
SELECT sjb_clustered('sjm_hd128', (1000000 * :mb_scale)::int, 128, 0.01);
SET statement_timeout = :'mb_timeout';
SELECT sjm_both('hd (a) 1M x 128-D L2 eps=0.1 (grid)', 'scan',
                $q$SELECT eps_join_count('sjm_hd128', 'id', 'v', 0.1)$q$);
DROP TABLE sjm_hd128;
RESET statement_timeout;
SELECT sjb_clustered('sjm_hd1536', (200000 * :mb_scale)::int, 1536, 0.01);
SET statement_timeout = :'mb_timeout';
SELECT sjm_both('hd (d) 200K x 1536-D cosine eps=0.0003', 'compute',
                $q$SELECT eps_join_count('sjm_hd1536', 'id', 'v', 0.0003, 'cosine')$q$);
-- the same rows with the vectors in the row rather than out of line
-- (docs/sql-reference.md, "Vectors over 2 kB")
RESET statement_timeout;
CREATE TABLE sjm_hd1536p (LIKE sjm_hd1536);
ALTER TABLE sjm_hd1536p ALTER COLUMN v SET STORAGE PLAIN;
INSERT INTO sjm_hd1536p SELECT * FROM sjm_hd1536;
DROP TABLE sjm_hd1536;
VACUUM ANALYZE sjm_hd1536p;
SET statement_timeout = :'mb_timeout';
SELECT sjm_both('hd (d) 200K x 1536-D cosine eps=0.0003, vectors PLAIN', 'compute',
                $q$SELECT eps_join_count('sjm_hd1536p', 'id', 'v', 0.0003, 'cosine')$q$);
DROP TABLE sjm_hd1536p;
\endif
RESET statement_timeout;

-- The table: each list against the first (1 device), wall time (median),
-- the engine's wall time and the devices' busy time (build + probe, summed
-- over devices).  Targets (issue #22), for two devices: compute-bound joins
-- at least 1.8x faster; scan-bound ones no slower (0.95: the runs' noise).
\echo
\echo 'multi_bench: simjoin.devices lists against the first, alternating (ms: median wall time; engine: the engine''s wall time and busy: build + probe summed over devices, of the median run)'
SELECT o.workload, o.engine, o.devs || ' -> ' || a.devs AS lists,
       round(o.ms::numeric, 1) AS "ms first",
       round(a.ms::numeric, 1) AS "ms list",
       round((o.ms / nullif(a.ms, 0))::numeric, 2) AS speedup,
       round(o.engine_ms::numeric, 1) AS "engine first",
       round(a.engine_ms::numeric, 1) AS "engine list",
       round((o.engine_ms / nullif(a.engine_ms, 0))::numeric, 2) AS "engine speedup",
       round(o.busy_ms::numeric, 1) AS "busy first",
       round(a.busy_ms::numeric, 1) AS "busy list",
       CASE WHEN o.kind = 'extra' THEN '(none: not the issue''s)'
            WHEN o.ndevs <> 1 OR a.ndevs <> 2 THEN format('(none for %s -> %s devices)', o.ndevs, a.ndevs)
            WHEN o.kind = 'compute' THEN '>= 1.8' ELSE '>= 0.95 (no slower)' END AS target,
       CASE WHEN o.engine <> 'gpu' THEN 'cpu: not a measure'
            WHEN o.ms IS NULL THEN o.strategy
            WHEN a.ms IS NULL THEN a.strategy
            WHEN o.result IS DISTINCT FROM a.result THEN 'COUNTS DIFFER: ' || o.result || ' vs ' || a.result
            WHEN o.kind = 'extra' OR o.ndevs <> 1 OR a.ndevs <> 2 THEN 'same counts'
            WHEN o.ms / a.ms >= CASE WHEN o.kind = 'compute' THEN 1.8 ELSE 0.95 END THEN 'met'
            ELSE 'NOT met' END AS verdict,
       o.result AS pairs, a.strategy, a.devices AS "devices (list)"
FROM sjm_runs o
JOIN sjm_runs a ON a.workload = o.workload AND a.n > o.n
WHERE o.n = (SELECT min(n) FROM sjm_runs f WHERE f.workload = o.workload)
ORDER BY o.n, a.n;
SELECT round(extract(epoch FROM clock_timestamp() - :'mb_t0'::timestamptz)::numeric, 1) AS "multi_bench seconds";
DROP TABLE sjm_sets, sjb_id;
