-- common.sql: timing helpers of the benchmarks (not tests: they report speed)
CREATE EXTENSION IF NOT EXISTS simjoin;
CREATE EXTENSION IF NOT EXISTS cube;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE IF NOT EXISTS sjb_results (
    workload text, form text, engine text, ms float8, result bigint,
    scan_ms float8, build_ms float8, probe_ms float8, transfer_ms float8,
    emit_ms float8, strategy text, runs int, at timestamptz DEFAULT now());

-- Run q (returning one bigint) reps times on one engine after one warm-up
-- run; record the median wall time and the phases of the median run.
-- scale multiplies the time (a native plan timed on a sample of the input).
-- engine: 'gpu' or 'cpu' (simjoin.device), or 'native' (simjoin not used).
CREATE OR REPLACE FUNCTION sjb_time(workload text, form text, engine text,
                                    q text, reps int DEFAULT 3, scale float8 DEFAULT 1)
RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz; res bigint; st record; i int; med int;
    ms float8[] := '{}'; sc float8[] := '{}'; bu float8[] := '{}';
    pr float8[] := '{}'; tr float8[] := '{}'; em float8[] := '{}';
    strat text[] := '{}';
BEGIN
    IF engine IN ('gpu', 'cpu') THEN
        PERFORM set_config('simjoin.device', engine, true);
    END IF;
    IF reps > 1 THEN
        EXECUTE q INTO res;      -- warm-up: CUDA start-up, caches
    END IF;
    FOR i IN 1..reps LOOP
        t0 := clock_timestamp();
        BEGIN
            EXECUTE q INTO res;
        EXCEPTION WHEN query_canceled THEN
            -- statement_timeout: record the limit, as a lower bound
            INSERT INTO sjb_results(workload, form, engine, ms, result, strategy, runs)
            VALUES (workload, form, engine,
                    extract(epoch FROM clock_timestamp() - t0) * 1000, NULL, 'timed out', 1);
            RAISE NOTICE '% | % | % | timed out after % ms', workload, form, engine,
                round((extract(epoch FROM clock_timestamp() - t0) * 1000)::numeric);
            RETURN NULL;
        END;
        ms := ms || (extract(epoch FROM clock_timestamp() - t0) * 1000 * scale)::float8;
        SELECT * INTO st FROM simjoin_last_stats();
        sc := sc || st.scan_ms; bu := bu || st.build_ms; pr := pr || st.probe_ms;
        tr := tr || st.transfer_ms; em := em || st.emit_ms; strat := strat || st.strategy;
    END LOOP;
    SELECT o.i INTO med FROM (SELECT g AS i, ms[g] AS m FROM generate_series(1, reps) g
                              ORDER BY 2 OFFSET (reps - 1) / 2 LIMIT 1) o;
    IF engine = 'native' THEN
        INSERT INTO sjb_results(workload, form, engine, ms, result, runs)
        VALUES (workload, form, engine, ms[med], res, reps);
    ELSE
        INSERT INTO sjb_results VALUES (workload, form, engine, ms[med], res,
            sc[med], bu[med], pr[med], tr[med], em[med], strat[med], reps);
    END IF;
    PERFORM set_config('simjoin.device', 'auto', true);
    RAISE NOTICE '% | % | % | % ms | %', workload, form, engine, round(ms[med]::numeric, 1), res;
    RETURN ms[med];
END $$;
