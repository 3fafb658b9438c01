-- postgis_bench.sql: eps_join over PostGIS points on the GPU and the CPU
-- engine, against PostGIS's best plan (GiST index nested loop, parallel
-- workers).  Data generated in SQL, deterministic (setseed); d gives 5-50
-- neighbours a point:
--   gis2m      2,000,000 points uniform in [0,1000)^2 (2 a unit square):
--              d = 1 (~6 neighbours), d = 2.8 (~49)
--   gis2mclu   2,000,000 points in 1,000 squares of side 10 (20 a unit
--              square inside): d = 0.3 (~6), d = 0.85 (~45)
--   gis10m    10,000,000 points uniform in [0,1000)^2: d = 0.4 (~5), 1.2 (~45)
--   gis10mclu 10,000,000 points in 1,000 squares of side 10: d = 0.13 (~5)
--   geog1m     1,000,000 geography points uniform on the globe: 30 km (~6),
--              90 km (~50)
-- Forms: 'count' is eps_join_count (self-join, unordered pairs) against
-- SELECT count(*) ... ON ST_DWithin(a.g, b.g, d) AND a.id < b.id; 'srf rows'
-- sums left_id + right_id over eps_join, so that every pair is formed,
-- against the same sum over PostGIS's join.  PostGIS's plan runs once.
-- Skipped where PostGIS is not installed.
\set ON_ERROR_STOP 1
SELECT NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis')
    AS no_postgis \gset
\if :no_postgis
\echo 'postgis_bench: PostGIS is not installed, skipped'
\quit
\endif
CREATE EXTENSION IF NOT EXISTS postgis;
SET max_parallel_workers_per_gather = 8;
SET client_min_messages = notice;

-- A workload: simjoin (GPU, CPU) and PostGIS's plan, count and rows forms.
CREATE OR REPLACE FUNCTION sjb_gis(tbl text, d float8, rows_form boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    w text := format('%s d=%s', tbl, d);
    native_count text := format('SELECT count(*) FROM %I a JOIN %I b ON ST_DWithin(a.g, b.g, %s) AND a.id < b.id', tbl, tbl, d);
    native_rows text := format('SELECT sum(a.id + b.id) FROM %I a JOIN %I b ON ST_DWithin(a.g, b.g, %s) AND a.id < b.id', tbl, tbl, d);
BEGIN
    PERFORM sjb_time(w, 'count', e, format('SELECT eps_join_count(%L, %L, %L, %s)', tbl, 'id', 'g', d))
    FROM unnest('{gpu,cpu}'::text[]) e;
    PERFORM sjb_time(w, 'count', 'native', native_count, 1);
    IF rows_form THEN
        PERFORM sjb_time(w, 'srf rows', e, format('SELECT sum(left_id + right_id) FROM eps_join(%L, %L, %L, %s)', tbl, 'id', 'g', d))
        FROM unnest('{gpu,cpu}'::text[]) e;
        PERFORM sjb_time(w, 'srf rows', 'native', native_rows, 1);
    END IF;
END $$;

SELECT setseed(0.2021);
DROP TABLE IF EXISTS gis2m, gis2mclu, gis10m, gis10mclu, geog1m;
CREATE TABLE gis2m AS
SELECT i AS id, ST_MakePoint(random() * 1000, random() * 1000) AS g
FROM generate_series(1, 2000000) i;
CREATE TABLE gis2mclu AS
SELECT i AS id, ST_MakePoint((hashint4(i % 1000) % 990 + 990) % 990 + random() * 10,
                             (hashint4(i % 1000 + 7919) % 990 + 990) % 990 + random() * 10) AS g
FROM generate_series(1, 2000000) i;
\timing on
CREATE INDEX ON gis2m USING gist (g);
\timing off
CREATE INDEX ON gis2mclu USING gist (g);
VACUUM ANALYZE gis2m, gis2mclu;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM gis2m a JOIN gis2m b ON ST_DWithin(a.g, b.g, 1) AND a.id < b.id;

SELECT sjb_gis('gis2m', 1);
SELECT sjb_gis('gis2m', 2.8);
SELECT sjb_gis('gis2mclu', 0.3);
SELECT sjb_gis('gis2mclu', 0.85);
DROP TABLE gis2m, gis2mclu;

CREATE TABLE gis10m AS
SELECT i AS id, ST_MakePoint(random() * 1000, random() * 1000) AS g
FROM generate_series(1, 10000000) i;
CREATE INDEX ON gis10m USING gist (g);
VACUUM ANALYZE gis10m;
SELECT sjb_gis('gis10m', 0.4);
SELECT sjb_gis('gis10m', 1.2, false);
DROP TABLE gis10m;
CREATE TABLE gis10mclu AS
SELECT i AS id, ST_MakePoint((hashint4(i % 1000) % 990 + 990) % 990 + random() * 10,
                             (hashint4(i % 1000 + 7919) % 990 + 990) % 990 + random() * 10) AS g
FROM generate_series(1, 10000000) i;
CREATE INDEX ON gis10mclu USING gist (g);
VACUUM ANALYZE gis10mclu;
SELECT sjb_gis('gis10mclu', 0.13);
DROP TABLE gis10mclu;

-- geography: uniform on the sphere (latitude from asin of a uniform)
CREATE TABLE geog1m AS
SELECT i AS id, ST_MakePoint(random() * 360 - 180, degrees(asin(random() * 2 - 1)))::geography AS g
FROM generate_series(1, 1000000) i;
CREATE INDEX ON geog1m USING gist (g);
VACUUM ANALYZE geog1m;
SELECT sjb_gis('geog1m', 30000);
SELECT sjb_gis('geog1m', 90000, false);
DROP TABLE geog1m;
