-- report.sql: the benchmark table, with ratios to the native plan of the
-- same workload and to the CPU engine for the same workload and form; then
-- the plain SQL joins (Custom Scan (SimJoin)) against the set-returning
-- functions over the same pairs.
--
-- Forms: 'count' and 'count(*) of pairs' are the functions as the README
-- times them (the self-join forms where the workload is a self-join);
-- 'srf count' and 'srf rows' are the two-table functions over the same
-- table twice, i.e. the ordered pairs a SQL self-join returns, (i, i)
-- included; 'sql count...' is SELECT count(*) FROM a JOIN b ON ...;
-- 'sql rows' is SELECT sum(a.id + b.id) FROM a JOIN b ON ... (every pair
-- goes through the executor), 'srf rows' the same sum over the function;
-- 'sql count, a.id < b.id' is compared with the self-join form 'count'.
-- Where a plan runs SimJoin under Gather (parallel workers), the phases are
-- those simjoin_last_stats() reports: the leader's share only.
-- A native ('native') time is the same form's when there is one, else the
-- 'count' form's.

-- the latest run of each workload, form and engine
CREATE OR REPLACE TEMP VIEW sjb_latest AS
SELECT DISTINCT ON (workload, form, engine) *
FROM sjb_results ORDER BY workload, form, engine, at DESC;

\echo
\echo 'All runs (ms: median wall time; x_native, x_cpu: how many times faster than'
\echo 'the native plan and than the CPU engine; phases from simjoin_last_stats())'
SELECT workload, form, engine,
       round(ms::numeric, 1) AS ms,
       result,
       round(coalesce(
           (SELECT n.ms FROM sjb_latest n WHERE n.workload = r.workload
              AND n.engine = 'native' AND n.form = r.form),
           (SELECT n.ms FROM sjb_latest n WHERE n.workload = r.workload
              AND n.engine = 'native' AND n.form = 'count'))::numeric
             / nullif(ms, 0)::numeric, 1) AS x_native,
       round((SELECT c.ms FROM sjb_latest c WHERE c.workload = r.workload
              AND c.engine = 'cpu' AND c.form = r.form)::numeric
             / nullif(ms, 0)::numeric, 1) AS x_cpu,
       round(scan_ms::numeric, 1) AS scan, scan_workers AS wk, round(build_ms::numeric, 1) AS build,
       round(probe_ms::numeric, 1) AS probe, round(transfer_ms::numeric, 1) AS xfer,
       round(emit_ms::numeric, 1) AS emit, strategy, plan
FROM sjb_latest r
ORDER BY workload, form, engine DESC;

\echo
\echo 'SQL joins against the set-returning functions over the same pairs'
\echo '(sql_srf = SQL time / function time; count forms: target <= 1.20;'
\echo ' same = the SQL join returned what the function returned)'
SELECT s.workload, s.engine, s.form AS sql_form,
       coalesce(s.result::text, '') AS result,
       round(s.ms::numeric, 1) AS sql_ms,
       f.form AS srf_form,
       round(f.ms::numeric, 1) AS srf_ms,
       round((s.ms / nullif(f.ms, 0))::numeric, 2) AS sql_srf,
       round((s.ms - f.ms)::numeric, 1) AS diff_ms,
       CASE WHEN s.ms IS NULL THEN coalesce(s.strategy, 'no time')
            WHEN s.plan NOT LIKE '%SimJoin%' THEN 'not SimJoin'
            WHEN s.form NOT LIKE 'sql count%' OR f.ms IS NULL THEN ''
            WHEN s.ms <= 1.2 * f.ms THEN 'ok'
            ELSE 'SLOW' END AS verdict,
       CASE WHEN s.result IS NULL OR f.result IS NULL THEN ''
            WHEN s.result = f.result THEN 'yes' ELSE 'NO' END AS same,
       round(coalesce(
           (SELECT n.ms FROM sjb_latest n WHERE n.workload = s.workload
              AND n.engine = 'native' AND n.form = s.form),
           (SELECT n.ms FROM sjb_latest n WHERE n.workload = s.workload
              AND n.engine = 'native' AND n.form = 'count'
              AND s.form LIKE 'sql count%'))::numeric, 1) AS native_ms,
       round(s.scan_ms::numeric, 1) AS scan,
       round((s.build_ms + s.probe_ms + s.transfer_ms)::numeric, 1) AS engine_ms,
       round(s.emit_ms::numeric, 1) AS emit,
       s.plan
FROM sjb_latest s
LEFT JOIN LATERAL (
    SELECT * FROM sjb_latest f
    WHERE f.workload = s.workload AND f.engine = s.engine
      AND f.form = ANY (CASE WHEN s.form LIKE 'sql rows%' THEN '{srf rows}'::text[]
                             WHEN s.form LIKE '%a.id < b.id%' THEN '{count}'::text[]
                             ELSE '{srf count,count}'::text[] END)
    ORDER BY f.form = 'srf count' DESC LIMIT 1) f ON true
WHERE s.form LIKE 'sql%' AND s.engine IN ('gpu', 'cpu')
ORDER BY s.workload, s.form, s.engine DESC;
