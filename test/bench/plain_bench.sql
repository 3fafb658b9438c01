-- plain_bench.sql: where the time of a plain SQL eps join over real[]
-- vectors goes, the custom scan's forms side by side: the count of a
-- table joined with itself (read by parallel workers, one input), the
-- same read as two inputs (a filter on one side only, true of every row),
-- the count with a.id < b.id (every pair formed by the executor, the
-- input read by this process), and eps_join_count's self-join form for
-- reference.  sjb_clustered rows (groups of ten near-copies), cosine, ε =
-- 0.0003.  Each form: medians of three runs after a warm-up, of the wall
-- time and of simjoin_last_stats()'s parts: the scan and marshal (the
-- rows read and handed to the engine), the engine (total less scan and
-- emit) and the emit (pairs formed into rows), and the engine that ran
-- (ran_on: the device simjoin.device = auto chose).  Run after common.sql:
--     psql -v n=200000 -v dim=384 -v dev=gpu -f test/bench/plain_bench.sql
-- -v keep=on keeps the table for the next run (two builds compared on the
-- same rows): a table of n rows made by an earlier run is used as it is.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir rows_dim_dev.psql
\if :{?keep}
\else
\set keep off
\endif
SELECT to_regclass('spb_t') IS NULL AS spb_make \gset
\if :spb_make
\else
SELECT (SELECT count(*) FROM spb_t) <> :n AS spb_make \gset
\endif
\if :spb_make
SELECT sjb_clustered('spb_t', :n, :dim, 0.01);
VACUUM ANALYZE spb_t;
\endif
SET simjoin.device = :'dev';
CREATE TEMP TABLE spb_runs (seq serial, form text, run int, ms float8, n bigint,
                            scan_ms float8, engine_ms float8, emit_ms float8, workers int,
                            ran_on text);
CREATE OR REPLACE FUNCTION spb_time(form text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; r bigint; st record;
BEGIN
    FOR i IN 0..3 LOOP          -- run 0: the warm-up
        t0 := clock_timestamp();
        EXECUTE q INTO r;
        IF i > 0 THEN
            SELECT * INTO st FROM simjoin_last_stats();
            INSERT INTO spb_runs (form, run, ms, n, scan_ms, engine_ms, emit_ms, workers, ran_on)
            VALUES (form, i, extract(epoch FROM clock_timestamp() - t0) * 1000, r,
                    st.scan_ms, st.total_ms - st.scan_ms - coalesce(st.emit_ms, 0),
                    st.emit_ms, st.scan_workers, st.device);
        END IF;
    END LOOP;
END $$;
-- the forms, in this order (%s: the join with its ε clause)
SELECT spb_time(form, format(q, 'spb_t a JOIN spb_t b ON a.v <=> b.v <= 0.0003'))
FROM (VALUES (1, 'count, self-join', 'SELECT count(*) FROM %s'),
             (2, 'count, two inputs', 'SELECT count(*) FROM %s WHERE b.id > -1'),
             (3, 'count, a.id < b.id (pairs formed)', 'SELECT count(*) FROM %s AND a.id < b.id'),
             (4, 'eps_join_count (self-join form)',
              'SELECT eps_join_count(''spb_t'', ''id'', ''v'', 0.0003, ''cosine'')'))
     AS f(k, form, q)
ORDER BY k;
SELECT :'dev' AS device, :n AS rows, :dim AS dim, form, min(n) AS result,
       max(n) = min(n) AS same, string_agg(DISTINCT ran_on, ',') AS ran_on,
       max(workers) AS scan_workers,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1) AS median_ms,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY scan_ms))::numeric, 1) AS scan_ms,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY engine_ms))::numeric, 1) AS engine_ms,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY emit_ms))::numeric, 1) AS emit_ms
FROM spb_runs GROUP BY form ORDER BY min(seq);
DROP FUNCTION spb_time(text, text);
\if :keep
\else
DROP TABLE spb_t;
\endif
