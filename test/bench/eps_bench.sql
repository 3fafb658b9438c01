-- eps_bench.sql: eps_join on the GPU, on the CPU engine, and PostgreSQL's
-- best native plan (cube + GiST, parallel workers).  Data generated in SQL,
-- deterministic (setseed).  Workloads after Gowanlock & Karsin (001):
--   syn2d2m   2,000,000 points uniform in [0,100]^2, eps 0.2 and 1.0
--   syn2d10m 10,000,000 points uniform in [0,100]^2, eps 0.2
--   syn4d1m, syn6d1m: 1,000,000 points with a handful of neighbours each
--   syn64d   100,000 points in 64-D, 1,000 clusters
\set ON_ERROR_STOP 1
SET max_parallel_workers_per_gather = 8;
SET client_min_messages = notice;

SELECT setseed(0.2023);
DROP TABLE IF EXISTS syn2d2m, syn2d10m, syn4d1m, syn6d1m, syn64d;
CREATE TABLE syn2d2m AS
SELECT i AS id, ARRAY[random() * 100, random() * 100] AS v
FROM generate_series(1, 2000000) i;
CREATE TABLE syn4d1m AS
SELECT i AS id, ARRAY[random() * 100, random() * 100, random() * 100, random() * 100] AS v
FROM generate_series(1, 1000000) i;
CREATE TABLE syn6d1m AS
SELECT i AS id, ARRAY[random() * 20, random() * 20, random() * 20,
                      random() * 20, random() * 20, random() * 20] AS v
FROM generate_series(1, 1000000) i;
CREATE TABLE syn64d AS
SELECT i AS id, array_agg((i % 1000) * 0.01 * d + random() * 0.05 ORDER BY d) AS v
FROM generate_series(1, 100000) i, generate_series(1, 64) d GROUP BY i;
VACUUM ANALYZE syn2d2m, syn4d1m, syn6d1m, syn64d;

-- count form and materialised form, GPU and CPU engine
SELECT sjb_time('syn2d2m eps=0.2', 'count', e, $$SELECT eps_join_count('syn2d2m', 'id', 'v', 0.2)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn2d2m eps=0.2', 'count(*) of pairs', e, $$SELECT count(*) FROM eps_join('syn2d2m', 'id', 'v', 0.2)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn2d2m eps=1.0', 'count', e, $$SELECT eps_join_count('syn2d2m', 'id', 'v', 1.0)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'count', e, $$SELECT eps_join_count('syn4d1m', 'id', 'v', 2.0)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'count(*) of pairs', e, $$SELECT count(*) FROM eps_join('syn4d1m', 'id', 'v', 2.0)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn6d1m eps=1', 'count', e, $$SELECT eps_join_count('syn6d1m', 'id', 'v', 1.0)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn64d eps=0.3', 'count', e, $$SELECT eps_join_count('syn64d', 'id', 'v', 0.3)$$) FROM unnest('{gpu,cpu}'::text[]) e;

-- The same joins as plain SQL (Custom Scan (SimJoin); simjoin.device picks
-- the engine).  A SQL self-join returns ordered pairs, (i, i) included: its
-- function counterpart is the two-table form over the table twice ('srf
-- count', 'srf rows').  'sql rows' sums a.id + b.id, so every pair goes
-- through the executor (parallel workers allowed): one run each on
-- syn2d2m (52 M pairs).  Forms the planner does not give to SimJoin are
-- skipped (see sjb_time).
SELECT sjb_time('syn2d2m eps=0.2', 'srf count', e, $$SELECT eps_join_count('syn2d2m', 'id', 'v', 'syn2d2m', 'id', 'v', 0.2)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn2d2m eps=0.2', 'sql count', e, $$SELECT count(*) FROM syn2d2m a JOIN syn2d2m b ON a.v <-> b.v <= 0.2$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn2d2m eps=0.2', 'sql rows', e, $$SELECT sum(a.id + b.id) FROM syn2d2m a JOIN syn2d2m b ON a.v <-> b.v <= 0.2$$, 1) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'srf count', e, $$SELECT eps_join_count('syn4d1m', 'id', 'v', 'syn4d1m', 'id', 'v', 2.0)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'sql count', e, $$SELECT count(*) FROM syn4d1m a JOIN syn4d1m b ON a.v <-> b.v <= 2.0$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'sql count, l2_distance()', e, $$SELECT count(*) FROM syn4d1m a JOIN syn4d1m b ON l2_distance(a.v, b.v) <= 2.0$$) FROM unnest('{gpu,cpu}'::text[]) e;
-- the self form's unordered pairs, as a user would write them
SELECT sjb_time('syn4d1m eps=2', 'sql count, a.id < b.id', e, $$SELECT count(*) FROM syn4d1m a JOIN syn4d1m b ON a.v <-> b.v <= 2.0 AND a.id < b.id$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'srf rows', e, $$SELECT sum(left_id + right_id) FROM eps_join('syn4d1m', 'id', 'v', 'syn4d1m', 'id', 'v', 2.0)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('syn4d1m eps=2', 'sql rows', e, $$SELECT sum(a.id + b.id) FROM syn4d1m a JOIN syn4d1m b ON a.v <-> b.v <= 2.0$$) FROM unnest('{gpu,cpu}'::text[]) e;

-- PostgreSQL's native plan: cube + GiST, parallel workers
ALTER TABLE syn2d2m ADD COLUMN c cube;
UPDATE syn2d2m SET c = cube(v);
\timing on
CREATE INDEX syn2d2m_gist ON syn2d2m USING gist (c);
\timing off
VACUUM ANALYZE syn2d2m;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM syn2d2m a JOIN syn2d2m b
  ON b.c <@ cube_enlarge(a.c, 0.2, 2) AND cube_distance(a.c, b.c) <= 0.2 AND a.id < b.id;
SELECT sjb_time('syn2d2m eps=0.2', 'count', 'native', $$
    SELECT count(*) FROM syn2d2m a JOIN syn2d2m b
      ON b.c <@ cube_enlarge(a.c, 0.2, 2) AND cube_distance(a.c, b.c) <= 0.2 AND a.id < b.id$$, 1);

-- 10 million points
CREATE TABLE syn2d10m AS
SELECT i AS id, ARRAY[random() * 100, random() * 100] AS v
FROM generate_series(1, 10000000) i;
SELECT sjb_time('syn2d10m eps=0.2', 'count', e, $$SELECT eps_join_count('syn2d10m', 'id', 'v', 0.2)$$) FROM unnest('{gpu,cpu}'::text[]) e;
DROP TABLE syn2d10m;
