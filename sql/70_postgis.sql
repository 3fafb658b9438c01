-- eps_join over PostGIS points (expected/70_postgis_1.out: PostGIS absent)
SELECT NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis')
    AS no_postgis \gset
\if :no_postgis
\echo 'PostGIS is not installed: skipped'
\quit
\endif
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
RESET client_min_messages;

-- 2-D points: a jittered grid (many pairs near eps), exact 3-4-5 distances,
-- NULL, empty and NaN points
CREATE TABLE gp (id int, g geometry);
INSERT INTO gp SELECT i, ST_MakePoint((i % 25) + ((i * 37) % 11) / 50.0,
                                      (i / 25) + ((i * 53) % 13) / 60.0)
FROM generate_series(1, 600) i;
INSERT INTO gp VALUES (1001, 'POINT(100 100)'), (1002, 'POINT(103 104)'),
    (1003, 'POINT(106 108)'), (1004, NULL), (1005, 'POINT EMPTY'),
    (1006, ST_MakePoint('NaN', 1)), (1007, 'POINT(100 100)');
CREATE TABLE gq (id int, g geometry);
INSERT INTO gq SELECT i, ST_MakePoint(((i * 7919) % 2500) / 100.0, ((i * 104729) % 2500) / 100.0)
FROM generate_series(1, 400) i;
INSERT INTO gq VALUES (2001, 'POINT(103 100)'), (2002, NULL), (2003, 'POINT EMPTY');

-- self-join: the same pairs as ST_DWithin, distance = ST_Distance
CREATE TEMP TABLE want AS
SELECT a.id::bigint AS left_id, b.id::bigint AS right_id, ST_Distance(a.g, b.g) AS distance
FROM gp a JOIN gp b ON a.id < b.id AND ST_DWithin(a.g, b.g, 1.0);
CREATE TEMP TABLE got AS SELECT * FROM eps_join('gp', 'id', 'g', 1.0);
SELECT (SELECT count(*) FROM want) AS want,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) x) AS missing,
       eps_join_count('gp', 'id', 'g', 1.0) AS count;
-- exactly at eps: 3-4-5 triangles
SELECT * FROM eps_join('gp', 'id', 'g', 5) WHERE left_id > 1000 ORDER BY 1, 2;
SELECT eps_join_count('gp', 'id', 'g', 5) - eps_join_count('gp', 'id', 'g', 4.999999) AS at_five;
-- eps = 0: duplicates only
SELECT * FROM eps_join('gp', 'id', 'g', 0) ORDER BY 1, 2;

-- two tables
DROP TABLE want, got;
CREATE TEMP TABLE want AS
SELECT a.id::bigint AS left_id, b.id::bigint AS right_id, ST_Distance(a.g, b.g) AS distance
FROM gp a JOIN gq b ON ST_DWithin(a.g, b.g, 0.75);
CREATE TEMP TABLE got AS SELECT * FROM eps_join('gp', 'id', 'g', 'gq', 'id', 'g', 0.75);
SELECT (SELECT count(*) FROM want) AS want,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) x) AS missing,
       eps_join_count('gp', 'id', 'g', 'gq', 'id', 'g', 0.75) AS count;
SELECT * FROM eps_join('gp', 'id', 'g', 'gq', 'id', 'g', 3) WHERE left_id > 1000 ORDER BY 1, 2;

-- 3-D points: ST_3DDWithin
CREATE TABLE gz (id int, g geometry);
INSERT INTO gz SELECT i, ST_MakePoint(i % 9, (i / 9) % 9, i / 81 + ((i * 31) % 7) / 10.0)
FROM generate_series(1, 500) i;
INSERT INTO gz VALUES (901, 'POINT Z (50 50 50)'), (902, 'POINT Z (51 52 52)'),
    (903, 'POINT ZM (50 50 53 7)'), (904, 'POINT Z EMPTY');
DROP TABLE want, got;
CREATE TEMP TABLE want AS
SELECT a.id::bigint AS left_id, b.id::bigint AS right_id, ST_3DDistance(a.g, b.g) AS distance
FROM gz a JOIN gz b ON a.id < b.id AND ST_3DDWithin(a.g, b.g, 1.2);
CREATE TEMP TABLE got AS SELECT * FROM eps_join('gz', 'id', 'g', 1.2);
SELECT (SELECT count(*) FROM want) AS want,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) x) AS missing,
       eps_join_count('gz', 'id', 'g', 1.2) AS count;
SELECT * FROM eps_join('gz', 'id', 'g', 3) WHERE left_id > 900 ORDER BY 1, 2;

-- geography: ST_DWithin on the spheroid, metres; distance = ST_Distance
CREATE TABLE gg (id int, g geography);
INSERT INTO gg SELECT i, ST_MakePoint(((i * 7919) % 2000) / 100.0 - 10,
                                      ((i * 104729) % 2000) / 100.0 + 40)::geography
FROM generate_series(1, 700) i;
INSERT INTO gg SELECT i, ST_MakePoint(((i * 7919) % 3600) / 10.0 - 180,
                                      88 + ((i * 104729) % 200) / 100.0)::geography
FROM generate_series(701, 900) i;
INSERT INTO gg VALUES (3001, 'POINT(179.9995 0)'), (3002, 'POINT(-179.9995 0)'),
    (3003, 'POINT(0 90)'), (3004, 'POINT(90 89.9995)'), (3005, NULL),
    (3006, 'POINT EMPTY');
DROP TABLE want, got;
CREATE TEMP TABLE want AS
SELECT a.id::bigint AS left_id, b.id::bigint AS right_id, ST_Distance(a.g, b.g) AS distance
FROM gg a JOIN gg b ON a.id < b.id AND ST_DWithin(a.g, b.g, 100000);
CREATE TEMP TABLE got AS SELECT * FROM eps_join('gg', 'id', 'g', 100000);
SELECT (SELECT count(*) FROM want) AS want,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) x) AS missing,
       eps_join_count('gg', 'id', 'g', 100000) AS count;
SELECT left_id, right_id, round(distance::numeric, 3) AS distance
FROM eps_join('gg', 'id', 'g', 200) WHERE left_id > 3000 ORDER BY 1, 2;
-- a whole hemisphere and more: every pair is a candidate
SELECT eps_join_count('gg', 'id', 'g', 25000000) =
       (SELECT count(*) FROM gg a JOIN gg b ON a.id < b.id AND ST_DWithin(a.g, b.g, 25000000))
    AS all_pairs;

-- errors
INSERT INTO gq VALUES (2004, 'LINESTRING(0 0, 1 1)');
SELECT eps_join_count('gq', 'id', 'g', 1);
DELETE FROM gq WHERE id = 2004;
INSERT INTO gq VALUES (2004, 'MULTIPOINT((0 0), (1 1))');
SELECT eps_join_count('gq', 'id', 'g', 1);
DELETE FROM gq WHERE id = 2004;
INSERT INTO gq VALUES (2004, 'SRID=4326;POINT(0 0)');
SELECT eps_join_count('gq', 'id', 'g', 1);
DELETE FROM gq WHERE id = 2004;
CREATE TABLE gs (id int, g geometry);
INSERT INTO gs VALUES (1, 'SRID=3857;POINT(0 0)');
SELECT eps_join_count('gp', 'id', 'g', 'gs', 'id', 'g', 1);
SELECT eps_join_count('gp', 'id', 'g', 'gz', 'id', 'g', 1);
SELECT eps_join_count('gp', 'id', 'g', 'gg', 'id', 'g', 1);
CREATE TABLE gv (id int, v float8[]);
SELECT eps_join_count('gp', 'id', 'g', 'gv', 'id', 'v', 1);
SELECT eps_join_count('gp', 'id', 'g', -1);
SELECT eps_join_count('gp', 'id', 'g', 1, 'cosine');
-- one point, and NULL and empty points only: nothing joins, no error
DELETE FROM gq WHERE id < 2002;
SELECT eps_join_count('gs', 'id', 'g', 1e9) AS one_point,
       eps_join_count('gq', 'id', 'g', 1e9) AS no_points,
       eps_join_count('gq', 'id', 'g', 'gq', 'id', 'g', 1e9) AS no_points_two_tables;

DROP TABLE gp, gq, gz, gg, gs, gv;
