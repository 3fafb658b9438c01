-- setup.sql: data, queries and precomputed answers for the stress test.
-- psql variables: rows (rows a table).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simjoin;
SELECT setseed(0.25) AS seed \gset
-- vectors in [0,100]^2, sets of small integers and their text forms, times
CREATE TABLE st_v AS SELECT i AS id, ARRAY[random() * 100, random() * 100] AS v
FROM generate_series(1, :rows) i;
CREATE TABLE st_w AS SELECT i AS id, ARRAY[random() * 100, random() * 100] AS v
FROM generate_series(1, :rows) i;
CREATE TABLE st_s AS
SELECT id, s, ARRAY(SELECT 'w' || e FROM unnest(s) e) AS t FROM (
    SELECT i AS id, ARRAY(SELECT (random() * 40)::int FROM generate_series(1, 2 + i % 5)) AS s
    FROM generate_series(1, :rows) i) x;
CREATE TABLE st_s2 AS
SELECT id, s, ARRAY(SELECT 'w' || e FROM unnest(s) e) AS t FROM (
    SELECT i AS id, ARRAY(SELECT (random() * 40)::int FROM generate_series(1, 2 + i % 4)) AS s
    FROM generate_series(1, :rows) i) x;
CREATE TABLE st_t AS SELECT i AS id, (random() * 10000)::bigint AS t, i % 7 AS g
FROM generate_series(1, :rows) i;
CREATE TABLE st_u AS SELECT i AS id, (random() * 10000)::bigint AS t, i % 5 AS g
FROM generate_series(1, :rows) i;
VACUUM ANALYZE st_v, st_w, st_s, st_s2, st_t, st_u;

-- q: the query a transaction runs; oracle: the same answer in plain SQL,
-- computed once with PostgreSQL's own plans; heavy: long joins for the
-- cancel storm
CREATE TABLE st_query (q int PRIMARY KEY, query text, oracle text, heavy bool, answer text);
INSERT INTO st_query (q, query, oracle, heavy) VALUES
(1, $$SELECT eps_join_count('st_v', 'id', 'v', 1.5)::text$$,
    $$SELECT count(*)::text FROM st_v a JOIN st_v b ON a.id < b.id AND a.v <-> b.v <= 1.5$$, false),
(2, $$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(distance::numeric), 6))::text
      FROM eps_join('st_v', 'id', 'v', 'st_w', 'id', 'v', 2)$$,
    $$SELECT row(count(*), sum(a.id), sum(b.id), round(sum((a.v <-> b.v)::numeric), 6))::text
      FROM st_v a JOIN st_w b ON a.v <-> b.v <= 2$$, false),
(3, $$SELECT row(count(*), sum(a.id * 7 + b.id))::text FROM st_v a JOIN st_w b ON a.v <-> b.v <= 2$$,
    NULL, false),
(4, $$SELECT jaccard_join_count('st_s', 'id', 's', 0.5)::text$$,
    $$SELECT count(*)::text FROM st_s a JOIN st_s b ON a.id < b.id AND jaccard(a.s, b.s) >= 0.5$$, false),
(5, $$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(similarity::numeric), 6))::text
      FROM jaccard_join('st_s', 'id', 't', 'st_s2', 'id', 't', 0.4)$$,
    $$SELECT row(count(*), sum(a.id), sum(b.id), round(sum(jaccard(a.t, b.t)::numeric), 6))::text
      FROM st_s a JOIN st_s2 b ON jaccard(a.t, b.t) >= 0.4$$, false),
(6, $$SELECT row(count(*), sum(a.id + b.id))::text FROM st_s a JOIN st_s2 b ON jaccard(a.s, b.s) >= 0.6$$,
    NULL, false),
(7, $$SELECT theta_join_count('st_t', 'id', 'st_u', 'id', 'r.t BETWEEN l.t - 3 AND l.t + 3')::text$$,
    $$SELECT count(*)::text FROM st_t l JOIN st_u r ON r.t BETWEEN l.t - 3 AND l.t + 3$$, false),
(8, $$SELECT row(count(*), sum(l.id - r.id))::text
      FROM st_t l JOIN st_u r ON r.t BETWEEN l.t - 3 AND l.t + 3 AND l.g <> r.g$$, NULL, false),
(9, $$SELECT row(count(*), sum(l.id))::text FROM st_t l JOIN st_u r ON l.t > r.t + 9900$$, NULL, false),
(10, $$SELECT row(count(*), count(b.id))::text FROM st_v a LEFT JOIN st_w b ON a.v <-> b.v <= 0.5$$,
    NULL, false),
(11, $$SELECT count(*)::text FROM eps_join('st_v', 'id', 'v', 1e6)$$,
    $$SELECT count(*)::text FROM st_v a JOIN st_v b ON a.id < b.id$$, true),
(12, $$SELECT sum(a.id + b.id)::text FROM st_v a JOIN st_w b ON a.v <-> b.v <= 1e6$$,
    $$SELECT sum(a.id + b.id)::text FROM st_v a CROSS JOIN st_w b$$, true),
(13, $$SELECT count(*)::text FROM theta_join('st_t', 'id', 'st_u', 'id', 'l.t >= r.t')$$,
    $$SELECT count(*)::text FROM st_t l JOIN st_u r ON l.t >= r.t$$, true),
(14, $$SELECT row(count(*), sum(a.id + b.id))::text FROM st_s a JOIN st_s2 b ON jaccard(a.s, b.s) > 0$$,
    NULL, true);
UPDATE st_query SET oracle = query WHERE oracle IS NULL;

-- the answers, from PostgreSQL's own plans
DO $$
DECLARE r record; a text;
BEGIN
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    FOR r IN SELECT q, oracle FROM st_query ORDER BY q LOOP
        EXECUTE r.oracle INTO a;
        UPDATE st_query SET answer = a WHERE q = r.q;
    END LOOP;
END $$;

-- st_log: one row a transaction: its phase, query and outcome
CREATE TABLE st_log (phase text, q int, outcome text, got text);

-- st_check(q): run query q, compare with its answer, log the outcome.  A
-- statement_timeout cancel is caught, so the client goes on; the timeout
-- fires once a statement, so where it fires after the check (in the INSERT)
-- the outer handler logs the outcome again.
CREATE FUNCTION st_check(qn int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r st_query; got text; outcome text;
BEGIN
    BEGIN
        BEGIN
            SELECT * INTO r FROM st_query WHERE q = qn;
            EXECUTE r.query INTO got;
            outcome := CASE WHEN got IS NOT DISTINCT FROM r.answer THEN 'ok' ELSE 'wrong' END;
        EXCEPTION WHEN query_canceled THEN
            outcome := 'canceled';
        END;
        INSERT INTO st_log VALUES (current_setting('sj_stress.phase', true), qn, outcome,
                                   CASE WHEN outcome = 'wrong' THEN got END);
        RETURN outcome;
    EXCEPTION WHEN query_canceled THEN
        outcome := coalesce(outcome, 'canceled');
        INSERT INTO st_log VALUES (current_setting('sj_stress.phase', true), qn, outcome,
                                   CASE WHEN outcome = 'wrong' THEN got END);
        RETURN outcome;
    END;
END $$;
SELECT q, heavy, answer FROM st_query ORDER BY q;
