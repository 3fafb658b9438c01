-- hardening: a theta condition runs no user code; a plain join planned as
-- SimJoin answers wherever PostgreSQL's own plan does; statistics belong to
-- the session's current user

-- work_mem is a setting a condition could change: start from a known value
SET work_mem = '4MB';

-- 1. the condition is checked as written, before anything is folded or
-- inlined: user functions, operators, casts and domains never run
CREATE TABLE hp (id int, a int, f8 float8);
INSERT INTO hp SELECT i, i % 5, i / 4.0 FROM generate_series(1, 20) i;
CREATE TABLE hits (n int);
GRANT INSERT ON hits TO PUBLIC;
CREATE FUNCTION hw() RETURNS int LANGUAGE plpgsql VOLATILE
    AS $$BEGIN INSERT INTO hits VALUES (1); RETURN 0; END$$;
CREATE FUNCTION hf_imm(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM hw(); RETURN 0; END$$;
CREATE FUNCTION hf_stable(int) RETURNS int LANGUAGE plpgsql STABLE
    AS $$BEGIN PERFORM hw(); RETURN 0; END$$;
CREATE FUNCTION hf_vol(int) RETURNS int LANGUAGE plpgsql VOLATILE
    AS $$BEGIN PERFORM hw(); RETURN 0; END$$;
-- an SQL function that inlines, and one that folds instead
CREATE FUNCTION hf_sql(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + 0';
CREATE FUNCTION hf_sqlrun(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + hw()';
CREATE FUNCTION hf_op(int, int) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM hw(); RETURN $1 + $2; END$$;
CREATE OPERATOR #+# (LEFTARG = int, RIGHTARG = int, FUNCTION = hf_op);
CREATE OPERATOR === (LEFTARG = int, RIGHTARG = int, FUNCTION = int4eq);
CREATE TYPE hmood AS ENUM ('a', 'b');
CREATE FUNCTION hf_cast(hmood) RETURNS int LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM hw(); RETURN 0; END$$;
CREATE CAST (hmood AS int) WITH FUNCTION hf_cast(hmood);
CREATE FUNCTION hf_check(int) RETURNS bool LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM hw(); RETURN true; END$$;
CREATE DOMAIN hdom AS int CHECK (hf_check(VALUE));
CREATE FUNCTION h_try(cond text) RETURNS text LANGUAGE sql
    AS $$SELECT sj_err(format('SELECT theta_join_count(''hp'', ''id'', ''hp'', ''id'', %L)', cond))$$;
SELECT h_try('l.a = r.a + hf_imm(0)');
SELECT h_try('l.a = r.a + hf_stable(0)');
SELECT h_try('l.a = r.a + hf_vol(0)');
SELECT h_try('l.a = hf_imm(r.a)');
SELECT h_try('l.a = r.a + hf_sql(0)');
SELECT h_try('l.a = hf_sql(r.a)');
SELECT h_try('l.a = r.a + hf_sqlrun(0)');
SELECT h_try('l.a = r.a #+# 0');
SELECT h_try('l.a = 1 #+# 2');
SELECT h_try('l.a === r.a');
SELECT h_try('l.a = r.a + ''a''::hmood::int');
SELECT h_try('l.a = 1::hdom');
SELECT h_try('l.a = r.a AND 1::hdom = 1');
SELECT h_try('l.a < length(set_config(''work_mem'', ''1MB'', false))');
SELECT h_try('l.a = r.a AND pg_sleep(1) IS NULL');
SELECT h_try('l.a < r.a + abs(-1)');
SELECT h_try('l.f8 > sqrt(2)');
SELECT h_try('l.a::numeric < 2');
SELECT current_setting('work_mem') AS work_mem_unchanged;
SELECT count(*) AS side_effects FROM hits;
-- built-in casts of constants are still folded
SELECT theta_join_count('hp', 'id', 'hp', 'id', 'l.f8 > r.f8 + 1.5')
     = (SELECT count(*) FROM hp l JOIN hp r ON l.f8 > r.f8 + 1.5) AS cast_folded;
SELECT theta_join_count('hp', 'id', 'hp', 'id', 'l.a = r.a + 1::bigint - CAST(1 AS smallint)')
     = (SELECT count(*) FROM hp l JOIN hp r ON l.a = r.a) AS casts_folded;
-- a SECURITY DEFINER function passing its caller's condition on
CREATE FUNCTION h_definer(cond text) RETURNS bigint LANGUAGE sql SECURITY DEFINER
    AS $$SELECT theta_join_count('hp', 'id', 'hp', 'id', cond)$$;
CREATE ROLE regress_sj_hard;
GRANT EXECUTE ON FUNCTION h_definer(text) TO regress_sj_hard;
SET ROLE regress_sj_hard;
SELECT sj_err($$SELECT h_definer('l.a = r.a + hf_imm(0)')$$);
SELECT sj_err($$SELECT h_definer('l.a = r.a + hf_sqlrun(0)')$$);
SELECT h_definer('l.a = r.a') AS definer_join;
RESET ROLE;
SELECT count(*) AS side_effects FROM hits;

-- 2. a plain join planned as SimJoin returns PostgreSQL's answer: values the
-- engines cannot compute exactly (infinite dates and timestamps, values near
-- the types' limits under arithmetic) are joined by PostgreSQL's operators
-- h_cs(q): q through the node (PostgreSQL's join methods off) against q
-- with the node disabled, as multisets of row texts
CREATE FUNCTION h_run(tbl text, q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TEMP TABLE %I AS SELECT x::text AS r FROM (%s) x', tbl, q);
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    EXECUTE format('CREATE TEMP TABLE %I (r text)', tbl);
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION h_cs(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE used bool := false; ln text; e_on text; e_off text;
        n_on bigint; n_off bigint; extra bigint; missing bigint;
BEGIN
    PERFORM set_config('enable_nestloop', 'off', true);
    PERFORM set_config('enable_hashjoin', 'off', true);
    PERFORM set_config('enable_mergejoin', 'off', true);
    FOR ln IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        used := used OR ln LIKE '%Custom Scan (SimJoin)%';
    END LOOP;
    e_on := h_run('h_on', q);
    PERFORM set_config('enable_nestloop', 'on', true);
    PERFORM set_config('enable_hashjoin', 'on', true);
    PERFORM set_config('enable_mergejoin', 'on', true);
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    e_off := h_run('h_off', q);
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    SELECT count(*) INTO n_on FROM h_on;
    SELECT count(*) INTO n_off FROM h_off;
    SELECT count(*) INTO extra FROM (TABLE h_on EXCEPT ALL TABLE h_off) d;
    SELECT count(*) INTO missing FROM (TABLE h_off EXCEPT ALL TABLE h_on) d;
    DROP TABLE h_on, h_off;
    IF e_on IS NOT NULL OR e_off IS NOT NULL THEN
        RETURN format('simjoin=%s node: %s; PostgreSQL: %s', used,
                      coalesce(e_on, n_on || ' rows'), coalesce(e_off, n_off || ' rows'));
    END IF;
    RETURN 'rows=' || n_off || ' simjoin=' || used
        || CASE WHEN extra = 0 AND missing = 0 THEN ' same=t'
                ELSE format(' same=f (node: %s rows, %s extra, %s missing)', n_on, extra, missing) END;
END $$;
CREATE TABLE hda (id int, d date, ts timestamp, tz timestamptz);
CREATE TABLE hdb (LIKE hda);
INSERT INTO hda SELECT i, date '2024-01-01' + i, timestamp '2024-01-01' + i * interval '1 minute',
                       timestamptz '2024-01-01 00:00+00' + i * interval '1 minute'
FROM generate_series(1, 300) i;
INSERT INTO hdb SELECT i, date '2024-01-01' + 2 * i, timestamp '2024-01-01' + 2 * i * interval '1 minute',
                       timestamptz '2024-01-01 00:00+00' + 2 * i * interval '1 minute'
FROM generate_series(1, 200) i;
INSERT INTO hda VALUES (1001, 'infinity', 'infinity', 'infinity'),
                       (1002, '-infinity', '-infinity', '-infinity'), (1003, NULL, NULL, NULL);
INSERT INTO hdb VALUES (2001, 'infinity', 'infinity', 'infinity'),
                       (2002, '4713-01-10 BC', '4713-11-24 BC', '4713-11-25 00:00+00 BC'),
                       (2003, '5874897-12-20', '294276-12-31 23:50:00', '294276-12-30 23:50:00+00');
ANALYZE hda, hdb;
SELECT h_cs($$SELECT count(*) FROM hda a JOIN hdb b ON a.d BETWEEN b.d - 1 AND b.d + 1$$);
-- the engine joins the other rows: only pairs with a row set aside are
-- evaluated by PostgreSQL's operators
SELECT strategy <> 'nested loop (PostgreSQL)' AS on_the_engine FROM simjoin_last_stats();
SELECT h_cs($$SELECT a.id, b.id FROM hda a JOIN hdb b ON a.d BETWEEN b.d - 1 AND b.d + 1$$);
SELECT h_cs($$SELECT a.id, b.id FROM hda a JOIN hdb b
              ON a.ts BETWEEN b.ts - interval '5 minutes' AND b.ts + interval '5 minutes'$$);
SELECT h_cs($$SELECT count(*) FROM hda a JOIN hdb b ON a.tz < b.tz - interval '1 hour'$$);
SELECT h_cs($$SELECT a.id, b.id FROM hda a LEFT JOIN hdb b ON a.d = b.d + 7$$);
SELECT h_cs($$SELECT a.id FROM hda a WHERE NOT EXISTS (SELECT 1 FROM hdb b WHERE a.d + 3 > b.d AND a.ts < b.ts)$$);
SELECT h_cs($$SELECT a.id FROM hda a WHERE EXISTS (SELECT 1 FROM hdb b WHERE a.d = b.d - 1)$$);
SELECT h_cs($$SELECT count(*) FROM hda a JOIN hdb b ON a.d BETWEEN b.d - 1 AND b.d + 1 AND a.id % 3 = b.id % 3$$);
SELECT h_cs($$SELECT a.id, b.id FROM hda a LEFT JOIN (SELECT * FROM hdb WHERE id > 2000) b ON a.d <= b.d + 1$$);
-- every row of one side set aside
SELECT h_cs($$SELECT a.id, b.id FROM hda a LEFT JOIN (SELECT * FROM hdb WHERE id = 2001) b ON a.d <= b.d + 1$$);
SELECT h_cs($$SELECT count(*) FROM (SELECT * FROM hda WHERE id > 1000) a JOIN hdb b ON a.d >= b.d + 1$$);
-- PostgreSQL's own errors stay errors
SELECT h_cs($$SELECT count(*) FROM hda a JOIN hdb b ON a.d - b.d BETWEEN 0 AND 3$$);
SELECT h_cs($$SELECT count(*) FROM hda a JOIN hdb b ON a.ts < b.ts + interval '1 day'$$);
-- finite values join on the engines as before
DELETE FROM hda WHERE id > 1000;
DELETE FROM hdb WHERE id > 2000;
SELECT h_cs($$SELECT a.id, b.id FROM hda a JOIN hdb b ON a.d BETWEEN b.d - 1 AND b.d + 1$$);
SELECT strategy <> 'nested loop (PostgreSQL)' AS on_the_engine FROM simjoin_last_stats();

-- vectors of different lengths: PostgreSQL's error only on the pairs its
-- plan evaluates (a hash join on g never pairs the 3-vector here)
CREATE TABLE hva (id int, g int, v float8[]);
CREATE TABLE hvb (LIKE hva);
INSERT INTO hva SELECT i, i % 10, ARRAY[i % 7, i % 5]::float8[] FROM generate_series(1, 200) i;
INSERT INTO hva VALUES (1001, 99, '{0,0,0}'), (1002, 98, '{1,NULL}'), (1003, 97, NULL);
INSERT INTO hvb SELECT i, i % 10, ARRAY[i % 5, i % 7]::float8[] FROM generate_series(1, 100) i;
ANALYZE hva, hvb;
SELECT h_cs($$SELECT a.id, b.id FROM hva a JOIN hvb b ON a.v <-> b.v <= 1.5 AND a.g = b.g$$);
SELECT h_cs($$SELECT a.id, b.id FROM hva a LEFT JOIN hvb b ON l2_distance(a.v, b.v) < 2 AND a.g = b.g$$);
DELETE FROM hva WHERE id = 1002;
SELECT h_cs($$SELECT count(*) FROM hva a JOIN hvb b ON a.v <-> b.v <= 1.5 AND a.g + 1 > b.g$$);

-- 3. statistics belong to the user who ran the join, and a session handed
-- on (DISCARD ALL, SET ROLE, SESSION AUTHORIZATION) starts without them
SELECT theta_join_count('hp', 'id', 'hp', 'id', 'l.a = r.a') AS pairs;
SELECT operator, left_rows, right_rows, pairs FROM simjoin_last_stats();
SET ROLE regress_sj_hard;
SELECT simjoin_last_stats() IS NULL AS hidden_after_set_role;
RESET ROLE;
SELECT simjoin_last_stats() IS NULL AS forgotten_after_reset_role;
SELECT theta_join_count('hp', 'id', 'hp', 'id', 'l.a = r.a') AS pairs;
DISCARD ALL;
SELECT simjoin_last_stats() IS NULL AS forgotten_after_discard_all;
SELECT theta_join_count('hp', 'id', 'hp', 'id', 'l.a = r.a') AS pairs;
SET SESSION AUTHORIZATION regress_sj_hard;
SELECT simjoin_last_stats() IS NULL AS hidden_after_session_authorization;
RESET SESSION AUTHORIZATION;
SELECT simjoin_last_stats() IS NULL AS forgotten_after_reset_session_authorization;
-- set_config() changes the role without a utility statement: still hidden
SELECT theta_join_count('hp', 'id', 'hp', 'id', 'l.a = r.a') AS pairs;
SELECT set_config('role', 'regress_sj_hard', false) AS role;
SELECT simjoin_last_stats() IS NULL AS hidden_after_set_config;
SELECT set_config('role', 'none', false) AS role;
SELECT pairs FROM simjoin_last_stats();
-- a join run as another role is not shown to this one
SELECT h_definer('l.a = r.a') AS definer_join;
SELECT pairs FROM simjoin_last_stats();
SET ROLE regress_sj_hard;
SELECT h_definer('l.a = r.a') AS definer_join;
SELECT simjoin_last_stats() IS NULL AS definer_join_hidden;
RESET ROLE;

-- the node evaluates a condition's clauses in PostgreSQL's order (cheapest
-- first, as order_qual_clauses does): a division by zero is raised only
-- where PostgreSQL's plan meets one; here never, since a.g <> b.g is false
-- for every row with b.y = 0
CREATE TABLE hza (id int, g int, x float8);
CREATE TABLE hzb (id int, g int, y float8);
INSERT INTO hza SELECT i, 0, i FROM generate_series(1, 20) i;
INSERT INTO hzb SELECT i, i % 3, CASE WHEN i % 3 = 0 THEN 0 ELSE i END FROM generate_series(1, 30) i;
SELECT h_cs($$SELECT count(*) FROM hza a JOIN hzb b ON a.x / b.y > 1 AND a.g <> b.g$$);
SELECT h_cs($$SELECT a.id, b.id FROM hza a JOIN hzb b ON a.x / b.y > 1 AND a.g <> b.g$$);

-- 4. messages print the value given, told apart from the limit
CREATE TABLE hj (id int, s int4[], v float8[]);
INSERT INTO hj VALUES (1, '{1,2}', '{0,0}'), (2, '{2,3}', '{1,1}');
SELECT sj_err($$SELECT count(*) FROM jaccard_join('hj', 'id', 's', 1.000001)$$);
SELECT sj_err($$SELECT count(*) FROM jaccard_join('hj', 'id', 's', 1.0000000000000002)$$);
SELECT sj_err($$SELECT count(*) FROM eps_join('hj', 'id', 'v', -0.0000001234567)$$);

-- roles are the cluster's: leave none behind for the next run
DROP OWNED BY regress_sj_hard;
DROP ROLE regress_sj_hard;
