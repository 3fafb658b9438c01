-- eps_diff.sql: eps_join, CPU vs oracle and GPU vs CPU, on fresh random data

-- A table of n points in dim dimensions, of one shape:
--   uniform   uniform in [0, 10)^dim
--   grid      integer coordinates in [0, 6): many pairs exactly at eps = 1
--   clusters  10 tight clusters
--   dups      only 20 distinct points
--   special   uniform, with NULL vectors, NaN and infinite coordinates mixed in
--   skew      half the points in one tiny cell, the rest spread wide
CREATE OR REPLACE FUNCTION sjd_points(tbl text, n int, dim int, shape text,
                                      elem text DEFAULT 'float8') RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        SELECT i AS id,
               CASE WHEN %L = 'special' AND i %% 17 = 0 THEN NULL
                    ELSE array_agg(
                        CASE %L
                            WHEN 'uniform' THEN random() * 10
                            WHEN 'grid' THEN floor(random() * 6)
                            WHEN 'clusters' THEN (i %% 10) * 7 + random() * 0.3
                            WHEN 'dups' THEN ((i %% 20) * 13 + d) %% 7
                            WHEN 'skew' THEN CASE WHEN i %% 2 = 0 THEN random() * 0.01
                                                  ELSE random() * 1000 END
                            WHEN 'special' THEN CASE WHEN i %% 23 = 0 AND d = 1 THEN 'NaN'::float8
                                                     WHEN i %% 29 = 0 AND d = %s THEN '-Infinity'::float8
                                                     ELSE random() * 10 END
                        END ORDER BY d)::%s[]
               END AS v
        FROM generate_series(1, %s) i, generate_series(1, %s) d
        GROUP BY i $q$, tbl, shape, shape, dim, elem, n, dim);
    EXECUTE format('ANALYZE %I', tbl);
END $$;

-- The contract: vectors with NaN or infinite coordinates never join (cube's
-- own distance treats a NaN coordinate as 0, so the oracle filters them).
CREATE OR REPLACE FUNCTION sjd_finite(v float8[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS
$$ SELECT bool_and(x NOT IN ('NaN', 'Infinity', '-Infinity')) FROM unnest(v) x $$;

-- One case: CPU count form agrees with CPU pairs; CPU agrees with the
-- oracle (when asked); GPU agrees with CPU pairs, distances and count.
CREATE OR REPLACE FUNCTION sjd_eps_case(label text, l text, r text, eps float8,
                                        oracle boolean, mem text DEFAULT '0')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    q text; qc text;
BEGIN
    SELECT * INTO q, qc FROM sjd_join_sql('eps_join', l, r, 'v', format('%s::float8', eps));
    RETURN QUERY SELECT sjd_cpu_cases(label, q, qc);
    IF oracle THEN
        DROP TABLE IF EXISTS sjd_oracle;
        IF r IS NULL THEN
            EXECUTE format($o$CREATE TEMP TABLE sjd_oracle AS
                SELECT a.id::bigint AS left_id, b.id::bigint AS right_id,
                       l2_distance(a.v::float8[], b.v::float8[]) AS distance
                FROM %I a JOIN %I b ON a.id < b.id
                WHERE sjd_finite(a.v::float8[]) AND sjd_finite(b.v::float8[])
                  AND cube_distance(cube(a.v::float8[]), cube(b.v::float8[])) <= %s$o$, l, l, eps);
        ELSE
            EXECUTE format($o$CREATE TEMP TABLE sjd_oracle AS
                SELECT a.id::bigint AS left_id, b.id::bigint AS right_id,
                       l2_distance(a.v::float8[], b.v::float8[]) AS distance
                FROM %I a JOIN %I b
                ON sjd_finite(a.v::float8[]) AND sjd_finite(b.v::float8[])
                AND cube_distance(cube(a.v::float8[]), cube(b.v::float8[])) <= %s$o$, l, r, eps);
        END IF;
        RETURN NEXT sjd_report(label || ': cpu = SQL oracle', sjd_same('sjd_cpu', 'sjd_oracle'));
    END IF;
    RETURN QUERY SELECT sjd_gpu_cases(label, q, qc, mem);
END $$;

-- small cases, with the oracle
SELECT sjd_points('d_empty', 0, 2, 'uniform');
SELECT sjd_points('d_one', 1, 2, 'uniform');
SELECT sjd_points('d_u2', 1500, 2, 'uniform');
SELECT sjd_points('d_u2b', 900, 2, 'uniform', 'float4');
SELECT sjd_points('d_grid2', 800, 2, 'grid');
SELECT sjd_points('d_grid3', 800, 3, 'grid');
SELECT sjd_points('d_clu3', 1000, 3, 'clusters');
SELECT sjd_points('d_dups4', 600, 4, 'dups');
SELECT sjd_points('d_spec5', 900, 5, 'special');
SELECT sjd_points('d_skew2', 1200, 2, 'skew');
SELECT sjd_points('d_u1', 1500, 1, 'uniform');
SELECT sjd_points('d_u6', 800, 6, 'uniform');
SELECT sjd_points('d_u8', 700, 8, 'uniform');
SELECT sjd_points('d_clu16', 600, 16, 'clusters');
SELECT sjd_points('d_u33', 400, 33, 'uniform', 'float4');
SELECT sjd_points('d_clu64', 500, 64, 'clusters');

SELECT sjd_eps_case('empty self', 'd_empty', NULL, 1, true);
SELECT sjd_eps_case('empty x uniform', 'd_empty', 'd_u2', 1, true);
SELECT sjd_eps_case('uniform x empty', 'd_u2', 'd_empty', 1, true);
SELECT sjd_eps_case('one row self', 'd_one', NULL, 100, true);
SELECT sjd_eps_case('one row x uniform', 'd_one', 'd_u2', 3, true);
SELECT sjd_eps_case('uniform 2-D self', 'd_u2', NULL, 0.3, true);
SELECT sjd_eps_case('uniform 2-D float4 x float8', 'd_u2b', 'd_u2', 0.25, true);
SELECT sjd_eps_case('grid 2-D self at eps = 1', 'd_grid2', NULL, 1, true);
SELECT sjd_eps_case('grid 3-D self at eps = 1', 'd_grid3', NULL, 1, true);
SELECT sjd_eps_case('grid 3-D eps = 0', 'd_grid3', NULL, 0, true);
SELECT sjd_eps_case('grid 2-D two-table, self-pairs included', 'd_grid2', 'd_grid2', 1.5, true);
SELECT sjd_eps_case('clusters 3-D self', 'd_clu3', NULL, 0.2, true);
SELECT sjd_eps_case('duplicates 4-D eps = 0', 'd_dups4', NULL, 0, true);
SELECT sjd_eps_case('duplicates 4-D two-table', 'd_dups4', 'd_dups4', 2, true);
SELECT sjd_eps_case('NULL/NaN/inf 5-D self', 'd_spec5', NULL, 4, true);
SELECT sjd_eps_case('skewed 2-D self', 'd_skew2', NULL, 0.001, true);
SELECT sjd_eps_case('1-D self', 'd_u1', NULL, 0.01, true);
SELECT sjd_eps_case('6-D self', 'd_u6', NULL, 4, true);
SELECT sjd_eps_case('8-D two-table', 'd_u8', 'd_u8', 6, true);
SELECT sjd_eps_case('16-D clusters self', 'd_clu16', NULL, 1, true);
SELECT sjd_eps_case('33-D float4 self', 'd_u33', NULL, 15, true);
SELECT sjd_eps_case('64-D clusters self', 'd_clu64', NULL, 1.5, true);
SELECT sjd_eps_case('64-D huge eps (all pairs)', 'd_clu64', NULL, 1e6, true);

-- large cases: results across many batches, a tiny GPU memory limit
SELECT sjd_points('d_big2', 300000, 2, 'uniform');
SELECT sjd_points('d_big3', 200000, 3, 'clusters');
SELECT sjd_points('d_big2b', 100000, 2, 'uniform', 'float4');
SELECT sjd_eps_case('300k 2-D self (~9M pairs)', 'd_big2', NULL, 0.08, false);
SELECT sjd_eps_case('300k 2-D self, 16MB device memory', 'd_big2', NULL, 0.08, false, '16MB');
SELECT sjd_eps_case('200k clusters 3-D self', 'd_big3', NULL, 0.03, false, '32MB');
SELECT sjd_eps_case('100k x 300k 2-D', 'd_big2b', 'd_big2', 0.05, false);

SELECT CASE WHEN sjd_gpu() AND (SELECT count(*) FROM simjoin_devices()) < 2
            THEN 'SKIP eps on two real GPUs (one visible; the cases ran on devices 0,0)' END
WHERE sjd_gpu() AND (SELECT count(*) FROM simjoin_devices()) < 2;

-- real[] vectors stay real for the GPU (the device widens them); where auto
-- then picks the CPU engine (a small join), the columns are widened first:
-- the same pairs and distances as with device = cpu
CREATE OR REPLACE FUNCTION sjd_auto_real() RETURNS text LANGUAGE plpgsql AS $$
DECLARE dev text; p text;
BEGIN
    PERFORM sjd_capture('sjd_real_cpu', 'cpu', $q$SELECT * FROM eps_join('d_u33', 'id', 'v', 15)$q$);
    PERFORM sjd_capture('sjd_real_auto', 'auto', $q$SELECT * FROM eps_join('d_u33', 'id', 'v', 15)$q$);
    SELECT device INTO dev FROM simjoin_last_stats();
    p := sjd_same('sjd_real_auto', 'sjd_real_cpu');
    IF dev IS DISTINCT FROM 'cpu' THEN
        p := coalesce(p || '; ', '') || format('ran on %s, not the CPU engine', dev);
    END IF;
    RETURN p;
END $$;
SELECT CASE WHEN NOT sjd_gpu() THEN 'SKIP auto on a GPU host (no GPU)'
            ELSE sjd_report('auto on a GPU host: a small real[] join on the CPU engine = cpu',
                            sjd_auto_real()) END;

-- device selection without a GPU: gpu is refused, auto uses the CPU
CREATE OR REPLACE FUNCTION sjd_gpu_refusal() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simjoin.device', 'gpu', true);
    PERFORM eps_join_count('d_u2', 'id', 'v', 1);
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN CASE WHEN SQLSTATE = '55000' THEN NULL ELSE SQLSTATE || ': ' || SQLERRM END;
END $$;
SELECT CASE WHEN sjd_gpu() THEN 'SKIP device refusal (a GPU is usable)'
            ELSE sjd_report('device = gpu without a GPU: SQLSTATE 55000', sjd_gpu_refusal()) END;
SELECT sjd_report('device = auto without a GPU uses the CPU',
       CASE WHEN sjd_gpu() OR sjd_scalar('auto', $$SELECT eps_join_count('d_u2', 'id', 'v', 0.3)$$)
                              = sjd_scalar('cpu', $$SELECT eps_join_count('d_u2', 'id', 'v', 0.3)$$)
            THEN NULL ELSE 'counts differ' END);
