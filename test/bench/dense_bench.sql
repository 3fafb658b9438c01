-- dense_bench.sql: an eps_join in which nearly every pair joins (a large
-- eps), where the GPU's tensor filter keeps thousands of candidates a probe
-- position and verifies them a warp a position (cuda/eps_gpu.cu,
-- verify_warp_kernel).  20 K x 384-D real[] rows (groups of 10 near-copies,
-- from hashes: terminate.sh's data): the count form on one GPU, on every
-- device (simjoin.devices = all: a dense join spreads over several) and on
-- the CPU engine (psql's Time: lines, then simjoin_last_stats()),
-- then eps_join over 3,000 of the rows on both engines, compared row for
-- row (several batches under gpu_memory_limit = 256).  Without a GPU only
-- the CPU engine runs.  Run after common.sql:
--     psql -f test/bench/dense_bench.sql
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 2;
DROP TABLE IF EXISTS sjd_tv, sjd_tw;
CREATE TABLE sjd_tv AS
SELECT i AS id, ARRAY(SELECT ((hashint8(i / 10 * 4096 + k) & 1023) / 10.0
                             + (hashint8(i * 4096 + k + 1) & 7) / 1000.0)::float4
                      FROM generate_series(1, 384) k) AS v
FROM generate_series(1::bigint, 20000) i;
CREATE TABLE sjd_tw AS SELECT * FROM sjd_tv WHERE id <= 3000;
VACUUM ANALYZE sjd_tv, sjd_tw;
SELECT count(*) > 0 AS has_gpu FROM simjoin_devices() \gset
\set q 'SELECT operator, device, strategy, pairs, batches, round(build_ms) build, round(probe_ms) probe, round(total_ms) total, devices FROM simjoin_last_stats()'
\timing on
\if :has_gpu
SET simjoin.device = gpu;
SET simjoin.devices = '0';
SELECT eps_join_count('sjd_tv', 'id', 'v', 1e-4, 'cosine');  -- warm-up
SELECT eps_join_count('sjd_tv', 'id', 'v', 0.3, 'cosine');
:q;
SELECT eps_join_count('sjd_tv', 'id', 'v', 1e9, 'cosine');
:q;
SELECT eps_join_count('sjd_tv', 'id', 'v', 1e9, 'l2');
:q;
SET simjoin.devices = 'all';  -- spread over the devices where there are several
SELECT eps_join_count('sjd_tv', 'id', 'v', 0.3, 'cosine');
:q;
SELECT eps_join_count('sjd_tv', 'id', 'v', 1e9, 'l2');
:q;
SET simjoin.devices = '0';
SET simjoin.gpu_memory_limit = 256;
CREATE TEMP TABLE sjd_eg AS SELECT * FROM eps_join('sjd_tw', 'id', 'v', 0.3, 'cosine');
:q;
CREATE TEMP TABLE sjd_lg AS SELECT * FROM eps_join('sjd_tw', 'id', 'v', 1e9, 'l2');
:q;
RESET simjoin.gpu_memory_limit;
\endif
SET simjoin.device = cpu;
CREATE TEMP TABLE sjd_ec AS SELECT * FROM eps_join('sjd_tw', 'id', 'v', 0.3, 'cosine');
CREATE TEMP TABLE sjd_lc AS SELECT * FROM eps_join('sjd_tw', 'id', 'v', 1e9, 'l2');
\if :has_gpu
SELECT 'cosine' AS emit, (SELECT count(*) FROM sjd_eg) AS gpu_rows, (SELECT count(*) FROM sjd_ec) AS cpu_rows,
       (SELECT count(*) FROM (SELECT * FROM sjd_eg EXCEPT ALL SELECT * FROM sjd_ec) x) AS gpu_only,
       (SELECT count(*) FROM (SELECT * FROM sjd_ec EXCEPT ALL SELECT * FROM sjd_eg) x) AS cpu_only
UNION ALL
SELECT 'l2', (SELECT count(*) FROM sjd_lg), (SELECT count(*) FROM sjd_lc),
       (SELECT count(*) FROM (SELECT * FROM sjd_lg EXCEPT ALL SELECT * FROM sjd_lc) x),
       (SELECT count(*) FROM (SELECT * FROM sjd_lc EXCEPT ALL SELECT * FROM sjd_lg) x);
\endif
SELECT eps_join_count('sjd_tv', 'id', 'v', 0.3, 'cosine');
:q;
SELECT eps_join_count('sjd_tv', 'id', 'v', 1e9, 'l2');
:q;
\timing off
DROP TABLE sjd_tv, sjd_tw;
