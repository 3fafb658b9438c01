-- theta_join over numeric arithmetic: + - and * / by a constant, exact as
-- PostgreSQL computes them, on numerics of mixed scales with negatives,
-- NULLs, NaN, +-Infinity and values near the fixed point's limits; every
-- condition checked against the same join in plain SQL, with and without
-- the custom scan
SET jit = off;
CREATE TABLE nl (id int, p numeric(12, 2), q numeric(6, 3), u numeric, w numeric(5, -2),
                 i int, b bigint, f float8);
CREATE TABLE nr (LIKE nl);
SELECT setseed(0.32);
INSERT INTO nl SELECT i,
    CASE WHEN i % 17 = 0 THEN NULL WHEN i % 23 = 0 THEN 'NaN'
         WHEN i % 29 = 0 THEN 9999999999.99 * (i % 2 * 2 - 1)
         ELSE round((random() * 2000 - 1000)::numeric, (i % 3)) END,
    CASE WHEN i % 13 = 0 THEN NULL WHEN i % 31 = 0 THEN 'NaN'
         ELSE round((random() * 20 - 10)::numeric, 3) END,
    CASE WHEN i % 11 = 0 THEN NULL WHEN i % 37 = 0 THEN 'NaN'
         WHEN i % 41 = 0 THEN 'Infinity' WHEN i % 43 = 0 THEN '-Infinity'
         ELSE round((random() * 200 - 100)::numeric, i % 5) END,
    CASE WHEN i % 19 = 0 THEN NULL ELSE round((random() * 2e6 - 1e6)::numeric, -2) END,
    CASE WHEN i % 7 = 0 THEN NULL ELSE floor(random() * 200 - 100)::int END,
    CASE WHEN i % 47 = 0 THEN 9223372036854775807 ELSE floor(random() * 2000 - 1000)::bigint END,
    CASE WHEN i % 9 = 0 THEN NULL WHEN i % 53 = 0 THEN 'NaN' WHEN i % 59 = 0 THEN '-Infinity'
         ELSE random() * 200 - 100 END
FROM generate_series(1, 300) i;
INSERT INTO nr SELECT id + 1000,
    CASE WHEN abs(p) > 1e9 THEN -p WHEN id % 3 = 0 THEN p + 990 WHEN id % 3 = 1 THEN p - 0.5 ELSE p END,
    CASE WHEN id % 2 = 0 THEN q * 2 ELSE -q END,
    CASE WHEN id % 4 = 0 THEN u + 0.0001 WHEN id % 4 = 1 THEN u * 2 ELSE u - 5 END,
    w, CASE WHEN id % 2 = 0 THEN i + 1 ELSE i END, b, f + 1
FROM nl WHERE id <= 250;

-- theta_join and theta_join_count equal the join in SQL, as multisets, and
-- so does the SQL join planned with the custom scan (where it is offered)
CREATE FUNCTION sjn_check(cond text) RETURNS text LANGUAGE sql AS $$
    SELECT sj_theta_check('nl', 'nr', cond)
$$;
-- whether the SQL join of cond is planned as the custom scan
CREATE FUNCTION sjn_node(cond text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE ln text;
BEGIN
    FOR ln IN EXECUTE 'EXPLAIN (COSTS OFF) SELECT count(*) FROM nl l JOIN nr r ON ' || cond LOOP
        IF ln LIKE '%Custom Scan (SimJoin)%' THEN RETURN true; END IF;
    END LOOP;
    RETURN false;
END $$;

-- the issue's example, band joins, both sides' arithmetic
SELECT sjn_check('l.p >= r.p + 990');
SELECT sjn_check('r.p BETWEEN l.p - 0.5 AND l.p + 0.5');
SELECT sjn_check('r.p - l.p = 990');
SELECT sjn_check('l.p - r.p >= -0.5 AND l.p - r.p <= 0.5');
SELECT sjn_check('r.q BETWEEN l.q - 0.25 AND l.q + 0.25');
SELECT sjn_check('l.q + r.q > 0.001 AND l.q - r.q < 1');
SELECT sjn_check('l.p + l.q < r.p - r.q');
SELECT sjn_check('-l.q = r.q');
SELECT sjn_check('+l.q <= -(-r.q)');
-- mixed scales, NaN and infinities on the unconstrained column
SELECT sjn_check('r.u BETWEEN l.u - 5 AND l.u + 5.125');
SELECT sjn_check('l.u + 5 = r.u');
SELECT sjn_check('l.u - r.u >= 0.0001');
SELECT sjn_check('l.u - r.u > 10 OR r.u - l.u > 10');
SELECT sjn_check('l.u + r.u = r.u + l.u');
SELECT sjn_check('l.u - l.u = r.u - r.u');
SELECT sjn_check('l.u >= r.u + 0 AND l.u + 1 > 100');
SELECT sjn_check('l.u = r.u AND l.u - r.u = 0');
SELECT sjn_check('l.u + 1 > r.u AND l.u < r.u');
-- multiplication by constants: integers, fractions, negatives, zero
SELECT sjn_check('l.p * 2 >= r.p');
SELECT sjn_check('l.q * 1.5 - r.q > 1');
SELECT sjn_check('2.5 * l.u <= r.u * -0.4');
SELECT sjn_check('l.u * 0 = r.u * 0');
SELECT sjn_check('(l.q + r.q) * 0.125 * 8 = l.q + r.q');
SELECT sjn_check('l.p * 0.01 BETWEEN r.q - 1 AND r.q + 1');
SELECT sjn_check('l.u * 1.000 = r.u * 1');
SELECT sjn_check('l.u * NULL::numeric > r.u');
SELECT sjn_check('l.u + NULL::numeric > r.u OR l.u = r.u');
-- negative declared scale, and comparisons with numeric constants
SELECT sjn_check('r.w BETWEEN l.w - 100 AND l.w + 100');
SELECT sjn_check('l.w + r.w > 1e5 AND l.q > -1.5');
SELECT sjn_check('l.u >= ''NaN''::numeric - 1 AND l.u - 1 < r.u + 1');
SELECT sjn_check('l.u - ''Infinity''::numeric < r.u');
SELECT sjn_check('l.u + ''-Infinity''::numeric = r.u - ''Infinity''::numeric');
-- integer and float columns cast to numeric
SELECT sjn_check('l.p > r.i');
SELECT sjn_check('r.p BETWEEN l.i - 0.5 AND l.i + 0.5');
SELECT sjn_check('l.i::numeric + 0.5 > r.q AND l.i < r.i');
SELECT sjn_check('l.u - r.i >= 0 AND l.u - r.i < 1');
SELECT sjn_check('l.p > r.b');
SELECT sjn_check('l.q * 100 <= r.i::numeric + l.i');
SELECT sjn_check('l.u < r.f::numeric');
SELECT sjn_check('l.u + 1 < r.f::numeric AND l.f::numeric + 1 > r.u');

-- the custom scan is offered where the declared precisions prove that the
-- arithmetic fits, and left to PostgreSQL otherwise
SELECT sjn_node('r.p BETWEEN l.p - 0.5 AND l.p + 0.5') AS band_fits;
SELECT sjn_node('l.q * 1.5 - r.q > 1') AS product_fits;
SELECT sjn_node('r.u BETWEEN l.u - 5 AND l.u + 5') AS unconstrained;
SELECT sjn_node('l.p * 100000000 > r.p') AS too_wide;
SELECT sjn_node('r.p BETWEEN l.i - 0.5 AND l.i + 0.5') AS int_cast;
SELECT sjn_node('l.p > r.b') AS bigint_compared;
SELECT sjn_node('l.p > r.b + 1') AS bigint_too_wide;
SELECT sjn_node('l.p + 1 > r.f::numeric') AS float_cast;
EXPLAIN (COSTS OFF) SELECT count(*) FROM nl l JOIN nr r ON r.p BETWEEN l.p - 0.5 AND l.p + 0.5;
-- a parameter's value is not known when the generic plan is made: PostgreSQL
-- joins, whatever the value
SET plan_cache_mode = force_generic_plan;
PREPARE band(numeric) AS
    SELECT count(*) FROM nl l JOIN nr r ON r.p BETWEEN l.p - $1 AND l.p + $1;
SELECT count(*) FROM nl l JOIN nr r ON r.p BETWEEN l.p - 0.5 AND l.p + 0.5;
EXECUTE band(0.5);
EXECUTE band(1e30);
EXECUTE band(0.0000000000000000001);
EXPLAIN (COSTS OFF) EXECUTE band(0.5);
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE band(0.5);
EXECUTE band(0.5);
EXECUTE band(1e30);
EXECUTE band(0.0000000000000000001);
DEALLOCATE band;
RESET plan_cache_mode;

-- near the limits: 18 digits at the common scale fit, more do not
CREATE TABLE nbig (id int, u numeric);
INSERT INTO nbig VALUES (1, 4611686018427387.903), (2, -4611686018427387.903), (3, 0.001),
    (4, NULL), (5, 'NaN'), (6, 'Infinity');
SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u >= r.u + 0'),
       (SELECT count(*) FROM nbig l, nbig r WHERE l.u >= r.u + 0);
SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u * 1 < -r.u'),
       (SELECT count(*) FROM nbig l, nbig r WHERE l.u * 1 < -r.u);
SELECT sj_err($$SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u >= r.u + 1')$$);
SELECT sj_err($$SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u - r.u > 0')$$);
SELECT sj_err($$SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u > r.u + 0.0001')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.u > r.u + 1e-16')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.u > r.u + 1e30')$$);
-- comparisons alone are ranked, so any magnitude is exact
SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u < r.u AND r.u > 1e30 - 1e30');

-- division by constants: each quotient rounded as PostgreSQL's numeric_div
-- rounds it, to a scale that depends on the row (16 significant digits at
-- least, and at least either operand's display scale)
SELECT sjn_check('r.p > l.p / 3');
SELECT sjn_check('r.q BETWEEN l.q / 1.5 - 0.5 AND l.q / 1.5 + 0.5');
SELECT sjn_check('l.p / 7.000 = r.p / 7.000');
SELECT sjn_check('(l.p + l.q) / 2 < r.p / -2');
SELECT sjn_check('l.q / 3 = r.q / 3');
SELECT sjn_check('l.q / 0.7 * 0.7 < r.q');
SELECT sjn_check('l.u / 3 > r.u / 0.7');
SELECT sjn_check('l.u / 3 * 3 = l.u AND r.u > l.u');
SELECT sjn_check('l.u / -2 - r.u / 3 >= 0.5');
SELECT sjn_check('l.i::numeric / 3 < r.q');
SELECT sjn_check('l.w / 3 < r.w / 7');
SELECT sjn_check('l.u / NULL::numeric > r.u OR l.u = r.u');
-- numeric columns compared as they are still make hash and range joins
SELECT sjn_check('l.u = r.u AND l.u / 3 > r.p / 7');
SELECT sjn_check('r.p >= l.p AND l.p / 3 < r.q AND l.i < 0');
SELECT sjn_node('r.p > l.p / 3') AS division_fits;
SELECT sjn_node('r.u > l.u / 3') AS division_unconstrained;
SELECT sjn_node('r.p > l.p / 0.000000000001') AS division_fits_still;
SELECT sjn_node('r.p > l.p / 0.00000000000001') AS division_too_wide;
-- NaN / 0 is NaN, NULL / 0 is NULL; anything else / 0 is an error
CREATE TABLE nnan (id int, u numeric);
INSERT INTO nnan VALUES (1, 'NaN'), (2, NULL), (3, 'NaN');
SELECT theta_join_count('nnan', 'id', 'nnan', 'id', 'l.u / 0 = r.u'),
       (SELECT count(*) FROM nnan l, nnan r WHERE l.u / 0 = r.u);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p / 0 > r.p')$$);
SELECT sj_err($$SELECT count(*) FROM nl l JOIN nr r ON l.p / 0.00 > r.p$$);
SELECT sj_err($$SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u / 0 > r.u')$$);
-- refused: a quotient that needs too many digits, a dividend whose display
-- scale varies by row where it decides the quotient's scale, a constant of
-- more than 18 digits at the common scale (1 / 3.0 is folded to 20 places)
SELECT theta_join_count('nbig', 'id', 'nbig', 'id', 'l.u / 3 > r.u');
CREATE TABLE nds (id int, u numeric);
INSERT INTO nds VALUES (1, 12345678901234.12345), (2, 1.5), (3, -0.1);
SELECT theta_join_count('nds', 'id', 'nds', 'id', 'l.u / 3 > r.u');
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.u > r.u + 1 / 3.0')$$);
DROP TABLE nnan, nds;

-- refused: division by anything but a constant, products of two values,
-- non-finite or long multipliers and divisors
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p >= r.p / r.q')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p >= 3 / r.q')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p >= r.p / ''Infinity''::numeric')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p * r.q > 1')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p * ''NaN''::numeric > r.p')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p * 1234567890123456789 > r.p')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p % 2 > r.p')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p > r.i + 1')$$);
SELECT sj_err($$SELECT theta_join_count('nl', 'id', 'nr', 'id', 'l.p > r.b * 1.5')$$);
-- division by a column runs where PostgreSQL evaluates the join
SELECT count(*) FROM nl l JOIN nr r ON l.p >= r.p / r.q;

DROP TABLE nl, nr, nbig;
DROP FUNCTION sjn_check(text), sjn_node(text);
