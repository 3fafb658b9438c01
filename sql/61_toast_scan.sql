-- Long vectors live in the table's TOAST relation: the main fork holds a
-- pointer a row.  The readers follow the bytes of the table, TOAST included:
-- a table whose main fork is below min_parallel_table_scan_size but whose
-- vectors are above it is read by parallel workers, with the same answers.
SET jit = off;
CREATE TABLE ts_vec (id int, v float4[]);
ALTER TABLE ts_vec ALTER COLUMN v SET STORAGE EXTERNAL;
INSERT INTO ts_vec
SELECT i, array(SELECT (((i % 100) * 7919 + d * 104729) % 1000) / 1000.0 + (i % 3) * 0.0001
                FROM generate_series(1, 768) d)::float4[]
FROM generate_series(1, 300) i;
VACUUM ANALYZE ts_vec;
SELECT pg_relation_size('ts_vec') < 65536 AS small_main_fork,
       pg_relation_size(reltoastrelid) > 65536 * 4 AS large_toast
FROM pg_class WHERE oid = 'ts_vec'::regclass;
SET max_parallel_workers_per_gather = 0;
SELECT eps_join_count('ts_vec', 'id', 'v', 0.01) AS serial \gset
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = '64kB';
SELECT eps_join_count('ts_vec', 'id', 'v', 0.01) = :serial AS same, :serial AS pairs;
SELECT scan_workers > 0 AS read_by_workers FROM simjoin_last_stats();
SELECT eps_join_count('ts_vec', 'id', 'v', 'ts_vec', 'id', 'v', 0.01) = 2 * :serial + 300 AS two_table_same;
SELECT scan_workers > 0 AS read_by_workers FROM simjoin_last_stats();
-- a plain SQL join gives the same answer
SELECT count(*) = 2 * :serial + 300 AS plain_same
FROM ts_vec a JOIN ts_vec b ON a.v <-> b.v <= 0.01;
-- with a larger minimum the table is read by the leader alone
SET min_parallel_table_scan_size = '8MB';
SELECT eps_join_count('ts_vec', 'id', 'v', 0.01) = :serial AS same;
SELECT scan_workers FROM simjoin_last_stats();
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;

-- The scan reads out-of-line values through one TOAST index scan a column;
-- simjoin.debug_detoast_each reads each with PostgreSQL's own detoast.  The
-- same pairs and distances either way, serial and with workers (text sides
-- of theta_join are read serially), for vectors, sets and text, with NULLs,
-- compressed values (left to detoast) joining uncompressed copies (read by
-- the reader), and the rows an open transaction changed.
INSERT INTO ts_vec VALUES (301, NULL), (302, NULL);
-- one column, both kinds: a repeated pattern of 3,000 floats (compressed,
-- still out of line) and hashes (left uncompressed)
CREATE TABLE ts_cmp (id int, v float4[]);
INSERT INTO ts_cmp
SELECT i, array(SELECT CASE WHEN i <= 40 THEN ((d % 700) * 7 % 1000) / 1000.0 + (i % 5) * 0.001
                            ELSE hashint4(i % 50 * 4096 + d) / 2147483648.0 END
                FROM generate_series(1, 3000) d)::float4[]
FROM generate_series(1, 80) i;
-- the compressed rows again, out of line uncompressed: pairs across readers
ALTER TABLE ts_cmp ALTER COLUMN v SET STORAGE EXTERNAL;
INSERT INTO ts_cmp SELECT id + 80, v[1:3000] FROM ts_cmp WHERE id <= 40;
SELECT count(*) FILTER (WHERE pg_column_compression(v) IS NOT NULL
                        AND pg_column_size(v) > 2100) AS compressed_out_of_line,
       count(*) FILTER (WHERE pg_column_compression(v) IS NULL) AS uncompressed
FROM ts_cmp;
CREATE TABLE ts_set (id int, s int[]);
ALTER TABLE ts_set ALTER COLUMN s SET STORAGE EXTERNAL;
INSERT INTO ts_set
SELECT i, array(SELECT (i % 20) * 50 + d FROM generate_series(1, 900 + i % 7) d)
FROM generate_series(1, 200) i;
CREATE TABLE ts_txt (id int, t text);
ALTER TABLE ts_txt ALTER COLUMN t SET STORAGE EXTERNAL;
INSERT INTO ts_txt SELECT i, repeat(md5((i % 30)::text), 100 + i % 2) FROM generate_series(1, 300) i;
VACUUM ANALYZE ts_vec, ts_cmp, ts_set, ts_txt;
CREATE FUNCTION ts_pairs(workers int)
RETURNS TABLE (what text, n bigint, digest text, read_by_workers bool)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', workers::text, true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    FOR r IN SELECT * FROM (VALUES
        ('vectors', $q$SELECT count(*), md5(string_agg(format('%s %s %s', left_id, right_id, distance), ',' ORDER BY left_id, right_id))
                       FROM eps_join('ts_vec', 'id', 'v', 0.01)$q$),
        ('compressed', $q$SELECT count(*), md5(string_agg(format('%s %s %s', left_id, right_id, distance), ',' ORDER BY left_id, right_id))
                          FROM eps_join('ts_cmp', 'id', 'v', 0.05)$q$),
        ('sets', $q$SELECT count(*), md5(string_agg(format('%s %s %s', left_id, right_id, similarity), ',' ORDER BY left_id, right_id))
                    FROM jaccard_join('ts_set', 'id', 's', 0.9)$q$),
        ('text', $q$SELECT count(*), md5(string_agg(format('%s %s', left_id, right_id), ',' ORDER BY left_id, right_id))
                    FROM theta_join('ts_txt', 'id', 'ts_txt', 'id', 'l.t = r.t')$q$)) v(w, q)
    LOOP
        what := r.w;
        EXECUTE r.q INTO n, digest;
        SELECT scan_workers > 0 INTO read_by_workers FROM simjoin_last_stats();
        RETURN NEXT;
    END LOOP;
END $$;
CREATE TEMP TABLE ts_runs AS SELECT 'reader' AS how, 0 AS workers, * FROM ts_pairs(0);
INSERT INTO ts_runs SELECT 'reader', 2, * FROM ts_pairs(2);
SET simjoin.debug_detoast_each = on;
INSERT INTO ts_runs SELECT 'detoast', 0, * FROM ts_pairs(0);
INSERT INTO ts_runs SELECT 'detoast', 2, * FROM ts_pairs(2);
RESET simjoin.debug_detoast_each;
SELECT what, min(n) AS pairs, count(DISTINCT (n, digest)) AS answers,
       bool_or(read_by_workers) FILTER (WHERE workers = 0) AS serial_used_workers,
       bool_and(read_by_workers) FILTER (WHERE workers = 2) AS read_by_workers
FROM ts_runs GROUP BY what ORDER BY what;
-- plain SQL over the same rows agrees (every pair both ways, self-pairs)
SELECT (SELECT count(*) FROM ts_vec a JOIN ts_vec b ON a.v <-> b.v <= 0.01)
     = 2 * (SELECT n FROM ts_runs WHERE what = 'vectors' LIMIT 1) + 300 AS vectors_plain_same;
SELECT (SELECT count(*) FROM ts_txt a JOIN ts_txt b ON a.t = b.t)
     = (SELECT n FROM ts_runs WHERE what = 'text' LIMIT 1) AS text_plain_same;
-- rows an open transaction changed: their new values, read by workers
BEGIN;
UPDATE ts_vec SET v = (SELECT v FROM ts_vec WHERE id = 1) WHERE id BETWEEN 2 AND 11;
DELETE FROM ts_vec WHERE id BETWEEN 12 AND 21;
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL min_parallel_table_scan_size = 0;
SELECT (SELECT count(*) FROM eps_join('ts_vec', 'id', 'v', 0.01))
     = ((SELECT count(*) FROM ts_vec a JOIN ts_vec b ON a.v <-> b.v <= 0.01) - 290) / 2
       AS changed_rows_same;
ROLLBACK;
SELECT eps_join_count('ts_vec', 'id', 'v', 0.01) = (SELECT n FROM ts_runs WHERE what = 'vectors' LIMIT 1)
       AS rolled_back_same;
DROP FUNCTION ts_pairs(int);
DROP TABLE ts_vec, ts_cmp, ts_set, ts_txt;
