-- multi_bench.sql: one GPU against two (or every listed one), the same joins
-- in one run: a compute-bound high-dimensional eps_join (cosine, the
-- tensor-core filter), a theta join whose OR runs the nested loop, and a
-- scan-bound 2-D eps_join.  Data generated in SQL, deterministic.  Run on a
-- host with two GPUs, after common.sql:
--     psql -v mb_scale=1 -f test/bench/multi_bench.sql
-- Each join is timed with simjoin.devices = '0' and then with the whole
-- list ('all'); simjoin_last_stats().devices shows each device's share.
\set ON_ERROR_STOP 1
\if :{?mb_scale}
\else
\set mb_scale 1
\endif
SET max_parallel_workers_per_gather = 8;
SET client_min_messages = notice;

SELECT sjb_ids((200000 * :mb_scale)::int);   -- sjb_ids, sjb_u: common.sql

-- 200 K x 384-D, 20 K centres x 10 jittered copies; cosine
DROP TABLE IF EXISTS sjm_hd;
CREATE TABLE sjm_hd AS
    SELECT i AS id, ARRAY(SELECT (sjb_u(i / 10, k) + (sjb_u(i + 1000000000, k) - 0.5) * 0.02)::float4
                          FROM generate_series(1, 384) k) AS v
    FROM sjb_id;
ANALYZE sjm_hd;

-- 100 K x 100 K rows; an OR of an equality and a sum: the nested loop
DROP TABLE IF EXISTS sjm_t;
CREATE TABLE sjm_t AS
    SELECT i AS id, hashint4(i) & 1048575 AS a, hashint4(i + 7) & 1048575 AS b
    FROM generate_series(1, (100000 * :mb_scale)::int) i;
ANALYZE sjm_t;

-- 2 M x 2-D uniform points (scan-bound)
DROP TABLE IF EXISTS sjm_2d;
CREATE TABLE sjm_2d AS
    SELECT g.i AS id, ARRAY[sjb_u(g.i, 1) * 100, sjb_u(g.i, 2) * 100]::float8[] AS v
    FROM generate_series(1, (2000000 * :mb_scale)::int) g(i);
ANALYZE sjm_2d;

-- one join under both device lists; the stats name the devices and shares
CREATE OR REPLACE FUNCTION sjm_both(workload text, q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE d text; devs text;
BEGIN
    FOREACH d IN ARRAY ARRAY['0', 'all'] LOOP
        PERFORM set_config('simjoin.devices', d, false);
        PERFORM sjb_time(workload || ' devices=' || d, 'count', 'gpu', q, 3);
        SELECT s.devices INTO devs FROM simjoin_last_stats() s;
        RAISE NOTICE '% devices=%: %', workload, d, devs;
    END LOOP;
    PERFORM set_config('simjoin.devices', 'all', false);
END $$;

SELECT sjm_both('hd 200K x 384-D cosine eps=0.0003',
                $q$SELECT eps_join_count('sjm_hd', 'id', 'v', 0.0003, 'cosine')$q$);
SELECT sjm_both('theta OR 100K x 100K',
                $q$SELECT theta_join_count('sjm_t', 'id', 'sjm_t', 'id', 'l.a = r.b OR l.a + r.b = 1000000')$q$);
SELECT sjm_both('2-D 2M eps=0.05',
                $q$SELECT eps_join_count('sjm_2d', 'id', 'v', 0.05)$q$);

SELECT workload, round(ms::numeric, 1) AS ms, result, round(scan_ms::numeric, 1) AS scan,
       round(build_ms::numeric, 1) AS build, round(probe_ms::numeric, 1) AS probe,
       round(transfer_ms::numeric, 1) AS transfer, strategy
FROM sjb_results WHERE workload LIKE '%devices=%' ORDER BY at, workload;
DROP TABLE sjm_hd, sjm_t, sjm_2d, sjb_id;
