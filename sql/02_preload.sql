-- A new session plans a plain inequality join as Custom Scan (SimJoin)
-- before it has called any simjoin function: the server preloads the
-- library (shared_preload_libraries = 'simjoin').  This EXPLAIN must stay
-- the file's first statement (pg_regress starts a new session per file).
EXPLAIN (COSTS OFF)
SELECT count(*), sum(e.id) FROM sj_ev e JOIN sj_win w ON e.ts > w.t0 + 990000;
SELECT count(*), sum(e.id) FROM sj_ev e JOIN sj_win w ON e.ts > w.t0 + 990000;
SET simjoin.enable_customscan = off;
SELECT count(*), sum(e.id) FROM sj_ev e JOIN sj_win w ON e.ts > w.t0 + 990000;
RESET simjoin.enable_customscan;
SELECT setting ~ 'simjoin' AS preloaded FROM pg_settings WHERE name = 'shared_preload_libraries';
DROP TABLE sj_ev, sj_win;
