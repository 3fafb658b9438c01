-- jaccard_large_bench.sql: the rest of the thesis' (004) collections, 1M
-- Zipf-like sets over 500K distinct tokens (average size 5 and 25), and
-- large sets over a small universe (100K sets of 50 to 150 tokens drawn
-- uniformly from 1,000), the shape the GPU's bitmap filter is for.  GPU,
-- CPU engine (all cores) and the native plan (&& with a GIN index and
-- jaccard() as the filter, on a sample of probe sets, scaled).
\set ON_ERROR_STOP 1
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.78);
DROP TABLE IF EXISTS z500k5, z500k25, lsu;
CREATE TABLE z500k5 AS
SELECT i AS id, array(SELECT floor(exp(random() * ln(500000)))::int FROM generate_series(1, 1 + i % 9)) AS s
FROM generate_series(1, 1000000) i;
CREATE TABLE z500k25 AS
SELECT i AS id, array(SELECT floor(exp(random() * ln(500000)))::int FROM generate_series(1, 5 + i % 41)) AS s
FROM generate_series(1, 1000000) i;
CREATE TABLE lsu AS
SELECT i AS id, array(SELECT DISTINCT floor(random() * 1000)::int + g * 0
                      FROM generate_series(1, 50 + i % 101) g) AS s
FROM generate_series(1, 100000) i;
VACUUM ANALYZE z500k5, z500k25, lsu;

SELECT sjb_time(format('%s t=%s', c, t), 'count', e,
                format('SELECT jaccard_join_count(%L, %L, %L, %s)', c, 'id', 's', t))
FROM unnest('{z500k5,z500k25}'::text[]) c,
     unnest('{0.5,0.6,0.7,0.8,0.9,0.95}'::float8[]) t,
     unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time(format('lsu t=%s', t), 'count', e,
                format('SELECT jaccard_join_count(%L, %L, %L, %s)', 'lsu', 'id', 's', t))
FROM unnest('{0.5,0.7,0.9}'::float8[]) t,
     unnest('{gpu,cpu}'::text[]) e;

-- native: GIN on the sets, timed on a sample of probe sets against all the
-- sets and scaled (ordered pairs a <> b: about twice the unordered count)
CREATE INDEX ON z500k25 USING gin (s);
CREATE INDEX ON lsu USING gin (s);
SET statement_timeout = '60s';
SELECT sjb_time('z500k25 t=0.5', 'count', 'native', $$SELECT 10000 * count(*) FROM (SELECT * FROM z500k25 WHERE id <= 100) a JOIN z500k25 b ON a.s && b.s AND jaccard(a.s, b.s) >= 0.5 AND a.id <> b.id$$, 1, 10000);
SELECT sjb_time('lsu t=0.5', 'count', 'native', $$SELECT 10000 * count(*) FROM (SELECT * FROM lsu WHERE id <= 10) a JOIN lsu b ON a.s && b.s AND jaccard(a.s, b.s) >= 0.5 AND a.id <> b.id$$, 1, 10000);
RESET statement_timeout;
