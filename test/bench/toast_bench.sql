-- toast_bench.sql: how a vector column's storage changes the scan of a
-- high-dimensional eps_join (docs/sql-reference.md, "Vectors over 2 kB").
-- The same tb_rows x tb_dim real[] rows (groups of 10 near-copies, from
-- hashes) in three tables: the default storage (EXTENDED: out of line, as
-- random floats do not compress), EXTERNAL, and PLAIN (in the row; up to
-- about 2,000 dimensions); the default storage twice, its out-of-line
-- values read through the scan's TOAST reader (src/toastread.c) and, as
-- 'sjt_extended each', each through PostgreSQL's own detoast
-- (simjoin.debug_detoast_each).  Each is counted tb_reps times under each
-- max_parallel_workers_per_gather of tb_workers, with a tiny eps (the
-- engine's part small); the table gives the median scan_ms of
-- simjoin_last_stats() and the relation sizes.  The rows are read in
-- place as the GPU engine reads them (simjoin.debug_row_pieces, for the
-- CPU engine).  Run after common.sql:
--     psql -v tb_rows=40000 -v tb_dim=1536 -f test/bench/toast_bench.sql
\set ON_ERROR_STOP 1
\if :{?tb_rows}
\else
\set tb_rows 40000
\endif
\if :{?tb_dim}
\else
\set tb_dim 1536
\endif
\if :{?tb_reps}
\else
\set tb_reps 5
\endif
\if :{?tb_workers}
\else
\set tb_workers '{0,2}'
\endif
SET client_min_messages = warning;
SELECT set_config('sjt.reps', :'tb_reps', false) AS reps, set_config('sjt.workers', :'tb_workers', false) AS workers \gset
SET simjoin.debug_row_pieces = on;
DROP TABLE IF EXISTS sjt_extended, sjt_external, sjt_plain;
SELECT sjb_ids(:tb_rows);
CREATE TABLE sjt_extended AS
    SELECT i AS id, ARRAY(SELECT (sjb_u(i / 10, k) + (sjb_u(i + 1000000000, k) - 0.5) * 0.02)::float4
                          FROM generate_series(1, :tb_dim) k) AS v
    FROM sjb_id;
CREATE TABLE sjt_external (LIKE sjt_extended);
ALTER TABLE sjt_external ALTER COLUMN v SET STORAGE EXTERNAL;
INSERT INTO sjt_external SELECT * FROM sjt_extended;
CREATE TABLE sjt_plain (LIKE sjt_extended);
ALTER TABLE sjt_plain ALTER COLUMN v SET STORAGE PLAIN;
INSERT INTO sjt_plain SELECT * FROM sjt_extended;
VACUUM ANALYZE sjt_extended, sjt_external, sjt_plain;

CREATE TEMP TABLE sjt_runs (tbl text, workers int, scan_ms float8, scan_workers int, pairs bigint, device text);
DO $$
DECLARE t text; w int; r int; n bigint; s record;
BEGIN
    FOREACH w IN ARRAY current_setting('sjt.workers')::int[] LOOP
        PERFORM set_config('max_parallel_workers_per_gather', w::text, false);
        FOR r IN 0..current_setting('sjt.reps')::int LOOP   -- run 0: warm-up
            FOREACH t IN ARRAY ARRAY['sjt_extended', 'sjt_extended each', 'sjt_external', 'sjt_plain'] LOOP
                -- 'each': the same table, each value through PostgreSQL's detoast
                PERFORM set_config('simjoin.debug_detoast_each', (t LIKE '% each')::text, false);
                n := eps_join_count(split_part(t, ' ', 1), 'id', 'v', 1e-6);
                CONTINUE WHEN r = 0;
                SELECT * INTO s FROM simjoin_last_stats();
                INSERT INTO sjt_runs VALUES (t, w, s.scan_ms, s.scan_workers, n, s.device);
            END LOOP;
            PERFORM set_config('simjoin.debug_detoast_each', 'off', false);
        END LOOP;
    END LOOP;
END $$;
SELECT tbl AS "table", workers AS "workers a gather",
       round((percentile_disc(0.5) WITHIN GROUP (ORDER BY scan_ms))::numeric, 1) AS "scan ms (median)",
       round(min(scan_ms)::numeric, 1) AS "min", round(max(scan_ms)::numeric, 1) AS "max",
       max(scan_workers) AS "scan workers", min(pairs) = max(pairs) AS "same count",
       pg_size_pretty(pg_relation_size(split_part(tbl, ' ', 1))) AS heap,
       pg_size_pretty(pg_total_relation_size(split_part(tbl, ' ', 1))) AS total,
       string_agg(DISTINCT device, ', ') AS device
FROM sjt_runs GROUP BY tbl, workers ORDER BY workers, tbl;
DROP TABLE sjt_extended, sjt_external, sjt_plain, sjb_id;
