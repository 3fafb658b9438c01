-- theta_bench.sql: theta_join on the GPU, on the CPU engine, and
-- PostgreSQL's best native plan (parallel workers, indexes where a user
-- would have them).  Workloads after He et al. (003) and the thesis (004).
\set ON_ERROR_STOP 1
SET max_parallel_workers_per_gather = 8;
SELECT setseed(0.31);
DROP TABLE IF EXISTS eq_r, eq_s, band_r, band_s, ineq_r, ineq_s, ineq_r5, ineq_s5, mp_r, mp_s;
CREATE TABLE eq_r AS SELECT i AS id, (random() * 10000000)::bigint AS k FROM generate_series(1, 10000000) i;
CREATE TABLE eq_s AS SELECT i AS id, (random() * 10000000)::bigint AS k FROM generate_series(1, 10000000) i;
CREATE TABLE band_r AS SELECT i AS id, (random() * 100000000)::bigint AS k FROM generate_series(1, 1000000) i;
CREATE TABLE band_s AS SELECT i AS id, (random() * 100000000)::bigint AS k FROM generate_series(1, 1000000) i;
CREATE INDEX ON band_s (k);
CREATE TABLE ineq_r AS SELECT i AS id, (random() * 1000000)::int AS a FROM generate_series(1, 50000) i;
CREATE TABLE ineq_s AS SELECT i AS id, (random() * 1000000)::int AS a FROM generate_series(1, 25000) i;
CREATE TABLE ineq_r5 AS SELECT i AS id, (random() * 1000000)::int AS a FROM generate_series(1, 500000) i;
CREATE TABLE ineq_s5 AS SELECT i AS id, (random() * 1000000)::int AS a FROM generate_series(1, 50000) i;
CREATE TABLE mp_r AS SELECT i AS id, (random() * 1000)::int AS a, random() * 100 AS f FROM generate_series(1, 30000) i;
CREATE TABLE mp_s AS SELECT i AS id, (random() * 1000)::int AS a, random() * 100 AS f FROM generate_series(1, 30000) i;
VACUUM ANALYZE eq_r, eq_s, band_r, band_s, ineq_r, ineq_s, ineq_r5, ineq_s5, mp_r, mp_s;

SELECT sjb_time('equi 10M x 10M', 'count', e, $$SELECT theta_join_count('eq_r', 'id', 'eq_s', 'id', 'l.k = r.k')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('band 1M x 1M +-5', 'count', e, $$SELECT theta_join_count('band_r', 'id', 'band_s', 'id', 'r.k BETWEEN l.k - 5 AND l.k + 5')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('band 1M x 1M +-5', 'count(*) of pairs', e, $$SELECT count(*) FROM theta_join('band_r', 'id', 'band_s', 'id', 'r.k BETWEEN l.k - 5 AND l.k + 5')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('R.a > S.a 50K x 25K', 'count', e, $$SELECT theta_join_count('ineq_r', 'id', 'ineq_s', 'id', 'l.a > r.a')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('R.a > S.a 500K x 50K', 'count', e, $$SELECT theta_join_count('ineq_r5', 'id', 'ineq_s5', 'id', 'l.a > r.a')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('OR 30K x 30K', 'count', e, $$SELECT theta_join_count('mp_r', 'id', 'mp_s', 'id', 'l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)')$$) FROM unnest('{gpu,cpu}'::text[]) e;

-- The same joins as plain SQL (Custom Scan (SimJoin)).  'sql rows' sums
-- l.id + r.id, so every pair goes through the executor (parallel workers
-- allowed); 'srf rows' is the same sum over theta_join.  Forms the planner
-- does not give to SimJoin are skipped (see sjb_time), except the equi and
-- band joins, whose native plans take seconds: those run whatever the plan
-- (the report shows it).
SET sjb.run_without_simjoin = on;
SELECT sjb_time('equi 10M x 10M', 'sql count', e, $$SELECT count(*) FROM eq_r l JOIN eq_s r ON l.k = r.k$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('equi 10M x 10M', 'srf rows', e, $$SELECT sum(left_id + right_id) FROM theta_join('eq_r', 'id', 'eq_s', 'id', 'l.k = r.k')$$, 1) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('equi 10M x 10M', 'sql rows', e, $$SELECT sum(l.id + r.id) FROM eq_r l JOIN eq_s r ON l.k = r.k$$, 1) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('band 1M x 1M +-5', 'sql count', e, $$SELECT count(*) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('band 1M x 1M +-5', 'srf rows', e, $$SELECT sum(left_id + right_id) FROM theta_join('band_r', 'id', 'band_s', 'id', 'r.k BETWEEN l.k - 5 AND l.k + 5')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('band 1M x 1M +-5', 'sql rows', e, $$SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5$$) FROM unnest('{gpu,cpu}'::text[]) e;
RESET sjb.run_without_simjoin;
SELECT sjb_time('R.a > S.a 50K x 25K', 'sql count', e, $$SELECT count(*) FROM ineq_r l JOIN ineq_s r ON l.a > r.a$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('R.a > S.a 500K x 50K', 'sql count', e, $$SELECT count(*) FROM ineq_r5 l JOIN ineq_s5 r ON l.a > r.a$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('OR 30K x 30K', 'sql count', e, $$SELECT count(*) FROM mp_r l JOIN mp_s r ON l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('OR 30K x 30K', 'srf rows', e, $$SELECT sum(left_id + right_id) FROM theta_join('mp_r', 'id', 'mp_s', 'id', 'l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)')$$) FROM unnest('{gpu,cpu}'::text[]) e;
SELECT sjb_time('OR 30K x 30K', 'sql rows', e, $$SELECT sum(l.id + r.id) FROM mp_r l JOIN mp_s r ON l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)$$) FROM unnest('{gpu,cpu}'::text[]) e;

SET statement_timeout = '150s';
SELECT sjb_time('equi 10M x 10M', 'count', 'native', $$SELECT count(*) FROM eq_r l JOIN eq_s r ON l.k = r.k$$, 1);
SELECT sjb_time('band 1M x 1M +-5', 'count', 'native', $$SELECT count(*) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5$$, 1);
SELECT sjb_time('equi 10M x 10M', 'sql rows', 'native', $$SELECT sum(l.id + r.id) FROM eq_r l JOIN eq_s r ON l.k = r.k$$, 1);
SELECT sjb_time('band 1M x 1M +-5', 'sql rows', 'native', $$SELECT sum(l.id + r.id) FROM band_r l JOIN band_s r ON r.k BETWEEN l.k - 5 AND l.k + 5$$, 1);
SELECT sjb_time('R.a > S.a 50K x 25K', 'count', 'native', $$SELECT count(*) FROM ineq_r l JOIN ineq_s r ON l.a > r.a$$, 1);
SELECT sjb_time('OR 30K x 30K', 'count', 'native', $$SELECT count(*) FROM mp_r l JOIN mp_s r ON l.a = r.a OR (l.f < r.f - 99.9 AND l.a < 10)$$, 1);
RESET statement_timeout;
