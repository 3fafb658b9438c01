-- theta_join: every condition checked against PostgreSQL's own join
CREATE TABLE tl (id int, i2 smallint, i4 int, i8 bigint, f4 real, f8 float8,
                 n numeric, d date, ts timestamp, tz timestamptz, b bool, t text, v varchar(10));
CREATE TABLE tr (LIKE tl);
SELECT setseed(0.3);
INSERT INTO tl SELECT i,
    CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 7)::smallint END,
    CASE WHEN i % 13 = 0 THEN NULL ELSE i % 17 END,
    CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 7919) % 101 END,
    CASE WHEN i % 19 = 0 THEN NULL WHEN i % 37 = 0 THEN 'NaN' ELSE (i % 9) / 2.0 END,
    CASE WHEN i % 23 = 0 THEN NULL WHEN i % 41 = 0 THEN 'NaN' ELSE round((random() * 20)::numeric, 1) END,
    CASE WHEN i % 29 = 0 THEN NULL ELSE round((random() * 10)::numeric, 2) END,
    CASE WHEN i % 31 = 0 THEN NULL ELSE date '2024-01-01' + (i % 40) END,
    timestamp '2024-01-01 00:00' + (i % 50) * interval '7 minutes',
    timestamptz '2024-01-01 00:00+00' + (i % 45) * interval '11 minutes',
    CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END,
    CASE WHEN i % 43 = 0 THEN NULL ELSE chr(97 + i % 6) || (i % 4) END,
    chr(65 + i % 5)
FROM generate_series(1, 300) i;
INSERT INTO tr SELECT id + 1000, i4::smallint % 5, i8::int % 13, i2 * 9, f8::real, f4 * 3,
    n * 2, d + 3, ts + interval '30 minutes', tz - interval '1 hour', NOT b, v || '1', t
FROM tl WHERE id <= 250;

-- theta_join equals the same join written in SQL, as multisets
CREATE FUNCTION sj_theta_check(cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; c bigint; d1 bigint; d2 bigint;
BEGIN
    EXECUTE format('CREATE TEMP TABLE th_o AS SELECT l.id::bigint AS left_id, r.id::bigint AS right_id FROM tl l JOIN tr r ON %s', cond);
    CREATE TEMP TABLE th_j AS SELECT * FROM theta_join('tl', 'id', 'tr', 'id', cond);
    SELECT count(*) INTO n FROM th_o;
    c := theta_join_count('tl', 'id', 'tr', 'id', cond);
    SELECT count(*) INTO d1 FROM (SELECT * FROM th_j EXCEPT ALL SELECT * FROM th_o) x;
    SELECT count(*) INTO d2 FROM (SELECT * FROM th_o EXCEPT ALL SELECT * FROM th_j) x;
    DROP TABLE th_o, th_j;
    IF d1 = 0 AND d2 = 0 AND c = n THEN
        RETURN 'ok: ' || n || ' pairs';
    END IF;
    RETURN format('MISMATCH: sql %s, theta extra %s, missing %s, count %s', n, d1, d2, c);
END $$;

-- equi joins (hash), with residuals, on each type
SELECT sj_theta_check('l.i4 = r.i4');
SELECT sj_theta_check('l.i2 = r.i2 AND l.f8 < r.f8');
SELECT sj_theta_check('l.i8 = r.i8');
SELECT sj_theta_check('l.i4 = r.i2');
SELECT sj_theta_check('l.f8 = r.f4');
SELECT sj_theta_check('l.d = r.d');
SELECT sj_theta_check('l.b = r.b');
SELECT sj_theta_check('l.t = r.v');
SELECT sj_theta_check('l.n = r.n');
SELECT sj_theta_check('l.i4 = r.i4 AND l.i2 = r.i2');
-- band and inequality joins (range)
SELECT sj_theta_check('r.i8 BETWEEN l.i8 - 5 AND l.i8 + 5');
SELECT sj_theta_check('l.i4 < r.i8');
SELECT sj_theta_check('l.f8 >= r.f8 + 1.5');
SELECT sj_theta_check('l.ts BETWEEN r.ts - interval ''20 minutes'' AND r.ts + interval ''20 minutes''');
SELECT sj_theta_check('l.tz > r.tz');
SELECT sj_theta_check('l.d <= r.d - 2');
SELECT sj_theta_check('l.n < r.n');
SELECT sj_theta_check('l.t < r.t COLLATE "C"');
SELECT sj_theta_check('l.i2 - r.i2 >= 2');
SELECT sj_theta_check('l.f4 > r.f4 AND l.i4 <> r.i4');
-- general conditions (nested loop)
SELECT sj_theta_check('l.i4 = r.i4 OR l.f8 > r.f8 + 18');
SELECT sj_theta_check('l.i4 <> r.i4 AND l.i2 <> r.i2');
SELECT sj_theta_check('l.i4 * r.i2 > 40');
SELECT sj_theta_check('l.f8 / 2 > r.f4 * 3');
SELECT sj_theta_check('NOT (l.i8 < r.i8) AND l.b');
SELECT sj_theta_check('l.b AND NOT r.b');
SELECT sj_theta_check('l.i4 IS NULL AND r.i4 IS NOT NULL AND l.i2 = r.i2');
SELECT sj_theta_check('(l.i4 > r.i4) IS NULL');
SELECT sj_theta_check('l.i8 + r.i8 BETWEEN 100 AND 110');
SELECT sj_theta_check('-l.i4 > -r.i4 + 10');
SELECT sj_theta_check('l.d - r.d > 30');
SELECT sj_theta_check('l.i4 % 3 = r.i4 % 3 AND l.i4 < r.i4');
SELECT sj_theta_check('l.n > 5.5 AND r.n < 5.5 AND l.i4 = r.i4');
SELECT sj_theta_check('l.t = ''a1'' AND r.t > ''c'' COLLATE "C"');
SELECT sj_theta_check('true');
SELECT sj_theta_check('l.i4 > NULL');
SELECT sj_theta_check('l.i4 = r.i4 OR NULL');

-- NULL logic: a condition that is not true does not join
SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = NULL');
SELECT theta_join_count('tl', 'id', 'tr', 'id', 'NOT (l.i4 = r.i4)')
     + theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = r.i4')
     + theta_join_count('tl', 'id', 'tr', 'id', '(l.i4 = r.i4) IS NULL')
     = (SELECT count(*) FROM tl) * (SELECT count(*) FROM tr) AS three_valued;

-- the strategy follows the condition's shape
SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = r.i4 AND l.f8 < r.f8') > 0 AS ran;
SELECT strategy LIKE '%hash%' AS hash FROM simjoin_last_stats();
SELECT theta_join_count('tl', 'id', 'tr', 'id', 'r.i8 BETWEEN l.i8 - 5 AND l.i8 + 5') > 0 AS ran;
SELECT strategy LIKE '%range%' AS range FROM simjoin_last_stats();
SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 <> r.i4 OR l.b') > 0 AS ran;
SELECT strategy LIKE '%nested%' AS nested_loop FROM simjoin_last_stats();

-- arithmetic errors are PostgreSQL's own
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 / (r.i4 - r.i4) > 0')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i8 * 4611686018427387904 > r.i8')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i2 * 10000::smallint > r.i2')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.f8 * 1e308 * 10 > r.f8')$$);
-- guarded by an AND that is false first: no error, as in PostgreSQL
SELECT sj_theta_check('r.i4 <> 0 AND l.i4 / r.i4 > 1');

-- refused constructs, each named
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 IN (1, 2)')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = (SELECT 1)')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.t LIKE r.t')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'lower(l.t) = r.t')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'CASE WHEN l.b THEN 1 ELSE 0 END = r.i4')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'coalesce(l.i4, 0) = r.i4')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.n / r.n > 1')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.ts > r.ts + l.i4 * interval ''1 month''')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.b IS TRUE')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 IS DISTINCT FROM r.i4')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l = r')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4::text = r.t')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.ts::date = r.d')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.t < r.t COLLATE "C" AND l.t > r.t COLLATE "POSIX"')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'count(*) > 1')$$);
-- bad input
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 + 1')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.nope = r.i4')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'x.i4 = r.i4')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = r.i4; DROP TABLE tl')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = r.i4 FROM tl')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', '')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 't', 'tr', 'id', 'true')$$);
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'nosuch', 'id', 'true')$$);
SELECT count(*) FROM theta_join('tl', 'id', 'tr', 'id', NULL);

-- privileges: every column the condition reads needs SELECT
CREATE ROLE regress_sj_theta;
GRANT SELECT (id, i4) ON tl TO regress_sj_theta;
GRANT SELECT (id, i4) ON tr TO regress_sj_theta;
SET ROLE regress_sj_theta;
SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = r.i4') > 0 AS allowed;
SELECT sj_err($$SELECT theta_join_count('tl', 'id', 'tr', 'id', 'l.i4 = r.i4 AND l.f8 > 0')$$);
RESET ROLE;
-- row-level security on one side
ALTER TABLE tr ENABLE ROW LEVEL SECURITY;
CREATE POLICY tr_small ON tr USING (id < 1050);
GRANT SELECT ON tr TO regress_sj_theta;
SET ROLE regress_sj_theta;
SELECT count(DISTINCT right_id) <= 49 AS policy_holds, max(right_id) < 1050 AS only_visible
FROM theta_join('tl', 'id', 'tr', 'id', 'l.i4 = r.i4');
RESET ROLE;
DROP POLICY tr_small ON tr;
ALTER TABLE tr DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON tl, tr FROM regress_sj_theta;
DROP ROLE regress_sj_theta;

-- collations: text ranks follow one collation; what cannot be ranked
-- consistently is refused
CREATE COLLATION sj_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE cl (id int, a text COLLATE sj_ci, b text);
CREATE TABLE cr (id int, a text COLLATE sj_ci, b text);
INSERT INTO cl VALUES (1, 'x', 'ABC'), (2, 'y', 'abc');
INSERT INTO cr VALUES (1, 'X', 'abc'), (2, 'Y', 'ABC');
SELECT (SELECT count(*) FROM cl l JOIN cr r ON l.a = r.a) AS sql,
       theta_join_count('cl', 'id', 'cr', 'id', 'l.a = r.a') AS theta;
SELECT (SELECT count(*) FROM cl l JOIN cr r ON l.b = r.b) AS sql,
       theta_join_count('cl', 'id', 'cr', 'id', 'l.b = r.b') AS theta;
SELECT sj_err($$SELECT theta_join_count('cl', 'id', 'cr', 'id', 'l.a = r.a AND l.b = r.b')$$);
CREATE TABLE cx (id int, t text COLLATE "C");
CREATE TABLE cy (id int, t text COLLATE "POSIX");
SELECT sj_err($$SELECT theta_join_count('cx', 'id', 'cy', 'id', 'l.t < r.t')$$);

-- date/time arithmetic: infinite values and values near the types' limits
-- are refused rather than computed as plain integers
CREATE TABLE tinf (id int, ts timestamp, d date);
INSERT INTO tinf VALUES (1, 'infinity', 'infinity'), (2, '2024-01-01', '2024-01-01'),
                        (3, '-infinity', '-infinity');
SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.ts < r.ts')
     = (SELECT count(*) FROM tinf l JOIN tinf r ON l.ts < r.ts) AS infinity_compares;
SELECT sj_err($$SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.ts = r.ts - interval ''1 hour''')$$);
SELECT sj_err($$SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.d = r.d + 1')$$);
SELECT sj_err($$SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.d - r.d > 1')$$);
SELECT sj_err($$SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.d + r.id > l.d')$$);
SELECT sj_err($$SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.ts > r.ts - interval ''100000000 days''')$$);
DELETE FROM tinf WHERE id <> 2;
INSERT INTO tinf VALUES (4, '294276-12-31 23:00', '2024-01-02');
SELECT sj_err($$SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.ts < r.ts + interval ''2 hours''')$$);
SELECT theta_join_count('tinf', 'id', 'tinf', 'id', 'l.d < r.d + 1')
     = (SELECT count(*) FROM tinf l JOIN tinf r ON l.d < r.d + 1) AS finite_dates_ok;

-- a condition nested deeper than the engines' stack
SELECT sj_err(format($$SELECT theta_join_count('tl', 'id', 'tr', 'id', %L)$$,
                     'l.i8 < ' || repeat('(r.i8 + ', 16) || '1' || repeat(')', 16)));

-- empty sides and all-equal keys
CREATE TABLE te (id int, i4 int);
SELECT theta_join_count('te', 'id', 'tr', 'id', 'l.i4 = r.i4'), theta_join_count('tl', 'id', 'te', 'id', 'true');
CREATE TABLE tk AS SELECT i AS id, 1 AS k FROM generate_series(1, 2000) i;
SELECT theta_join_count('tk', 'id', 'tk', 'id', 'l.k = r.k'), (SELECT count(*) FROM theta_join('tk', 'id', 'tk', 'id', 'l.k = r.k'));

-- calendar intervals: months, years, and days on timestamptz are computed by
-- PostgreSQL's own functions as the rows are read (derived columns), in the
-- session's TimeZone, across daylight saving changes
SET TimeZone = 'Europe/Berlin';
CREATE TABLE tml (id int, d date, ts timestamp, tz timestamptz);
CREATE TABLE tmr (LIKE tml);
INSERT INTO tml SELECT i, date '2023-12-20' + (i * 7) % 500,
    timestamp '2023-12-20' + (i * 7) % 500 * interval '1 day' + (i * 37) % 1440 * interval '1 minute',
    timestamptz '2024-03-25 00:00' + (i * 5) % 240 * interval '1 hour'
FROM generate_series(1, 300) i;
-- month ends, leap days and daylight saving changes, and their images
INSERT INTO tml (id, d, ts, tz) VALUES
    (401, '2024-01-31', '2024-01-31 10:00', '2024-03-30 02:30'),
    (402, '2024-02-29', '2024-02-29 23:59:59', '2024-03-31 01:30'),
    (403, '2024-03-31', '2024-03-31 00:00', '2024-03-31 03:30'),
    (404, '2023-02-28', '2023-02-28 12:00', '2024-10-26 02:30'),
    (405, '2023-01-31', '2023-01-31 12:00', '2024-10-27 02:30+02'),
    (406, '2024-04-30', '2024-04-30 10:00', '2024-10-27 02:30+01'),
    (407, '2000-02-29', '2000-02-29 00:00', '2024-10-28 02:30'),
    (408, '2025-02-28', '2025-02-28 00:00', '2024-04-30 03:30'),
    (409, NULL, NULL, NULL);
INSERT INTO tmr SELECT id + 1000, d + (id % 3 - 1) * 31, ts + (id % 5 - 2) * interval '1 mon',
    tz + (id % 3) * interval '1 day'
FROM tml;
INSERT INTO tmr (id, d, ts, tz) VALUES
    (2001, '2023-12-31', '2023-12-31 10:00', '2024-03-29 02:30'),
    (2002, '2024-01-29', '2024-01-29 23:59:59', '2024-03-30 01:30'),
    (2003, '2024-02-29', '2024-02-29 00:00', '2024-02-29 03:30'),
    (2004, '2024-03-31', '2024-03-31 10:00', '2024-10-26 02:30+02'),
    (2005, '2022-12-31', '2022-12-31 12:00', '2024-09-30 02:30'),
    (2006, '1999-02-28', '1999-02-28 00:00', '2024-10-27 02:30+01'),
    (2007, NULL, '2024-01-31 10:00', NULL);

-- sj_month_check(cond): theta_join, theta_join_count and the plain SQL join
-- (which the custom scan may take) against PostgreSQL's own join
CREATE FUNCTION sj_month_check(cond text) RETURNS text LANGUAGE sql AS $$
    SELECT sj_theta_check('tml', 'tmr', cond)
$$;

SELECT sj_month_check('l.ts BETWEEN r.ts - interval ''1 month'' AND r.ts + interval ''1 month''');
SELECT sj_month_check('l.ts = r.ts + interval ''1 month''');
SELECT sj_month_check('l.ts = r.ts - interval ''1 month''');
SELECT sj_month_check('r.ts + interval ''1 mon'' = l.ts + interval ''1 mon''');
SELECT sj_month_check('l.ts > r.ts + interval ''1 year''');
SELECT sj_month_check('l.ts <= r.ts - interval ''1 mon 2 days 3 hours''');
SELECT sj_month_check('l.ts < r.ts + interval ''1 month'' - interval ''2 hours''');
SELECT sj_month_check('l.ts + interval ''-2 years 1 mon'' < r.ts');
SELECT sj_month_check('l.d::timestamp = r.d + interval ''1 month''');
SELECT sj_month_check('l.d::timestamp = r.d - interval ''1 month''');
SELECT sj_month_check('l.ts >= r.d + interval ''1 day'' AND l.ts < r.d + interval ''1 mon''');
SELECT sj_month_check('l.tz > r.tz + interval ''1 day''');
SELECT sj_month_check('l.tz = r.tz + interval ''1 day''');
SELECT sj_month_check('l.tz BETWEEN r.tz + interval ''1 day'' AND r.tz + interval ''2 days 1 hour''');
SELECT sj_month_check('l.tz >= r.tz + interval ''1 mon'' AND l.tz < r.tz + interval ''1 mon 1 day''');
SELECT sj_month_check('l.tz - interval ''1 day'' < r.tz - interval ''3 hours''');
SELECT sj_month_check('l.ts > r.ts + interval ''1 month'' OR l.tz = r.tz - interval ''1 day''');
SELECT sj_month_check('l.ts > r.ts + interval ''1 month'' AND l.ts < r.ts + interval ''40 days''');
SELECT sj_month_check('(l.ts + interval ''1 mon'') IS NULL AND r.ts IS NOT NULL');
-- the same conditions in another time zone give PostgreSQL's answers there
SET TimeZone = 'America/New_York';
SELECT sj_month_check('l.tz > r.tz + interval ''1 day''');
SELECT sj_month_check('l.tz >= r.tz + interval ''1 mon'' AND l.tz < r.tz + interval ''1 mon 1 day''');
SET TimeZone = 'Europe/Berlin';
-- a band of months is still a range join over two derived bounds
SELECT theta_join_count('tml', 'id', 'tmr', 'id', 'l.ts BETWEEN r.ts - interval ''1 month'' AND r.ts + interval ''1 month''') > 0 AS ran;
SELECT strategy LIKE '%range%' AS range FROM simjoin_last_stats();
SELECT theta_join_count('tml', 'id', 'tmr', 'id', 'l.tz = r.tz + interval ''1 day''') > 0 AS ran;
SELECT strategy LIKE '%hash%' AS hash FROM simjoin_last_stats();
-- infinite values stay infinite, as in PostgreSQL
CREATE TABLE tmi (id int, ts timestamp, d date);
INSERT INTO tmi VALUES (1, 'infinity', 'infinity'), (2, '2024-01-31', '2024-01-31'),
                       (3, '-infinity', '-infinity'), (4, NULL, NULL);
SELECT theta_join_count('tmi', 'id', 'tmi', 'id', 'l.ts >= r.ts + interval ''1 month''')
     = (SELECT count(*) FROM tmi l JOIN tmi r ON l.ts >= r.ts + interval '1 month') AS infinity_months;
SELECT theta_join_count('tmi', 'id', 'tmi', 'id', 'l.ts = r.d - interval ''1 month''')
     = (SELECT count(*) FROM tmi l JOIN tmi r ON l.ts = r.d - interval '1 month') AS infinity_dates;
-- a derived column that is only compared may be infinite while fixed
-- offsets apply to the other side's finite values
CREATE TABLE tmf AS SELECT * FROM tmi WHERE id = 2;
SELECT theta_join_count('tmf', 'id', 'tmi', 'id', 'l.ts + interval ''1 hour'' < r.ts + interval ''1 month''')
     = (SELECT count(*) FROM tmf l JOIN tmi r ON l.ts + interval '1 hour' < r.ts + interval '1 month') AS infinity_derived_compared;
-- but not where the engines add offsets to the derived values
SELECT sj_err($$SELECT theta_join_count('tmf', 'id', 'tmi', 'id', 'l.ts < r.ts + interval ''1 month'' + interval ''1 month'' + interval ''1 month'' + interval ''1 month'' + interval ''1 hour''')$$);
DROP TABLE tmf;
-- results out of range are PostgreSQL's errors, when the other side has rows
INSERT INTO tmi VALUES (5, '294276-12-20', '5874000-01-01');
SELECT sj_err($$SELECT count(*) FROM tmi l JOIN tmi r ON l.ts > r.ts + interval '1 month'$$);
SELECT sj_err($$SELECT theta_join_count('tmi', 'id', 'tmi', 'id', 'l.ts > r.ts + interval ''1 month''')$$);
SELECT sj_err($$SELECT count(*) FROM theta_join('tmi', 'id', 'tmi', 'id', 'l.ts > r.ts + interval ''1 month''')$$);
SELECT sj_err($$SELECT count(*) FROM tmi l JOIN tmi r ON l.ts < r.d + interval '1 month'$$);
SELECT sj_err($$SELECT theta_join_count('tmi', 'id', 'tmi', 'id', 'l.ts < r.d + interval ''1 month''')$$);
CREATE TABLE tme (LIKE tmi);
SELECT theta_join_count('tme', 'id', 'tmi', 'id', 'l.ts > r.ts + interval ''1 month''') AS empty_other_side,
       (SELECT count(*) FROM tme l JOIN tmi r ON l.ts > r.ts + interval '1 month') AS sql;
-- still refused: more interval steps than a derived column holds
SELECT sj_err($$SELECT theta_join_count('tml', 'id', 'tmr', 'id', 'l.ts > r.ts + interval ''1 mon'' + interval ''1 mon'' + interval ''1 mon'' + interval ''1 mon'' + interval ''1 mon''')$$);
-- while as many fixed offsets are added by the engines
SELECT sj_err($$SELECT theta_join_count('tml', 'id', 'tmr', 'id', 'l.ts > r.ts + interval ''1 hour'' + interval ''1 hour'' + interval ''1 hour'' + interval ''1 hour'' + interval ''1 hour''')$$) AS five_fixed_steps;
SELECT theta_join_count('tml', 'id', 'tmr', 'id', 'l.ts > r.ts + interval ''1 hour'' + interval ''1 hour'' + interval ''1 hour'' + interval ''1 hour'' + interval ''1 hour''')
     = (SELECT count(*) FROM tml l JOIN tmr r ON l.ts > r.ts + interval '5 hours') AS five_fixed_steps_count;
SELECT sj_err($$SELECT theta_join_count('tml', 'id', 'tmr', 'id', 'l.tz > r.tz + l.id * interval ''1 day''')$$);
RESET TimeZone;
