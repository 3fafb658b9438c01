-- A new session plans a plain inequality join as Custom Scan (SimJoin)
-- before it has called any simjoin function: the server preloads the
-- library (shared_preload_libraries = 'simjoin').  The EXPLAIN must stay
-- the file's first statement that could load simjoin (pg_regress starts a
-- new session per file); PostgreSQL's own join methods are disabled, which
-- loads nothing, so that the plan is the node's whatever the device's costs.
SET enable_nestloop = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT e.id, w.id FROM sj_ev e JOIN sj_win w ON e.ts > w.t0 + 990000;
RESET enable_nestloop;
RESET enable_hashjoin;
RESET enable_mergejoin;
SELECT count(*), sum(e.id) FROM sj_ev e JOIN sj_win w ON e.ts > w.t0 + 990000;
SET simjoin.enable_customscan = off;
SELECT count(*), sum(e.id) FROM sj_ev e JOIN sj_win w ON e.ts > w.t0 + 990000;
RESET simjoin.enable_customscan;
SELECT setting ~ 'simjoin' AS preloaded FROM pg_settings WHERE name = 'shared_preload_libraries';
DROP TABLE sj_ev, sj_win;
