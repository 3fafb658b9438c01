-- simjoin regression suite: setup (runs first)
CREATE EXTENSION simjoin;
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
