-- self_bench.sql: a plain SQL eps-join of a table with itself, read once
-- with each pair computed once (EXPLAIN's "Self-Join", cs_planner.c's
-- SjSelfJoinable), against the same join read as two inputs (a filter on
-- one side only, true of every row) and against eps_join_count's
-- self-join form.  sjb_clustered rows (groups of ten near-copies), cosine;
-- the count, then the count with a.id < b.id, which forms every pair; then
-- jaccard_join at t = 0.5 over as many sjb_zipf_sets sets (5 to 45
-- Zipf-like tokens, none empty) the same three ways.
-- Medians of three after a warm-up, on simjoin.device = :dev.  Run after
-- common.sql:
--     psql -v n=200000 -v dim=384 -v dev=gpu -f test/bench/self_bench.sql
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir rows_dim_dev.psql
SELECT sjb_clustered('sjs_t', :n, :dim, 0.01);
SELECT sjb_zipf_sets('sjs_s');
VACUUM ANALYZE sjs_t, sjs_s;
SET simjoin.device = :'dev';
CREATE TEMP TABLE sjs_runs (seq serial, form text, run int, ms float8, n bigint, self bool);
CREATE OR REPLACE FUNCTION sjs_time(form text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; r bigint; self bool := false; line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        self := self OR line LIKE '%Self-Join: %';
    END LOOP;
    FOR i IN 0..3 LOOP          -- run 0: the warm-up
        t0 := clock_timestamp();
        EXECUTE q INTO r;
        IF i > 0 THEN
            INSERT INTO sjs_runs (form, run, ms, n, self) VALUES (form, i,
                extract(epoch FROM clock_timestamp() - t0) * 1000, r, self);
        END IF;
    END LOOP;
END $$;
SELECT sjs_time('plain SQL, self-join', $q$
    SELECT count(*) FROM sjs_t a JOIN sjs_t b ON a.v <=> b.v <= 0.0003 $q$);
SELECT sjs_time('plain SQL, two inputs', $q$
    SELECT count(*) FROM sjs_t a JOIN sjs_t b ON a.v <=> b.v <= 0.0003 WHERE b.id > -1 $q$);
SELECT sjs_time('eps_join_count (x 2 + n)', $q$
    SELECT 2 * eps_join_count('sjs_t', 'id', 'v', 0.0003, 'cosine') + count(*) FROM sjs_t $q$);
SELECT sjs_time('plain SQL, self-join, a.id < b.id', $q$
    SELECT count(*) FROM sjs_t a JOIN sjs_t b ON a.v <=> b.v <= 0.0003 AND a.id < b.id $q$);
SELECT sjs_time('plain SQL, two inputs, a.id < b.id', $q$
    SELECT count(*) FROM sjs_t a JOIN sjs_t b ON a.v <=> b.v <= 0.0003 AND a.id < b.id
    WHERE b.id > -1 $q$);
SELECT sjs_time('jaccard: plain SQL, self-join', $q$
    SELECT count(*) FROM sjs_s a JOIN sjs_s b ON jaccard(a.s, b.s) >= 0.5 $q$);
SELECT sjs_time('jaccard: plain SQL, two inputs', $q$
    SELECT count(*) FROM sjs_s a JOIN sjs_s b ON jaccard(a.s, b.s) >= 0.5 WHERE b.id > -1 $q$);
SELECT sjs_time('jaccard: jaccard_join_count (x 2 + n)', $q$
    SELECT 2 * jaccard_join_count('sjs_s', 'id', 's', 0.5) + count(*) FROM sjs_s $q$);
SELECT :'dev' AS device, :n AS rows, :dim AS dim, form, bool_and(self) AS self_join,
       min(n) AS pairs, max(n) = min(n) AS same,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 1) AS median_ms
FROM sjs_runs GROUP BY form ORDER BY min(seq);
DROP TABLE sjs_t, sjs_s;
DROP FUNCTION sjs_time(text, text);
