-- simjoin regression suite: setup (runs first).  The test cluster preloads
-- simjoin (shared_preload_libraries): CREATE EXTENSION is silent then, and
-- raises a WARNING naming the command otherwise, kept out of this output;
-- 02_preload shows whether the server preloads it.
SET client_min_messages = error;
CREATE EXTENSION simjoin;
RESET client_min_messages;
CREATE EXTENSION cube;

-- settings exist, with their types and units (values depend on the machine)
SELECT name, vartype, unit, context
FROM pg_settings WHERE name LIKE 'simjoin.%' ORDER BY name;

-- the functions of the extension
SELECT p.oid::regprocedure AS function
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simjoin'
ORDER BY p.oid::regprocedure::text COLLATE "C";

-- error helper for the suite: SQLSTATE and message of a failing statement
CREATE FUNCTION sj_err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- tables for 02_preload, whose first statement must plan a plain join
CREATE TABLE sj_ev AS SELECT i AS id, (i * 7919 % 10000)::bigint * 100 AS ts
FROM generate_series(1, 2000) i;
CREATE TABLE sj_win AS SELECT i AS id, (i * 104729 % 10000)::bigint * 100 AS t0
FROM generate_series(1, 500) i;
ANALYZE sj_ev, sj_win;
