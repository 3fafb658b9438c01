-- phases.sql: where the time of a parallel plain-SQL join goes, process by
-- process: EXPLAIN ANALYZE of a 4 M x 4 M band join and a 2 M x 2 M 4-D
-- eps-join (all pairs summed) with 8 processes, on the CPU engine and the
-- GPU, with the inner read once into shared memory (Parallel Custom Scan,
-- its parts merged, and on the CPU engine its index or grid built once and
-- probed by every process) and read by each process (the inner table's
-- parallel_workers = 0).  The figures are the leader's.  Not run by
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

SET simjoin.device = cpu;
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5;
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(l.id + r.id) FROM ev_r l JOIN ev_s r ON l.v <-> r.v <= 1.5;
SET simjoin.device = gpu;
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5;
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(l.id + r.id) FROM ev_r l JOIN ev_s r ON l.v <-> r.v <= 1.5;
SET simjoin.device = cpu;
ALTER TABLE band_s SET (parallel_workers = 0); ALTER TABLE ev_s SET (parallel_workers = 0);
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5;
EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(l.id + r.id) FROM ev_r l JOIN ev_s r ON l.v <-> r.v <= 1.5;
DROP TABLE band_r, band_s, ev_r, ev_s;
