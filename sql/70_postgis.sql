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

-- plain SQL joins on PostGIS distance conditions between point columns run as
-- Custom Scan (SimJoin); the results are PostgreSQL's own (customscan off)
CREATE TABLE sp (id int, g geometry(Point, 3857));
INSERT INTO sp SELECT id, ST_SetSRID(g, 3857) FROM gp;
CREATE TABLE sq (id int, g geometry(Point, 3857));
INSERT INTO sq SELECT id, ST_SetSRID(g, 3857) FROM gq;
CREATE TABLE sz (id int, g geometry(PointZ, 3857));
INSERT INTO sz SELECT id, ST_SetSRID(g, 3857) FROM gz WHERE ST_Zmflag(g) = 2;
CREATE TABLE sg (id int, g geography(Point));
INSERT INTO sg SELECT id, g FROM gg;
CREATE TABLE sg2 (id int, g geography(Point, 4326));
INSERT INTO sg2 SELECT id, g FROM gg WHERE id % 3 = 0;
ANALYZE sp, sq, sz, sg, sg2;
-- q's rows with and without the custom scan: how many, and how they differ
CREATE FUNCTION gis_compare(q text, OUT n bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'CREATE TEMP TABLE cmp_got AS ' || q;
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    EXECUTE 'CREATE TEMP TABLE cmp_want AS ' || q;
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    SELECT count(*) INTO n FROM cmp_want;
    SELECT count(*) INTO extra FROM (SELECT * FROM cmp_got EXCEPT ALL SELECT * FROM cmp_want) x;
    SELECT count(*) INTO missing FROM (SELECT * FROM cmp_want EXCEPT ALL SELECT * FROM cmp_got) x;
    DROP TABLE cmp_got, cmp_want;
END $$;
SET enable_nestloop = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sp a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75);
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sp a JOIN sq b ON ST_Distance(b.g, a.g) <= 0.75;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sp a LEFT JOIN sq b ON 0.75 > (a.g <-> b.g);
EXPLAIN (COSTS OFF) SELECT count(*) FROM sz a JOIN sz b ON ST_3DDWithin(a.g, b.g, 1.2);
EXPLAIN (COSTS OFF) SELECT a.id FROM sg a WHERE EXISTS
    (SELECT FROM sg2 b WHERE ST_DWithin(b.g, a.g, 100000));
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sg a JOIN sg2 b ON ST_Distance(a.g, b.g, false) < 50000;
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sq b ON ST_DWithin(b.g, a.g, 0.75)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sp b ON a.id < b.id AND ST_DWithin(a.g, b.g, 1)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sp b ON ST_Distance(a.g, b.g) <= 5');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sp b ON ST_Distance(a.g, b.g) < 5');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sp b ON 5 >= (a.g <-> b.g)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a JOIN sp b ON ST_DWithin(a.g, b.g, 0)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sp a LEFT JOIN sq b ON ST_DWithin(a.g, b.g, 0.5)');
SELECT * FROM gis_compare('SELECT a.id FROM sp a WHERE EXISTS (SELECT FROM sq b WHERE ST_DWithin(a.g, b.g, 0.5))');
SELECT * FROM gis_compare('SELECT a.id FROM sp a WHERE NOT EXISTS (SELECT FROM sq b WHERE ST_DWithin(b.g, a.g, 0.5))');
SELECT * FROM gis_compare('SELECT count(*) FROM sp a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sz a JOIN sz b ON ST_3DDWithin(a.g, b.g, 1.2)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sz a JOIN sz b ON ST_3DDistance(b.g, a.g) <= 3');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sg a JOIN sg b ON ST_DWithin(a.g, b.g, 100000)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sg a JOIN sg2 b ON ST_DWithin(b.g, a.g, 200, false)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sg a JOIN sg2 b ON ST_Distance(a.g, b.g) < 100000');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sg a LEFT JOIN sg2 b ON ST_Distance(a.g, b.g, false) <= 100000');
SELECT * FROM gis_compare('SELECT a.id FROM sg a WHERE NOT EXISTS (SELECT FROM sg2 b WHERE ST_DWithin(a.g, b.g, 25000000))');
-- pairs exactly at the distance, and a parameter of a generic plan
SELECT a.id, b.id FROM sp a JOIN sp b ON a.id < b.id AND ST_DWithin(a.g, b.g, 5)
WHERE a.id > 1000 ORDER BY 1, 2;
PREPARE gis_q(float8) AS SELECT count(*) FROM sg a JOIN sg b ON ST_DWithin(a.g, b.g, $1);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE gis_q(100000);
EXECUTE gis_q(100000);
EXECUTE gis_q(NULL);
-- other join clauses comparing a column of each side (a.k < b.k) are
-- decided on the rows' values before a pair's row is formed: ties, NULLs,
-- every operator, an int4 and an int8 column, outer joins, two tables, a
-- text column (not leakproof: left to the filter), parallel plans
CREATE TABLE sd (id int, k int, b bigint, t text, g geometry(Point, 3857));
INSERT INTO sd SELECT id, CASE WHEN id % 13 = 0 THEN NULL ELSE id % 7 END,
    CASE WHEN id % 11 = 0 THEN NULL ELSE id % 5 END, (id % 9)::text, g FROM sp;
ANALYZE sd;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k < b.k;
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.id < b.id');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k < b.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k <= b.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND b.k > a.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k >= b.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k = b.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k <> b.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k < b.b AND a.b >= b.k');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.t < b.t');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a LEFT JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k < b.k');
SELECT * FROM gis_compare('SELECT a.id FROM sd a WHERE EXISTS (SELECT FROM sd b WHERE ST_DWithin(a.g, b.g, 1) AND a.k > b.k)');
SELECT * FROM gis_compare('SELECT a.id FROM sd a WHERE NOT EXISTS (SELECT FROM sd b WHERE ST_DWithin(a.g, b.g, 1) AND a.k > b.k)');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75) AND a.id < b.id');
SELECT * FROM gis_compare('SELECT count(*), sum(a.id + b.id) FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.id < b.id');
SELECT count(*), sum(a.id + b.id), sum(a.k) FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k < b.k;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
-- the plan on the CPU engine (on a GPU, each worker's device start-up is
-- charged, and these small tables keep a serial node)
SET simjoin.device = cpu;
EXPLAIN (COSTS OFF) SELECT sum(a.id + b.id) FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.id < b.id;
RESET simjoin.device;
SELECT * FROM gis_compare('SELECT sum(a.id + b.id) FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.id < b.id');
SELECT * FROM gis_compare('SELECT a.id AS l, b.id AS r FROM sd a JOIN sd b ON ST_DWithin(a.g, b.g, 1) AND a.k <= b.k');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE sd;
-- a negative tolerance is PostGIS's own error
SELECT count(*) FROM sp a JOIN sq b ON ST_DWithin(a.g, b.g, -1);
RESET plan_cache_mode;
DEALLOCATE gis_q;
-- other geometries, mixed SRIDs, mixed dimensions: PostgreSQL's plan
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM gp a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75);
CREATE TABLE s4326 (id int, g geometry(Point, 4326));
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM s4326 a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75);
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sz a JOIN sz b ON ST_DWithin(a.g, b.g, 0.75);
CREATE TABLE sl (id int, g geometry(LineString, 3857));
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM sl a JOIN sq b ON ST_DWithin(a.g, b.g, 0.75);
RESET enable_nestloop;
RESET enable_hashjoin;
RESET enable_mergejoin;
DROP FUNCTION gis_compare;
DROP TABLE sp, sq, sz, sg, sg2, s4326, sl;

-- the pairs planned (EXPLAIN's "Planned Pairs") from d and the points'
-- statistics (PostGIS's estimate does not depend on d); tables smaller
-- than ANALYZE's sample are read whole, so the histograms do not depend
-- on chance
CREATE TABLE ge_u AS SELECT i AS id, ST_SetSRID(ST_MakePoint(
    (hashint4(i) & 1048575) / 1048.576, (hashint4(i + 1000000) & 1048575) / 1048.576), 3857)
    ::geometry(Point, 3857) AS g FROM generate_series(1, 20000) i;
CREATE TABLE ge_v AS SELECT i AS id, ST_SetSRID(ST_MakePoint(
    (hashint4(i + 2000000) & 1048575) / 1048.576, (hashint4(i + 3000000) & 1048575) / 2097.152), 3857)
    ::geometry(Point, 3857) AS g FROM generate_series(1, 10000) i;
CREATE TABLE ge_z AS SELECT i AS id, ST_SetSRID(ST_MakePoint(
    (hashint4(i) & 1048575) / 10485.76, (hashint4(i + 1000000) & 1048575) / 10485.76,
    (hashint4(i + 4000000) & 1048575) / 10485.76), 3857)::geometry(PointZ, 3857) AS g
FROM generate_series(1, 10000) i;
CREATE TABLE ge_g AS SELECT i AS id, ST_MakePoint(
    (hashint4(i) & 1048575) / 2912.7 - 180, (hashint4(i + 1000000) & 1048575) / 5825.4 - 90)
    ::geography(Point) AS g FROM generate_series(1, 5000) i;
CREATE TABLE ge_fresh WITH (autovacuum_enabled = false) AS SELECT * FROM ge_u;
ANALYZE ge_u, ge_v, ge_z, ge_g;
SET enable_nestloop = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET max_parallel_workers_per_gather = 0;
-- ge_check(q): planned within 10% of the pairs counted
CREATE FUNCTION ge_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE planned float8 := (sj_node(q) ->> 'Planned Pairs')::float8; actual float8;
BEGIN
    IF planned IS NULL THEN RETURN 'no node planned'; END IF;
    EXECUTE 'SELECT count(*) FROM (' || q || ') ge_q' INTO actual;
    IF abs(planned - actual) <= 0.1 * actual THEN RETURN 'within 10%'; END IF;
    RETURN format('planned %s, actual %s', planned, actual);
END $$;
-- ge_fallback(q): the estimate is PostgreSQL's (PostGIS's), the Plan Rows
CREATE FUNCTION ge_fallback(q text) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN n IS NULL THEN 'no node planned'
                WHEN (n ->> 'Planned Pairs')::float8 = (n ->> 'Plan Rows')::float8
                THEN 'PostGIS''s estimate'
                ELSE format('planned %s, PostGIS %s', n ->> 'Planned Pairs', n ->> 'Plan Rows') END
    FROM sj_node(q) n $$;
-- about 5 and 50 neighbours a point, either form, two tables, 3-D
SELECT ge_check('SELECT 1 FROM ge_u a JOIN ge_u b ON ST_DWithin(a.g, b.g, 8.9)') AS five;
SELECT ge_check('SELECT 1 FROM ge_u a JOIN ge_u b ON ST_DWithin(a.g, b.g, 28.2)') AS fifty;
SELECT ge_check('SELECT 1 FROM ge_u a JOIN ge_u b ON ST_Distance(a.g, b.g) < 28.2') AS distance;
SELECT ge_check('SELECT 1 FROM ge_u a JOIN ge_v b ON ST_DWithin(b.g, a.g, 12)') AS two_tables;
SELECT ge_check('SELECT 1 FROM ge_z a JOIN ge_z b ON ST_3DDWithin(a.g, b.g, 4.9)') AS three_d;
SELECT ge_check('SELECT 1 FROM ge_u a JOIN ge_u b ON ST_DWithin(a.g, b.g, 3000)') AS everything;
-- PostGIS's estimate: geography, a parameter, no statistics, row security
SELECT ge_fallback('SELECT 1 FROM ge_g a JOIN ge_g b ON ST_DWithin(a.g, b.g, 100000)') AS geography;
PREPARE ge_p(float8) AS SELECT 1 FROM ge_u a JOIN ge_u b ON ST_DWithin(a.g, b.g, $1);
SET plan_cache_mode = force_generic_plan;
SELECT ge_fallback('EXECUTE ge_p(8.9)') AS generic_plan;
RESET plan_cache_mode;
DEALLOCATE ge_p;
SELECT ge_fallback('SELECT 1 FROM ge_u a JOIN ge_fresh b ON ST_DWithin(a.g, b.g, 8.9)') AS never_analyzed;
CREATE ROLE regress_sj_ge;
GRANT SELECT ON ge_u TO regress_sj_ge;
ALTER TABLE ge_u ENABLE ROW LEVEL SECURITY;
CREATE POLICY ge_u_all ON ge_u FOR SELECT USING (true);
SET ROLE regress_sj_ge;
SELECT ge_fallback('SELECT 1 FROM ge_u a JOIN ge_u b ON ST_DWithin(a.g, b.g, 8.9)') AS row_security;
RESET ROLE;
DROP POLICY ge_u_all ON ge_u;
ALTER TABLE ge_u DISABLE ROW LEVEL SECURITY;
SET ROLE regress_sj_ge;
SELECT ge_check('SELECT 1 FROM ge_u a JOIN ge_u b ON ST_DWithin(a.g, b.g, 8.9)') AS granted;
RESET ROLE;
REVOKE SELECT ON ge_u FROM regress_sj_ge;
DROP ROLE regress_sj_ge;
RESET enable_nestloop;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET max_parallel_workers_per_gather;
DROP FUNCTION ge_check(text), ge_fallback(text);
DROP TABLE ge_u, ge_v, ge_z, ge_g, ge_fresh;

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

-- points with a bounding box (postgis_addbbox) are read through PostGIS's
-- functions, the others from their bytes: the same pairs either way
CREATE TABLE gb AS
SELECT id, CASE WHEN id % 2 = 0 THEN postgis_addbbox(g) ELSE g END AS g FROM gp;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE a.left_id IS NULL OR b.left_id IS NULL) AS differ
FROM eps_join('gb', 'id', 'g', 1.0) a
FULL JOIN eps_join('gp', 'id', 'g', 1.0) b
  ON (a.left_id, a.right_id, a.distance) = (b.left_id, b.right_id, b.distance);

DROP TABLE gp, gq, gz, gg, gs, gv, gb;
