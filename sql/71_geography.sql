-- geography points near d (expected/71_geography_1.out: PostGIS absent): the
-- bounds settle most candidates, PostGIS decides those near d, and the pairs
-- are PostGIS's own, on the spheroid and on the sphere
SELECT NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis')
    AS no_postgis \gset
\if :no_postgis
\echo 'PostGIS is not installed: skipped'
\quit
\endif
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
RESET client_min_messages;

-- bases far apart: mid-latitude, equator, by the antimeridian, by both poles
CREATE TABLE gbl (id int, g geography(Point, 4326));
INSERT INTO gbl VALUES (1, 'POINT(10 45)'), (2, 'POINT(-70 0)'),
    (3, 'POINT(179.9999 30)'), (4, 'POINT(0 89.999)'), (5, 'POINT(-120 -89.5)'),
    (6, 'POINT(-179.99 -60)');
-- around each base, points at d (1 km or 90 km) off by relative and absolute
-- amounts down to a few ulps, in five directions (across the antimeridian
-- and over the pole among them): on the geodesic (spheroid) and on PostGIS's
-- sphere, R = (2a + b) / 3
CREATE TABLE goff (k int, rel float8, abs float8);
INSERT INTO goff SELECT row_number() OVER (), rel, abs FROM (VALUES
    (-0.5, 0), (-1e-4, 0), (-1e-6, 0), (-1e-7, 0), (-1e-9, 0), (-1e-12, 0),
    (-4e-16, 0), (0, 0), (4e-16, 0), (1e-12, 0), (1e-9, 0), (1e-7, 0),
    (1e-6, 0), (1e-4, 0), (0.5, 0), (0, -1), (0, -1e-3), (0, -1e-4), (0, -1e-5),
    (0, 1e-5), (0, 1e-4), (0, 1e-3), (0, 1)) v(rel, abs);
CREATE FUNCTION gsphere(g geography, dist float8, az float8) RETURNS geography
LANGUAGE sql IMMUTABLE AS $$
    SELECT ST_SetSRID(ST_MakePoint(
        CASE WHEN lon > 180 THEN lon - 360 WHEN lon < -180 THEN lon + 360 ELSE lon END,
        degrees(lat2)), 4326)::geography
    FROM (SELECT radians(ST_Y(g::geometry)) AS f1, radians(ST_X(g::geometry)) AS l1,
                 dist / ((2 * 6378137 + 6356752.314245179) / 3) AS t, radians(az) AS a) p,
         LATERAL (SELECT asin(sin(f1) * cos(t) + cos(f1) * sin(t) * cos(a)) AS lat2) q,
         LATERAL (SELECT degrees(l1 + atan2(sin(a) * sin(t) * cos(f1),
                                            cos(t) - sin(f1) * sin(lat2))) AS lon) r
$$;
CREATE TABLE gbr (id int, g geography(Point, 4326));
INSERT INTO gbr
SELECT b.id * 100000 + s * 50000 + m * 25000 + az * 100 + o.k,
       CASE WHEN s = 0 THEN ST_Project(b.g, dist, radians(az * 73 + 17))
            ELSE gsphere(b.g, dist, az * 73 + 17) END
FROM gbl b, goff o, generate_series(0, 1) s, generate_series(0, 1) m,
     generate_series(0, 4) az,
     LATERAL (SELECT CASE m WHEN 0 THEN 1000 ELSE 90000 END * (1 + o.rel) + o.abs AS dist) x;
-- the bases themselves, and a point 5e-14 rad off one (PostGIS's distance: 0)
INSERT INTO gbr SELECT 800000 + id, g FROM gbl;
INSERT INTO gbr VALUES (800011, ST_SetSRID(ST_MakePoint(10 + degrees(4e-14), 45), 4326));
ANALYZE gbl, gbr;
SELECT count(*) AS points FROM gbr;

-- eps_join and eps_join_count (use_spheroid = true) against ST_DWithin
CREATE FUNCTION gcheck_fn(d float8, OUT n_ok boolean, OUT extra bigint,
                          OUT missing bigint, OUT count_ok boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    CREATE TEMP TABLE gwant AS SELECT l.id::bigint AS l, r.id::bigint AS r
        FROM gbl l, gbr r WHERE ST_DWithin(l.g, r.g, d);
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    CREATE TEMP TABLE ggot AS SELECT left_id AS l, right_id AS r
        FROM eps_join('gbl', 'id', 'g', 'gbr', 'id', 'g', d);
    n_ok := (SELECT count(*) > 0 FROM gwant);
    extra := (SELECT count(*) FROM (SELECT * FROM ggot EXCEPT ALL SELECT * FROM gwant) x);
    missing := (SELECT count(*) FROM (SELECT * FROM gwant EXCEPT ALL SELECT * FROM ggot) x);
    count_ok := eps_join_count('gbl', 'id', 'g', 'gbr', 'id', 'g', d) = (SELECT count(*) FROM gwant);
    DROP TABLE gwant, ggot;
END $$;
SELECT d, (gcheck_fn(d)).* FROM (VALUES (0::float8), (1e-4), (1000), (90000)) v(d);

-- the custom scan, use_spheroid true and false, ST_DWithin and ST_Distance,
-- against PostgreSQL's own plan
CREATE FUNCTION gcheck_scan(q text, OUT n_ok boolean, OUT extra bigint, OUT missing bigint)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'CREATE TEMP TABLE cmp_got AS ' || q;
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    EXECUTE 'CREATE TEMP TABLE cmp_want AS ' || q;
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    n_ok := (SELECT count(*) > 0 FROM cmp_want);
    SELECT count(*) INTO extra FROM (SELECT * FROM cmp_got EXCEPT ALL SELECT * FROM cmp_want) x;
    SELECT count(*) INTO missing FROM (SELECT * FROM cmp_want EXCEPT ALL SELECT * FROM cmp_got) x;
    DROP TABLE cmp_got, cmp_want;
END $$;
SET enable_nestloop = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT l.id, r.id FROM gbl l JOIN gbr r ON ST_DWithin(l.g, r.g, 1000, false);
SELECT d, sph, (gcheck_scan(format(
    'SELECT l.id AS l, r.id AS r FROM gbl l JOIN gbr r ON ST_DWithin(l.g, r.g, %s, %L)', d, sph))).*
FROM (VALUES (0::float8), (1e-4), (1000), (90000)) v(d), (VALUES (true), (false)) s(sph)
ORDER BY 1, 2;
SELECT * FROM gcheck_scan('SELECT l.id AS l, r.id AS r FROM gbl l JOIN gbr r ON ST_Distance(l.g, r.g) <= 90000');
SELECT * FROM gcheck_scan('SELECT l.id AS l, r.id AS r FROM gbl l JOIN gbr r ON ST_Distance(r.g, l.g, false) < 1000');
SELECT * FROM gcheck_scan('SELECT l.id AS l, r.id AS r FROM gbr l LEFT JOIN gbl r ON ST_DWithin(l.g, r.g, 1000, true)');
SELECT * FROM gcheck_scan('SELECT l.id AS l FROM gbr l WHERE NOT EXISTS (SELECT FROM gbl r WHERE ST_DWithin(r.g, l.g, 1000, false))');
-- use_spheroid from a column: the inner bound (of either model) settles
-- candidates, PostGIS decides the rest; NULL never joins
CREATE TABLE gbs (id int, g geography(Point, 4326), sph boolean);
INSERT INTO gbs SELECT id, g, id % 2 = 0 FROM gbr;
SELECT * FROM gcheck_scan('SELECT l.id AS l, r.id AS r FROM gbl l JOIN gbs r ON ST_DWithin(l.g, r.g, 90000, r.sph)');
-- near-antipodal pairs and d beyond the bounds' range: PostGIS decides
INSERT INTO gbr VALUES (900001, 'POINT(-169.99 0.0001)'), (900002, 'POINT(110 -0.001)'),
    (900003, 'POINT(0.01 -45)');
SELECT * FROM gcheck_scan('SELECT l.id AS l, r.id AS r FROM gbl l JOIN gbr r ON ST_DWithin(l.g, r.g, 19990000)');
SELECT * FROM gcheck_scan('SELECT l.id AS l, r.id AS r FROM gbl l JOIN gbr r ON ST_DWithin(l.g, r.g, 19990000, false)');
SELECT (gcheck_fn(19990000)).*;

-- the bounds settle most candidates: PostGIS decides only those near d
-- (a join where PostGIS decided every candidate fails these)
CREATE TABLE gcl (id int, g geography(Point, 4326));
INSERT INTO gcl SELECT i, ST_SetSRID(ST_MakePoint(10 + (i % 40) * 0.01 + ((i * 37) % 11) * 0.0003,
                                                  45 + (i / 40) * 0.01 + ((i * 53) % 13) * 0.0003), 4326)
FROM generate_series(1, 1600) i;
ANALYZE gcl;
SET simjoin.enable_customscan = off;
SELECT count(*) AS postgis_count FROM gcl a JOIN gcl b ON a.id < b.id AND ST_DWithin(a.g, b.g, 3000) \gset
RESET simjoin.enable_customscan;
SELECT eps_join_count('gcl', 'id', 'g', 3000) = :postgis_count AS count_is_postgis;
SELECT pairs > 10000 AS many_pairs, decided * 100 < pairs AS postgis_decided_few
FROM simjoin_last_stats();
SELECT count(*) > 10000 AS many_pairs FROM gcl a JOIN gcl b ON ST_DWithin(a.g, b.g, 3000, false);
SELECT pairs > 10000 AS many_candidates, decided * 100 < pairs AS postgis_decided_few
FROM simjoin_last_stats();
SELECT count(*) > 10000 AS many_pairs FROM gcl a JOIN gcl b ON ST_DWithin(a.g, b.g, 3000);
SELECT pairs > 10000 AS many_candidates, decided * 100 < pairs AS postgis_decided_few
FROM simjoin_last_stats();
-- use_spheroid not a constant: the inner bound, which holds on the
-- spheroid and on the sphere, settles the candidates well within d (as for
-- eps_join without a band), PostGIS decides the rest; where use_spheroid is
-- NULL a pair never joins (PostGIS's functions are strict)
SET simjoin.enable_customscan = off;
SELECT count(*) AS postgis_count FROM gcl a JOIN gcl b ON ST_DWithin(a.g, b.g, 3000, a.id % 2 = 0) \gset
SELECT count(*) AS postgis_null_count FROM gcl a JOIN gcl b
    ON ST_DWithin(a.g, b.g, 3000, NULLIF(a.id % 3, 0) > 1) \gset
RESET simjoin.enable_customscan;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gcl a JOIN gcl b ON ST_DWithin(a.g, b.g, 3000, a.id % 2 = 0);
SELECT count(*) = :postgis_count AS count_is_postgis
FROM gcl a JOIN gcl b ON ST_DWithin(a.g, b.g, 3000, a.id % 2 = 0);
SELECT pairs > 10000 AS many_candidates, decided * 10 < pairs AS postgis_decided_few
FROM simjoin_last_stats();
SELECT count(*) = :postgis_null_count AS count_is_postgis
FROM gcl a JOIN gcl b ON ST_DWithin(a.g, b.g, 3000, NULLIF(a.id % 3, 0) > 1);
SELECT pairs > 10000 AS many_candidates, decided * 10 < pairs AS postgis_decided_few
FROM simjoin_last_stats();
RESET enable_nestloop;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET max_parallel_workers_per_gather;

DROP FUNCTION gcheck_fn, gcheck_scan, gsphere;
DROP TABLE gbl, gbr, gbs, goff, gcl;
