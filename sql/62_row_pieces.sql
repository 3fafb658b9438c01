-- eps_join's function form and the custom scan read real[] rows in place
-- where the GPU runs them (this process's rows and the parallel workers'
-- parts, kept mapped until the join ends); the developer option
-- simjoin.debug_row_pieces does so whichever engine runs.  The pairs and
-- distances equal those of the columns merged from a serial read, bit for
-- bit; an error or a cancel while the parts are kept frees them, and the
-- session goes on.
LOAD 'simjoin';
SET jit = off;
SET simjoin.cpu_threads = 2;
CREATE TABLE rp_v AS
SELECT i AS id,
       ARRAY[(i * 7919 % 1000) / 10.0, (i * 104729 % 1000) / 10.0, i % 3]::float4[] AS v,
       ARRAY[(i % 10)::float4, 1]::float4[] AS v2
FROM generate_series(1, 20000) i;
UPDATE rp_v SET v = NULL WHERE id % 97 = 0;
UPDATE rp_v SET v = '{NaN,1,0}' WHERE id % 89 = 0;
CREATE TABLE rp_w AS SELECT id, v FROM rp_v WHERE id % 3 = 0;
VACUUM ANALYZE rp_v, rp_w;

-- rp_same(q): q's rows read in place (two workers; the leader only waits,
-- so that the workers' parts hold rows) against
-- q's rows from columns merged after a serial read, as multisets, and
-- whether workers read them
CREATE FUNCTION rp_same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE w int; n bigint; extra bigint; missing bigint;
BEGIN
    PERFORM set_config('simjoin.debug_row_pieces', 'on', true);
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    PERFORM set_config('parallel_leader_participation', 'off', true);
    EXECUTE 'CREATE TEMP TABLE rp_a AS ' || q;
    SELECT scan_workers INTO w FROM simjoin_last_stats();
    PERFORM set_config('simjoin.debug_row_pieces', 'off', true);
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    EXECUTE 'CREATE TEMP TABLE rp_b AS ' || q;
    SELECT count(*) INTO n FROM rp_b;
    SELECT count(*) INTO extra FROM (TABLE rp_a EXCEPT ALL TABLE rp_b) d;
    SELECT count(*) INTO missing FROM (TABLE rp_b EXCEPT ALL TABLE rp_a) d;
    DROP TABLE rp_a, rp_b;
    RETURN format('rows=%s extra=%s missing=%s', n, extra, missing)
        || CASE WHEN w > 0 THEN ' workers' ELSE ' no workers' END;
END $$;
SELECT rp_same($$SELECT * FROM eps_join('rp_v', 'id', 'v', 1.0)$$);
SELECT rp_same($$SELECT * FROM eps_join('rp_v', 'id', 'v', 0.00002, 'cosine')$$);
SELECT rp_same($$SELECT * FROM eps_join('rp_v', 'id', 'v', 'rp_w', 'id', 'v', 1.0)$$);
SELECT rp_same($$SELECT eps_join_count('rp_v', 'id', 'v', 2.5) AS n$$);
-- the custom scan too (plain SQL): counting, a table joined with itself and
-- two tables, read by workers whose parts stay mapped until the engine
-- ends; forming rows, the rows this process read (a self-join's cosine
-- distances of rows to themselves computed over the rows in place)
SELECT rp_same($$SELECT count(*) AS n FROM rp_v a JOIN rp_v b ON a.v <-> b.v <= 1.0$$);
SELECT rp_same($$SELECT count(*) AS n FROM rp_v a JOIN rp_w b ON a.v <-> b.v <= 1.0$$);
SELECT rp_same($$SELECT count(*) AS n FROM rp_v a JOIN rp_v b ON a.v <=> b.v <= 0.00002$$);
SELECT rp_same($$SELECT a.id AS a, b.id AS b, a.v <=> b.v AS d
                 FROM rp_v a JOIN rp_v b ON a.v <=> b.v <= 0.00002$$);
SELECT rp_same($$SELECT a.id AS a, b.id AS b FROM rp_v a JOIN rp_w b ON a.v <-> b.v <= 0.5$$);

-- a serial read keeps copies of its rows' by-reference values (text, NULLs,
-- arrays that its input's expressions expand, intervals, values larger
-- than a block) in blocks that grow: the
-- rows, with the vectors read in place and merged, equal PostgreSQL's own
-- join's (a nested loop: on some thousands of rows)
CREATE FUNCTION rp_own(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; bad bigint := 0; node boolean := false; line text;
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        node := node OR line LIKE '%Custom Scan (SimJoin)%';
    END LOOP;
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    EXECUTE 'CREATE TEMP TABLE rp_o AS ' || q;
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    SELECT count(*) INTO n FROM rp_o;
    FOREACH line IN ARRAY ARRAY['on', 'off'] LOOP
        PERFORM set_config('simjoin.debug_row_pieces', line, true);
        EXECUTE 'CREATE TEMP TABLE rp_a AS ' || q;
        bad := bad + (SELECT count(*) FROM (TABLE rp_a EXCEPT ALL TABLE rp_o) d)
                   + (SELECT count(*) FROM (TABLE rp_o EXCEPT ALL TABLE rp_a) d);
        DROP TABLE rp_a;
    END LOOP;
    DROP TABLE rp_o;
    RETURN format('rows=%s differing=%s', n, bad)
        || CASE WHEN node THEN ' custom scan' ELSE ' no custom scan' END;
END $$;
SELECT rp_own($$
    SELECT a.id AS a, b.id AS b, a.t AS at, b.t AS bt, a.v AS av, b.v <-> a.v AS d,
           md5(a.big) AS big, a.iv AS iv
    FROM (SELECT id, CASE WHEN id % 7 <> 0 THEN repeat('r', id % 50) || id END AS t,
                 array_append(v, 1::float4) AS v,
                 CASE WHEN id % 1000 = 5 THEN repeat('x', 100000 + id) END AS big,
                 make_interval(secs => id) AS iv
          FROM rp_v WHERE v IS NOT NULL AND id <= 6000 OFFSET 0) a
    JOIN (SELECT id, 'w' || id AS t, array_append(v, 1::float4) AS v
          FROM rp_w WHERE v IS NOT NULL OFFSET 0) b
    ON a.v <-> b.v <= 0.5$$);
SELECT rp_own($$SELECT a.id AS a, b.id AS b, a.v AS av, b.v AS bv
                FROM (SELECT * FROM rp_v WHERE id <= 3000) a
                JOIN (SELECT * FROM rp_v WHERE id <= 3000) b
                ON a.v <=> b.v <= 0.00002 AND a.id < b.id$$);
DROP FUNCTION rp_own(text);

-- an error with both sides' parts kept (the vectors' dimensions differ):
-- freed, and the same join again gives the same answer
SET simjoin.debug_row_pieces = on;
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT eps_join_count('rp_v', 'id', 'v', 'rp_v', 'id', 'v2', 1.5);
SELECT eps_join_count('rp_v', 'id', 'v', 'rp_w', 'id', 'v', 1.0) AS after_error;
SELECT scan_workers > 0 AS workers FROM simjoin_last_stats();
-- a cancel (statement_timeout) while the parts are kept: about 1.9 x 10^8
-- pairs to emit, stopped between batches; freed, and the session goes on
SET statement_timeout = '300ms';
SELECT count(*) FROM eps_join('rp_v', 'id', 'v', 1e9);
RESET statement_timeout;
SELECT eps_join_count('rp_v', 'id', 'v', 'rp_w', 'id', 'v', 1.0) AS after_cancel;
SELECT scan_workers > 0 AS workers FROM simjoin_last_stats();
-- the same in plain SQL: an error with both inputs' parts kept, and a
-- cancel while the node's cursor is open over the rows it read
SELECT count(*) FROM rp_v a JOIN rp_v b ON a.v <-> b.v2 <= 1.5;
SELECT count(*) AS after_error FROM rp_v a JOIN rp_w b ON a.v <-> b.v <= 1.0;
SELECT scan_workers > 0 AS workers FROM simjoin_last_stats();
SET statement_timeout = '300ms';
SELECT sum(a.id - b.id) FROM rp_v a JOIN rp_v b ON a.v <-> b.v <= 1e9;
RESET statement_timeout;
SELECT count(*) AS after_cancel FROM rp_v a JOIN rp_v b ON a.v <-> b.v <= 1.0;
SELECT scan_workers > 0 AS workers FROM simjoin_last_stats();
-- a join whose kept parts an aborted subtransaction unmaps stops only
-- itself: the open cursor of another join (its engine between batches)
-- goes on, all of its rows
CREATE FUNCTION rp_move_all(c refcursor) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    MOVE FORWARD ALL FROM c;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;
SET cursor_tuple_fraction = 1;
EXPLAIN (COSTS OFF)
SELECT a.id AS a, b.id AS b FROM rp_v a JOIN rp_w b ON a.v <-> b.v <= 0.5;
BEGIN;
DECLARE rp_c CURSOR FOR
    SELECT a.id AS a, b.id AS b FROM rp_v a JOIN rp_w b ON a.v <-> b.v <= 0.5;
MOVE 10 IN rp_c;
SAVEPOINT rp_s;
SELECT eps_join_count('rp_v', 'id', 'v', 'rp_v', 'id', 'v2', 1.5);
ROLLBACK TO SAVEPOINT rp_s;
SELECT rp_move_all('rp_c') + 10 AS cursor_rows;
COMMIT;
RESET cursor_tuple_fraction;
DROP FUNCTION rp_move_all(refcursor);
RESET parallel_leader_participation;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET simjoin.debug_row_pieces;
DROP FUNCTION rp_same(text);
DROP TABLE rp_v, rp_w;
