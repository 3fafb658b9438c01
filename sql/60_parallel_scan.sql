-- Parallel scan and marshal: large plain tables are read by parallel
-- workers (each building part of a side, merged by the leader).  Forced here
-- on small tables with min_parallel_table_scan_size = 0; every result must
-- equal the serial one (max_parallel_workers_per_gather = 0).
LOAD 'simjoin';
SET jit = off;
SET simjoin.cpu_threads = 2;
CREATE TABLE ps_v AS
SELECT i AS id, ARRAY[(i * 7919 % 1000) / 10.0, (i * 104729 % 1000) / 10.0]::float8[] AS v,
       (i % 50)::int AS k, (i * 31 % 997)::float8 AS f,
       CASE WHEN i % 11 = 0 THEN NULL ELSE i % 13 END AS a
FROM generate_series(1, 20000) i;
UPDATE ps_v SET v = NULL WHERE id % 97 = 0;
UPDATE ps_v SET v = '{NaN,1}' WHERE id % 89 = 0;
-- the same vectors as real[] (kept as real by each participant, widened
-- in the merge), and those widened in SQL
ALTER TABLE ps_v ADD COLUMN v4 float4[], ADD COLUMN v48 float8[];
UPDATE ps_v SET v4 = v::float4[];
UPDATE ps_v SET v48 = v4::float8[];
CREATE TABLE ps_s AS
SELECT i AS id,
       array(SELECT (i * g * 7 % 300)::int FROM generate_series(1, 1 + i % 6) g) AS s,
       array(SELECT 'w' || (i * g * 7 % 300) FROM generate_series(1, 1 + i % 6) g) AS t,
       array(SELECT (i * g * 7 % 300)::int8 FROM generate_series(1, 1 + i % 6) g) AS b
FROM generate_series(1, 20000) i;
UPDATE ps_s SET s = '{}' WHERE id % 101 = 0;
VACUUM ANALYZE ps_v, ps_s;
SELECT pg_relation_size('ps_v') > 8192 * 20 AS several_pages;

-- ps_run(q): q's one row, serially and with 2 workers, and whether the
-- parallel run used workers (simjoin_last_stats) and agreed
CREATE FUNCTION ps_run(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE serial text; par text; w int;
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    EXECUTE 'SELECT (' || q || ')::text' INTO serial;
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    EXECUTE 'SELECT (' || q || ')::text' INTO par;
    SELECT scan_workers INTO w FROM simjoin_last_stats();
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    RETURN serial || CASE WHEN par IS NOT DISTINCT FROM serial THEN ' same' ELSE ' DIFFERENT: ' || par END
        || CASE WHEN w > 0 THEN ' workers' ELSE ' no workers' END;
END $$;

-- ps_plan_analyze(q): q's EXPLAIN ANALYZE, one line a row; ps_compare(q): q's rows with the
-- node and with PostgreSQL's own plan (simjoin.enable_customscan = off)
-- are the same multiset
CREATE FUNCTION ps_plan_analyze(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q;
END $$;
CREATE FUNCTION ps_compare(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE extra bigint; missing bigint; n bigint;
BEGIN
    EXECUTE 'CREATE TEMP TABLE ps_on AS SELECT x::text AS r FROM (' || q || ') x';
    PERFORM set_config('simjoin.enable_customscan', 'off', true);
    EXECUTE 'CREATE TEMP TABLE ps_off AS SELECT x::text AS r FROM (' || q || ') x';
    PERFORM set_config('simjoin.enable_customscan', 'on', true);
    SELECT count(*) INTO n FROM ps_off;
    SELECT count(*) INTO extra FROM (TABLE ps_on EXCEPT ALL TABLE ps_off) d;
    SELECT count(*) INTO missing FROM (TABLE ps_off EXCEPT ALL TABLE ps_on) d;
    DROP TABLE ps_on, ps_off;
    RETURN format('rows=%s extra=%s missing=%s', n, extra, missing);
END $$;

-- the set-returning functions, self and two-table, rows and counts
SELECT ps_run($$SELECT eps_join_count('ps_v', 'id', 'v', 2.5)$$);
SELECT ps_run($$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(distance)::numeric, 6)) FROM eps_join('ps_v', 'id', 'v', 2.5)$$);
SELECT ps_run($$SELECT eps_join_count('ps_v', 'id', 'v', 'ps_v', 'id', 'v', 1.5)$$);
SELECT ps_run($$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(distance)::numeric, 6)) FROM eps_join('ps_v', 'id', 'v4', 2.5)$$);
SELECT ps_run($$SELECT eps_join_count('ps_v', 'id', 'v4', 'ps_v', 'id', 'v', 1.5)$$);
-- ps_same(a, b): the rows of a, read by parallel workers, against those of
-- b as a multiset (the same pairs and values, bit for bit)
CREATE FUNCTION ps_same(a text, b text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE w int; n bigint; extra bigint; missing bigint;
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    EXECUTE 'CREATE TEMP TABLE ps_a AS ' || a;
    SELECT scan_workers INTO w FROM simjoin_last_stats();
    EXECUTE 'CREATE TEMP TABLE ps_b AS ' || b;
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    SELECT count(*) INTO n FROM ps_a;
    SELECT count(*) INTO extra FROM (TABLE ps_a EXCEPT ALL TABLE ps_b) d;
    SELECT count(*) INTO missing FROM (TABLE ps_b EXCEPT ALL TABLE ps_a) d;
    DROP TABLE ps_a, ps_b;
    RETURN format('%s rows, extra=%s missing=%s', CASE WHEN n > 0 THEN 'some' ELSE 'no' END,
                  extra, missing) || CASE WHEN w > 0 THEN ' workers' ELSE ' no workers' END;
END $$;
-- real[] read in parallel against the same values as double precision[]
SELECT ps_same($$SELECT * FROM eps_join('ps_v', 'id', 'v4', 2.5)$$,
               $$SELECT * FROM eps_join('ps_v', 'id', 'v48', 2.5)$$);
-- integer elements small, huge and negative (the dictionary's array for
-- small ones, its hash table for the others), mapped one to one from b:
-- the same pairs, read in parallel
CREATE TABLE ps_sb AS
SELECT id, ARRAY(SELECT CASE WHEN x % 3 = 0 THEN x
                             WHEN x % 2 = 0 THEN x * 5000000007
                             ELSE -x * 5000000007 END
                 FROM unnest(b) x) AS b
FROM ps_s;
VACUUM ANALYZE ps_sb;
SELECT ps_same($$SELECT * FROM jaccard_join('ps_sb', 'id', 'b', 0.5)$$,
               $$SELECT * FROM jaccard_join('ps_s', 'id', 'b', 0.5)$$);
DROP TABLE ps_sb;
SELECT ps_run($$SELECT jaccard_join_count('ps_s', 'id', 's', 0.5)$$);
SELECT ps_run($$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(similarity)::numeric, 6)) FROM jaccard_join('ps_s', 'id', 's', 'ps_s', 'id', 'b', 0.6)$$);
SELECT ps_run($$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(similarity)::numeric, 6)) FROM jaccard_join('ps_s', 'id', 't', 0.4)$$);
SELECT ps_run($$SELECT row(count(*), sum(left_id), sum(right_id), round(sum(similarity)::numeric, 6)) FROM jaccard_join('ps_s', 'id', 't', 'ps_s', 'id', 't', 0.4)$$);
SELECT ps_run($$SELECT theta_join_count('ps_v', 'id', 'ps_v', 'id', 'l.k = r.k AND (l.a < r.a OR l.a IS NULL)')$$);
SELECT ps_run($$SELECT row(count(*), sum(left_id), sum(right_id)) FROM theta_join('ps_v', 'id', 'ps_s', 'id', 'r.id BETWEEN l.id - 2 AND l.id + 2 AND l.f > 500')$$);
-- plain SQL counts through the node: filters are evaluated by the workers
SELECT ps_run($$SELECT count(*) FROM ps_v a JOIN ps_v b ON a.v <-> b.v <= 2.5 WHERE a.k < 20 AND b.id % 3 = 0$$);
SELECT ps_run($$SELECT count(*) FROM ps_s a JOIN ps_s b ON jaccard(a.t, b.t) >= 0.5 WHERE a.id > 100$$);
SELECT ps_run($$SELECT count(*) FROM ps_v l JOIN ps_v r ON l.k = r.k AND l.f < r.f WHERE l.a IS NOT NULL$$);
-- the node's input was read by the workers, whose rows EXPLAIN ANALYZE counts
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ps_v a JOIN ps_v b ON a.v <-> b.v <= 2.5 WHERE a.k < 20;

-- errors raised while workers read are the serial errors (terse: which
-- participant meets the row first varies)
\set VERBOSITY terse
UPDATE ps_v SET v = '{1,2,3}' WHERE id = 15000;
SELECT sj_err($$SELECT eps_join_count('ps_v', 'id', 'v', 1)$$)
       ~ '^22000: different vector dimensions (2 and 3|3 and 2)$' AS dims_error;
UPDATE ps_v SET v = '{1,2}', id = NULL WHERE id = 15000;
SELECT eps_join_count('ps_v', 'id', 'v', 1);
SELECT theta_join_count('ps_v', 'id', 'ps_s', 'id', 'l.k = r.id');
UPDATE ps_s SET s = '{1,NULL}' WHERE id = 12345;
SELECT jaccard_join_count('ps_s', 'id', 's', 0.5);
\set VERBOSITY default
-- and the session goes on
SELECT jaccard_join_count('ps_s', 'id', 'b', 0.9) > 0 AS ok;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;

-- both tables of a two-table join are read in one parallel context; a
-- table too small for workers of its own rides along with a large one
CREATE TABLE ps_tiny AS
SELECT i AS id, (i % 50)::int AS k, ARRAY[(i * 37 % 1000) / 10.0, (i * 53 % 1000) / 10.0]::float8[] AS v,
       array(SELECT (i * g * 7 % 300)::int FROM generate_series(1, 1 + i % 6) g) AS s
FROM generate_series(1, 40) i;
UPDATE ps_v SET v = NULL WHERE v = '{1,2,3}';
UPDATE ps_v SET id = 15000 WHERE id IS NULL;
UPDATE ps_s SET s = NULL WHERE s = '{1,NULL}';
SET max_parallel_workers_per_gather = 0;
SELECT theta_join_count('ps_tiny', 'id', 'ps_v', 'id', 'l.k = r.k') AS theta_serial,
       eps_join_count('ps_v', 'id', 'v', 'ps_tiny', 'id', 'v', 3) AS eps_serial,
       jaccard_join_count('ps_tiny', 'id', 's', 'ps_s', 'id', 's', 0.5) AS jaccard_serial \gset
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = '64kB';
SELECT theta_join_count('ps_tiny', 'id', 'ps_v', 'id', 'l.k = r.k') = :theta_serial AS theta_same;
SELECT scan_workers > 0 AS theta_workers FROM simjoin_last_stats();
SELECT eps_join_count('ps_v', 'id', 'v', 'ps_tiny', 'id', 'v', 3) = :eps_serial AS eps_same;
SELECT scan_workers > 0 AS eps_workers FROM simjoin_last_stats();
SELECT jaccard_join_count('ps_tiny', 'id', 's', 'ps_s', 'id', 's', 0.5) = :jaccard_serial AS jaccard_same;
SELECT scan_workers > 0 AS jaccard_workers FROM simjoin_last_stats();
SELECT :theta_serial > 0 AND :eps_serial > 0 AND :jaccard_serial > 0 AS nonzero;
-- a side that workers cannot read (a view that calls nextval()) is read on
-- its own, after the other side's workers are done
CREATE SEQUENCE ps_seq;
CREATE VIEW ps_tiny_v AS SELECT id, k, v, s, nextval('ps_seq') AS n FROM ps_tiny;
SELECT theta_join_count('ps_v', 'id', 'ps_tiny_v', 'id', 'l.k = r.k') = :theta_serial AS theta_view_same;
SELECT eps_join_count('ps_v', 'id', 'v', 'ps_tiny_v', 'id', 'v', 3) = :eps_serial AS eps_view_same;
SELECT jaccard_join_count('ps_s', 'id', 's', 'ps_tiny_v', 'id', 's', 0.5) = :jaccard_serial AS jaccard_view_same;
SELECT scan_workers > 0 AS view_join_workers FROM simjoin_last_stats();
-- parallel_workers = 0 keeps a table from riding along
ALTER TABLE ps_tiny SET (parallel_workers = 0);
SELECT theta_join_count('ps_tiny', 'id', 'ps_v', 'id', 'l.k = r.k') = :theta_serial AS theta_opt_out_same;
ALTER TABLE ps_tiny RESET (parallel_workers);
DROP VIEW ps_tiny_v;
DROP SEQUENCE ps_seq;
-- parallel query off: the counting node still reads plain tables straight
-- from their pages (the leader alone, filters included), temporary tables
-- and tables with parallel_workers = 0 too; the answers are PostgreSQL's
SET max_parallel_workers_per_gather = 0;
SELECT ps_compare($$SELECT count(*) FROM ps_v a JOIN ps_v b ON a.v <-> b.v <= 2.5 WHERE a.k < 1 AND b.id % 3 = 0$$);
SELECT ps_compare($$SELECT count(*) FROM ps_s a JOIN ps_s b ON jaccard(a.t, b.t) >= 0.5 WHERE a.id < 60$$);
SELECT ps_compare($$SELECT count(*) FROM ps_v l JOIN ps_v r ON l.k = r.k AND l.f < r.f WHERE l.a IS NOT NULL$$);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ps_v a JOIN ps_v b ON a.v <-> b.v <= 2.5 WHERE a.k < 20;
SELECT scan_workers, left_rows, right_rows FROM simjoin_last_stats();
CREATE TEMP TABLE ps_tmp AS SELECT * FROM ps_v WHERE id % 100 = 0;
SELECT ps_compare($$SELECT count(*) FROM ps_tmp a JOIN ps_v b ON a.v <-> b.v <= 2.5$$);
ALTER TABLE ps_tiny SET (parallel_workers = 0);
SELECT ps_compare($$SELECT count(*) FROM ps_tiny l JOIN ps_v r ON l.k = r.k AND l.id < r.id$$);
ALTER TABLE ps_tiny RESET (parallel_workers);
SELECT left_rows, right_rows FROM simjoin_last_stats();
DROP TABLE ps_tmp;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
DROP TABLE ps_v, ps_s, ps_tiny;

-- calendar intervals: workers compute the derived columns as the leader
-- would, in the session's TimeZone, and report values out of range
SET TimeZone = 'Europe/Berlin';
CREATE TABLE ps_t AS
SELECT i AS id, timestamp '2024-01-01' + i * interval '37 minutes' AS ts,
       timestamptz '2024-03-01' + i * interval '7 minutes' AS tz,
       NULL::timestamp AS x
FROM generate_series(1, 20000) i;
UPDATE ps_t SET ts = NULL WHERE id % 101 = 0;
UPDATE ps_t SET x = '294276-12-20' WHERE id = 19000;
VACUUM ANALYZE ps_t;
SELECT ps_run($$SELECT theta_join_count('ps_t', 'id', 'ps_t', 'id', 'l.ts BETWEEN r.ts + interval ''1 month'' AND r.ts + interval ''1 month 1 hour''')$$);
SELECT ps_run($$SELECT theta_join_count('ps_t', 'id', 'ps_t', 'id', 'l.tz BETWEEN r.tz + interval ''1 day'' AND r.tz + interval ''1 day 10 minutes''')$$);
SELECT ps_run($$SELECT count(*) FROM ps_t l JOIN ps_t r ON l.ts BETWEEN r.ts + interval '1 month' AND r.ts + interval '1 month 1 hour'$$);
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = 0;
SELECT sj_err($$SELECT theta_join_count('ps_t', 'id', 'ps_t', 'id', 'l.ts > r.x + interval ''1 month''')$$);
SELECT sj_err($$SELECT count(*) FROM ps_t l JOIN ps_t r ON l.ts > r.x + interval '1 month'$$);
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET TimeZone;
DROP TABLE ps_t;

-- the planner's partial paths: the outer input split across parallel
-- workers under Gather, each joining its share against all of the inner
-- rows.  Where the inner has a partial path too, the node is parallel-aware:
-- all participants read the inner once, together, into shared memory
-- (Parallel Custom Scan over two partial inputs).  Results as PostgreSQL's.
-- Plan shapes with the CPU engine: on the GPU each worker also starts the
-- device, which only larger joins repay (the differential tests run those).
CREATE TABLE pp_a AS SELECT i AS id, ARRAY[(i % 97)::float8, (i % 89)::float8] AS v, i % 50 AS k,
       'n' || (i % 700) AS t, array['w' || i % 40, 'w' || i % 7, 'x' || i % 3] AS s
FROM generate_series(1, 3000) i;
CREATE TABLE pp_b AS SELECT i AS id, ARRAY[(i % 83)::float8, (i % 79)::float8] AS v, i % 50 AS k,
       'n' || (i % 500) AS t, array['w' || i % 40, 'w' || i % 11, 'y' || i % 5] AS s
FROM generate_series(1, 2000) i;
UPDATE pp_b SET v = NULL, t = NULL WHERE id % 101 = 0;
VACUUM ANALYZE pp_a, pp_b;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET simjoin.enable_customscan = on;
SET simjoin.device = cpu;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5;
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$);
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.k = b.k AND a.id < b.id * 3$$);
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.t < b.t AND a.k = b.k AND a.id % 7 = b.id % 5$$);
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON jaccard(a.s, b.s) >= 0.5 WHERE a.id % 3 = 0$$);
SELECT ps_compare($$SELECT a.id, count(b.id) FROM pp_a a LEFT JOIN pp_b b ON a.v <-> b.v <= 1 GROUP BY a.id$$);
SELECT ps_compare($$SELECT a.id FROM pp_a a WHERE EXISTS (SELECT FROM pp_b b WHERE a.v <-> b.v < 0.5)$$);
SELECT ps_compare($$SELECT a.id FROM pp_a a WHERE NOT EXISTS (SELECT FROM pp_b b WHERE a.v <-> b.v < 0.5)$$);
-- every participant has all inner rows, however many read them (the plan
-- shapes below are the node's: on these small tables PostgreSQL's hash
-- join would be cheaper for some, so pp_node_only disables it)
CREATE FUNCTION pp_node_only() RETURNS void LANGUAGE sql AS $$
    SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true);
$$;
CREATE FUNCTION pp_shared(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE p text; r text := '';
BEGIN
    PERFORM pp_node_only();
    FOR p IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) ' || q LOOP
        IF p ~ 'Parallel Custom Scan|Shared Inner Rows:' THEN
            r := r || regexp_replace(p, '^\s*(->  )?| \(actual.*$', '', 'g') || '; ';
        END IF;
    END LOOP;
    RETURN r;
END $$;
SELECT pp_shared($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.k = b.k AND a.id < b.id$$);
-- the readers also marshal the join values of the rows they read, into
-- parts that every participant merges; where a part cannot hold them (text
-- ranked with the outer side's, an expression over the inner row) each
-- participant marshals all of the inner rows itself
CREATE FUNCTION pp_parts(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE p text;
BEGIN
    PERFORM pp_node_only();
    FOR p IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) ' || q LOOP
        IF p ~ 'Shared Inner Parts Merged:' THEN
            RETURN CASE WHEN substring(p, '(\d+)$')::int > 0 THEN 'parts merged'
                        ELSE 'each marshals all' END;
        END IF;
    END LOOP;
    RETURN 'no shared inner';
END $$;
SELECT pp_parts($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$) AS eps,
       pp_parts($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.k = b.k AND a.id < b.id$$) AS theta,
       pp_parts($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON jaccard(a.s, b.s) >= 0.5$$) AS jaccard,
       pp_parts($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.t < b.t AND a.k = b.k$$) AS theta_text,
       pp_parts($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> (b.v)[1:2] <= 1.5$$) AS eps_expr;
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.v <-> (b.v)[1:2] <= 1.5$$);
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON jaccard(a.s, b.s) >= 0.5$$);
-- domains over the join columns' types: a text[] domain's sets go into
-- parts, a text domain's values are ranked by each process
CREATE DOMAIN pp_tset AS text[];
CREATE DOMAIN pp_txt AS text;
CREATE TABLE pp_d AS SELECT id, s::pp_tset AS s, t::pp_txt AS t, k FROM pp_b;
VACUUM ANALYZE pp_d;
SELECT pp_parts($$SELECT sum(a.id + d.id) FROM pp_a a JOIN pp_d d ON jaccard(a.s, d.s) >= 0.5$$) AS jaccard_domain,
       pp_parts($$SELECT sum(a.id + d.id) FROM pp_a a JOIN pp_d d ON a.t < d.t AND a.k = d.k$$) AS theta_text_domain;
SELECT ps_compare($$SELECT a.id, d.id FROM pp_a a JOIN pp_d d ON jaccard(a.s, d.s) >= 0.5$$);
SELECT ps_compare($$SELECT a.id, d.id FROM pp_a a JOIN pp_d d ON a.t < d.t AND a.k = d.k AND a.id % 7 = d.id % 5$$);
DROP TABLE pp_d;
DROP DOMAIN pp_tset, pp_txt;
-- eps joins and theta joins over columns that are not ranked share the
-- CPU engine's index of the inner: the first process to need it builds it
-- in shared memory, the others wait and probe it (the eps results above
-- came through it too).  Text columns (ranked with the outer side's),
-- jaccard, an eps argument that is an expression, and a range condition
-- that sorts the outer side keep an index in each process.  The leader's
-- role (built or probed) depends on timing: only "shared" is shown, where
-- any participant (the leader's line, or a worker's) built or probed it;
-- a participant that joined nothing may show "none".
CREATE FUNCTION pp_index(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE p text; r text := 'no shared inner';
BEGIN
    PERFORM pp_node_only();
    FOR p IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) ' || q LOOP
        IF p ~ 'Shared Inner Index: (built|probed)' THEN
            r := 'shared';
        ELSIF p ~ 'Shared Inner Index:' AND r <> 'shared' THEN
            r := 'per process';
        END IF;
    END LOOP;
    RETURN r;
END $$;
CREATE TABLE pp_c AS SELECT id, CASE WHEN id % 53 = 0 THEN NULL ELSE k END AS k,
       k + (id % 3) * 0.5::float8 AS f FROM pp_b;
VACUUM ANALYZE pp_c;
SELECT pp_index($$SELECT sum(a.id + c.id) FROM pp_a a JOIN pp_c c ON c.k BETWEEN a.k - 1 AND a.k + 1$$) AS band,
       pp_index($$SELECT sum(a.id + c.id) FROM pp_a a JOIN pp_c c ON c.f BETWEEN a.k - 0.75::float8 AND a.k + 0.75::float8$$) AS float_band,
       pp_index($$SELECT sum(a.id + c.id) FROM pp_a a JOIN pp_c c ON a.k = c.k AND a.id < c.id$$) AS equi,
       pp_index($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.t < b.t AND a.k = b.k$$) AS theta_text,
       pp_index($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$) AS eps,
       pp_index($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> (b.v)[1:2] <= 1.5$$) AS eps_expr,
       pp_index($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON jaccard(a.s, b.s) >= 0.5$$) AS jaccard,
       pp_index($$SELECT sum(a.id + c.id) FROM pp_a a JOIN pp_c c ON a.id BETWEEN c.id * 10 AND c.id * 10 + 5$$) AS outer_sorted;
-- EXPLAIN ANALYZE with timing adds a line for each worker: its pairs and
-- the leader's add up to the join's (as many workers as were launched)
CREATE FUNCTION pp_workers(q text, total bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE p text; n bigint := 0; lines int := 0; launched int := 0;
BEGIN
    FOR p IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) ' || q LOOP
        IF p ~ '^\s*Pairs: ' OR p ~ '^\s*Worker \d+:  Pairs: ' THEN
            n := n + substring(p, 'Pairs: (\d+)')::bigint;
            lines := lines + (p ~ 'Worker')::int;
        ELSIF p ~ 'Workers Launched: ' THEN
            launched := substring(p, '(\d+)$')::int;
        END IF;
    END LOOP;
    RETURN CASE WHEN n = total AND lines = launched THEN 'pairs add up, a line a worker'
                ELSE format('%s pairs in %s lines for %s workers, want %s', n, lines, launched, total) END;
END $$;
SELECT pp_workers($$SELECT sum(a.id + c.id) FROM pp_a a JOIN pp_c c ON c.k BETWEEN a.k - 1 AND a.k + 1$$,
                  (SELECT count(*) FROM pp_a a, pp_c c WHERE c.k BETWEEN a.k - 1 AND a.k + 1)) AS band,
       pp_workers($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$,
                  (SELECT count(*) FROM pp_a a, pp_b b WHERE a.v <-> b.v <= 1.5)) AS eps;
DROP FUNCTION pp_workers(text, bigint);
SELECT ps_compare($$SELECT a.id, c.id FROM pp_a a JOIN pp_c c ON c.k BETWEEN a.k - 1 AND a.k + 1 AND a.id % 7 = c.id % 5$$);
SELECT ps_compare($$SELECT a.id, c.id FROM pp_a a JOIN pp_c c ON c.f BETWEEN a.k - 0.75::float8 AND a.k + 0.75::float8 AND a.id % 7 = c.id % 5$$);
SELECT ps_compare($$SELECT a.id, c.id FROM pp_a a JOIN pp_c c ON a.k = c.k AND a.id % 7 = c.id % 5$$);
SELECT ps_compare($$SELECT a.id, c.id FROM pp_a a JOIN pp_c c ON a.id BETWEEN c.id * 10 AND c.id * 10 + 5$$);
SELECT ps_compare($$SELECT a.id, count(c.id) FROM pp_a a LEFT JOIN pp_c c ON c.k BETWEEN a.k - 1 AND a.k + 1 AND a.id % 11 = c.id % 13 GROUP BY a.id$$);
SELECT ps_compare($$SELECT a.id FROM pp_a a WHERE EXISTS (SELECT FROM pp_c c WHERE a.k = c.k AND a.id < c.id)$$);
SELECT ps_compare($$SELECT a.id, b.id, a.v <-> b.v FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 2.5 AND a.id % 5 = b.id % 3$$);
-- simjoin.enable_shared_index = off: each process builds its own
SET simjoin.enable_shared_index = off;
SELECT pp_index($$SELECT sum(a.id + c.id) FROM pp_a a JOIN pp_c c ON c.k BETWEEN a.k - 1 AND a.k + 1$$) AS band,
       pp_index($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$) AS eps;
SELECT ps_compare($$SELECT a.id, c.id FROM pp_a a JOIN pp_c c ON c.k BETWEEN a.k - 1 AND a.k + 1 AND a.id % 7 = c.id % 5$$);
RESET simjoin.enable_shared_index;
DROP TABLE pp_c;
DROP FUNCTION pp_index(text);
-- no worker launched: the leader reads all of the inner alone
SET max_parallel_workers = 0;
SELECT pp_shared($$SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.k = b.k AND a.id < b.id$$);
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$);
RESET max_parallel_workers;
-- rescans: the Gather on the inner side of a nested loop runs again for
-- each outer row; the shared inner is read afresh each time (3 x 2000 rows)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
CREATE TEMP TABLE pp_loops AS
SELECT x, s FROM (VALUES (1), (2), (3)) v(x)
     LEFT JOIN (SELECT sum(a.id + b.id) AS s FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5) j ON x > 0;
SELECT count(*), count(DISTINCT s), min(s) = (SELECT sum(a.id + b.id) FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5) AS same
FROM pp_loops;
SELECT CASE WHEN p ~ 'Gather' THEN 'Gather loops: ' || m[2]
            ELSE 'inner rows read (thousands): ' || round(m[1]::numeric * m[2]::numeric / 1000) END AS rescans
FROM ps_plan_analyze($$SELECT x, s FROM (VALUES (1), (2), (3)) v(x)
     LEFT JOIN (SELECT sum(a.id + b.id) AS s FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5) j ON x > 0$$) p,
     regexp_match(p, 'rows=(\d+) loops=(\d+)') m
WHERE p ~ 'Gather \(|Seq Scan on pp_b';
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
RESET simjoin.device;
-- on the session's device, whichever plan it takes
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.v <-> b.v <= 1.5$$);
SELECT ps_compare($$SELECT a.id, b.id FROM pp_a a JOIN pp_b b ON a.t < b.t AND a.k = b.k AND a.id % 7 = b.id % 5$$);
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP TABLE pp_a, pp_b, pp_loops;
DROP FUNCTION pp_shared(text), pp_parts(text), pp_node_only();
DROP FUNCTION ps_run(text), ps_plan_analyze(text), ps_compare(text);

-- temporary tables live in the session's own buffers: read serially
CREATE TEMP TABLE ps_tmp AS SELECT i AS id, ARRAY[(i % 101)::float8, (i % 103)::float8] AS v FROM generate_series(1, 20000) i;
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = 0;
SELECT eps_join_count('ps_tmp', 'id', 'v', 1.5) AS temp_count;
SELECT scan_workers FROM simjoin_last_stats();
-- the genetic optimizer plans a counted similarity join too
SET geqo_threshold = 2;
SELECT count(*) FROM ps_tmp a JOIN ps_tmp b ON a.v <-> b.v <= 1.5;
RESET geqo_threshold;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
DROP TABLE ps_tmp;
