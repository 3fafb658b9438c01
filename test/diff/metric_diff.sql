-- metric_diff.sql: eps_join in high dimensions under both metrics ('l2' and
-- 'cosine'), CPU vs a plain-SQL oracle (a nested loop over l2_distance or
-- cosine_distance, the canonical distances) and GPU vs CPU, at
-- d in {7, 33, 64, 128, 384, 1536}, on adversarial data.  eps is the
-- distance of a sampled pair (so pairs lie exactly at eps) or a fixed value.

-- A table of n vectors of one shape (elem float8 or float4):
--   dirs     bundles of 8 directions, slightly spread
--   mixed    dirs, each row scaled by 10^[-3, 3)
--   far      1e6 + 1e-3 u: nearly equal vectors far from the origin
--   grid     integers in [-2, 2]: many pairs exactly at eps 0, 1, 2 (cosine)
--   special  dirs with zero vectors, NULL vectors, NaN and infinite coordinates
--   dups     20 directions, each row a small integer multiple of one
CREATE OR REPLACE FUNCTION sjm_points(tbl text, n int, dim int, shape text,
                                      elem text DEFAULT 'float8') RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        SELECT i AS id,
               CASE WHEN %L = 'special' AND i %% 17 = 0 THEN NULL
                    ELSE array_agg(
                        CASE WHEN %L = 'special' AND i %% 7 = 0 THEN 0
                             WHEN %L = 'special' AND i %% 23 = 0 AND d = 1 THEN 'NaN'::float8
                             WHEN %L = 'special' AND i %% 29 = 0 AND d = %s THEN '-Infinity'::float8
                             ELSE
                        CASE %L
                            WHEN 'far' THEN 1e6 + random() * 1e-3
                            WHEN 'grid' THEN floor(random() * 5) - 2
                            WHEN 'dups' THEN (i %% 3 + 1) * sin((i %% 20) * 3.7 + d * 1.3)
                            WHEN 'mixed' THEN (sin((i %% 8) * 2.9 + d * 0.7) + random() * 0.1)
                                              * power(10, ((i * 7919) %% 600) / 100.0 - 3)
                            ELSE sin((i %% 8) * 2.9 + d * 0.7) + random() * 0.1
                        END END ORDER BY d)::%s[]
               END AS v
        FROM generate_series(1, %s) i, generate_series(1, %s) d
        GROUP BY i $q$, tbl, shape, shape, shape, shape, dim, shape, elem, n, dim);
    EXECUTE format('ANALYZE %I', tbl);
END $$;

-- The canonical distance of a metric, in SQL.
CREATE OR REPLACE FUNCTION sjm_dist(metric text, a float8[], b float8[]) RETURNS float8
LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE metric WHEN 'cosine' THEN cosine_distance(a, b) ELSE l2_distance(a, b) END $$;

-- Vectors with NaN or infinite coordinates never join.
CREATE OR REPLACE FUNCTION sjm_finite(v float8[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS
$$ SELECT bool_and(x NOT IN ('NaN', 'Infinity', '-Infinity')) FROM unnest(v) x $$;

-- An eps that is exactly the distance of a sampled pair: the q-quantile.
CREATE OR REPLACE FUNCTION sjm_eps(l text, r text, metric text, q float8) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE e float8;
BEGIN
    EXECUTE format($s$
        SELECT percentile_disc(%s) WITHIN GROUP (ORDER BY d) FROM (
            SELECT sjm_dist(%L, a.v::float8[], b.v::float8[]) AS d
            FROM (SELECT v FROM %I WHERE v IS NOT NULL ORDER BY random() LIMIT 60) a,
                 (SELECT v FROM %I WHERE v IS NOT NULL ORDER BY random() LIMIT 60) b) s
        WHERE d <> 'NaN'$s$, q, metric, l, coalesce(r, l)) INTO e;
    RETURN coalesce(e, 0);
END $$;

-- One case: CPU count agrees with CPU pairs; CPU agrees with the oracle
-- (when asked); GPU agrees with CPU pairs, distances and count.
CREATE OR REPLACE FUNCTION sjm_case(label text, l text, r text, eps float8, metric text,
                                    oracle boolean, mem text DEFAULT '0')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    q text; qc text;
BEGIN
    label := label || ' [' || metric || ', eps ' || eps || ']';
    SELECT * INTO q, qc FROM sjd_join_sql('eps_join', l, r, 'v', format('%s::float8, %L', eps, metric));
    RETURN QUERY SELECT sjd_cpu_cases(label, q, qc, 'sjm_cpu');
    IF oracle THEN
        DROP TABLE IF EXISTS sjm_oracle;
        EXECUTE format($o$CREATE TEMP TABLE sjm_oracle AS
            SELECT a.id::bigint AS left_id, b.id::bigint AS right_id, d AS distance
            FROM %I a JOIN %I b ON %s,
                 LATERAL (SELECT sjm_dist(%L, a.v::float8[], b.v::float8[]) AS d) x
            WHERE sjm_finite(a.v::float8[]) AND sjm_finite(b.v::float8[]) AND d <= %s$o$,
            l, coalesce(r, l), CASE WHEN r IS NULL THEN 'a.id < b.id' ELSE 'true' END,
            metric, eps);
        RETURN NEXT sjd_report(label || ': cpu = SQL oracle', sjd_same('sjm_cpu', 'sjm_oracle'));
    END IF;
    RETURN QUERY SELECT sjd_gpu_cases(label, q, qc, mem, false, 'sjm_cpu', 'sjm_gpu');
END $$;

-- small cases, with the oracle, at every dimension and both metrics
CREATE OR REPLACE FUNCTION sjm_dim_cases(dim int, n int) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    m text;
    t text := 'm_' || dim;
BEGIN
    PERFORM sjm_points(t || '_dirs', n, dim, 'dirs');
    PERFORM sjm_points(t || '_mixed', n, dim, 'mixed', 'float4');
    PERFORM sjm_points(t || '_far', n / 2, dim, 'far');
    PERFORM sjm_points(t || '_grid', n, dim, 'grid');
    PERFORM sjm_points(t || '_special', n, dim, 'special');
    PERFORM sjm_points(t || '_dups', n / 2, dim, 'dups');
    FOREACH m IN ARRAY ARRAY['l2', 'cosine'] LOOP
        RETURN QUERY SELECT sjm_case(dim || '-D bundles self', t || '_dirs', NULL,
                                     sjm_eps(t || '_dirs', NULL, m, 0.02), m, true);
        RETURN QUERY SELECT sjm_case(dim || '-D bundles x mixed magnitudes (float4)', t || '_dirs', t || '_mixed',
                                     sjm_eps(t || '_dirs', t || '_mixed', m, 0.05), m, true);
        RETURN QUERY SELECT sjm_case(dim || '-D nearly equal, far out', t || '_far', NULL,
                                     sjm_eps(t || '_far', NULL, m, 0.1), m, true);
        RETURN QUERY SELECT sjm_case(dim || '-D zero/NULL/NaN/inf vectors', t || '_special', t || '_dirs',
                                     sjm_eps(t || '_special', t || '_dirs', m, 0.03), m, true);
        RETURN QUERY SELECT sjm_case(dim || '-D parallel multiples', t || '_dups', NULL,
                                     sjm_eps(t || '_dups', NULL, m, 0.01), m, true);
        RETURN QUERY SELECT sjm_case(dim || '-D integers eps 0', t || '_grid', NULL, 0, m, true);
    END LOOP;
    RETURN QUERY SELECT sjm_case(dim || '-D integers, orthogonal pairs', t || '_grid', NULL, 1, 'cosine', true);
    RETURN QUERY SELECT sjm_case(dim || '-D nearly equal eps 0', t || '_far', NULL, 0, 'cosine', true);
    RETURN QUERY SELECT sjm_case(dim || '-D every pair', t || '_special', NULL, 2, 'cosine', true);
    EXECUTE format('DROP TABLE %I, %I, %I, %I, %I, %I', t || '_dirs', t || '_mixed', t || '_far',
                   t || '_grid', t || '_special', t || '_dups');
END $$;

SELECT sjm_dim_cases(7, 600);
SELECT sjm_dim_cases(33, 400);
SELECT sjm_dim_cases(64, 300);
SELECT sjm_dim_cases(128, 240);
SELECT sjm_dim_cases(384, 160);
SELECT sjm_dim_cases(1536, 80);

-- large cases, GPU against CPU only (skipped without a GPU: the CPU alone
-- has nothing to be compared with here)
CREATE OR REPLACE FUNCTION sjm_large() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE m text;
BEGIN
    IF NOT sjd_gpu() THEN
        RETURN NEXT 'SKIP large high-dimensional cases (no GPU)';
        RETURN;
    END IF;
    PERFORM sjm_points('m_big128', 20000, 128, 'dirs');
    PERFORM sjm_points('m_big384', 8000, 384, 'mixed', 'float4');
    PERFORM sjm_points('m_big1536', 4000, 1536, 'special');
    PERFORM sjm_points('m_dense', 2500, 128, 'dirs');
    FOREACH m IN ARRAY ARRAY['l2', 'cosine'] LOOP
        -- dense: thousands of candidates a position, a warp each on the GPU
        -- (verify_warp_kernel), 3 M pairs in several batches
        RETURN QUERY SELECT sjm_case('2.5k 128-D dense (every pair)', 'm_dense', NULL,
                                     CASE m WHEN 'cosine' THEN 2 ELSE 1e6 END, m, false, '64MB');
        RETURN QUERY SELECT sjm_case('20k 128-D self', 'm_big128', NULL,
                                     sjm_eps('m_big128', NULL, m, 0.01), m, false, '64MB');
        RETURN QUERY SELECT sjm_case('8k 384-D float4 self', 'm_big384', NULL,
                                     sjm_eps('m_big384', NULL, m, 0.01), m, false);
        RETURN QUERY SELECT sjm_case('4k 1536-D special self', 'm_big1536', NULL,
                                     sjm_eps('m_big1536', NULL, m, 0.01), m, false, '32MB');
    END LOOP;
    DROP TABLE m_big128, m_big384, m_big1536, m_dense;
END $$;
SELECT sjm_large();
