-- customscan_diff.sql: plain SQL joins through Custom Scan (SimJoin), on the
-- CPU engine and (where usable) the GPU engine, against PostgreSQL's own plan
-- of the same query (simjoin.enable_customscan = off), on fresh random data.

-- Capture q into tbl: through the node on device, or with PostgreSQL's plan
-- (device 'off').  The native join methods are discouraged so that the node
-- is used whenever it is offered; sjd_uses_node checks that it was.
CREATE OR REPLACE FUNCTION sjd_sql(tbl text, device text, q text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simjoin.enable_customscan', (device <> 'off')::text, true);
    PERFORM set_config('enable_nestloop', (device = 'off')::text, true);
    PERFORM set_config('enable_hashjoin', (device = 'off')::text, true);
    PERFORM set_config('enable_mergejoin', (device = 'off')::text, true);
    PERFORM sjd_capture(tbl, CASE WHEN device = 'off' THEN 'cpu' ELSE device END, q);
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    PERFORM set_config('enable_nestloop', 'on', true);
    PERFORM set_config('enable_hashjoin', 'on', true);
    PERFORM set_config('enable_mergejoin', 'on', true);
END $$;

CREATE OR REPLACE FUNCTION sjd_uses_node(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE line text; found boolean := false;
BEGIN
    PERFORM set_config('enable_nestloop', 'off', true);
    PERFORM set_config('enable_hashjoin', 'off', true);
    PERFORM set_config('enable_mergejoin', 'off', true);
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        found := found OR line LIKE '%Custom Scan (SimJoin)%';
    END LOOP;
    PERFORM set_config('enable_nestloop', 'on', true);
    PERFORM set_config('enable_hashjoin', 'on', true);
    PERFORM set_config('enable_mergejoin', 'on', true);
    RETURN found;
END $$;

-- One case: the node on the CPU = PostgreSQL; the node on the GPU = CPU.
CREATE OR REPLACE FUNCTION sjd_sql_case(label text, q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    IF NOT sjd_uses_node(q) THEN
        RETURN NEXT sjd_report(label, 'the plan does not use Custom Scan (SimJoin)');
        RETURN;
    END IF;
    PERFORM sjd_sql('sjd_native', 'off', q);
    PERFORM sjd_sql('sjd_cpu', 'cpu', q);
    SELECT count(*) INTO n FROM sjd_native;
    RETURN NEXT sjd_report(label || ': node on cpu = PostgreSQL', sjd_same('sjd_cpu', 'sjd_native'),
                           n || ' rows');
    IF sjd_gpu() THEN
        PERFORM sjd_sql('sjd_gpu', 'gpu', q);
        RETURN NEXT sjd_report(label || ': node on gpu = cpu', sjd_same('sjd_gpu', 'sjd_cpu'));
    ELSE
        RETURN NEXT 'SKIP ' || label || ': node on gpu (no GPU)';
    END IF;
END $$;

-- data: points (NULLs, NaN, duplicates), sets (empty, NULL, skewed), scalars
CREATE TABLE cs_a AS
SELECT i AS id, (random() * 20)::int AS g,
       CASE WHEN i % 53 = 0 THEN NULL
            WHEN i % 71 = 0 THEN ARRAY['NaN'::float8, 1]
            ELSE ARRAY[floor(random() * 40) / 4, floor(random() * 40) / 4] END AS v,
       CASE WHEN i % 61 = 0 THEN NULL
            ELSE ARRAY(SELECT (random() ^ 3 * 60)::int FROM generate_series(1, (random() * 8)::int + i * 0)) END AS s,
       CASE WHEN i % 37 = 0 THEN NULL ELSE (random() * 1000)::int END AS k,
       random() * 100 AS f,
       md5((random() * 50)::int::text) AS t
FROM generate_series(1, 1500) i;
CREATE TABLE cs_b AS
SELECT i AS id, (random() * 20)::int AS g,
       CASE WHEN i % 59 = 0 THEN NULL
            ELSE ARRAY[floor(random() * 40) / 4, floor(random() * 40) / 4] END AS v,
       ARRAY(SELECT (random() ^ 3 * 60)::int FROM generate_series(1, (random() * 8)::int + i * 0)) AS s,
       CASE WHEN i % 41 = 0 THEN NULL ELSE (random() * 1000)::int END AS k,
       random() * 100 AS f,
       md5((random() * 50)::int::text) AS t
FROM generate_series(1, 1200) i;
ANALYZE cs_a;
ANALYZE cs_b;

SELECT sjd_sql_case('eps inner, residual', $q$
    SELECT a.id AS a, b.id AS b, l2_distance(a.v, b.v) AS d FROM cs_a a JOIN cs_b b
    ON a.v <-> b.v <= 1.25 AND a.g <> b.g $q$);
SELECT sjd_sql_case('eps < at grid distances, self-join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a JOIN cs_a b ON l2_distance(a.v, b.v) < 0.5 $q$);
SELECT sjd_sql_case('eps left join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a LEFT JOIN cs_b b ON 0.75 >= a.v <-> b.v $q$);
SELECT sjd_sql_case('eps semi join', $q$
    SELECT a.id FROM cs_a a WHERE EXISTS (SELECT 1 FROM cs_b b WHERE a.v <-> b.v <= 0.5 AND b.g < a.g) $q$);
SELECT sjd_sql_case('eps anti join', $q$
    SELECT a.id FROM cs_a a WHERE NOT EXISTS (SELECT 1 FROM cs_b b WHERE a.v <-> b.v <= 0.5) $q$);
SELECT sjd_sql_case('eps count', $q$
    SELECT count(*) AS n FROM cs_a a JOIN cs_b b ON a.v <-> b.v <= 2 $q$);
SELECT sjd_sql_case('jaccard inner', $q$
    SELECT a.id AS a, b.id AS b, jaccard(a.s, b.s) AS j FROM cs_a a JOIN cs_b b
    ON jaccard(a.s, b.s) >= 0.4 $q$);
SELECT sjd_sql_case('jaccard > 0.5, left join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a LEFT JOIN cs_b b ON jaccard(a.s, b.s) > 0.5 $q$);
SELECT sjd_sql_case('jaccard count, residual', $q$
    SELECT count(*) AS n FROM cs_a a JOIN cs_b b ON jaccard(b.s, a.s) >= 0.3 AND a.id % 3 = b.id % 3 $q$);
SELECT sjd_sql_case('theta equi + inequality', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a JOIN cs_b b ON a.g = b.g AND a.f < b.f $q$);
SELECT sjd_sql_case('theta band on integers with NULLs', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a JOIN cs_b b ON a.k BETWEEN b.k - 2 AND b.k + 2 $q$);
SELECT sjd_sql_case('theta text equality, left join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a LEFT JOIN cs_b b ON a.t = b.t AND a.g < b.g $q$);
SELECT sjd_sql_case('theta OR, anti join', $q$
    SELECT a.id FROM cs_a a WHERE NOT EXISTS (
        SELECT 1 FROM cs_b b WHERE a.k = b.k OR a.f - b.f BETWEEN 0 AND 0.01) $q$);
SELECT sjd_sql_case('theta count, inequality', $q$
    SELECT count(*) AS n FROM cs_a a JOIN cs_b b ON a.f > b.f + 10 $q$);
