-- postgis_bench.sql: joins of PostGIS points on simjoin (GPU, CPU engine)
-- against PostGIS's best plan: a GiST index nested loop with parallel
-- workers (issue #21, item 5).  Data generated in SQL, deterministic
-- (hashes of the row number, sjb_u), in parallel workers.  Datasets:
--   gis2m      2,000,000 points uniform in [0,1000)^2
--   gis2mclu   2,000,000 points city-like: 1,000 cities, a point's city
--              log-uniform (the largest holds 10%, P(k) ~ 1/k), Gaussian
--              around its centre with a spread growing with its size
--              (density p^0.2: denser in the big cities), 10% of the points
--              uniform (the countryside)
--   gis10m, gis10mclu  the same with 10,000,000 points
--   geog1m     1,000,000 geography points uniform on the globe (metres)
-- each at two distances d giving about 5 and about 50 neighbours a point
-- (printed: 2 x pairs / n; d set at full size, at gis_scale it is d /
-- sqrt(scale), the same neighbours a point).  Rows, all self-joins, each
-- unordered pair once:
--   count  gpu, cpu: eps_join_count(tbl, 'id', 'g', d)
--          native: SELECT count(*) FROM t a JOIN t b ON ST_DWithin(a.g,
--          b.g, d) AND a.id < b.id, PostGIS's GiST index nested loop with
--          parallel workers (simjoin's planner node off); it forms every
--          pair, so it is also PostGIS's time for the rows form
--   sql rows, a.id < b.id  gpu, cpu and auto (cpu alone where no GPU is
--          visible): SELECT sum(a.id + b.id) FROM t a JOIN t b ON
--          ST_DWithin(a.g, b.g, d) AND a.id < b.id as Custom Scan (SimJoin):
--          the executor forms every pair; run where 2 x pairs <= gis_max_rows
--          x scale (not at 10 M points and 50 neighbours: 500 M pairs); the
--          table's sql_rows is auto's (simjoin.device's default), with the
--          device it took, beside the GPU's and the CPU engine's
--   sql count, a.id < b.id  the same as SELECT count(*), at the first d of
--          the datasets of at most 2 M points
-- simjoin's rows run before the GiST index exists: with it the planner
-- keeps PostGIS's plan for the plain SQL join (the plan it picks with the
-- index is printed, sql_plan_with_index).  The index build is timed on its
-- own.  PostGIS's plan runs on the outer rows of a 1-in-k sample (id % k =
-- 0, k = n / gis_sample), the inner side being the whole table with its
-- index; its time is multiplied by k, less k - 1 times its start-up (the
-- same plan over 10 outer rows).  Where k = 1 it is the whole join and the
-- rows form runs too, so the answers are compared exactly (the table's
-- same column); else the scaled count is compared with simjoin's.  JIT is
-- off: it only adds compile time to these plans.  The tables are unlogged;
-- after its build the index and the table are read into shared buffers
-- (pg_prewarm, where installed) before PostGIS's runs.
-- psql variables (run.sh: SJ_BENCH_OPTS="-v name=value ..."):
--   gis_scale    (1) multiplies every table's size: 0.01 for a quick check
--   gis_sample   (200000) outer rows of PostGIS's sample
--   gis_reps     (3) GPU count runs after a warm-up (CPU count: the same
--                up to 2 M points, else one run)
--   gis_max_rows (150000000) see sql rows
--   gis_timeout  (90s) a limit on each statement of simjoin's rows and of
--                PostGIS's (one a workload each), the run that passes it
--                recorded as a lower bound
--   gis_part     (all) all, 2m, 10m or geog
-- Skipped where PostGIS is not installed.
\set ON_ERROR_STOP 1
SELECT NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis')
    AS no_postgis \gset
\if :no_postgis
\echo 'postgis_bench: PostGIS is not installed, skipped'
\quit
\endif
\if :{?gis_scale}
\else
\set gis_scale 1
\endif
\if :{?gis_sample}
\else
\set gis_sample 200000
\endif
\if :{?gis_reps}
\else
\set gis_reps 3
\endif
\if :{?gis_max_rows}
\else
\set gis_max_rows 150000000
\endif
\if :{?gis_timeout}
\else
\set gis_timeout 90s
\endif
\if :{?gis_part}
\else
\set gis_part all
\endif
CREATE EXTENSION IF NOT EXISTS postgis;
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm') AS gis_prewarm \gset
\if :gis_prewarm
CREATE EXTENSION IF NOT EXISTS pg_prewarm;
\endif
SET max_parallel_workers_per_gather = 8;
SET maintenance_work_mem = '2GB';
SET jit = off;
SET client_min_messages = notice;
SELECT set_config('sjb.gis_scale', :'gis_scale', false), set_config('sjb.gis_sample', :'gis_sample', false),
       set_config('sjb.gis_reps', :'gis_reps', false), set_config('sjb.gis_max_rows', :'gis_max_rows', false),
       set_config('sjb.gis_t0', clock_timestamp()::text, false) \gset sjb_cfg_

-- seconds since the start of this file (printed as it goes: the time each
-- step took on the way)
CREATE OR REPLACE FUNCTION sjb_gis_elapsed() RETURNS text LANGUAGE sql AS $$
SELECT round(extract(epoch FROM clock_timestamp() - current_setting('sjb.gis_t0')::timestamptz)::numeric, 1) || ' s'
$$;

-- what each dataset and workload took besides the joins
CREATE TABLE IF NOT EXISTS sjb_gis_tables (
    tbl text, n bigint, gen_ms float8, index_ms float8, at timestamptz DEFAULT now());
CREATE TABLE IF NOT EXISTS sjb_gis_work (
    workload text, tbl text, n bigint, d float8, k int, indexed_plan text,
    startup_ms float8, at timestamptz DEFAULT now());

-- drop the helper tables (quietly: no notice where they are not there)
CREATE OR REPLACE FUNCTION sjb_gis_drop() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('sjb_gis_s') IS NOT NULL THEN
        DROP TABLE sjb_gis_s, sjb_gis_s0;
    END IF;
    IF to_regclass('sjb_gis_base') IS NOT NULL THEN
        DROP TABLE sjb_gis_base;
    END IF;
END $$;

-- n_full x gis_scale points (a multiple of 100) of a kind ('uniform',
-- 'city' or 'geog') into an unlogged table tbl (id int, g geometry(Point,
-- 3857) or geography(Point)), generated by parallel workers from a table
-- of n / 100 blocks of rows
CREATE OR REPLACE FUNCTION sjb_gis_gen(tbl text, n_full bigint, kind text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    n bigint := greatest(100, round(n_full * current_setting('sjb.gis_scale')::float8 / 100) * 100);
    -- coordinates of row i: uniform, city-like (see the header: city c,
    -- spread s) or on the sphere (longitude uniform, latitude the asin of
    -- a uniform)
    pt text := CASE kind
        WHEN 'uniform' THEN 'ST_SetSRID(ST_MakePoint(sjb_u(i, 1) * 1000, sjb_u(i, 2) * 1000), 3857)'
        WHEN 'city' THEN $e$ST_SetSRID(CASE WHEN sjb_u(i, 3) < 0.1
            THEN ST_MakePoint(sjb_u(i, 1) * 1000, sjb_u(i, 2) * 1000)
            ELSE ST_MakePoint(
                50 + 900 * sjb_u(c, 11) + s * sqrt(-2 * ln(sjb_u(i, 5))) * cos(2 * pi() * sjb_u(i, 6)),
                50 + 900 * sjb_u(c, 12) + s * sqrt(-2 * ln(sjb_u(i, 5))) * sin(2 * pi() * sjb_u(i, 6))) END, 3857)$e$
        WHEN 'geog' THEN 'ST_MakePoint(sjb_u(i, 1) * 360 - 180, degrees(asin(sjb_u(i, 2) * 2 - 1)))' END;
    typ text := CASE kind WHEN 'geog' THEN 'geography(Point)' ELSE 'geometry(Point, 3857)' END;
BEGIN
    PERFORM sjb_gis_drop();
    CREATE UNLOGGED TABLE sjb_gis_base AS SELECT b FROM generate_series(0, n / 100 - 1) b;
    ALTER TABLE sjb_gis_base SET (parallel_workers = 8);
    ANALYZE sjb_gis_base;
    IF to_regclass(tbl) IS NOT NULL THEN
        EXECUTE format('DROP TABLE %I', tbl);
    END IF;
    -- city c of row i: log-uniform over 0 .. 999 (P(c) = log_1000((c + 2)
    -- / (c + 1))); its spread s grows with its share of the points as
    -- share^0.4, 6 for the largest
    EXECUTE format($q$CREATE UNLOGGED TABLE %I AS
        SELECT i::int AS id, %s::%s AS g
        FROM (SELECT i, c, 6 * power(ln((c + 2)::float8 / (c + 1)) / ln(2::float8), 0.4) AS s
              FROM (SELECT i, least(999, floor(power(1000, sjb_u(i, 4)))::int - 1) AS c
                    FROM sjb_gis_base, generate_series(b * 100, b * 100 + 99) i) r) p$q$,
        tbl, pt, typ);
    EXECUTE format('ALTER TABLE %I SET (parallel_workers = 8)', tbl);
    EXECUTE format('ANALYZE %I', tbl);
    DROP TABLE sjb_gis_base;
    INSERT INTO sjb_gis_tables(tbl, n, gen_ms)
    VALUES (tbl, n, extract(epoch FROM clock_timestamp() - t0) * 1000);
    RAISE NOTICE '% | % points (%) generated in % ms (at %)', tbl, n, kind,
        round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000), sjb_gis_elapsed();
END $$;

-- sjb_time, where an error is recorded (strategy 'error: ...') and the
-- run goes on: the benchmark runs once on the GPU host
CREATE OR REPLACE FUNCTION sjb_gis_time(workload text, form text, engine text,
                                        q text, reps int DEFAULT 3, scale float8 DEFAULT 1)
RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
    RETURN sjb_time(workload, form, engine, q, reps, scale);
EXCEPTION WHEN OTHERS THEN
    INSERT INTO sjb_results(workload, form, engine, ms, strategy, runs)
    VALUES (workload, form, engine, NULL, 'error: ' || SQLERRM, 0);
    RAISE NOTICE '% | % | % | ERROR: %', workload, form, engine, SQLERRM;
    RETURN NULL;
END $$;

-- the latest dataset of a table
CREATE OR REPLACE FUNCTION sjb_gis_table(tbl text) RETURNS sjb_gis_tables
LANGUAGE sql AS $$
SELECT * FROM sjb_gis_tables t WHERE t.tbl = $1 ORDER BY at DESC LIMIT 1
$$;

-- the workload's name: table, size and distance (at this scale)
CREATE OR REPLACE FUNCTION sjb_gis_name(tbl text, d float8) RETURNS text
LANGUAGE sql AS $$
SELECT format('%s n=%s d=%s', $1, (sjb_gis_table($1)).n, round($2::numeric, 4))
$$;

-- d at full size, at this scale: the same neighbours a point
CREATE OR REPLACE FUNCTION sjb_gis_d(d_full float8) RETURNS float8
LANGUAGE sql AS $$
SELECT $1 / sqrt(current_setting('sjb.gis_scale')::float8)
$$;

-- simjoin's rows of one workload (before the GiST index exists): the
-- count on the GPU and on the CPU engine, then the plain SQL join forming
-- every pair where there are at most gis_max_rows x scale of them; with
-- sql_count the plain SQL count(*) too
CREATE OR REPLACE FUNCTION sjb_gis_simjoin(tbl text, d_full float8, sql_count boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    e text := CASE WHEN EXISTS (SELECT FROM simjoin_devices()) THEN 'gpu' ELSE 'cpu' END;
    d float8 := sjb_gis_d(d_full);
    w text := sjb_gis_name(tbl, d);
    n bigint := (sjb_gis_table(tbl)).n;
    reps int := current_setting('sjb.gis_reps')::int;
    cnt text := format('SELECT eps_join_count(%L, %L, %L, %s)', tbl, 'id', 'g', d);
    pairs bigint;
    eng text;
BEGIN
    INSERT INTO sjb_gis_work(workload, tbl, n, d) VALUES (w, tbl, n, d);
    PERFORM sjb_gis_time(w, 'count', 'gpu', cnt, reps);
    PERFORM sjb_gis_time(w, 'count', 'cpu', cnt, CASE WHEN n <= 2000000 THEN reps ELSE 1 END);
    SELECT result INTO pairs FROM sjb_results r WHERE r.workload = w AND r.form = 'count'
        AND r.engine IN ('gpu', 'cpu') AND r.result IS NOT NULL ORDER BY r.at DESC LIMIT 1;
    RAISE NOTICE '% | % pairs, % neighbours a point (at %)', w, pairs, round(2.0 * pairs / n, 1), sjb_gis_elapsed();
    IF pairs IS NULL OR 2 * pairs > current_setting('sjb.gis_max_rows')::float8 * current_setting('sjb.gis_scale')::float8 THEN
        INSERT INTO sjb_results(workload, form, engine, ms, strategy, runs)
        VALUES (w, 'sql rows, a.id < b.id', e, NULL, 'skipped: 2 x pairs > gis_max_rows', 0);
        RAISE NOTICE '% | sql rows | skipped: % pairs (gis_max_rows)', w, pairs;
        RETURN;
    END IF;
    -- on the CPU engine alone where no GPU is visible (a check of the SQL)
    FOREACH eng IN ARRAY CASE WHEN e = 'gpu' THEN '{gpu,cpu,auto}'::text[] ELSE '{cpu}' END LOOP
        PERFORM sjb_gis_time(w, 'sql rows, a.id < b.id', eng,
            format('SELECT sum(a.id + b.id) FROM %I a JOIN %I b ON ST_DWithin(a.g, b.g, %s) AND a.id < b.id', tbl, tbl, d),
            1);
    END LOOP;
    IF sql_count THEN
        PERFORM sjb_gis_time(w, 'sql count, a.id < b.id', e,
            format('SELECT count(*) FROM %I a JOIN %I b ON ST_DWithin(a.g, b.g, %s) AND a.id < b.id', tbl, tbl, d),
            1);
    END IF;
END $$;

-- the GiST index, timed; then the outer rows of PostGIS's sample: every
-- k-th row, k = n / gis_sample (none where k = 1: the whole table)
CREATE OR REPLACE FUNCTION sjb_gis_index(tbl text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    ms float8;
    t sjb_gis_tables := sjb_gis_table(tbl);
    k int := greatest(1, t.n / current_setting('sjb.gis_sample')::bigint);
BEGIN
    EXECUTE format('CREATE INDEX ON %I USING gist (g)', tbl);
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    EXECUTE format('ANALYZE %I', tbl);
    UPDATE sjb_gis_tables u SET index_ms = ms WHERE u.tbl = t.tbl AND u.at = t.at;
    RAISE NOTICE '% | GiST index built in % ms (at %)', tbl, round(ms::numeric), sjb_gis_elapsed();
    -- the sorted build writes the index past shared buffers, and a sample
    -- scaled by k would pay its first reads k times: read it (and the
    -- table) into shared buffers first
    IF EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_prewarm') THEN
        t0 := clock_timestamp();
        PERFORM pg_prewarm(tbl::regclass);
        PERFORM pg_prewarm(indexrelid) FROM pg_index WHERE indrelid = tbl::regclass;
        RAISE NOTICE '% | table and index read into shared buffers in % ms', tbl,
            round(extract(epoch FROM clock_timestamp() - t0)::numeric * 1000);
    ELSE
        RAISE NOTICE '% | pg_prewarm is not installed: the index is read on the first PostGIS run', tbl;
    END IF;
    PERFORM sjb_gis_drop();
    IF k > 1 THEN
        EXECUTE format('CREATE UNLOGGED TABLE sjb_gis_s AS SELECT * FROM %I WHERE id %% %s = 0', tbl, k);
        EXECUTE format('CREATE UNLOGGED TABLE sjb_gis_s0 AS SELECT * FROM %I WHERE id %% %s = 0', tbl, t.n / 10);
        ALTER TABLE sjb_gis_s SET (parallel_workers = 8);
        ALTER TABLE sjb_gis_s0 SET (parallel_workers = 8);
        ANALYZE sjb_gis_s, sjb_gis_s0;
    END IF;
END $$;

-- PostGIS's plan of one workload (after sjb_gis_index): the outer rows of
-- the 1-in-k sample against the whole table, its time times k less k - 1
-- times its start-up (what the plan takes over the 10 outer rows of
-- sjb_gis_s0: launching the workers, paid once by the whole join); where
-- k = 1 the whole join, and the rows form too.  First the plan the plain
-- SQL join gets with the index there and simjoin's node on.  A statement
-- of its own, so that statement_timeout bounds it.
CREATE OR REPLACE FUNCTION sjb_gis_native(tbl text, d_full float8)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d float8 := sjb_gis_d(d_full);
    w text := sjb_gis_name(tbl, d);
    n bigint := (sjb_gis_table(tbl)).n;
    kk int := greatest(1, n / current_setting('sjb.gis_sample')::bigint);  -- the sample's k
    rows_q text := format('SELECT sum(a.id + b.id) FROM %I a JOIN %I b ON ST_DWithin(a.g, b.g, %s) AND a.id < b.id',
                          tbl, tbl, d);
    q text := format('SELECT count(*) FROM %I a JOIN %I b ON ST_DWithin(a.g, b.g, %s) AND a.id < b.id',
                     CASE WHEN kk = 1 THEN tbl ELSE 'sjb_gis_s' END, tbl, d);
    js jsonb;
    old_cs text;
    old_dev text;
    t0 timestamptz;
    start_ms float8 := 0;
    i int;
BEGIN
    UPDATE sjb_gis_work x SET k = kk WHERE x.workload = w;
    old_cs := sjb_set('simjoin.enable_customscan', 'on');
    old_dev := sjb_set('simjoin.device', CASE WHEN EXISTS (SELECT FROM simjoin_devices()) THEN 'gpu' ELSE 'cpu' END);
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || rows_q INTO js;
    PERFORM sjb_set('simjoin.enable_customscan', old_cs);
    PERFORM sjb_set('simjoin.device', old_dev);
    UPDATE sjb_gis_work x SET indexed_plan = sjb_plan_shape(js->0->'Plan') WHERE x.workload = w;
    IF kk > 1 THEN
        PERFORM sjb_set('simjoin.enable_customscan', 'off');
        FOR i IN 1..3 LOOP  -- the last of three
            t0 := clock_timestamp();
            EXECUTE replace(q, 'sjb_gis_s', 'sjb_gis_s0');
            start_ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
        END LOOP;
        PERFORM sjb_set('simjoin.enable_customscan', old_cs);
        UPDATE sjb_gis_work x SET startup_ms = start_ms WHERE x.workload = w;
    END IF;
    PERFORM sjb_gis_time(w, 'count', 'native', q, 1, kk);
    IF kk > 1 THEN
        UPDATE sjb_results r SET ms = r.ms - (kk - 1) * start_ms
        WHERE r.workload = w AND r.form = 'count' AND r.engine = 'native'
          AND r.at = (SELECT max(at) FROM sjb_results u WHERE u.workload = w AND u.form = 'count' AND u.engine = 'native');
        RAISE NOTICE '% | count | native | % ms: scaled by % less % x its start-up of % ms', w,
            (SELECT round(ms::numeric, 1) FROM sjb_results r WHERE r.workload = w AND r.form = 'count' AND r.engine = 'native'
             ORDER BY at DESC LIMIT 1), kk, kk - 1, round(start_ms::numeric, 1);
    END IF;
    IF kk = 1 THEN
        PERFORM sjb_gis_time(w, 'sql rows, a.id < b.id', 'native', rows_q, 1);
    END IF;
END $$;

-- one dataset: \set tbl, n (full size), kind, d1 and d2 (at full size) first
\set gis_run 'SELECT sjb_gis_gen(:''tbl'', :n, :''kind''); SET statement_timeout = :''gis_timeout''; SELECT sjb_gis_simjoin(:''tbl'', :d1, :n <= 2000000); SELECT sjb_gis_simjoin(:''tbl'', :d2); RESET statement_timeout; SELECT sjb_gis_index(:''tbl''); SET statement_timeout = :''gis_timeout''; SELECT sjb_gis_native(:''tbl'', :d1); SELECT sjb_gis_native(:''tbl'', :d2); RESET statement_timeout; DROP TABLE :"tbl"; SELECT sjb_gis_drop()'

SELECT :'gis_part' IN ('all', '2m') AS gis_2m, :'gis_part' IN ('all', '10m') AS gis_10m,
       :'gis_part' IN ('all', 'geog') AS gis_geog \gset
-- d at full size for about 5 and 50 neighbours a point; uniform: 2 (10)
-- points a unit square, 2 pi d^2 (10 pi d^2) neighbours
\if :gis_2m
\set tbl gis2m
\set n 2000000
\set kind uniform
\set d1 0.9
\set d2 2.8
:gis_run;
\set tbl gis2mclu
\set kind city
\set d1 0.087
\set d2 0.28
:gis_run;
\endif
\if :gis_10m
\set tbl gis10m
\set n 10000000
\set kind uniform
\set d1 0.4
\set d2 1.26
:gis_run;
\set tbl gis10mclu
\set kind city
\set d1 0.039
\set d2 0.123
:gis_run;
\endif
\if :gis_geog
-- the globe: 1.96e-9 points a square metre
\set tbl geog1m
\set n 1000000
\set kind geog
\set d1 28500
\set d2 90000
:gis_run;
\endif

-- the table: times, ratios against PostGIS's plan, answers compared
SELECT 'postgis_bench: done at ' || sjb_gis_elapsed() AS elapsed \gset
\echo :elapsed
\echo
\echo 'PostGIS points (ms: median wall time; PostGIS: its GiST nested loop on a'
\echo '1-in-k sample of the outer rows times k, index build apart; x_*: PostGIS'
\echo 'time / simjoin time; same: simjoin GPU and CPU counts agree, and with'
\echo 'PostGIS where k = 1 (yes/NO), else the scaled PostGIS count / simjoin''s)'
CREATE OR REPLACE TEMP VIEW sjb_gis_latest AS
SELECT DISTINCT ON (workload, form, engine) *
FROM sjb_results WHERE workload IN (SELECT workload FROM sjb_gis_work)
ORDER BY workload, form, engine, at DESC;
SELECT w.tbl, w.n, round(w.d::numeric, 4) AS d,
       round(2.0 * coalesce(g.result, c.result) / w.n, 1) AS nbrs,
       coalesce(g.result, c.result) AS pairs,
       round(g.ms::numeric, 1) AS gpu_count,
       round(c.ms::numeric, 1) AS cpu_count,
       round(s.ms::numeric, 1) AS sql_rows,
       round(sc.ms::numeric, 1) AS sql_count,
       s.engine || CASE WHEN s.engine = 'auto' THEN coalesce(' (' || split_part(s.strategy, ':', 1) || ')', '')
                        ELSE '' END AS sql_on,
       round(sg.ms::numeric, 1) AS sql_rows_gpu,
       round(scp.ms::numeric, 1) AS sql_rows_cpu,
       round(p.ms::numeric) AS postgis,
       w.k,
       round(t.index_ms::numeric) AS index_ms,
       round(t.gen_ms::numeric) AS gen_ms,
       round((p.ms / nullif(g.ms, 0))::numeric, 1) AS x_gpu,
       round((p.ms / nullif(c.ms, 0))::numeric, 1) AS x_cpu,
       round((coalesce(pr.ms, p.ms) / nullif(s.ms, 0))::numeric, 1) AS x_sql,
       round((coalesce(pr.ms, p.ms) / nullif(sg.ms, 0))::numeric, 1) AS x_sql_gpu,
       round((coalesce(pr.ms, p.ms) / nullif(scp.ms, 0))::numeric, 1) AS x_sql_cpu,
       round((p.ms / nullif(sc.ms, 0))::numeric, 1) AS x_sqlc,
       concat_ws(', ',
           CASE WHEN g.result IS NULL OR c.result IS NULL THEN NULL
                WHEN g.result = c.result THEN 'gpu=cpu yes' ELSE 'gpu=cpu NO' END,
           CASE WHEN p.result IS NULL OR coalesce(g.result, c.result) IS NULL THEN NULL
                WHEN w.k = 1 AND p.result = coalesce(g.result, c.result) THEN 'postgis yes'
                WHEN w.k = 1 THEN format('postgis NO (%s)', p.result)
                ELSE format('postgis x%s', round(p.result::numeric * w.k / nullif(coalesce(g.result, c.result), 0), 3)) END,
           CASE WHEN sc.result IS NULL OR coalesce(g.result, c.result) IS NULL THEN NULL
                WHEN sc.result = coalesce(g.result, c.result) THEN 'sql count yes'
                ELSE format('sql count NO (%s)', sc.result) END,
           CASE WHEN pr.result IS NULL OR s.result IS NULL THEN NULL
                WHEN pr.result = s.result THEN 'sql sum yes' ELSE format('sql sum NO (%s, %s)', s.result, pr.result) END,
           CASE WHEN s.ms IS NULL AND s.strategy IS NOT NULL THEN 'sql: ' || s.strategy END) AS same,
       (SELECT string_agg(e.engine || ' ' || e.form || ': ' || e.strategy, '; ')
        FROM sjb_gis_latest e WHERE e.workload = w.workload AND e.strategy LIKE 'error%') AS errors,
       p.plan AS postgis_plan,
       w.indexed_plan AS sql_plan_with_index
FROM (SELECT DISTINCT ON (workload) * FROM sjb_gis_work ORDER BY workload, at DESC) w
LEFT JOIN LATERAL (SELECT * FROM sjb_gis_tables t WHERE t.tbl = w.tbl AND t.at <= w.at ORDER BY t.at DESC LIMIT 1) t ON true
LEFT JOIN sjb_gis_latest g ON g.workload = w.workload AND g.form = 'count' AND g.engine = 'gpu'
LEFT JOIN sjb_gis_latest c ON c.workload = w.workload AND c.form = 'count' AND c.engine = 'cpu'
LEFT JOIN sjb_gis_latest p ON p.workload = w.workload AND p.form = 'count' AND p.engine = 'native'
LEFT JOIN sjb_gis_latest pr ON pr.workload = w.workload AND pr.form = 'sql rows, a.id < b.id' AND pr.engine = 'native'
LEFT JOIN LATERAL (SELECT * FROM sjb_gis_latest s WHERE s.workload = w.workload AND s.form = 'sql rows, a.id < b.id'
                   AND s.engine IN ('auto', 'gpu', 'cpu') ORDER BY s.engine = 'auto' DESC, s.engine = 'gpu' DESC LIMIT 1) s ON true
LEFT JOIN sjb_gis_latest sg ON sg.workload = w.workload AND sg.form = 'sql rows, a.id < b.id' AND sg.engine = 'gpu'
LEFT JOIN sjb_gis_latest scp ON scp.workload = w.workload AND scp.form = 'sql rows, a.id < b.id' AND scp.engine = 'cpu'
LEFT JOIN LATERAL (SELECT * FROM sjb_gis_latest s WHERE s.workload = w.workload AND s.form = 'sql count, a.id < b.id'
                   AND s.engine IN ('gpu', 'cpu') ORDER BY s.engine = 'gpu' DESC LIMIT 1) sc ON true
ORDER BY w.at;
