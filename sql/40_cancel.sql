-- statement_timeout and cancel stop a join between batches, release what
-- it held, and the session goes on
CREATE TABLE big AS SELECT i AS id, i % 1000 AS a, ARRAY[(i % 1000)::float8, (i / 1000)::float8] AS v
FROM generate_series(1, 1000000) i;
-- a nested-loop theta join over 10^12 pairs: stopped in the engine
SET statement_timeout = '300ms';
SELECT theta_join_count('big', 'id', 'big', 'id', 'l.a * r.a % 7 = 3 OR l.a < r.a - 2000');
RESET statement_timeout;
SELECT theta_join_count('big', 'id', 'big', 'id', 'l.id = r.id AND l.a < 10');
-- the same for the set-returning form
SET statement_timeout = '300ms';
SELECT count(*) FROM theta_join('big', 'id', 'big', 'id', 'l.a * r.a % 7 = 3 OR l.a < r.a - 2000');
RESET statement_timeout;
-- eps_join: a self-join with about 10^12 / 2 pairs in reach, counted
SET statement_timeout = '300ms';
SELECT eps_join_count('big', 'id', 'v', 1e9);
RESET statement_timeout;
SELECT eps_join_count('big', 'id', 'v', 0.5);
DROP TABLE big;
