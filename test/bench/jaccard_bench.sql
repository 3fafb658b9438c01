-- jaccard_bench.sql: jaccard_join on the GPU, on the CPU engine, and what a
-- PostgreSQL user writes today (&& with a GIN index and jaccard() as the
-- filter; pg_trgm's % with a GIN index for text).  Collections after the
-- thesis (004): 1M sets, Zipf-like tokens (P(k) ~ 1/k), 50K distinct
-- tokens, average size 5 or 25; the 500K-token collections and large sets
-- over a small universe are in jaccard_large_bench.sql.
\set ON_ERROR_STOP 1
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.77);
DROP TABLE IF EXISTS z50k5, z50k25, titles;
CREATE TABLE z50k5 AS
SELECT i AS id, array(SELECT floor(exp(random() * ln(50000)))::int FROM generate_series(1, 1 + i % 9)) AS s
FROM generate_series(1, 1000000) i;
CREATE TABLE z50k25 AS
SELECT i AS id, array(SELECT floor(exp(random() * ln(50000)))::int FROM generate_series(1, 5 + i % 41)) AS s
FROM generate_series(1, 1000000) i;
-- titles: 4 to 9 words from a Zipf-like vocabulary of 20,000 words (word k
-- is a prefix of md5(k), 3 to 8 characters)
CREATE TABLE titles AS
SELECT i AS id, (SELECT string_agg(substr(md5(k::text), 1, 3 + k % 6), ' ')
                 FROM (SELECT floor(exp(random() * ln(20000)))::int + g * 0 AS k
                       FROM generate_series(1, 4 + i % 6) g) w) AS t
FROM generate_series(1, 200000) i;
CREATE TABLE title_grams AS SELECT id, simjoin_qgrams(t) AS g FROM titles;
VACUUM ANALYZE z50k5, z50k25, titles, title_grams;

SELECT sjb_time(format('%s t=%s', c, t), 'count', e,
                format('SELECT jaccard_join_count(%L, %L, %L, %s)', c, 'id', 's', t))
FROM unnest('{z50k5,z50k25}'::text[]) c,
     unnest('{0.5,0.6,0.7,0.8,0.9,0.95}'::float8[]) t,
     unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time(format('titles 3-grams t=%s', t), 'count', e,
                format('SELECT jaccard_join_count(%L, %L, %L, %s)', 'title_grams', 'id', 'g', t))
FROM unnest('{0.5,0.9}'::float8[]) t, unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('titles 3-grams t=0.5', 'count(*) of pairs', e,
                $$SELECT count(*) FROM jaccard_join('title_grams', 'id', 'g', 0.5)$$)
FROM unnest('{gpu,cpu}'::text[]) e;

-- The same joins as plain SQL (Custom Scan (SimJoin)).  A SQL self-join
-- returns ordered pairs, (i, i) included: its function counterpart is the
-- two-table form over the table twice ('srf count', 'srf rows').  'sql
-- rows' sums a.id + b.id, so every pair goes through the executor
-- (parallel workers allowed).  Forms the planner does not give to SimJoin
-- are skipped (see sjb_time).
SELECT sjb_time('z50k5 t=0.9', 'srf count', e, $$SELECT jaccard_join_count('z50k5', 'id', 's', 'z50k5', 'id', 's', 0.9)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('z50k5 t=0.9', 'sql count', e, $$SELECT count(*) FROM z50k5 a JOIN z50k5 b ON jaccard(a.s, b.s) >= 0.9$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('titles 3-grams t=0.9', 'srf count', e, $$SELECT jaccard_join_count('title_grams', 'id', 'g', 'title_grams', 'id', 'g', 0.9)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('titles 3-grams t=0.9', 'sql count', e, $$SELECT count(*) FROM title_grams a JOIN title_grams b ON jaccard(a.g, b.g) >= 0.9$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('titles 3-grams t=0.9', 'srf rows', e, $$SELECT sum(left_id + right_id) FROM jaccard_join('title_grams', 'id', 'g', 'title_grams', 'id', 'g', 0.9)$$, 1) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('titles 3-grams t=0.9', 'sql rows', e, $$SELECT sum(a.id + b.id) FROM title_grams a JOIN title_grams b ON jaccard(a.g, b.g) >= 0.9$$, 1) FROM unnest('{gpu,cpu}'::text[]) e;

-- native: GIN on the sets.  The self-join over all 1M sets takes days, so
-- it is timed on the first 100 probe sets against all 1M and scaled by
-- 10,000 (time and count); the count is of ordered pairs a <> b, about
-- twice the unordered pairs that jaccard_join_count counts.
CREATE INDEX ON z50k5 USING gin (s);
SET statement_timeout = '60s';
SELECT sjb_time('z50k5 t=0.5', 'count', 'native', $$SELECT 10000 * count(*) FROM (SELECT * FROM z50k5 WHERE id <= 100) a JOIN z50k5 b ON a.s && b.s AND jaccard(a.s, b.s) >= 0.5 AND a.id <> b.id$$, 1, 10000);
SELECT sjb_time('z50k5 t=0.9', 'count', 'native', $$SELECT 10000 * count(*) FROM (SELECT * FROM z50k5 WHERE id <= 100) a JOIN z50k5 b ON a.s && b.s AND jaccard(a.s, b.s) >= 0.9 AND a.id <> b.id$$, 1, 10000);
CREATE INDEX ON titles USING gin (t gin_trgm_ops);
SET pg_trgm.similarity_threshold = 0.5;
SELECT sjb_time('titles 3-grams t=0.5', 'count', 'native', $$SELECT count(*) FROM titles a JOIN titles b ON a.t % b.t AND a.id < b.id$$, 1);
RESET statement_timeout;
