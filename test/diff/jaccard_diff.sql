-- jaccard_diff.sql: jaccard_join, CPU vs oracle and GPU vs CPU, on fresh random data

-- A table of n sets (column s) of one shape, with elements of type elem:
--   uniform   sizes 1..20 over 200 tokens
--   zipf      sizes 2..40, tokens Zipf-like over 5,000
--   dups      only 30 distinct sets, repeated
--   shared    every set contains token 0
--   tiny      sizes 0..3 (empty sets included) over 20 tokens
--   large     sizes 200..1,000 over 3,000 tokens
--   nulls     uniform, with NULL sets and empty sets mixed in
CREATE OR REPLACE FUNCTION sjd_sets(tbl text, n int, shape text, elem text DEFAULT 'int4',
                                    offs int DEFAULT 0) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
    EXECUTE format($q$
        CREATE TABLE %I AS
        SELECT i AS id,
               CASE WHEN %L = 'nulls' AND i %% 13 = 0 THEN NULL
                    WHEN %L = 'nulls' AND i %% 17 = 0 THEN '{}'
                    ELSE array(
                        SELECT (CASE %L
                                   WHEN 'uniform' THEN (random() * 200)::int
                                   WHEN 'nulls' THEN (random() * 200)::int
                                   WHEN 'zipf' THEN floor(exp(random() * ln(5000)))::int
                                   WHEN 'dups' THEN ((i %% 30) * 7 + g) %% 97
                                   WHEN 'shared' THEN CASE WHEN g = 1 THEN 0 ELSE (random() * 300)::int END
                                   WHEN 'tiny' THEN (random() * 20)::int
                                   WHEN 'large' THEN (random() * 3000)::int
                                END + %s)::%s
                        FROM generate_series(1, CASE %L
                                   WHEN 'uniform' THEN 1 + i %% 20
                                   WHEN 'nulls' THEN 1 + i %% 20
                                   WHEN 'zipf' THEN 2 + i %% 39
                                   WHEN 'dups' THEN 3 + (i %% 30) %% 5
                                   WHEN 'shared' THEN 1 + i %% 12
                                   WHEN 'tiny' THEN i %% 4
                                   WHEN 'large' THEN 200 + (i * 37) %% 800
                                END) g)
               END AS s
        FROM generate_series(1, %s) i $q$, tbl, shape, shape, shape, offs, elem, shape, n);
END $$;

-- Plain SQL oracle: overlap counts from unnest, then the quotient.
CREATE OR REPLACE FUNCTION sjd_jaccard_oracle(l text, r text, t float8) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS sjd_oracle;
    EXECUTE format($o$
        CREATE TEMP TABLE sjd_oracle AS
        WITH le AS (SELECT DISTINCT id, unnest(s)::text AS e FROM %I),
             re AS (SELECT DISTINCT id, unnest(s)::text AS e FROM %I),
             ln AS (SELECT id, count(*) AS n FROM le GROUP BY id),
             rn AS (SELECT id, count(*) AS n FROM re GROUP BY id),
             ov AS (SELECT a.id AS l, b.id AS r, count(*) AS inter
                    FROM le a JOIN re b ON a.e = b.e %s GROUP BY 1, 2)
        SELECT ov.l::bigint AS left_id, ov.r::bigint AS right_id,
               inter::float8 / (ln.n + rn.n - inter)::float8 AS similarity
        FROM ov JOIN ln ON ln.id = ov.l JOIN rn ON rn.id = ov.r
        WHERE inter::float8 / (ln.n + rn.n - inter)::float8 >= %s $o$,
        l, coalesce(r, l), CASE WHEN r IS NULL THEN 'AND a.id < b.id' ELSE '' END, t);
END $$;

CREATE OR REPLACE FUNCTION sjd_jaccard_case(label text, l text, r text, t float8,
                                            oracle boolean, mem text DEFAULT '0')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE q text; qc text;
BEGIN
    SELECT * INTO q, qc FROM sjd_join_sql('jaccard_join', l, r, 's', format('%s::float8', t));
    RETURN QUERY SELECT sjd_cpu_cases(label, q, qc);
    IF oracle THEN
        PERFORM sjd_jaccard_oracle(l, r, t);
        RETURN NEXT sjd_report(label || ': cpu = SQL oracle', sjd_same('sjd_cpu', 'sjd_oracle'));
    END IF;
    RETURN QUERY SELECT sjd_gpu_cases(label, q, qc, mem);
END $$;

SELECT sjd_sets('j_empty', 0, 'uniform');
SELECT sjd_sets('j_uni', 1500, 'uniform');
SELECT sjd_sets('j_uni8', 800, 'uniform', 'int8', 1000000000);
SELECT sjd_sets('j_zipf', 1500, 'zipf');
SELECT sjd_sets('j_dups', 1200, 'dups');
SELECT sjd_sets('j_shared', 1000, 'shared');
SELECT sjd_sets('j_tiny', 1500, 'tiny');
SELECT sjd_sets('j_large', 300, 'large');
SELECT sjd_sets('j_nulls', 1000, 'nulls');
SELECT sjd_sets('j_text', 900, 'zipf', 'text');
SELECT sjd_sets('j_text2', 700, 'uniform', 'text');
SELECT sjd_sets('j_disjoint', 700, 'uniform', 'int4', 100000);

SELECT sjd_jaccard_case('empty x uniform', 'j_empty', 'j_uni', 0.5, true);
SELECT sjd_jaccard_case(format('uniform self t=%s', t), 'j_uni', NULL, t, true)
FROM unnest('{0.1,0.2,0.5,0.7,0.9,1.0}'::float8[]) t;
SELECT sjd_jaccard_case('int8 self t=0.3', 'j_uni8', NULL, 0.3, true);
SELECT sjd_jaccard_case(format('zipf self t=%s', t), 'j_zipf', NULL, t, true)
FROM unnest('{0.2,0.5,0.6,0.8,0.95}'::float8[]) t;
SELECT sjd_jaccard_case('duplicates self t=0.8', 'j_dups', NULL, 0.8, true);
SELECT sjd_jaccard_case('duplicates self t=1', 'j_dups', NULL, 1, true);
SELECT sjd_jaccard_case('one shared token t=0.1', 'j_shared', NULL, 0.1, true);
SELECT sjd_jaccard_case('tiny and empty t=0.5', 'j_tiny', NULL, 0.5, true);
SELECT sjd_jaccard_case('large sets t=0.2', 'j_large', NULL, 0.2, true);
SELECT sjd_jaccard_case('NULL and empty sets t=0.3', 'j_nulls', NULL, 0.3, true);
SELECT sjd_jaccard_case('text zipf self t=0.5', 'j_text', NULL, 0.5, true);
SELECT sjd_jaccard_case('text two-table t=0.4', 'j_text2', 'j_text', 0.4, true);
SELECT sjd_jaccard_case('two-table identical universe t=0.5', 'j_uni', 'j_nulls', 0.5, true);
SELECT sjd_jaccard_case('two-table disjoint universes t=0.1', 'j_uni', 'j_disjoint', 0.1, true);
SELECT sjd_jaccard_case('two-table zipf x uniform t=0.7', 'j_zipf', 'j_uni', 0.7, true);

-- large: many batches, tight device memory
SELECT sjd_sets('j_big', 200000, 'zipf');
SELECT sjd_sets('j_bigdup', 12000, 'dups');
SELECT sjd_jaccard_case('200k zipf self t=0.5', 'j_big', NULL, 0.5, false);
SELECT sjd_jaccard_case('200k zipf self t=0.8, 48MB device memory', 'j_big', NULL, 0.8, false, '48MB');
-- below the GPU engine's resident floor: device = auto runs the CPU engine
SELECT sjd_report('200k zipf, 2MB device memory, auto falls back to the CPU',
       CASE WHEN NOT sjd_gpu() OR sjd_scalar('auto', $$SELECT jaccard_join_count('j_big', 'id', 's', 0.8)$$, '2MB')
                                  = sjd_scalar('cpu', $$SELECT jaccard_join_count('j_big', 'id', 's', 0.8)$$)
            THEN NULL ELSE 'counts differ' END);
SELECT sjd_jaccard_case('12k duplicates self t=0.9 (~2.4M pairs)', 'j_bigdup', NULL, 0.9, false, '64MB');
