-- demo.sql: every simjoin operator on sample data, as functions and as plain SQL joins
\pset footer off
CREATE EXTENSION simjoin;
\echo '== devices (none listed: the CPU engine runs every join)'
SELECT * FROM simjoin_devices();
SELECT CASE WHEN EXISTS (SELECT 1 FROM simjoin_devices()) THEN 'GPU' ELSE 'CPU' END AS "simjoin.device = auto uses";

\echo '== sample data: 200,000 places and 1,000 shops (real[]) in [0,100]^2'
SELECT setseed(0.5);
CREATE TABLE places AS
SELECT i AS id, ARRAY[random() * 100, random() * 100] AS pos FROM generate_series(1, 200000) i;
CREATE TABLE shops AS
SELECT i AS id, ARRAY[random() * 100, random() * 100]::real[] AS pos FROM generate_series(1, 1000) i;

\echo '== l2_distance and <->'
SELECT l2_distance('{0,0}'::float8[], '{3,4}'::float8[]) AS l2, '{1,1}'::float8[] <-> '{4,5}'::float8[] AS op;

\timing on
\echo '== eps_join self-join: pairs of places within 0.1 (count form)'
SELECT eps_join_count('places', 'id', 'pos', 0.1) AS pairs;
SELECT operator, device, strategy, pairs, round(scan_ms) AS scan_ms, round(build_ms) AS build_ms,
       round(probe_ms) AS probe_ms, round(total_ms) AS total_ms FROM simjoin_last_stats();
\echo '== eps_join two-table: places within 0.05 of a shop'
SELECT s.left_id AS shop, s.right_id AS place, round(s.distance::numeric, 4) AS distance
FROM eps_join('shops', 'id', 'pos', 'places', 'id', 'pos', 0.05) s
ORDER BY distance, shop, place LIMIT 5;
SELECT operator, device, strategy, pairs, round(total_ms) AS total_ms FROM simjoin_last_stats();

\echo '== jaccard_join: near-duplicate book titles, by words and by 3-grams (pg_trgm''s)'
CREATE TABLE books (id int, title text);
INSERT INTO books VALUES
    (1, 'The Art of Computer Programming'), (2, 'The art of computer programming, vol. 1'),
    (3, 'Art of Computer Programming'), (4, 'Database System Concepts'),
    (5, 'Database Systems: Concepts'), (6, 'Readings in Database Systems'),
    (7, 'Structure and Interpretation of Computer Programs');
CREATE TABLE book_words AS SELECT id, simjoin_words(title) AS w, simjoin_qgrams(title) AS g FROM books;
SELECT j.left_id, j.right_id, round(j.similarity::numeric, 3) AS similarity, a.title AS left_title, b.title AS right_title
FROM jaccard_join('book_words', 'id', 'w', 0.5) j
JOIN books a ON a.id = j.left_id JOIN books b ON b.id = j.right_id ORDER BY similarity DESC, 1, 2;
SELECT j.left_id, j.right_id, round(j.similarity::numeric, 3) AS trigram_similarity
FROM jaccard_join('book_words', 'id', 'g', 0.6) j ORDER BY 3 DESC, 1, 2;
SELECT operator, device, strategy, pairs, round(total_ms) AS total_ms FROM simjoin_last_stats();

\echo '== theta_join: a band join on time, and an inequality join'
CREATE TABLE trades AS
SELECT i AS id, timestamp '2025-01-01' + (random() * 86400) * interval '1 second' AS at,
       round((random() * 100)::numeric, 2)::float8 AS price FROM generate_series(1, 50000) i;
CREATE TABLE quotes AS
SELECT i AS id, timestamp '2025-01-01' + (random() * 86400) * interval '1 second' AS at,
       round((random() * 100)::numeric, 2)::float8 AS bid FROM generate_series(1, 50000) i;
SELECT theta_join_count('trades', 'id', 'quotes', 'id',
       'r.at BETWEEN l.at - interval ''2 seconds'' AND l.at + interval ''2 seconds''') AS quotes_within_2s;
SELECT operator, device, strategy, pairs, round(total_ms) AS total_ms FROM simjoin_last_stats();
SELECT * FROM theta_join('trades', 'id', 'quotes', 'id',
       'r.at BETWEEN l.at AND l.at + interval ''1 second'' AND r.bid > l.price + 99')
ORDER BY 1, 2 LIMIT 5;
SELECT theta_join_count('trades', 'id', 'quotes', 'id', 'l.price > r.bid') AS price_above_bid;
SELECT operator, device, strategy, pairs, round(total_ms) AS total_ms FROM simjoin_last_stats();

\echo '== plain SQL: the band join as a join, planned as Custom Scan (SimJoin) (the server preloads simjoin)'
SELECT count(*) AS quotes_within_2s FROM trades t JOIN quotes q
    ON q.at BETWEEN t.at - interval '2 seconds' AND t.at + interval '2 seconds';
\echo 'its plan: the node, the device it ran on and the time of each phase'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF)
SELECT count(*) FROM trades t JOIN quotes q
    ON q.at BETWEEN t.at - interval '2 seconds' AND t.at + interval '2 seconds';
\echo '== plain SQL: shops and the places within 0.05 of each'
EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF)
SELECT s.id, p.id FROM shops s JOIN places p ON s.pos::float8[] <-> p.pos <= 0.05;
\timing off
