-- parallel_bench.sql: plain SQL joins forming every pair under Gather, with
-- the inner input read once by all processes into shared memory (Parallel
-- Custom Scan (SimJoin)) against each process reading it itself (the inner
-- table's parallel_workers = 0 leaves it no partial plan).  The plan column
-- of the report names a parallel-aware node "Parallel SimJoin".
\set ON_ERROR_STOP 1
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.31);
DROP TABLE IF EXISTS eq_r, eq_s, band_r, band_s;
CREATE TABLE eq_r AS SELECT i AS id, (random() * 10000000)::bigint AS k FROM generate_series(1, 10000000) i;
CREATE TABLE eq_s AS SELECT i AS id, (random() * 10000000)::bigint AS k FROM generate_series(1, 10000000) i;
CREATE TABLE band_r AS SELECT i AS id, (random() * 100000000)::bigint AS k FROM generate_series(1, 1000000) i;
CREATE TABLE band_s AS SELECT i AS id, (random() * 100000000)::bigint AS k FROM generate_series(1, 1000000) i;
VACUUM ANALYZE eq_r, eq_s, band_r, band_s;
SET sjb.run_without_simjoin = on;
-- the inner behind a costly filter (md5 of every row); the equi join pushed
-- off PostgreSQL's hash join, which the planner otherwise keeps
SELECT sjb_time('band 1M x 1M +-5, inner filtered by md5', 'sql rows', e, $$SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5 WHERE md5(r.id::text) > '1'$$, 3) FROM unnest('{gpu,cpu}'::text[]) e;
SET enable_hashjoin = off;
SELECT sjb_time('equi 10M x 10M, hash join off', 'sql rows', e, $$SELECT sum(l.id + r.id) FROM eq_r l JOIN eq_s r ON l.k = r.k$$, 3) FROM unnest('{gpu,cpu}'::text[]) e;
RESET enable_hashjoin;
ALTER TABLE band_s SET (parallel_workers = 0);
ALTER TABLE eq_s SET (parallel_workers = 0);
SELECT sjb_time('band 1M x 1M +-5, inner filtered by md5', 'sql rows, inner per worker', e, $$SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5 WHERE md5(r.id::text) > '1'$$, 3) FROM unnest('{gpu,cpu}'::text[]) e;
SET enable_hashjoin = off;
SELECT sjb_time('equi 10M x 10M, hash join off', 'sql rows, inner per worker', e, $$SELECT sum(l.id + r.id) FROM eq_r l JOIN eq_s r ON l.k = r.k$$, 3) FROM unnest('{gpu,cpu}'::text[]) e;
RESET enable_hashjoin;
ALTER TABLE band_s RESET (parallel_workers);
ALTER TABLE eq_s RESET (parallel_workers);
RESET sjb.run_without_simjoin;
SET statement_timeout = '60s';
SELECT sjb_time('band 1M x 1M +-5, inner filtered by md5', 'sql rows', 'native', $$SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5 WHERE md5(r.id::text) > '1'$$, 1);
RESET statement_timeout;
DROP TABLE eq_r, eq_s, band_r, band_s;
