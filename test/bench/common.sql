-- common.sql: timing helpers of the benchmarks (not tests: they report speed)
CREATE EXTENSION IF NOT EXISTS simjoin;
CREATE EXTENSION IF NOT EXISTS cube;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE IF NOT EXISTS sjb_results (
    workload text, form text, engine text, ms float8, result bigint,
    scan_ms float8, build_ms float8, probe_ms float8, transfer_ms float8,
    emit_ms float8, strategy text, runs int, at timestamptz DEFAULT now());
-- plan: the shape of the plan q ran with (sjb_plan_shape), e.g.
-- 'Aggregate(SimJoin)' or 'Finalize Aggregate(Gather x8(...))'; ' +JIT'
-- where the plan's cost turns on JIT compilation
ALTER TABLE sjb_results ADD COLUMN IF NOT EXISTS plan text;
-- scan_workers: parallel workers that read an input (simjoin_last_stats)
ALTER TABLE sjb_results ADD COLUMN IF NOT EXISTS scan_workers int;

-- uniform in (0, 1) from two integers: deterministic data in SQL
CREATE OR REPLACE FUNCTION sjb_u(a bigint, b int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT ((hashint8(a * 8191 + b)::bigint & 16777215) + 0.5::float8) / 16777216.0::float8 $$;

-- row numbers 0 .. n-1 in a table, so that the generating SELECT runs in
-- parallel workers (a function scan would not)
CREATE OR REPLACE FUNCTION sjb_ids(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS sjb_id;
    CREATE TABLE sjb_id AS SELECT i FROM generate_series(0, n - 1) i;
    ALTER TABLE sjb_id SET (parallel_workers = 8);
    ANALYZE sjb_id;
END $$;

-- a standard normal from two integers
CREATE OR REPLACE FUNCTION sjb_g(a bigint, b int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT sqrt(-2 * ln(sjb_u(a, 2 * b))) * cos(2 * pi() * sjb_u(a, 2 * b + 1)) $$;

-- n points, copies of n/10 centres uniform in [0,1]^dim, each coordinate
-- jittered by at most jit
CREATE OR REPLACE FUNCTION sjb_clustered(name text, n int, dim int, jit float8)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM sjb_ids(n);
    EXECUTE format('DROP TABLE IF EXISTS %I', name);
    EXECUTE format($q$CREATE TABLE %I AS
        SELECT i AS id, ARRAY(SELECT (sjb_u(i / 10, k) + (sjb_u(i + 1000000000, k) - 0.5) * 2 * %s)::float4
                              FROM generate_series(1, %s) k) AS v
        FROM sjb_id$q$, name, jit, dim);
    EXECUTE format('ANALYZE %I', name);
END $$;

-- a set a row of sjb_id: 5 to 45 Zipf-like tokens (P(k) ~ 1/k) over 50 K
-- distinct (average 25: jaccard_bench.sql's z50k25), from hashes
CREATE OR REPLACE FUNCTION sjb_zipf_sets(name text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', name);
    EXECUTE format($q$CREATE TABLE %I AS
        SELECT i AS id, ARRAY(SELECT floor(exp(sjb_u(i + 2000000000, g) * ln(50000)))::int
                              FROM generate_series(1, 5 + i %% 41) g) AS s
        FROM sjb_id$q$, name);
    EXECUTE format('ANALYZE %I', name);
END $$;

-- n unit-scale points: 1,000 Gaussian components N(c_m, s_m^2) with spread
-- s_m in [0.1, 0.5], n/10 sub-centres drawn from them, 10 near-copies of
-- each (noise 0.05 s_m): cosine neighbours are the near-copies.  The
-- centre is unnested once a row (a subscript would detoast it per element)
CREATE OR REPLACE FUNCTION sjb_mixture(name text, n int, dim int)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS sjb_comp;
    CREATE TABLE sjb_comp AS
        SELECT m, 0.1 + 0.4 * sjb_u(m, 777777) AS s,
               ARRAY(SELECT sjb_g(m, k) FROM generate_series(1, dim) k) AS c
        FROM generate_series(0, 999) m;
    PERFORM sjb_ids(n);
    EXECUTE format('DROP TABLE IF EXISTS %I', name);
    EXECUTE format($q$CREATE TABLE %I AS
        SELECT i AS id,
               ARRAY(SELECT (u.c + p.s * (2 * sjb_u(i / 10 + 2000000000, u.k::int) - 1)
                             + 0.05 * p.s * (2 * sjb_u(i + 3000000000, u.k::int) - 1))::float4
                     FROM unnest(p.c) WITH ORDINALITY AS u(c, k)) AS v
        FROM sjb_id JOIN sjb_comp p ON p.m = (i / 10) %% 1000$q$, name);
    EXECUTE format('ANALYZE %I', name);
END $$;

-- Set a setting of this transaction if it exists (simjoin.enable_customscan
-- is absent from builds without the planner node); returns the old value.
CREATE OR REPLACE FUNCTION sjb_set(name text, value text) RETURNS text
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

-- The shape of a plan (one node of EXPLAIN (FORMAT JSON)): node types,
-- scans left out, custom scans by provider ("Parallel SimJoin": the inner
-- read once by all participants), Gather with its workers.
CREATE OR REPLACE FUNCTION sjb_plan_shape(p jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    name text := CASE WHEN p ? 'Custom Plan Provider' AND (p->>'Parallel Aware')::boolean
                      THEN 'Parallel ' ELSE '' END
                 || coalesce(p->>'Custom Plan Provider', p->>'Node Type')
                 || coalesce(' x' || (p->>'Workers Planned'), '');
    kids text;
BEGIN
    SELECT string_agg(k, ', ') INTO kids
    FROM (SELECT sjb_plan_shape(c) AS k
          FROM jsonb_array_elements(coalesce(p->'Plans', '[]')) WITH ORDINALITY AS x(c, o)
          ORDER BY o) s
    WHERE k IS NOT NULL;
    IF NOT (p ? 'Custom Plan Provider') AND p->>'Node Type' LIKE '%Scan'
       AND kids IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN name || coalesce('(' || kids || ')', '');
END $$;


-- Run q (returning one number) reps times on one engine after one warm-up
-- run; record the median wall time and the phases of the median run.
-- scale multiplies the time (a native plan timed on a sample of the input).
-- engine: 'gpu', 'cpu' or 'auto' (simjoin.device, with
-- simjoin.enable_customscan on; auto's strategy is recorded after the
-- device it took), or 'native' (simjoin.enable_customscan off: PostgreSQL's
-- own plan).
-- Forms named 'sql ...' are plain SQL joins meant to run as Custom Scan
-- (SimJoin): on gpu/cpu/auto they are skipped (recorded with ms NULL and
-- strategy 'not SimJoin: skipped') when the plan has no SimJoin node, since
-- PostgreSQL's plan for them can take days; SET sjb.run_without_simjoin = on
-- runs them anyway (under statement_timeout).
CREATE OR REPLACE FUNCTION sjb_time(workload text, form text, engine text,
                                    q text, reps int DEFAULT 3, scale float8 DEFAULT 1)
RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz; res bigint; st record; i int; med int;
    ms float8[] := '{}'; sc float8[] := '{}'; bu float8[] := '{}';
    pr float8[] := '{}'; tr float8[] := '{}'; em float8[] := '{}';
    strat text[] := '{}'; wk int[] := '{}';
    old_device text; old_cs text; js jsonb; shape text; node boolean;
    ran boolean;  -- a simjoin join ran (else its stats are an earlier join's)
BEGIN
    IF engine = 'gpu' AND NOT EXISTS (SELECT FROM simjoin_devices()) THEN
        RAISE NOTICE '% | % | % | skipped: no usable GPU', workload, form, engine;
        RETURN NULL;
    END IF;
    IF engine IN ('gpu', 'cpu', 'auto') THEN
        old_device := sjb_set('simjoin.device', engine);
        old_cs := sjb_set('simjoin.enable_customscan', 'on');
    ELSIF engine = 'native' THEN
        old_cs := sjb_set('simjoin.enable_customscan', 'off');
    END IF;
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO js;
    shape := sjb_plan_shape(js->0->'Plan')
             || CASE WHEN js->0 ? 'JIT' THEN ' +JIT' ELSE '' END;
    node := jsonb_path_exists(js, 'lax $.**."Custom Plan Provider" ? (@ == "SimJoin")');
    IF engine IN ('gpu', 'cpu', 'auto') AND form LIKE 'sql%' AND NOT node
       AND coalesce(current_setting('sjb.run_without_simjoin', true), 'off') <> 'on' THEN
        INSERT INTO sjb_results(workload, form, engine, ms, strategy, runs, plan)
        VALUES (workload, form, engine, NULL, 'not SimJoin: skipped', 0, shape);
        RAISE NOTICE '% | % | % | skipped: planned as %', workload, form, engine, shape;
        PERFORM sjb_set('simjoin.device', old_device);
        PERFORM sjb_set('simjoin.enable_customscan', old_cs);
        RETURN NULL;
    END IF;
    FOR i IN (CASE WHEN reps > 1 THEN 0 ELSE 1 END)..reps LOOP
        t0 := clock_timestamp();
        BEGIN
            EXECUTE q INTO res;  -- run 0: warm-up (CUDA start-up, caches)
        EXCEPTION WHEN query_canceled THEN
            -- statement_timeout: record the limit, as a lower bound
            INSERT INTO sjb_results(workload, form, engine, ms, result, strategy, runs, plan)
            VALUES (workload, form, engine,
                    extract(epoch FROM clock_timestamp() - t0) * 1000, NULL, 'timed out', 1, shape);
            RAISE NOTICE '% | % | % | timed out after % ms', workload, form, engine,
                round((extract(epoch FROM clock_timestamp() - t0) * 1000)::numeric);
            PERFORM sjb_set('simjoin.device', old_device);
            PERFORM sjb_set('simjoin.enable_customscan', old_cs);
            RETURN NULL;
        END;
        CONTINUE WHEN i = 0;
        ms := ms || (extract(epoch FROM clock_timestamp() - t0) * 1000 * scale)::float8;
        SELECT * INTO st FROM simjoin_last_stats();
        sc := sc || st.scan_ms; bu := bu || st.build_ms; pr := pr || st.probe_ms;
        tr := tr || st.transfer_ms; em := em || st.emit_ms;
        -- auto: the device it took
        strat := strat || CASE WHEN engine = 'auto' THEN st.device || ': ' || st.strategy
                               ELSE st.strategy END;
        wk := wk || st.scan_workers;
    END LOOP;
    SELECT o.i INTO med FROM (SELECT g AS i, ms[g] AS m FROM generate_series(1, reps) g
                              ORDER BY 2 OFFSET (reps - 1) / 2 LIMIT 1) o;
    ran := NOT (engine = 'native' OR (form LIKE 'sql%' AND NOT node));
    IF NOT ran THEN
        -- no simjoin join ran: simjoin_last_stats() is an earlier join's
        INSERT INTO sjb_results(workload, form, engine, ms, result, runs, plan)
        VALUES (workload, form, engine, ms[med], res, reps, shape);
    ELSE
        INSERT INTO sjb_results(workload, form, engine, ms, result, scan_ms, build_ms,
                                probe_ms, transfer_ms, emit_ms, strategy, runs, plan,
                                scan_workers)
        VALUES (workload, form, engine, ms[med], res, sc[med], bu[med], pr[med],
                tr[med], em[med], strat[med], reps, shape, wk[med]);
    END IF;
    PERFORM sjb_set('simjoin.device', old_device);
    PERFORM sjb_set('simjoin.enable_customscan', old_cs);
    RAISE NOTICE '% | % | % | % ms | % %', workload, form, engine, round(ms[med]::numeric, 1), res,
        CASE WHEN sc[med] IS NULL OR NOT ran THEN '' ELSE
            format(' | scan %s build %s probe %s transfer %s emit %s ms, %s',
                   round(sc[med]::numeric, 1), round(bu[med]::numeric, 1), round(pr[med]::numeric, 1),
                   round(tr[med]::numeric, 1), round(em[med]::numeric, 1), strat[med]) END;
    RETURN ms[med];
END $$;
