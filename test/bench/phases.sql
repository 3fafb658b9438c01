-- phases.sql: where the time of a parallel plain-SQL join goes, process by
-- process: EXPLAIN ANALYZE of a 4 M x 4 M band join and a 2 M x 2 M 4-D
-- eps-join (all pairs summed) with 8 processes, then three timed runs of
-- each, in four configurations: the inner read once into shared memory
-- (Parallel Custom Scan, its parts merged) with the CPU engine's index or
-- grid built once and probed by every process; the same with each process
-- building its own (simjoin.enable_shared_index = off); the GPU engine;
-- and each process reading the inner itself (the inner table's
-- parallel_workers = 0).  The EXPLAIN figures are the leader's.  Not run by
-- default: bash test/bench/run.sh phases.
\set ON_ERROR_STOP 1
LOAD 'simjoin';
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.31);
DROP TABLE IF EXISTS band_r, band_s, ev_r, ev_s;
CREATE TABLE band_r AS SELECT i AS id, (random() * 100000000)::bigint AS k FROM generate_series(1, 4000000) i;
CREATE TABLE band_s AS SELECT i AS id, (random() * 100000000)::bigint AS k FROM generate_series(1, 4000000) i;
CREATE TABLE ev_r AS SELECT i AS id, ARRAY[random()*100, random()*100, random()*100, random()*100]::float4[] AS v FROM generate_series(1, 2000000) i;
CREATE TABLE ev_s AS SELECT i AS id, ARRAY[random()*100, random()*100, random()*100, random()*100]::float4[] AS v FROM generate_series(1, 2000000) i;
VACUUM ANALYZE band_r, band_s, ev_r, ev_s;
ALTER TABLE band_r SET (parallel_workers = 8); ALTER TABLE band_s SET (parallel_workers = 8); ALTER TABLE ev_r SET (parallel_workers = 8); ALTER TABLE ev_s SET (parallel_workers = 8);
PREPARE band AS SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5;
PREPARE eps AS SELECT sum(l.id + r.id) FROM ev_r l JOIN ev_s r ON l.v <-> r.v <= 1.5;

\echo == shared inner, shared index (CPU)
SET simjoin.device = cpu;
\ir phases_run.sql
\echo == shared inner, an index per process (CPU)
SET simjoin.enable_shared_index = off;
\ir phases_run.sql
RESET simjoin.enable_shared_index;
\echo == shared inner (GPU)
SET simjoin.device = gpu;
\ir phases_run.sql
\echo == the device simjoin.device = auto plans each on (shared inner)
SET simjoin.device = auto;
EXPLAIN SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5;
EXPLAIN SELECT sum(l.id + r.id) FROM ev_r l JOIN ev_s r ON l.v <-> r.v <= 1.5;
\echo == each process reads the inner (CPU)
SET simjoin.device = cpu;
ALTER TABLE band_s SET (parallel_workers = 0); ALTER TABLE ev_s SET (parallel_workers = 0);
\ir phases_run.sql
DROP TABLE band_r, band_s, ev_r, ev_s;
