-- report.sql: the benchmark table, with ratios to the native plan of the
-- same workload and to the CPU engine for the same workload and form
SELECT workload, form, engine,
       round(ms::numeric, 1) AS ms,
       result,
       round((SELECT n.ms FROM sjb_results n WHERE n.workload = r.workload
              AND n.engine = 'native' ORDER BY n.at DESC LIMIT 1)::numeric
             / nullif(ms, 0)::numeric, 1) AS x_native,
       round((SELECT c.ms FROM sjb_results c WHERE c.workload = r.workload
              AND c.engine = 'cpu' AND c.form = r.form ORDER BY c.at DESC LIMIT 1)::numeric
             / nullif(ms, 0)::numeric, 1) AS x_cpu,
       round(scan_ms::numeric, 1) AS scan, round(build_ms::numeric, 1) AS build,
       round(probe_ms::numeric, 1) AS probe, round(transfer_ms::numeric, 1) AS xfer,
       round(emit_ms::numeric, 1) AS emit, strategy
FROM sjb_results r
ORDER BY workload, form, engine DESC;
