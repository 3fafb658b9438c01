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
DROP TABLE ts_vec;
