-- calibrate.sql: the constants of the planner path's cost model (src/cost.c)
-- measured on this machine, in milliseconds.
--
--     bash test/bench/run.sh calibrate          (or: psql -f calibrate.sql)
--     psql -v sjc_scale=0.1 -v sjc_reps=1 -f calibrate.sql   (quick check)
--
-- Constants (table sjc_constants, printed last):
--   ms_per_cost_unit     ms one PostgreSQL cost unit takes: native plans
--                        (seq scan count over 5 M rows, hash join 1 M x 1 M on
--                        integers, nested loop with a cheap qual over 3000 x
--                        3000), one process (max_parallel_workers_per_gather
--                        = 0, jit off), Execution Time of EXPLAIN (ANALYZE,
--                        TIMING OFF) / Total Cost; the median of the three
--   marshal_ms_per_row   scan_ms / (left_rows + right_rows) of the two-table
--                        count functions on 1 M-row tables (via = srf); via
--                        = sql: the same through Custom Scan (SimJoin), where
--                        the planner gives the join to it (all simjoin runs:
--                        max_parallel_workers_per_gather = 0, jit off)
--   ms_per_row,          time = a * rows + b * pairs fitted to two runs of the
--   ms_per_pair          count function (rows = left_rows + right_rows; time
--                        = build_ms + probe_ms + transfer_ms), per operator
--                        and device: eps (2-D points, eps 0.2 and 1.0), jaccard
--                        (Zipf sets, t 0.9 and 0.5), theta_equi (keys with 1 M
--                        and 10 K distinct values), theta_band (+-5 and +-5000),
--                        theta_range (l.a > r.a, counted from sorted ranges);
--                        and jaccard per threshold ('jaccard t=0.5', 0.7, 0.9:
--                        the sets and their first half at that threshold)
--   ms_per_row_pair      theta nested loop (an OR condition): time /
--                        (left_rows * right_rows) of the larger of two runs
--   emit_ms_per_pair     emit_ms / pairs of count(*) over eps_join (a few
--                        million pairs; via = sql: the Custom Scan's pairs
--                        under sum(a.id + b.id), where planned)
--   device_startup_ms    total_ms of a 10 x 10 join after a warm-up
-- The raw runs are in sjc_runs and sjc_native.  Without a usable GPU
-- (simjoin_devices() has no row) only the cpu rows are measured.
-- Sizes scale with -v sjc_scale (default 1), repetitions with -v sjc_reps
-- (default 3, after one warm-up; medians).
\set ON_ERROR_STOP 1
\if :{?sjc_scale}
\else
\set sjc_scale 1
\endif
\if :{?sjc_reps}
\else
\set sjc_reps 3
\endif
SET client_min_messages = notice;
CREATE EXTENSION IF NOT EXISTS simjoin;
-- query results go nowhere until the report (progress: NOTICEs on stderr)
\o /dev/null
SELECT set_config('sjc.scale', :'sjc_scale', false) AS scale,
       set_config('sjc.reps', :'sjc_reps', false) AS reps,
       set_config('sjc.t0', clock_timestamp()::text, false) AS t0;

-- helpers ------------------------------------------------------------------

-- n rows at this scale
CREATE OR REPLACE FUNCTION sjc_n(n bigint) RETURNS int LANGUAGE sql STABLE AS
$$ SELECT greatest(10, round(n * current_setting('sjc.scale')::float8))::int $$;

-- four significant digits, for printing
CREATE OR REPLACE FUNCTION sjc_sig(x float8) RETURNS numeric LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN x IS NULL OR x = 'NaN' THEN NULL WHEN x = 0 THEN 0
          ELSE round(x::numeric, greatest(0, 3 - floor(log(abs(x)))::int)) END $$;

-- set a setting of this transaction if it exists; returns the old value
CREATE OR REPLACE FUNCTION sjc_set(name text, value text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE old text;
BEGIN
    PERFORM simjoin_last_stats();   -- loads simjoin, which defines its settings
    old := current_setting(name, true);
    IF old IS NOT NULL AND value IS NOT NULL THEN
        PERFORM set_config(name, value, true);
    END IF;
    RETURN old;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END $$;

-- the devices to measure
CREATE OR REPLACE FUNCTION sjc_devices() RETURNS text[] LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM simjoin_devices()) THEN
        RETURN '{gpu,cpu}';
    END IF;
    RETURN '{cpu}';
END $$;

DROP VIEW IF EXISTS sjc_medians;
DROP TABLE IF EXISTS sjc_runs, sjc_native, sjc_constants;
CREATE TABLE sjc_runs (
    op text, device text, config text, via text, run int, wall_ms float8,
    result numeric, left_rows bigint, right_rows bigint, pairs bigint,
    scan_ms float8, build_ms float8, probe_ms float8, transfer_ms float8,
    emit_ms float8, total_ms float8, strategy text);
CREATE TABLE sjc_native (probe text, plan text, est_cost float8, run int, ms float8);
CREATE TABLE sjc_constants (
    constant text, operator text, device text, via text, value float8,
    unit text, detail text);

-- Run q on a device: one warm-up, then reps runs, each recorded in sjc_runs
-- with the phases of simjoin_last_stats().  via 'sql': q is a SQL join that
-- must be planned as Custom Scan (SimJoin), else it is not run.  An error
-- (e.g. out of device memory) is reported and skipped.
CREATE OR REPLACE FUNCTION sjc_measure(op text, device text, config text, q text,
                                       via text DEFAULT 'srf', reps int DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz; res numeric; st record; i int; js jsonb;
    n int := coalesce(reps, current_setting('sjc.reps')::int);
    old_device text := sjc_set('simjoin.device', device);
    old_cs text := sjc_set('simjoin.enable_customscan', 'on');
BEGIN
    -- one process, no JIT compilation in the times (this transaction only)
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    PERFORM set_config('jit', 'off', true);
    IF via = 'sql' THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO js;
        IF NOT jsonb_path_exists(js, 'lax $.**."Custom Plan Provider" ? (@ == "SimJoin")') THEN
            RAISE NOTICE '% | % | % | sql: not planned as SimJoin, skipped', op, device, config;
            PERFORM sjc_set('simjoin.device', old_device);
            PERFORM sjc_set('simjoin.enable_customscan', old_cs);
            RETURN;
        END IF;
    END IF;
    BEGIN
        FOR i IN 0..n LOOP
            t0 := clock_timestamp();
            EXECUTE q INTO res;
            CONTINUE WHEN i = 0;    -- warm-up
            SELECT * INTO st FROM simjoin_last_stats();
            INSERT INTO sjc_runs VALUES (op, device, config, via, i,
                extract(epoch FROM clock_timestamp() - t0) * 1000, res,
                st.left_rows, st.right_rows, st.pairs, st.scan_ms, st.build_ms,
                st.probe_ms, st.transfer_ms, st.emit_ms, st.total_ms, st.strategy);
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        IF SQLSTATE = '57014' THEN RAISE; END IF;   -- cancelled: stop
        RAISE NOTICE '% | % | % | failed: %', op, device, config, SQLERRM;
    END;
    PERFORM sjc_set('simjoin.device', old_device);
    PERFORM sjc_set('simjoin.enable_customscan', old_cs);
    RAISE NOTICE '% | % | % | %', op, device, config, coalesce((
        SELECT format('%s ms, %s x %s rows, %s pairs, %s', round(percentile_cont(0.5)
                      WITHIN GROUP (ORDER BY r.wall_ms)::numeric, 1), max(r.left_rows),
                      max(r.right_rows), max(r.pairs), max(r.strategy))
        FROM sjc_runs r WHERE r.op = sjc_measure.op AND r.device = sjc_measure.device
          AND r.config = sjc_measure.config AND r.via = sjc_measure.via), 'no runs');
END $$;

-- A native plan: one warm-up, then reps runs of EXPLAIN (ANALYZE, TIMING
-- OFF), in one process, simjoin's node off.
CREATE OR REPLACE FUNCTION sjc_native_probe(probe text, q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE js jsonb; i int; shape text;
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    PERFORM set_config('jit', 'off', true);
    PERFORM set_config('enable_mergejoin', 'off', true);
    PERFORM sjc_set('simjoin.enable_customscan', 'off');
    EXECUTE q;
    FOR i IN 1..current_setting('sjc.reps')::int LOOP
        EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ' || q INTO js;
        SELECT string_agg(t #>> '{}', ' > ' ORDER BY o) INTO shape
        FROM jsonb_path_query(js, 'strict $.** ? (exists (@."Node Type"))."Node Type"') WITH ORDINALITY AS x(t, o);
        INSERT INTO sjc_native VALUES (probe, shape, (js->0->'Plan'->>'Total Cost')::float8,
                                       i, (js->0->>'Execution Time')::float8);
    END LOOP;
    RAISE NOTICE 'native | % | % | cost % | % ms', probe, shape,
        (js->0->'Plan'->>'Total Cost'), (js->0->>'Execution Time');
END $$;

-- Fit time = a * rows + b * pairs to two configurations (medians of their
-- runs) of one operator and device; store a and b.
CREATE OR REPLACE FUNCTION sjc_fit(op text, c1 text, c2 text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE d text; m1 record; m2 record; det float8; a float8; b float8;
BEGIN
    FOREACH d IN ARRAY sjc_devices() LOOP
        SELECT * INTO m1 FROM sjc_medians WHERE sjc_medians.op = sjc_fit.op
            AND device = d AND config = c1 AND via = 'srf';
        SELECT * INTO m2 FROM sjc_medians WHERE sjc_medians.op = sjc_fit.op
            AND device = d AND config = c2 AND via = 'srf';
        IF m1 IS NULL OR m2 IS NULL THEN
            RAISE NOTICE 'fit % on %: runs missing', op, d;
            CONTINUE;
        END IF;
        det := m1.rows * m2.pairs - m2.rows * m1.pairs;
        IF det = 0 THEN
            RAISE NOTICE 'fit % on %: the two runs are not independent', op, d;
            CONTINUE;
        END IF;
        a := (m1.engine_ms * m2.pairs - m2.engine_ms * m1.pairs) / det;
        b := (m1.rows * m2.engine_ms - m2.rows * m1.engine_ms) / det;
        INSERT INTO sjc_constants VALUES
            ('ms_per_row', op, d, 'srf', a, 'ms / input row',
             format('fit to %s (%s rows, %s pairs, %s ms) and %s (%s rows, %s pairs, %s ms)%s',
                    c1, m1.rows, m1.pairs, sjc_sig(m1.engine_ms),
                    c2, m2.rows, m2.pairs, sjc_sig(m2.engine_ms),
                    CASE WHEN a < 0 THEN '; NEGATIVE: noise, use ~0' ELSE '' END)),
            ('ms_per_pair', op, d, 'srf', b, 'ms / result pair',
             CASE WHEN b < 0 THEN 'NEGATIVE: noise, use ~0' ELSE 'same fit' END);
    END LOOP;
END $$;

-- data (deterministic) -----------------------------------------------------
SELECT setseed(0.4242);
DROP TABLE IF EXISTS sjc_big, sjc_h1, sjc_h2, sjc_n1, sjc_n2, sjc_pts, sjc_tiny,
                     sjc_sets, sjc_sets_half, sjc_l, sjc_r, sjc_nl30a, sjc_nl30b, sjc_nl10;
CREATE TABLE sjc_big AS
SELECT i AS id, (i::bigint * 7919 % 1000003)::int AS k FROM generate_series(1, sjc_n(5000000)) i;
CREATE TABLE sjc_h1 AS
SELECT i AS id, (random() * sjc_n(1000000))::int AS k FROM generate_series(1, sjc_n(1000000)) i;
CREATE TABLE sjc_h2 AS
SELECT i AS id, (random() * sjc_n(1000000))::int AS k FROM generate_series(1, sjc_n(1000000)) i;
CREATE TABLE sjc_n1 AS SELECT i AS id, (random() * 1000000)::int AS a FROM generate_series(1, 3000) i;
CREATE TABLE sjc_n2 AS SELECT i AS id, (random() * 1000000)::int AS a FROM generate_series(1, 3000) i;
-- 2-D points, uniform in [0,100]^2 (as Syn2D2M)
CREATE TABLE sjc_pts AS
SELECT i AS id, ARRAY[random() * 100, random() * 100] AS v FROM generate_series(1, sjc_n(1000000)) i;
CREATE TABLE sjc_tiny AS
SELECT i AS id, ARRAY[random() * 10, random() * 10] AS v FROM generate_series(1, 10) i;
-- Zipf-like sets over 50 K tokens, 1 to 9 tokens (as z50k5)
CREATE TABLE sjc_sets AS
SELECT i AS id, array(SELECT floor(exp(random() * ln(50000)))::int FROM generate_series(1, 1 + i % 9)) AS s
FROM generate_series(1, sjc_n(200000)) i;
-- the first half of those sets (the per-threshold fits of jaccard)
CREATE TABLE sjc_sets_half AS SELECT * FROM sjc_sets WHERE id <= sjc_n(200000) / 2;
-- theta: k1 ~1 M distinct keys, k2 10 K, kb a band key in [0, 1e8), a in [0, 1e6)
CREATE TABLE sjc_l AS
SELECT i AS id, (random() * 1000000)::int AS k1, (random() * 10000)::int AS k2,
       (random() * 100000000)::bigint AS kb, (random() * 1000000)::int AS a
FROM generate_series(1, sjc_n(1000000)) i;
CREATE TABLE sjc_r AS
SELECT i AS id, (random() * 1000000)::int AS k1, (random() * 10000)::int AS k2,
       (random() * 100000000)::bigint AS kb, (random() * 1000000)::int AS a
FROM generate_series(1, sjc_n(1000000)) i;
-- nested loop (an OR condition): 30 K and 10 K rows
CREATE TABLE sjc_nl30a AS SELECT i AS id, (random() * 1000)::int AS a, random() * 100 AS f FROM generate_series(1, sjc_n(30000)) i;
CREATE TABLE sjc_nl30b AS SELECT i AS id, (random() * 1000)::int AS a, random() * 100 AS f FROM generate_series(1, sjc_n(30000)) i;
CREATE TABLE sjc_nl10 AS SELECT i AS id, (random() * 1000)::int AS a, random() * 100 AS f FROM generate_series(1, sjc_n(10000)) i;
VACUUM ANALYZE sjc_big, sjc_h1, sjc_h2, sjc_n1, sjc_n2, sjc_pts, sjc_tiny, sjc_sets, sjc_sets_half,
               sjc_l, sjc_r, sjc_nl30a, sjc_nl30b, sjc_nl10;

DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM simjoin_devices()) THEN
        RAISE NOTICE 'no usable GPU (simjoin_devices() has no row): gpu rows skipped';
    END IF;
END $$;

-- ms per PostgreSQL cost unit ----------------------------------------------
SELECT sjc_native_probe('seq scan count, 5 M rows', $$SELECT count(*) FROM sjc_big$$);
SELECT sjc_native_probe('hash join 1 M x 1 M', $$SELECT count(*) FROM sjc_h1 l JOIN sjc_h2 r ON l.k = r.k$$);
SELECT sjc_native_probe('nested loop 3000 x 3000, l.a < r.a', $$SELECT count(*) FROM sjc_n1 l JOIN sjc_n2 r ON l.a < r.a$$);

-- operators, two configurations each ---------------------------------------
SELECT sjc_measure('eps', d, c, format('SELECT eps_join_count(%L, %L, %L, %L, %L, %L, %s)',
                                       'sjc_pts', 'id', 'v', 'sjc_pts', 'id', 'v', e))
FROM unnest(sjc_devices()) d, (VALUES ('eps=0.2', 0.2), ('eps=1.0', 1.0)) x(c, e);
SELECT sjc_measure('jaccard', d, c, format('SELECT jaccard_join_count(%L, %L, %L, %L, %L, %L, %s)',
                                           'sjc_sets', 'id', 's', 'sjc_sets', 'id', 's', t))
FROM unnest(sjc_devices()) d, (VALUES ('t=0.9', 0.9), ('t=0.5', 0.5)) x(c, t);
-- jaccard per threshold: the collection and its first half at 0.5, 0.7, 0.9
SELECT sjc_measure(format('jaccard t=%s', t), d, c,
                   format('SELECT jaccard_join_count(%L, %L, %L, %L, %L, %L, %s)',
                          tbl, 'id', 's', tbl, 'id', 's', t))
FROM unnest(sjc_devices()) d, (VALUES (0.5), (0.7), (0.9)) x(t),
     (VALUES ('full', 'sjc_sets'), ('half', 'sjc_sets_half')) y(c, tbl);
SELECT sjc_measure(o, d, c, format('SELECT theta_join_count(%L, %L, %L, %L, %L)',
                                   'sjc_l', 'id', 'sjc_r', 'id', cond))
FROM unnest(sjc_devices()) d, (VALUES
    ('theta_equi', '1M keys', 'l.k1 = r.k1'),
    ('theta_equi', '10K keys', 'l.k2 = r.k2'),
    ('theta_band', '+-5', 'r.kb BETWEEN l.kb - 5 AND l.kb + 5'),
    ('theta_band', '+-5000', 'r.kb BETWEEN l.kb - 5000 AND l.kb + 5000'),
    ('theta_range', 'l.a > r.a', 'l.a > r.a'),
    ('theta_range', 'l.a > r.a + 990000', 'l.a > r.a + 990000')) x(o, c, cond);
-- nested loop: on the GPU 30 K x 30 K and 30 K x 10 K, on the CPU 30 K x 10 K
-- and 10 K x 10 K
SELECT sjc_measure('theta_nestloop', d, format('%s x %s', l, r),
                   format('SELECT theta_join_count(%L, %L, %L, %L, %L)', l, 'id', r, 'id',
                          'l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)'))
FROM unnest(sjc_devices()) d, (VALUES ('gpu', 'sjc_nl30a', 'sjc_nl30b'), ('gpu', 'sjc_nl30a', 'sjc_nl10'),
                                      ('cpu', 'sjc_nl30a', 'sjc_nl10'), ('cpu', 'sjc_nl10', 'sjc_nl10')) x(dd, l, r)
WHERE d = dd;

-- emitting pairs: a few million through the function's tuplestore
SELECT sjc_measure('eps', d, 'emit eps=0.15',
                   $$SELECT count(*) FROM eps_join('sjc_pts', 'id', 'v', 0.15)$$)
FROM unnest(sjc_devices()) d;

-- the same through Custom Scan (SimJoin), where the planner uses it
SELECT sjc_measure('eps', d, 'eps=0.2', $$SELECT count(*) FROM sjc_pts a JOIN sjc_pts b ON a.v <-> b.v <= 0.2$$, 'sql')
FROM unnest(sjc_devices()) d;
SELECT sjc_measure('theta_equi', d, '1M keys', $$SELECT count(*) FROM sjc_l l JOIN sjc_r r ON l.k1 = r.k1$$, 'sql')
FROM unnest(sjc_devices()) d;
SELECT sjc_measure('jaccard', d, 't=0.9', $$SELECT count(*) FROM sjc_sets a JOIN sjc_sets b ON jaccard(a.s, b.s) >= 0.9$$, 'sql')
FROM unnest(sjc_devices()) d;
SELECT sjc_measure('eps', d, 'emit eps=0.15', $$SELECT sum(a.id + b.id) FROM sjc_pts a JOIN sjc_pts b ON a.v <-> b.v <= 0.15$$, 'sql')
FROM unnest(sjc_devices()) d;

-- start-up: a 10 x 10 join after the warm-up
SELECT sjc_measure('eps', d, 'tiny 10 x 10', $$SELECT eps_join_count('sjc_tiny', 'id', 'v', 'sjc_tiny', 'id', 'v', 1.0)$$, 'srf', 5)
FROM unnest(sjc_devices()) d;

-- constants ----------------------------------------------------------------
CREATE OR REPLACE VIEW sjc_medians AS
SELECT op, device, config, via, count(*) AS runs,
       max(left_rows) AS left_rows, max(right_rows) AS right_rows,
       (max(left_rows) + max(right_rows))::float8 AS rows, max(pairs)::float8 AS pairs,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY wall_ms) AS wall_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY scan_ms) AS scan_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY build_ms + probe_ms + transfer_ms) AS engine_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY emit_ms) AS emit_ms,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY total_ms) AS total_ms,
       max(strategy) AS strategy
FROM sjc_runs GROUP BY op, device, config, via;

INSERT INTO sjc_constants
SELECT 'ms_per_cost_unit', 'native: ' || probe, 'cpu', NULL,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) / max(est_cost), 'ms / cost unit',
       format('%s ms / cost %s; %s', sjc_sig(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)),
              max(est_cost), max(plan))
FROM sjc_native GROUP BY probe;
INSERT INTO sjc_constants
SELECT 'ms_per_cost_unit', 'native (median)', 'cpu', NULL,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY value), 'ms / cost unit',
       'median of the three probes, one process'
FROM sjc_constants WHERE constant = 'ms_per_cost_unit';

INSERT INTO sjc_constants
SELECT 'marshal_ms_per_row', op, device, via,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY scan_ms / rows), 'ms / input row',
       string_agg(format('%s: %s ms / %s rows', config, sjc_sig(scan_ms), rows), '; ' ORDER BY config)
FROM sjc_medians
WHERE (op, config) IN (('eps', 'eps=0.2'), ('eps', 'eps=1.0'), ('theta_equi', '1M keys'),
                       ('theta_equi', '10K keys'), ('jaccard', 't=0.9'), ('jaccard', 't=0.5'))
GROUP BY op, device, via;

SELECT sjc_fit('eps', 'eps=0.2', 'eps=1.0');
SELECT sjc_fit('jaccard', 't=0.9', 't=0.5');
SELECT sjc_fit(format('jaccard t=%s', t), 'full', 'half') FROM unnest('{0.5,0.7,0.9}'::text[]) t;
SELECT sjc_fit('theta_equi', '1M keys', '10K keys');
SELECT sjc_fit('theta_band', '+-5', '+-5000');
SELECT sjc_fit('theta_range', 'l.a > r.a', 'l.a > r.a + 990000');

INSERT INTO sjc_constants
SELECT 'ms_per_row_pair', 'theta_nestloop', device, via,
       (array_agg(engine_ms / (left_rows::float8 * right_rows) ORDER BY left_rows::float8 * right_rows DESC))[1],
       'ms / (left row x right row)',
       string_agg(format('%s: %s ms / %s row pairs (%s ns)', config, sjc_sig(engine_ms),
                         left_rows::float8 * right_rows,
                         sjc_sig(1e6 * engine_ms / (left_rows::float8 * right_rows))), '; '
                  ORDER BY config) || '; strategy ' || max(strategy)
FROM sjc_medians WHERE op = 'theta_nestloop' GROUP BY device, via;

INSERT INTO sjc_constants
SELECT 'emit_ms_per_pair', op, device, via, emit_ms / nullif(pairs, 0), 'ms / emitted pair',
       format('%s: %s ms / %s pairs; wall %s ms', config, sjc_sig(emit_ms), pairs, sjc_sig(wall_ms))
FROM sjc_medians WHERE config = 'emit eps=0.15';

INSERT INTO sjc_constants
SELECT 'device_startup_ms', op, device, via, total_ms, 'ms',
       format('total_ms of a 10 x 10 join, median of %s runs after a warm-up', runs)
FROM sjc_medians WHERE config = 'tiny 10 x 10';

-- the engine time and the end-to-end time of the SQL joins next to the
-- functions' (same configuration), for the record
INSERT INTO sjc_constants
SELECT 'sql_vs_srf_wall', s.op, s.device, 'sql', s.wall_ms / nullif(f.wall_ms, 0), 'ratio',
       format('%s: sql %s ms (scan %s, engine %s), srf %s ms (scan %s, engine %s)',
              s.config, sjc_sig(s.wall_ms), sjc_sig(s.scan_ms), sjc_sig(s.engine_ms),
              sjc_sig(f.wall_ms), sjc_sig(f.scan_ms), sjc_sig(f.engine_ms))
FROM sjc_medians s JOIN sjc_medians f USING (op, device, config)
WHERE s.via = 'sql' AND f.via = 'srf' AND s.config NOT LIKE 'emit%';

-- report -------------------------------------------------------------------
\o
\echo
\echo 'Machine'
SELECT 'version' AS item, version() AS value
UNION ALL
SELECT 'cpus online (server)', boot_val FROM pg_settings WHERE name = 'simjoin.cpu_threads'
UNION ALL
SELECT 'gpu ' || device, format('%s, %s GiB (%s GiB free), cc %s', name,
       round(total_memory / 1073741824.0, 1), round(free_memory / 1073741824.0, 1),
       compute_capability) FROM simjoin_devices()
UNION ALL
SELECT 'gpu', 'none usable' WHERE NOT EXISTS (SELECT FROM simjoin_devices())
UNION ALL
SELECT 'setting ' || name, setting || coalesce(' ' || unit, '') FROM pg_settings
WHERE name IN ('shared_buffers', 'work_mem', 'max_parallel_workers_per_gather',
               'max_parallel_workers', 'jit', 'seq_page_cost', 'random_page_cost',
               'cpu_tuple_cost', 'cpu_operator_cost', 'parallel_tuple_cost')
   OR name LIKE 'simjoin.%'
UNION ALL
SELECT 'scale, reps', current_setting('sjc.scale') || ', ' || current_setting('sjc.reps')
UNION ALL
SELECT 'calibration took', date_trunc('second', clock_timestamp()
                                     - current_setting('sjc.t0')::timestamptz)::text;

\echo 'Runs (medians)'
SELECT op, device, config, via, runs, left_rows, right_rows, pairs::bigint,
       sjc_sig(wall_ms) AS wall_ms, sjc_sig(scan_ms) AS scan_ms,
       sjc_sig(engine_ms) AS engine_ms, sjc_sig(emit_ms) AS emit_ms,
       sjc_sig(total_ms) AS total_ms, strategy
FROM sjc_medians ORDER BY op, config, device DESC, via;

\echo 'Cost-model constants (ms)'
SELECT constant, operator, device, via, sjc_sig(value) AS value, unit,
       CASE WHEN unit LIKE 'ms /%' THEN sjc_sig(value * 1e6) END AS ns_per, detail
FROM sjc_constants
ORDER BY CASE constant WHEN 'ms_per_cost_unit' THEN 1 WHEN 'marshal_ms_per_row' THEN 2
                       WHEN 'ms_per_row' THEN 3 WHEN 'ms_per_pair' THEN 4
                       WHEN 'ms_per_row_pair' THEN 5 WHEN 'emit_ms_per_pair' THEN 6
                       WHEN 'device_startup_ms' THEN 7 ELSE 8 END,
         operator, device DESC, via;
