-- demo.sql: every simjoin operator on sample data
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
\timing off
