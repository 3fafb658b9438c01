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

-- plan helper for the suite: the SimJoin node's entry in EXPLAIN (FORMAT
-- JSON) of q (NULL where no SimJoin node is planned)
CREATE FUNCTION sj_node(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE p jsonb;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO p;
    RETURN jsonb_path_query_first(p, 'strict $.** ? (@."Custom Plan Provider" == "SimJoin")');
END $$;

-- theta helper for the suite: theta_join and theta_join_count of lt and rt
-- (keys id) equal the join in SQL on cond, as multisets, and so does the SQL
-- join planned with the custom scan (where it is offered)
CREATE FUNCTION sj_theta_check(lt regclass, rt regclass, cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; c bigint; d1 bigint; d2 bigint; d3 bigint; d4 bigint;
    q text := format('SELECT l.id::bigint AS left_id, r.id::bigint AS right_id FROM %s l JOIN %s r ON %s', lt, rt, cond);
BEGIN
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    EXECUTE 'CREATE TEMP TABLE th_o AS ' || q;
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    EXECUTE 'CREATE TEMP TABLE th_c AS ' || q;
    CREATE TEMP TABLE th_j AS SELECT * FROM theta_join(lt, 'id', rt, 'id', cond);
    SELECT count(*) INTO n FROM th_o;
    c := theta_join_count(lt, 'id', rt, 'id', cond);
    SELECT count(*) INTO d1 FROM (SELECT * FROM th_j EXCEPT ALL SELECT * FROM th_o) x;
    SELECT count(*) INTO d2 FROM (SELECT * FROM th_o EXCEPT ALL SELECT * FROM th_j) x;
    SELECT count(*) INTO d3 FROM (SELECT * FROM th_c EXCEPT ALL SELECT * FROM th_o) x;
    SELECT count(*) INTO d4 FROM (SELECT * FROM th_o EXCEPT ALL SELECT * FROM th_c) x;
    DROP TABLE th_o, th_j, th_c;
    IF d1 = 0 AND d2 = 0 AND d3 = 0 AND d4 = 0 AND c = n THEN
        RETURN 'ok: ' || n || ' pairs';
    END IF;
    RETURN format('MISMATCH: sql %s, theta extra %s, missing %s, count %s, custom scan extra %s, missing %s',
                  n, d1, d2, c, d3, d4);
END $$;

-- tables for 02_preload, whose first statement must plan a plain join
CREATE TABLE sj_ev AS SELECT i AS id, (i * 7919 % 10000)::bigint * 100 AS ts
FROM generate_series(1, 2000) i;
CREATE TABLE sj_win AS SELECT i AS id, (i * 104729 % 10000)::bigint * 100 AS t0
FROM generate_series(1, 500) i;
ANALYZE sj_ev, sj_win;
