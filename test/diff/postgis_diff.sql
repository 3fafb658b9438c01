-- postgis_diff.sql: eps_join over PostGIS points against PostGIS's own
-- answers (ST_DWithin, ST_3DDWithin, ST_Distance through a GiST index join),
-- CPU and GPU, on fresh random data.  Skipped where PostGIS is absent.
SELECT NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis')
    AS no_postgis \gset
\if :no_postgis
SELECT 'SKIP postgis: PostGIS is not installed';
\quit
\endif
CREATE EXTENSION IF NOT EXISTS postgis;

-- A table of n points (id, g) of one shape:
--   uniform   planar, uniform in [0, 100)^2 (z too for 3-D)
--   grid      integer coordinates in [0, 30): many pairs exactly at eps
--   clusters  20 tight clusters
--   special   uniform, with NULL, empty and NaN points mixed in
--   geog      geography, uniform over the globe (lat weighted by cos)
--   geogreg   geography, a 4 x 4 degree region and a polar cap
CREATE OR REPLACE FUNCTION sjd_gis_points(tbl text, n int, shape text, dim int DEFAULT 2)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        SELECT i AS id,
               CASE %L
                   WHEN 'uniform' THEN CASE WHEN %s = 3
                       THEN ST_MakePoint(random() * 100, random() * 100, random() * 100)
                       ELSE ST_MakePoint(random() * 100, random() * 100) END
                   WHEN 'grid' THEN CASE WHEN %s = 3
                       THEN ST_MakePoint(floor(random() * 30), floor(random() * 30), floor(random() * 30))
                       ELSE ST_MakePoint(floor(random() * 30), floor(random() * 30)) END
                   WHEN 'clusters' THEN ST_MakePoint((i %% 20) * 50 + random(), (i %% 7) * 30 + random())
                   WHEN 'special' THEN CASE WHEN i %% 17 = 0 THEN NULL
                                            WHEN i %% 19 = 0 THEN 'POINT EMPTY'::geometry
                                            WHEN i %% 23 = 0 THEN ST_MakePoint('NaN', random())
                                            ELSE ST_MakePoint(random() * 100, random() * 100) END
               END AS g
        FROM generate_series(1, %s) i $q$, tbl, shape, dim, dim, n);
    IF shape IN ('geog', 'geogreg') THEN
        EXECUTE format('DROP TABLE %I', tbl);
        EXECUTE format($q$
            CREATE TABLE %I AS
            SELECT i AS id,
                   CASE WHEN %L = 'geog'
                        THEN ST_MakePoint(random() * 360 - 180, degrees(asin(random() * 2 - 1)))
                        WHEN i %% 5 = 0 THEN ST_MakePoint(random() * 360 - 180, 89 + random())
                        ELSE ST_MakePoint(random() * 4 + 10, random() * 4 + 45)
                   END::geography AS g
            FROM generate_series(1, %s) i $q$, tbl, shape, n);
    END IF;
    EXECUTE format('CREATE INDEX ON %I USING gist (g)', tbl);
    EXECUTE format('ANALYZE %I', tbl);
END $$;

-- Geography rings: centres over the globe (a fifth by a pole, a fifth by the
-- antimeridian), each with 19 points at d off by a random relative amount
-- from 0.5 down to 1e-16: on the geodesic (ST_Project) for odd centres, on
-- PostGIS's sphere (R = (2a + b) / 3 of WGS 84) for even ones.
CREATE OR REPLACE FUNCTION sjd_gis_ring(tbl text, n int, d float8)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        WITH c AS (
            SELECT j, CASE j %% 5
                WHEN 0 THEN ST_MakePoint(random() * 360 - 180, sign(random() - 0.5) * (89.9 + random() * 0.1))
                WHEN 1 THEN ST_MakePoint(sign(random() - 0.5) * (179.99 + random() * 0.01), random() * 120 - 60)
                ELSE ST_MakePoint(random() * 360 - 180, degrees(asin(random() * 2 - 1))) END::geography AS g
            FROM generate_series(0, %s / 20) j),
        p AS (
            SELECT c.j, c.g, %s * (1 + (random() - 0.5) * power(10, -floor(random() * 16))) AS dist,
                   random() * 2 * pi() AS az
            FROM c, generate_series(1, 19))
        SELECT row_number() OVER ()::int AS id, g FROM (
            SELECT g FROM c
            UNION ALL
            SELECT CASE WHEN j %% 2 = 1 THEN ST_Project(g, dist, az) ELSE (
                SELECT ST_SetSRID(ST_MakePoint(
                    CASE WHEN lon > 180 THEN lon - 360 WHEN lon < -180 THEN lon + 360 ELSE lon END,
                    degrees(f2)), 4326)::geography
                FROM (SELECT radians(ST_Y(g::geometry)) AS f1, radians(ST_X(g::geometry)) AS l1,
                             dist / ((2 * 6378137 + 6356752.314245179) / 3) AS t) v,
                     LATERAL (SELECT asin(sin(f1) * cos(t) + cos(f1) * sin(t) * cos(az)) AS f2) w,
                     LATERAL (SELECT degrees(l1 + atan2(sin(az) * sin(t) * cos(f1),
                                                        cos(t) - sin(f1) * sin(f2))) AS lon) x)
            END FROM p) y $q$, tbl, n, d);
    EXECUTE format('CREATE INDEX ON %I USING gist (g)', tbl);
    EXECUTE format('ANALYZE %I', tbl);
END $$;

-- One case: the CPU's pairs and distances equal PostGIS's (the predicate and
-- ST_Distance / ST_3DDistance); the count form agrees; the GPU agrees.
CREATE OR REPLACE FUNCTION sjd_gis_case(label text, l text, r text, eps float8)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    q text; qc text; pred text; dist text; geog boolean; z boolean;
BEGIN
    EXECUTE format('SELECT pg_typeof(g)::text = %L FROM %I LIMIT 1', 'geography', l) INTO geog;
    EXECUTE format('SELECT bool_or(ST_Zmflag(g::geometry) >= 2) FROM %I', l) INTO z;
    pred := CASE WHEN geog THEN 'ST_DWithin(a.g, b.g, %s)'
                 WHEN z THEN 'ST_3DDWithin(a.g, b.g, %s)'
                 ELSE 'ST_DWithin(a.g, b.g, %s)' END;
    dist := CASE WHEN z AND NOT geog THEN 'ST_3DDistance(a.g, b.g)' ELSE 'ST_Distance(a.g, b.g)' END;
    SELECT * INTO q, qc FROM sjd_join_sql('eps_join', l, r, 'g', format('%s::float8', eps));
    RETURN QUERY SELECT sjd_cpu_cases(label, q, qc);
    DROP TABLE IF EXISTS sjd_oracle;
    EXECUTE format('CREATE TEMP TABLE sjd_oracle AS SELECT a.id::bigint AS left_id, b.id::bigint AS right_id, '
                   || dist || ' AS distance FROM %I a JOIN %I b ON '
                   || CASE WHEN r IS NULL THEN 'a.id < b.id AND ' ELSE '' END || pred,
                   l, coalesce(r, l), eps);
    RETURN NEXT sjd_report(label || ': cpu = PostGIS', sjd_same('sjd_cpu', 'sjd_oracle'));
    RETURN QUERY SELECT sjd_gpu_cases(label, q, qc, '0', false);
END $$;

-- One refusal: the query fails with a message containing what.
CREATE OR REPLACE FUNCTION sjd_gis_refused(label text, q text, what text)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN sjd_report(label, 'no error');
EXCEPTION WHEN OTHERS THEN
    RETURN sjd_report(label, CASE WHEN position(what IN SQLERRM) = 0 THEN 'error: ' || SQLERRM END);
END $$;

SET max_parallel_workers_per_gather = 2;
SELECT sjd_gis_points('g_u2', 4000, 'uniform');
SELECT sjd_gis_points('g_u2b', 3000, 'uniform');
SELECT sjd_gis_points('g_grid2', 3000, 'grid');
SELECT sjd_gis_points('g_grid3', 3000, 'grid', 3);
SELECT sjd_gis_points('g_u3', 3000, 'uniform', 3);
SELECT sjd_gis_points('g_clu', 3000, 'clusters');
SELECT sjd_gis_points('g_spec', 3000, 'special');
SELECT sjd_gis_points('g_geog', 5000, 'geog');
SELECT sjd_gis_points('g_geogreg', 3000, 'geogreg');

SELECT sjd_gis_case('2-D uniform self', 'g_u2', NULL, 2.5);
SELECT sjd_gis_case('2-D uniform two-table', 'g_u2', 'g_u2b', 1.7);
SELECT sjd_gis_case('2-D grid self at eps = 1', 'g_grid2', NULL, 1);
SELECT sjd_gis_case('2-D grid two-table at eps = sqrt(2)', 'g_grid2', 'g_grid2', sqrt(2));
SELECT sjd_gis_case('2-D grid eps = 0', 'g_grid2', NULL, 0);
SELECT sjd_gis_case('3-D grid self at eps = 1', 'g_grid3', NULL, 1);
SELECT sjd_gis_case('3-D uniform self', 'g_u3', NULL, 6);
SELECT sjd_gis_case('2-D clusters self', 'g_clu', NULL, 0.1);
SELECT sjd_gis_case('NULL/empty/NaN self', 'g_spec', NULL, 3);
SELECT sjd_gis_case('NULL/empty/NaN x uniform', 'g_spec', 'g_u2', 2);
SELECT sjd_gis_case('geography globe self, 150 km', 'g_geog', NULL, 150000);
SELECT sjd_gis_case('geography region and cap self, 20 km', 'g_geogreg', NULL, 20000);
SELECT sjd_gis_case('geography two-table, 300 km', 'g_geogreg', 'g_geog', 300000);
-- rings: pairs within a few ulps of d on both sides, settled by the bounds
-- or decided by PostGIS
SELECT sjd_gis_ring('g_ring5', 4000, 5000);
SELECT sjd_gis_ring('g_ring90', 4000, 90000);
SELECT sjd_gis_case('geography rings self at d = 5 km', 'g_ring5', NULL, 5000);
SELECT sjd_gis_case('geography rings self at d = 90 km', 'g_ring90', NULL, 90000);
-- another ellipsoid (ED50: International 1924), measured by the join
CREATE TABLE g_ed50 AS SELECT id, ST_SetSRID(g::geometry, 4230)::geography AS g FROM g_geogreg;
SELECT sjd_gis_case('geography on SRID 4230 self, 20 km', 'g_ed50', NULL, 20000);
SELECT sjd_gis_case('geography on SRID 4230, 3000 km', 'g_ed50', NULL, 3000000);

-- refusals: a non-point, mixed SRIDs, 2-D with 3-D
CREATE TABLE g_bad AS SELECT * FROM g_u2b;
INSERT INTO g_bad VALUES (-1, 'LINESTRING(0 0, 1 1)');
SELECT sjd_gis_refused('non-point refused', $$SELECT eps_join_count('g_bad', 'id', 'g', 1)$$, 'joins points only');
DELETE FROM g_bad WHERE id = -1;
INSERT INTO g_bad VALUES (-1, 'SRID=4326;POINT(1 1)');
SELECT sjd_gis_refused('mixed SRID refused', $$SELECT eps_join_count('g_bad', 'id', 'g', 1)$$, 'mixed SRID');
CREATE TABLE g_srid AS SELECT id, ST_SetSRID(g, 3857) AS g FROM g_u2b;
SELECT sjd_gis_refused('SRID mismatch between tables refused',
                       $$SELECT eps_join_count('g_u2', 'id', 'g', 'g_srid', 'id', 'g', 1)$$, 'mixed SRID');
SELECT sjd_gis_refused('geometry x geography refused',
                       $$SELECT eps_join_count('g_u2', 'id', 'g', 'g_geogreg', 'id', 'g', 1)$$, 'geography');
SELECT sjd_gis_refused('2-D x 3-D refused', $$SELECT eps_join_count('g_u2', 'id', 'g', 'g_u3', 'id', 'g', 1)$$, '3-D');

-- larger: parallel scans, many engine batches, GPU against CPU and PostGIS
SELECT sjd_gis_points('g_big', 200000, 'uniform');
SELECT sjd_gis_points('g_bigclu', 100000, 'clusters');
SELECT sjd_gis_case('200k 2-D uniform self', 'g_big', NULL, 0.4);
SELECT sjd_gis_case('100k clusters x 200k uniform', 'g_bigclu', 'g_big', 0.05);

-- Plain SQL joins of point columns (geometry(Point, srid), geometry(PointZ,
-- srid), geography(Point)) through Custom Scan (SimJoin), on the CPU engine
-- and (where usable) the GPU engine, against PostgreSQL's own plan of the
-- same query (simjoin.enable_customscan = off, a GiST index join), each case
-- by common.sql's sjd_sql_case.

-- A typed copy of a table of points, with a GiST index for PostgreSQL's plan.
CREATE OR REPLACE FUNCTION sjd_gis_typed(tbl text, src text, typ text, expr text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format('CREATE TABLE %I (id int, g %s)', tbl, typ);
    EXECUTE format('INSERT INTO %I SELECT id, %s FROM %I', tbl, expr, src);
    EXECUTE format('CREATE INDEX ON %I USING gist (g)', tbl);
    EXECUTE format('ANALYZE %I', tbl);
END $$;

SELECT sjd_gis_typed('gs_spec', 'g_spec', 'geometry(Point, 3857)', 'ST_SetSRID(g, 3857)');
SELECT sjd_gis_typed('gs_u2', 'g_u2b', 'geometry(Point, 3857)', 'ST_SetSRID(g, 3857)');
SELECT sjd_gis_typed('gs_grid', 'g_grid2', 'geometry(Point, 3857)', 'ST_SetSRID(g, 3857)');
SELECT sjd_gis_typed('gs_grid3', 'g_grid3', 'geometry(PointZ, 3857)', 'ST_SetSRID(g, 3857)');
SELECT sjd_gis_typed('gs_geogreg', 'g_geogreg', 'geography(Point)', 'g');
SELECT sjd_gis_typed('gs_geog', 'g_geog', 'geography(Point, 4326)', 'g');
SELECT sjd_gis_typed('gs_big', 'g_big', 'geometry(Point, 3857)', 'ST_SetSRID(g, 3857)');
SELECT sjd_gis_typed('gs_bigclu', 'g_bigclu', 'geometry(Point, 3857)', 'ST_SetSRID(g, 3857)');

SELECT sjd_sql_case('SQL ST_DWithin, NULL/empty/NaN x uniform', $q$
    SELECT a.id AS a, b.id AS b FROM gs_spec a JOIN gs_u2 b ON ST_DWithin(a.g, b.g, 2) $q$);
SELECT sjd_sql_case('SQL ST_DWithin reversed, grid self at 1', $q$
    SELECT a.id AS a, b.id AS b FROM gs_grid a JOIN gs_grid b ON ST_DWithin(b.g, a.g, 1) $q$);
SELECT sjd_sql_case('SQL ST_Distance <= sqrt(2), grid', $q$
    SELECT a.id AS a, b.id AS b FROM gs_grid a JOIN gs_grid b ON ST_Distance(a.g, b.g) <= sqrt(2) $q$);
SELECT sjd_sql_case('SQL ST_Distance < 2, grid', $q$
    SELECT a.id AS a, b.id AS b FROM gs_grid a JOIN gs_grid b ON 2 > ST_Distance(a.g, b.g) $q$);
SELECT sjd_sql_case('SQL <-> <= 1.5, uniform, residual', $q$
    SELECT a.id AS a, b.id AS b FROM gs_u2 a JOIN gs_spec b ON a.g <-> b.g <= 1.5 AND a.id % 2 = b.id % 2 $q$);
SELECT sjd_sql_case('SQL ST_DWithin left join', $q$
    SELECT a.id AS a, b.id AS b FROM gs_spec a LEFT JOIN gs_u2 b ON ST_DWithin(a.g, b.g, 1) $q$);
SELECT sjd_sql_case('SQL ST_DWithin semi join', $q$
    SELECT a.id FROM gs_spec a WHERE EXISTS (SELECT FROM gs_u2 b WHERE ST_DWithin(a.g, b.g, 0.5)) $q$);
SELECT sjd_sql_case('SQL ST_DWithin anti join', $q$
    SELECT a.id FROM gs_spec a WHERE NOT EXISTS (SELECT FROM gs_u2 b WHERE ST_DWithin(b.g, a.g, 0.5)) $q$);
SELECT sjd_sql_case('SQL ST_DWithin count', $q$
    SELECT count(*) AS n FROM gs_spec a JOIN gs_u2 b ON ST_DWithin(a.g, b.g, 3) $q$);
SELECT sjd_sql_case('SQL ST_3DDWithin grid at 1', $q$
    SELECT a.id AS a, b.id AS b FROM gs_grid3 a JOIN gs_grid3 b ON ST_3DDWithin(a.g, b.g, 1) $q$);
SELECT sjd_sql_case('SQL ST_3DDistance < sqrt(3), grid', $q$
    SELECT a.id AS a, b.id AS b FROM gs_grid3 a JOIN gs_grid3 b ON ST_3DDistance(a.g, b.g) < sqrt(3) $q$);
SELECT sjd_sql_case('SQL geography ST_DWithin, 20 km', $q$
    SELECT a.id AS a, b.id AS b FROM gs_geogreg a JOIN gs_geogreg b ON ST_DWithin(a.g, b.g, 20000) $q$);
SELECT sjd_sql_case('SQL geography ST_DWithin sphere, 300 km', $q$
    SELECT a.id AS a, b.id AS b FROM gs_geogreg a JOIN gs_geog b ON ST_DWithin(b.g, a.g, 300000, false) $q$);
SELECT sjd_sql_case('SQL geography ST_Distance < 150 km, left join', $q$
    SELECT a.id AS a, b.id AS b FROM gs_geog a LEFT JOIN gs_geog b ON ST_Distance(a.g, b.g) < 150000 $q$);
SELECT sjd_gis_typed('gs_ring5', 'g_ring5', 'geography(Point, 4326)', 'g');
SELECT sjd_gis_typed('gs_ring90', 'g_ring90', 'geography(Point, 4326)', 'g');
SELECT sjd_sql_case('SQL geography rings ST_DWithin spheroid, 5 km', $q$
    SELECT a.id AS a, b.id AS b FROM gs_ring5 a JOIN gs_ring5 b ON ST_DWithin(a.g, b.g, 5000) $q$);
SELECT sjd_sql_case('SQL geography rings ST_DWithin sphere, 5 km', $q$
    SELECT a.id AS a, b.id AS b FROM gs_ring5 a JOIN gs_ring5 b ON ST_DWithin(a.g, b.g, 5000, false) $q$);
SELECT sjd_sql_case('SQL geography rings ST_DWithin spheroid, 90 km', $q$
    SELECT a.id AS a, b.id AS b FROM gs_ring90 a JOIN gs_ring90 b ON ST_DWithin(b.g, a.g, 90000, true) $q$);
SELECT sjd_sql_case('SQL geography rings ST_Distance sphere <= 90 km', $q$
    SELECT a.id AS a, b.id AS b FROM gs_ring90 a JOIN gs_ring90 b ON ST_Distance(a.g, b.g, false) <= 90000 $q$);
SELECT sjd_sql_case('SQL geography rings ST_Distance < 90 km, count', $q$
    SELECT count(*) AS n FROM gs_ring90 a JOIN gs_ring90 b ON ST_Distance(a.g, b.g) < 90000 $q$);
SELECT sjd_sql_case('SQL 200k x 100k clusters, ST_DWithin', $q$
    SELECT a.id AS a, b.id AS b FROM gs_big a JOIN gs_bigclu b ON ST_DWithin(a.g, b.g, 0.05) $q$);
SELECT sjd_sql_case('SQL 200k self count, ST_DWithin 0.4', $q$
    SELECT count(*) AS n FROM gs_big a JOIN gs_big b ON ST_DWithin(a.g, b.g, 0.4) $q$);
-- other join clauses comparing a column of each side, decided before a
-- pair's row is formed: self-joins in one order (a.id < b.id), ties and
-- NULLs (k), outer joins, two tables, parallel plans
CREATE TABLE gs_k AS
SELECT id, g, CASE WHEN id % 17 = 0 THEN NULL ELSE id % 50 END AS k FROM gs_grid;
ANALYZE gs_k;
SELECT sjd_sql_case('SQL ST_DWithin self, a.id < b.id, grid', $q$
    SELECT a.id AS a, b.id AS b FROM gs_grid a JOIN gs_grid b ON ST_DWithin(a.g, b.g, 1) AND a.id < b.id $q$);
SELECT sjd_sql_case('SQL ST_DWithin self, a.k <= b.k (ties, NULLs)', $q$
    SELECT a.id AS a, b.id AS b FROM gs_k a JOIN gs_k b ON ST_DWithin(a.g, b.g, 1) AND a.k <= b.k $q$);
SELECT sjd_sql_case('SQL ST_DWithin self, b.k > a.k, left join', $q$
    SELECT a.id AS a, b.id AS b FROM gs_k a LEFT JOIN gs_k b ON ST_DWithin(a.g, b.g, 1) AND b.k > a.k $q$);
SELECT sjd_sql_case('SQL ST_DWithin self, a.k = b.k, anti join', $q$
    SELECT a.id FROM gs_k a WHERE NOT EXISTS (SELECT FROM gs_k b WHERE ST_DWithin(a.g, b.g, 1) AND a.k = b.k) $q$);
-- the integer compares made inline (int2, int8, <>), and one across types
CREATE TABLE gs_k8 AS
SELECT id, g, k::bigint * 3000000000 - 70000000000 AS k8, k::smallint AS k2 FROM gs_k;
ANALYZE gs_k8;
SELECT sjd_sql_case('SQL ST_DWithin self, a.k8 < b.k8 (int8, NULLs)', $q$
    SELECT a.id AS a, b.id AS b FROM gs_k8 a JOIN gs_k8 b ON ST_DWithin(a.g, b.g, 1) AND a.k8 < b.k8 $q$);
SELECT sjd_sql_case('SQL ST_DWithin self, a.k2 >= b.k2 (int2), semi join', $q$
    SELECT a.id FROM gs_k8 a WHERE EXISTS (SELECT FROM gs_k8 b WHERE ST_DWithin(a.g, b.g, 1) AND a.k2 >= b.k2) $q$);
SELECT sjd_sql_case('SQL ST_DWithin self, a.k8 <> b.k8, left join', $q$
    SELECT a.id AS a, b.id AS b FROM gs_k8 a LEFT JOIN gs_k8 b ON ST_DWithin(a.g, b.g, 1) AND a.k8 <> b.k8 $q$);
SELECT sjd_sql_case('SQL ST_DWithin self, a.k2 < b.k8 (int2 with int8)', $q$
    SELECT a.id AS a, b.id AS b FROM gs_k8 a JOIN gs_k8 b ON ST_DWithin(a.g, b.g, 1) AND a.k2 < b.k8 $q$);
SELECT sjd_sql_case('SQL ST_DWithin two tables, a.id >= b.id', $q$
    SELECT a.id AS a, b.id AS b FROM gs_spec a JOIN gs_u2 b ON ST_DWithin(a.g, b.g, 2) AND a.id >= b.id $q$);
SELECT sjd_sql_case('SQL 200k self sum, ST_DWithin 0.4, a.id < b.id', $q$
    SELECT count(*) AS n, sum(a.id + b.id) AS s FROM gs_big a JOIN gs_big b ON ST_DWithin(a.g, b.g, 0.4) AND a.id < b.id $q$);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT sjd_sql_case('SQL parallel self, a.id < b.id, clusters', $q$
    SELECT a.id AS a, b.id AS b FROM gs_bigclu a JOIN gs_bigclu b ON ST_DWithin(a.g, b.g, 0.02) AND a.id < b.id $q$);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
