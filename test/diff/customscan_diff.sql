-- customscan_diff.sql: plain SQL joins through Custom Scan (SimJoin), on the
-- CPU engine and (where usable) the GPU engine, against PostgreSQL's own plan
-- of the same query (simjoin.enable_customscan = off), on fresh random data.

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
-- the same points as real[] (float columns where the node runs on the GPU)
CREATE TABLE cs_a4 AS SELECT id, g, v::float4[] AS v FROM cs_a;
CREATE TABLE cs_b4 AS SELECT id, g, v::float4[] AS v FROM cs_b;
ANALYZE cs_a4;
ANALYZE cs_b4;

SELECT sjd_sql_case('eps inner, residual', $q$
    SELECT a.id AS a, b.id AS b, l2_distance(a.v, b.v) AS d FROM cs_a a JOIN cs_b b
    ON a.v <-> b.v <= 1.25 AND a.g <> b.g $q$);
SELECT sjd_sql_case('eps over real[], distances', $q$
    SELECT a.id AS a, b.id AS b, l2_distance(a.v, b.v) AS d FROM cs_a4 a JOIN cs_b4 b
    ON a.v <-> b.v <= 1.25 $q$);
SELECT sjd_sql_case('eps over real[], self-join count', $q$
    SELECT count(*) AS n FROM cs_a4 a JOIN cs_a4 b ON a.v <-> b.v <= 2 $q$);
SELECT sjd_sql_case('eps < at grid distances, self-join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a JOIN cs_a b ON l2_distance(a.v, b.v) < 0.5 $q$);
SELECT sjd_sql_case('eps left join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a LEFT JOIN cs_b b ON 0.75 >= a.v <-> b.v $q$);
SELECT sjd_sql_case('eps semi join', $q$
    SELECT a.id FROM cs_a a WHERE EXISTS (SELECT 1 FROM cs_b b WHERE a.v <-> b.v <= 0.5 AND b.g < a.g) $q$);
SELECT sjd_sql_case('eps anti join', $q$
    SELECT a.id FROM cs_a a WHERE NOT EXISTS (SELECT 1 FROM cs_b b WHERE a.v <-> b.v <= 0.5) $q$);
SELECT sjd_sql_case('eps self-join, a.id < b.id', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 1 AND a.id < b.id $q$);
SELECT sjd_sql_case('eps self-join, a.k <= b.k (ties, NULLs), a.g > b.g', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a JOIN cs_a b ON a.v <-> b.v <= 1 AND a.k <= b.k AND a.g > b.g $q$);
SELECT sjd_sql_case('eps left join, b.k >= a.k', $q$
    SELECT a.id AS a, b.id AS b FROM cs_a a LEFT JOIN cs_b b ON a.v <-> b.v <= 1 AND b.k >= a.k $q$);
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

-- A table joined with itself under the same filters (eps and Jaccard): the
-- node reads it once and the engine computes each pair of distinct rows
-- once; the node forms both orders and each row with itself ("Self-Join"
-- in EXPLAIN).  Clustered 24-D real[] rows with duplicates, zero vectors
-- (cosine: NaN, joining nothing, not even themselves), NULL, NaN and
-- infinite vectors; cs_a's sets (empty, NULL, skewed).
CREATE OR REPLACE FUNCTION sjd_self_case(label text, q text, self boolean) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE found boolean;
BEGIN
    PERFORM sjd_native_joins(false);
    found := sjd_plan_has(q, '%Self-Join: %');
    PERFORM sjd_native_joins(true);
    IF found <> self THEN
        RETURN NEXT sjd_report(label, format('Self-Join in the plan: %s, expected %s', found, self));
    END IF;
    RETURN QUERY SELECT sjd_sql_case(label, q);
END $$;
CREATE TABLE cs_c4 AS
SELECT i AS id, (i % 5) AS g,
       CASE WHEN i % 97 = 0 THEN NULL
            WHEN i % 89 = 0 THEN array_fill(0::real, ARRAY[24])
            WHEN i % 83 = 0 THEN array_fill('NaN'::real, ARRAY[24])
            WHEN i % 79 = 0 THEN array_fill('Infinity'::real, ARRAY[24])
            ELSE ARRAY(SELECT (sin(c * 7 + (i % 23) * 13) + random() * 0.3)::real
                       FROM generate_series(1, 24) c) END AS v
FROM generate_series(1, 1400) i;
INSERT INTO cs_c4 SELECT id + 10000, g, v FROM cs_c4 WHERE id % 50 = 0;   -- duplicates
ANALYZE cs_c4;
SELECT sjd_self_case('self-join: cosine over real[], distances', $q$
    SELECT a.id AS a, b.id AS b, a.v <=> b.v AS d FROM cs_c4 a JOIN cs_c4 b ON a.v <=> b.v <= 0.02 $q$, true);
SELECT sjd_self_case('self-join: cosine <= 0 (duplicates and each row itself)', $q$
    SELECT a.id AS a, b.id AS b FROM cs_c4 a JOIN cs_c4 b ON a.v <=> b.v <= 0 $q$, true);
SELECT sjd_self_case('self-join: l2 <, distances', $q$
    SELECT a.id AS a, b.id AS b, l2_distance(a.v, b.v) AS d FROM cs_c4 a JOIN cs_c4 b ON a.v <-> b.v < 0.9 $q$, true);
SELECT sjd_self_case('self-join: cosine count', $q$
    SELECT count(*) AS n FROM cs_c4 a JOIN cs_c4 b ON a.v <=> b.v <= 0.05 $q$, true);
SELECT sjd_self_case('self-join: count with a residual', $q$
    SELECT count(*) AS n FROM cs_c4 a JOIN cs_c4 b ON a.v <-> b.v <= 1 AND a.g <> b.g $q$, true);
SELECT sjd_self_case('self-join: the same filter on both sides, a.id < b.id', $q$
    SELECT a.id AS a, b.id AS b FROM cs_c4 a JOIN cs_c4 b ON a.v <=> b.v <= 0.05 AND a.id < b.id
    WHERE a.g IN (1, 2) AND b.g IN (1, 2) $q$, true);
SELECT sjd_self_case('self-join: millions of pairs, grouped', $q$
    SELECT a.id % 10 AS k, count(*) AS n, sum(b.id) AS s FROM cs_c4 a JOIN cs_c4 b ON a.v <-> b.v <= 100
    GROUP BY 1 $q$, true);
SELECT sjd_self_case('self-join: jaccard, similarities', $q$
    SELECT a.id AS a, b.id AS b, jaccard(a.s, b.s) AS j FROM cs_a a JOIN cs_a b ON jaccard(a.s, b.s) >= 0.4 $q$, true);
SELECT sjd_self_case('self-join: jaccard > 0.5 count, residual', $q$
    SELECT count(*) AS n FROM cs_a a JOIN cs_a b ON jaccard(b.s, a.s) > 0.5 AND a.g <> b.g $q$, true);
SELECT sjd_self_case('self-join: jaccard count (empty and NULL sets)', $q$
    SELECT count(*) AS n FROM cs_a a JOIN cs_a b ON jaccard(a.s, b.s) >= 0.3 $q$, true);
SELECT sjd_self_case('not a self-join: filters differ', $q$
    SELECT a.id AS a, b.id AS b FROM cs_c4 a JOIN cs_c4 b ON a.v <=> b.v <= 0.05 WHERE a.g = 1 $q$, false);
SELECT sjd_self_case('not a self-join: columns differ', $q$
    SELECT a.id AS a, b.g AS b FROM cs_c4 a JOIN cs_c4 b ON a.v <=> b.v <= 0.05 $q$, false);

-- Partial plans: the outer input split across parallel workers under Gather,
-- the inner read once by all participants into shared memory (Parallel
-- Custom Scan).  On the GPU each worker starts the device, so the planner
-- takes the partial path there only for joins of millions of pairs: these
-- inputs make ten million and more, aggregated per group above the node (only
-- the groups cross the Gather; the inequality's key is coarser, for
-- as many pairs).  Each device's partial plan must equal the
-- serial plan on the CPU engine.
CREATE OR REPLACE FUNCTION sjd_parallel(tbl text, device text, workers int, q text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE found boolean;
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', workers::text, true);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    PERFORM sjd_native_joins(false);
    PERFORM set_config('simjoin.device', device, true);
    found := sjd_plan_has(q, '%Parallel Custom Scan (SimJoin)%');
    PERFORM sjd_capture(tbl, device, q);
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM sjd_native_joins(true);
    RETURN found;
END $$;

CREATE OR REPLACE FUNCTION sjd_parallel_case(label text, q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE d text; n bigint;
BEGIN
    PERFORM sjd_parallel('sjd_serial', 'cpu', 0, q);
    SELECT count(*) INTO n FROM sjd_serial;
    FOREACH d IN ARRAY ARRAY['cpu', 'gpu'] LOOP
        IF d = 'gpu' AND NOT sjd_gpu() THEN
            RETURN NEXT 'SKIP ' || label || ': partial plan on gpu (no GPU)';
        ELSIF NOT sjd_parallel('sjd_par', d, 2, q) THEN
            RETURN NEXT sjd_report(label || ': partial plan on ' || d,
                                   'the plan does not use Parallel Custom Scan (SimJoin)');
        ELSE
            RETURN NEXT sjd_report(label || ': partial plan on ' || d || ' = serial on cpu',
                                   sjd_same('sjd_par', 'sjd_serial'), n || ' groups');
        END IF;
    END LOOP;
END $$;

CREATE TABLE cs_pa AS
SELECT i AS id, (random() * 999)::int AS k, (random() * 333)::int AS k3, random() * 1000 AS f,
       ARRAY[floor(random() * 400) / 4, floor(random() * 400) / 4] AS v
FROM generate_series(1, 200000) i;
CREATE TABLE cs_pb AS
SELECT i AS id, (random() * 999)::int AS k, (random() * 333)::int AS k3, random() * 1000 AS f,
       ARRAY[floor(random() * 400) / 4, floor(random() * 400) / 4] AS v
FROM generate_series(1, 50000) i;
UPDATE cs_pb SET k = NULL, k3 = NULL, v = NULL WHERE id % 97 = 0;
ANALYZE cs_pa;
ANALYZE cs_pb;

SELECT sjd_parallel_case('partial theta equi, 10M pairs', $q$
    SELECT a.id % 100 AS g, count(*) AS n, sum(b.id) AS s FROM cs_pa a JOIN cs_pb b ON a.k = b.k
    GROUP BY 1 $q$);
SELECT sjd_parallel_case('partial theta equi + inequality', $q$
    SELECT a.id % 100 AS g, count(*) AS n, sum(b.id) AS s FROM cs_pa a JOIN cs_pb b
    ON a.k3 = b.k3 AND a.f < b.f GROUP BY 1 $q$);
SELECT sjd_parallel_case('partial eps', $q$
    SELECT a.id % 100 AS g, count(*) AS n, sum(b.id) AS s FROM cs_pa a JOIN cs_pb b
    ON a.v <-> b.v <= 2.5 GROUP BY 1 $q$);

-- simjoin.device = auto with a GPU: each path runs on the device that costs
-- less.  A parallel plan's eight workers would each start the GPU, all at
-- once, for a join the CPU engine does in milliseconds, so that node runs
-- on the CPU engine; the serial plan of the same join runs on the GPU.
CREATE OR REPLACE FUNCTION sjd_auto_case(label text, q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE line text; planned text := ''; ran text := ''; serial_dev text := '';
BEGIN
    IF NOT sjd_gpu() THEN
        RETURN NEXT 'SKIP ' || label || ': device auto (no GPU)';
        RETURN;
    END IF;
    PERFORM sjd_parallel('sjd_serial', 'cpu', 0, q);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    PERFORM set_config('simjoin.device', 'auto', true);
    PERFORM sjd_native_joins(false);
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    FOR line IN EXECUTE 'EXPLAIN ' || q LOOP
        IF line LIKE '%Device: %' THEN serial_dev := serial_dev || trim(line); END IF;
    END LOOP;
    PERFORM set_config('max_parallel_workers_per_gather', '8', true);
    FOR line IN EXECUTE 'EXPLAIN ' || q LOOP
        IF line LIKE '%Device: %' THEN planned := planned || trim(line); END IF;
    END LOOP;
    -- the leader's Run Device line and the workers' lines
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF) ' || q LOOP
        IF line LIKE '%Run Device: gpu%' THEN ran := ran || ' gpu'; END IF;
        IF line LIKE '%Run Device: cpu%' THEN ran := ran || ' cpu'; END IF;
    END LOOP;
    PERFORM sjd_capture('sjd_par', 'auto', q);
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM sjd_native_joins(true);
    RETURN NEXT sjd_report(label || ': serial plan on gpu',
                           CASE WHEN serial_dev <> 'Device: gpu' THEN 'planned ' || serial_dev END);
    RETURN NEXT sjd_report(label || ': 8-worker plan on cpu',
                           CASE WHEN planned <> 'Device: cpu' OR ran NOT LIKE ' cpu%' OR ran LIKE '%gpu%'
                                THEN 'planned ' || planned || ', ran on' || ran END);
    RETURN NEXT sjd_report(label || ': 8-worker plan on auto = serial on cpu',
                           sjd_same('sjd_par', 'sjd_serial'));
END $$;

SELECT sjd_auto_case('device auto, theta equi', $q$
    SELECT a.id % 100 AS g, count(*) AS n, sum(b.id) AS s FROM cs_pa a JOIN cs_pb b ON a.k = b.k
    GROUP BY 1 $q$);
-- the band's pairs estimated from the columns' statistics (200 k, where
-- PostgreSQL's ninth of the cross product is 1.1 G)
SELECT sjd_auto_case('device auto, theta band', $q$
    SELECT a.id % 100 AS g, count(*) AS n, sum(b.id) AS s FROM cs_pa a JOIN cs_pb b
    ON b.f BETWEEN a.f - 0.01 AND a.f + 0.01 GROUP BY 1 $q$);

-- Special values in every type the theta engines take: the types' extremes,
-- NaN, infinities and -0 of float4, float8 and numeric, infinite dates and
-- timestamps and values near their limits, NULLs.  Where date/time
-- arithmetic meets a value the engines cannot compute exactly, the node
-- evaluates the join with PostgreSQL's operators; the answer is PostgreSQL's.
CREATE OR REPLACE FUNCTION sjd_pick(i int, specials anyarray, normal anyelement)
RETURNS anyelement LANGUAGE sql AS $$
    SELECT CASE WHEN i % 7 = 0 THEN specials[1 + (i / 7) % array_length(specials, 1)]
                ELSE normal END $$;
CREATE TABLE cs_sa AS
SELECT i AS id,
       sjd_pick(i, '{-32768,32767,NULL,0}'::int2[], (random() * 20)::int2) AS i2,
       sjd_pick(i, '{-2147483648,2147483647,NULL,0}'::int4[], (random() * 50)::int4) AS i4,
       sjd_pick(i, '{-9223372036854775808,9223372036854775807,NULL}'::int8[], (random() * 50)::int8) AS i8,
       sjd_pick(i, '{NaN,Infinity,-Infinity,-0,3.4e38,-3.4e38,1e-45,NULL}'::float4[],
                (floor(random() * 40) / 4)::float4) AS f4,
       sjd_pick(i, '{NaN,Infinity,-Infinity,-0,1.7976931348623157e308,-1.7976931348623157e308,5e-324,NULL}'::float8[],
                floor(random() * 40) / 4) AS f8,
       sjd_pick(i, '{NaN,Infinity,-Infinity,0,-0.000,1e-1000,NULL}'::numeric[],
                round((random() * 10)::numeric, 1)) AS n,
       sjd_pick(i, '{infinity,-infinity,4713-01-10 BC,5874897-12-20,NULL}'::date[],
                date '2024-01-01' + (random() * 60)::int) AS d,
       sjd_pick(i, '{infinity,-infinity,4713-11-25 BC,294276-11-01,NULL}'::timestamp[],
                timestamp '2024-01-01' + (random() * 600)::int * interval '1 minute') AS ts,
       sjd_pick(i, '{infinity,-infinity,4713-11-25 00:00+00 BC,294276-11-01 00:00+00,NULL}'::timestamptz[],
                timestamptz '2024-01-01 00:00+00' + (random() * 600)::int * interval '1 minute') AS tz,
       sjd_pick(i, '{NULL,true,false}'::bool[], random() < 0.5) AS b,
       sjd_pick(i, '{"",NULL," "}'::text[], md5((random() * 30)::int::text)) AS t
FROM generate_series(1, 700) i;
CREATE TABLE cs_sb AS SELECT * FROM cs_sa ORDER BY random() LIMIT 500;
UPDATE cs_sb SET id = id + 10000, f8 = f8 + 0.25 WHERE id % 3 = 0;
ANALYZE cs_sa;
ANALYZE cs_sb;

SELECT sjd_sql_case('special values: int2 equi, float4 inequality', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.i2 = b.i2 AND a.f4 < b.f4 $q$);
SELECT sjd_sql_case('special values: int4 extremes, band in bigint', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b
    ON a.i4 BETWEEN b.i4 - 1::bigint AND b.i4 + 1::bigint $q$);
SELECT sjd_sql_case('special values: int8 extremes', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.i8 <= b.i8 AND a.i2 = b.i2 $q$);
SELECT sjd_sql_case('special values: float8 NaN and infinities, band', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.f8 BETWEEN b.f8 - 0.5 AND b.f8 + 0.5 $q$);
SELECT sjd_sql_case('special values: float8 equality (NaN = NaN, -0 = 0)', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.f8 = b.f8 $q$);
SELECT sjd_sql_case('special values: float4 and float8 mixed, left join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a LEFT JOIN cs_sb b ON a.f4 > b.f8 AND a.i2 = b.i2 $q$);
SELECT sjd_sql_case('special values: numeric NaN and infinities', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.n < b.n AND a.i2 = b.i2 $q$);
SELECT sjd_sql_case('special values: numeric equality', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.n = b.n $q$);
SELECT sjd_sql_case('special values: date band', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.d BETWEEN b.d - 1 AND b.d + 1 $q$);
SELECT sjd_sql_case('special values: date band, count', $q$
    SELECT count(*) AS n FROM cs_sa a JOIN cs_sb b ON a.d BETWEEN b.d - 1 AND b.d + 1 $q$);
SELECT sjd_sql_case('special values: date plus days, left join', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a LEFT JOIN cs_sb b ON a.d = b.d + 7 $q$);
SELECT sjd_sql_case('special values: date compared, no arithmetic', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.d < b.d AND a.i2 = b.i2 $q$);
SELECT sjd_sql_case('special values: timestamp band of minutes', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b
    ON a.ts BETWEEN b.ts - interval '5 minutes' AND b.ts + interval '5 minutes' $q$);
SELECT sjd_sql_case('special values: timestamptz minus an hour, anti join', $q$
    SELECT a.id FROM cs_sa a WHERE NOT EXISTS (
        SELECT 1 FROM cs_sb b WHERE a.tz > b.tz - interval '1 hour' AND a.i2 = b.i2) $q$);
SELECT sjd_sql_case('special values: timestamp plus a month (derived)', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.ts >= b.ts + interval '1 month' AND a.i2 = b.i2 $q$);
SELECT sjd_sql_case('special values: date to timestamp', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN (SELECT * FROM cs_sb WHERE d < '100000-01-01') b
    ON b.d::timestamp = a.ts - interval '1 hour' AND a.i2 = b.i2 $q$);
SELECT sjd_sql_case('special values: text and bool', $q$
    SELECT a.id AS a, b.id AS b FROM cs_sa a JOIN cs_sb b ON a.t = b.t AND a.b <> b.b $q$);

-- Rows set aside (infinite dates under arithmetic) in a partial plan: each
-- participant joins its outer share's and the shared inner's set-aside rows
-- with PostgreSQL's operators, the rest on the engine.
CREATE TABLE cs_spa AS
SELECT i AS id, CASE WHEN i % 1000 = 0 THEN 'infinity'::date WHEN i % 1000 = 1 THEN '-infinity'::date
                     ELSE date '2000-01-01' + (random() * 5000)::int END AS d
FROM generate_series(1, 200000) i;
CREATE TABLE cs_spb AS
SELECT i AS id, CASE WHEN i % 1000 = 0 THEN 'infinity'::date
                     ELSE date '2000-01-01' + (random() * 5000)::int END AS d
FROM generate_series(1, 50000) i;
ANALYZE cs_spa;
ANALYZE cs_spb;
SELECT sjd_parallel_case('partial theta date band, infinities set aside', $q$
    SELECT a.id % 100 AS g, count(*) AS n, sum(b.id) AS s FROM cs_spa a JOIN cs_spb b
    ON a.d BETWEEN b.d - 1 AND b.d + 1 GROUP BY 1 $q$);

-- numeric division by constants in plain SQL joins: columns of declared
-- precision (the planner's proof), negatives, NULLs, NaN, values
-- near the declared limit
CREATE TABLE cs_na AS
SELECT i AS id, (random() * 10)::int AS g,
       sjd_pick(i, '{NaN,0,NULL,9999999999.98,-9999999999.99}'::numeric(12, 2)[],
                round((random() * 2000 - 1000)::numeric, (random() * 2)::int)::numeric(12, 2))::numeric(12, 2) AS p,
       sjd_pick(i, '{NaN,NULL,0.0001,-99.9999}'::numeric(6, 4)[],
                round((random() * 20 - 10)::numeric, 4)::numeric(6, 4))::numeric(6, 4) AS q,
       (random() * 100)::int AS k
FROM generate_series(1, 1200) i;
CREATE TABLE cs_nb AS SELECT * FROM cs_na ORDER BY random() LIMIT 900;
UPDATE cs_nb SET id = id + 10000, p = p + 0.01 WHERE id % 3 = 0;
ANALYZE cs_na;
ANALYZE cs_nb;
SELECT sjd_sql_case('numeric division: ' || label, q) FROM (VALUES
    ('quotient band', $q$SELECT a.id AS a, b.id AS b FROM cs_na a JOIN cs_nb b
        ON b.p BETWEEN a.p / 3 - 1 AND a.p / 3 + 1 $q$),
    ('equal quotients', $q$SELECT a.id AS a, b.id AS b FROM cs_na a JOIN cs_nb b
        ON a.p / 7.000 = b.p / 7.000 $q$),
    ('mixed scales, sum divided', $q$SELECT a.id AS a, b.id AS b FROM cs_na a JOIN cs_nb b
        ON (a.p + b.q) / 2 < b.p / -0.7 AND a.g = b.g $q$),
    ('int column cast, left join', $q$SELECT a.id AS a, b.id AS b FROM cs_na a LEFT JOIN cs_nb b
        ON a.k::numeric / 3 > b.q AND a.g = b.g $q$)) v(label, q);
