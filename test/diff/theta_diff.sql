-- theta_diff.sql: theta_join, CPU vs PostgreSQL's own join and GPU vs CPU,
-- on fresh random data

-- A side of n rows: skewed, uniform and all-equal keys, NULLs in every
-- column, NaN in floats.
CREATE OR REPLACE FUNCTION sjd_theta_side(tbl text, n int, nkeys int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        SELECT i AS id,
               CASE WHEN random() < 0.05 THEN NULL ELSE floor(random() * %s)::int END AS k,
               CASE WHEN random() < 0.05 THEN NULL ELSE floor(exp(random() * ln(%s)))::bigint END AS z,
               1 AS one,
               CASE WHEN random() < 0.05 THEN NULL WHEN random() < 0.02 THEN 'NaN'::float8
                    ELSE random() * 100 END AS f,
               CASE WHEN random() < 0.05 THEN NULL ELSE floor(random() * 1000)::int END AS a,
               CASE WHEN random() < 0.05 THEN NULL ELSE timestamp '2025-01-01' + random() * interval '10 days' END AS ts,
               CASE WHEN random() < 0.05 THEN NULL ELSE chr(97 + floor(random() * 8)::int) END AS t,
               CASE WHEN random() < 0.1 THEN NULL ELSE random() < 0.5 END AS b
        FROM generate_series(1, %s) i $q$, tbl, nkeys, nkeys, n);
END $$;

CREATE OR REPLACE FUNCTION sjd_theta_case(label text, l text, r text, cond text,
                                          oracle boolean, mem text DEFAULT '0')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE q text; qc text;
BEGIN
    q := format('SELECT * FROM theta_join(%L, %L, %L, %L, %L)', l, 'id', r, 'id', cond);
    qc := format('SELECT theta_join_count(%L, %L, %L, %L, %L)', l, 'id', r, 'id', cond);
    RETURN QUERY SELECT sjd_cpu_cases(label, q, qc);
    IF oracle THEN
        DROP TABLE IF EXISTS sjd_oracle;
        EXECUTE format('CREATE TEMP TABLE sjd_oracle AS SELECT l.id::bigint AS left_id, r.id::bigint AS right_id FROM %I l JOIN %I r ON %s', l, r, cond);
        RETURN NEXT sjd_report(label || ': cpu = PostgreSQL join', sjd_same('sjd_cpu', 'sjd_oracle'));
    END IF;
    RETURN QUERY SELECT sjd_gpu_cases(label, q, qc, mem);
END $$;

SELECT sjd_theta_side('t_a', 3000, 50);
SELECT sjd_theta_side('t_b', 2000, 50);
SELECT sjd_theta_side('t_one', 1, 5);
SELECT sjd_theta_side('t_none', 0, 5);
SELECT sjd_theta_side('t_big', 400000, 1000000);
SELECT sjd_theta_side('t_big2', 300000, 1000000);

SELECT sjd_theta_case(c, 't_a', 't_b', c, true) FROM unnest(ARRAY[
    'l.k = r.k',
    'l.z = r.z',
    'l.k = r.k AND l.f < r.f',
    'l.one = r.one AND l.a < 5 AND r.a < 5',
    'l.t = r.t AND l.b = r.b',
    'r.a BETWEEN l.a - 3 AND l.a + 3',
    'l.a < r.a AND l.k > 45',
    'l.f > r.f + 99',
    'l.ts BETWEEN r.ts - interval ''1 hour'' AND r.ts',
    'l.ts BETWEEN r.ts + interval ''1 mon'' - interval ''31 days 2 hours'' AND r.ts + interval ''1 month'' - interval ''31 days''',
    'l.ts > r.ts - interval ''1 year'' + interval ''365 days 3 hours'' AND l.k < 10',
    'l.t < r.t AND l.k = 7',
    'l.k = r.k OR l.a = r.a',
    'l.k <> r.k AND l.a = 3',
    'l.a + r.a = 1000',
    'l.f * r.f < 1 AND l.k IS NULL',
    'NOT (l.a > r.a) AND r.k = 1',
    'l.b AND r.b AND l.k = r.k',
    '(l.k = r.k) IS NULL AND l.a < 20']) c;
SELECT sjd_theta_case('one row x 2000', 't_one', 't_b', 'l.k <= r.k', true);
SELECT sjd_theta_case('empty left', 't_none', 't_b', 'l.k = r.k', true);
SELECT sjd_theta_case('empty right', 't_a', 't_none', 'l.a < r.a', true);
-- large: skewed keys, outputs across many batches, tight device memory
SELECT sjd_theta_case('400k x 300k equi', 't_big', 't_big2', 'l.k = r.k', false);
SELECT sjd_theta_case('400k x 300k equi on skewed keys, residual', 't_big', 't_big2', 'l.z = r.z AND l.a < 3 AND r.a < 30', false, '64MB');
SELECT sjd_theta_case('400k x 300k band', 't_big', 't_big2', 'r.a BETWEEN l.a AND l.a + 0 AND l.k = r.k', false, '64MB');
SELECT sjd_theta_case('400k x 300k equi + residual, hash partitions', 't_big', 't_big2', 'l.k = r.k AND l.f < r.f', false, '4MB');
SELECT sjd_theta_case('400k x 300k equi on skewed keys, hash partitions', 't_big', 't_big2', 'l.z = r.z AND l.a < 3 AND r.a < 30', false, '4MB');
SELECT sjd_report('400k x 300k band, 2MB device memory, inner pieces',
       CASE WHEN NOT sjd_gpu() OR sjd_scalar('gpu', $$SELECT theta_join_count('t_big', 'id', 't_big2', 'id', 'r.a BETWEEN l.a AND l.a + 1')$$, '2MB')
                                  = sjd_scalar('cpu', $$SELECT theta_join_count('t_big', 'id', 't_big2', 'id', 'r.a BETWEEN l.a AND l.a + 1')$$)
            THEN NULL ELSE 'counts differ' END);
SELECT sjd_report('400k x 300k band, 1MB device memory, auto falls back to the CPU',
       CASE WHEN NOT sjd_gpu() OR sjd_scalar('auto', $$SELECT theta_join_count('t_big', 'id', 't_big2', 'id', 'r.a BETWEEN l.a AND l.a + 1')$$, '1MB')
                                  = sjd_scalar('cpu', $$SELECT theta_join_count('t_big', 'id', 't_big2', 'id', 'r.a BETWEEN l.a AND l.a + 1')$$)
            THEN NULL ELSE 'counts differ' END);
SELECT sjd_theta_case('3000 x 2000 all-equal keys (6M pairs)', 't_a', 't_b', 'l.one = r.one', false, '16MB');
SELECT sjd_theta_case('3000 x 2000 inequality', 't_a', 't_b', 'l.a > r.a', false);
-- numeric arithmetic in fixed point: mixed scales, negatives, NULLs, NaN,
-- +-Infinity (unconstrained column u), values near the declared limit (p)
CREATE OR REPLACE FUNCTION sjd_theta_num_side(tbl text, n int, special float8) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        SELECT i AS id,
               (CASE WHEN random() < 0.05 THEN NULL WHEN random() < %s THEN 'NaN'
                     WHEN random() < 0.01 THEN 9999999999.99 * sign(random() - 0.5)
                     ELSE round((random() * 2000 - 1000)::numeric, floor(random() * 3)::int) END)::numeric(12, 2) AS p,
               CASE WHEN random() < 0.05 THEN NULL WHEN random() < %s THEN 'NaN'
                    WHEN random() < %s THEN 'Infinity' WHEN random() < %s THEN '-Infinity'
                    ELSE round((random() * 200 - 100)::numeric, floor(random() * 5)::int) END AS u,
               floor(random() * 50)::int AS k
        FROM generate_series(1, %s) i $q$, tbl, special, special, special, special, n);
END $$;
SELECT sjd_theta_num_side('tn_a', 3000, 0.02);
SELECT sjd_theta_num_side('tn_b', 2000, 0.02);
SELECT sjd_theta_num_side('tn_big', 200000, 0.0005);
SELECT sjd_theta_num_side('tn_big2', 150000, 0.0005);
SELECT sjd_theta_case('numeric: ' || c, 'tn_a', 'tn_b', c, true) FROM unnest(ARRAY[
    'l.p >= r.p + 990',
    'r.p BETWEEN l.p - 0.5 AND l.p + 0.5',
    'r.u BETWEEN l.u - 0.25 AND l.u + 0.125',
    'l.u - r.u >= 0.001 AND l.k = r.k',
    'l.u * 1.5 - r.u * 2 > 100',
    '-l.u = r.u * -1 + 0.00',
    'l.p + l.u < r.p - r.u AND l.k < 5',
    'l.u * 0 = r.u * 0 AND l.k = r.k',
    'l.u = r.u + 0 AND l.u + 1 > r.u']) c;
SELECT sjd_theta_case('numeric: 200k x 150k band', 'tn_big', 'tn_big2', 'r.p BETWEEN l.p - 0.01 AND l.p + 0.01', false, '8MB');
SELECT sjd_theta_case('numeric: 200k x 150k band with NaN/Inf, residual', 'tn_big', 'tn_big2', 'r.u BETWEEN l.u - 0.001 AND l.u + 0.001 AND l.u * 2 <> r.p', false, '4MB');
SELECT sjd_theta_case('numeric: 200k x 150k hash + residual', 'tn_big', 'tn_big2', 'l.u = r.u AND l.p - r.p > 0', false, '4MB');
-- numeric division by constants: each quotient rounded to the scale
-- PostgreSQL's numeric_div picks for its row (u's display scales vary by row)
SELECT sjd_theta_case('numeric division: ' || c, 'tn_a', 'tn_b', c, true) FROM unnest(ARRAY[
    'r.u > l.u / 3',
    'r.p < l.p / 1.5 AND l.k < 10',
    'r.u BETWEEN l.u / 0.7 AND l.u / 0.7 + 1',
    '(l.u + r.u) / 2 > l.p / -2 AND l.k = r.k',
    'l.p / 7.000 = r.p / 7.000',
    'l.u / 3 = r.u / 3 AND l.k = r.k',
    'l.u / 3 * 3 <> l.u AND l.k = r.k',
    'r.u / 3 >= l.u / 3 + 0.01 AND l.k = r.k',
    'l.k / 3.0 < r.u AND l.u / 3 IS NOT NULL AND l.k < 10',
    '(l.p - r.p) / 0.001 > 500000 AND l.k < 20',
    'l.u / 3 < r.u * 2 - 0.5 AND r.k < 5',
    'l.u / 3 - r.u / 3 = (l.u - r.u) / 3',
    '(l.u + r.u) / 2 = l.u / 2 + r.u / 2 AND l.k < 25',
    'l.u / 7 * 7 = l.u AND l.k = r.k',
    'l.u = r.u AND l.u / 3 > r.p / 7',
    'r.p >= l.p AND l.p / 3 < r.u AND l.k < 10']) c;
-- (a condition that divides compares its computed numerics as residuals:
-- keys or bands between plain columns keep large joins off the nested loop)
SELECT sjd_theta_case('numeric division: 200k x 3000, hash + quotient', 'tn_big', 'tn_a',
                      'l.k = r.k AND l.u / 1.5 > r.u AND l.p / 7 < r.u + l.u / 0.7', false, '4MB');
SELECT sjd_theta_case('numeric division: 200k x 150k, numeric hash + quotient', 'tn_big', 'tn_big2',
                      'l.u = r.u AND l.p / 3 <> r.p / 3', false, '4MB');
SELECT sjd_theta_case('numeric: ' || c, 'tn_a', 'tn_b', c, true) FROM unnest(ARRAY[
    'l.u > r.k AND l.u - r.k < 1',
    'r.p BETWEEN l.k - 0.5 AND l.k + 0.5']) c;
