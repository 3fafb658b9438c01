-- hd_bench.sql: high-dimensional eps_join (embeddings), GPU against the CPU
-- engine and PostgreSQL's plan without simjoin.  Data generated in SQL,
-- deterministic (hashes of row and dimension numbers, no random()), in
-- parallel.  Workloads (issue "High-dimensional eps_join"):
--   hd128   (a) 1,000,000 x 128-D float4, 100,000 centres x 10 copies, L2
--   hd96    (b) the same in 96-D
--   hd384c  (c) 1,000,000 x 384-D, a mixture of 1,000 Gaussians of varied
--               spread, 10 near-copies a sub-centre, cosine; eps chosen on
--               the GPU for about 10 neighbours a point
--   hd1536c (d) 200,000 x 1,536-D, the same shape, cosine
--   sweep   50,000 points (5,000 centres x 10) at d = 3 ... 1,536, eps
--           scaled with sqrt(d) so that the pair density stays fixed
-- PostgreSQL's plan (simjoin.enable_customscan = off) is a nested loop over
-- l2_distance / cosine_distance: it is timed on a sample of the outer side
-- and scaled to the whole join (sjb_time's scale), as marked in the form.
-- psql -v hd_scale=0.01 shrinks every table (a quick check of the script);
-- -v hd_eps=0.002 skips the search for the cosine eps (that eps gives about
-- 9 neighbours a point at any dimension); -v hd_native=off skips the nested
-- loop; -v hd_part=a|l2|cosine|sweep runs a part.
\set ON_ERROR_STOP 1
\if :{?hd_scale}
\else
\set hd_scale 1
\endif
-- the CPU engine's and the nested loop's time limit (a lower bound past it)
-- and the nested loop's sample of outer rows
\if :{?hd_timeout}
\else
\set hd_timeout 150s
\endif
\if :{?hd_sample}
\else
\set hd_sample 500
\endif
SET max_parallel_workers_per_gather = 8;
SET client_min_messages = notice;

-- the generators sjb_g, sjb_clustered, sjb_mixture: common.sql

-- the largest eps of a list whose self-join gives at most 10 neighbours a
-- point on average (counted on the GPU, or the CPU engine without one)
CREATE OR REPLACE FUNCTION sjb_pick_eps(tbl text, metric text, eps float8[])
RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE e float8; best float8 := eps[1]; n bigint; c bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %I', tbl) INTO n;
    FOREACH e IN ARRAY eps LOOP
        c := eps_join_count(tbl::regclass, 'id', 'v', e, metric);
        RAISE NOTICE '% eps % : % pairs, % neighbours a point', tbl, e, c, round(2.0 * c / n, 2);
        EXIT WHEN 2.0 * c / n > 10;
        best := e;
    END LOOP;
    RETURN best;
END $$;

-- one engine on one workload: 'gpu', 'cpu' and 'auto' (the device
-- simjoin.device = auto picks: its strategy names it) count the self-join
-- with eps_join_count; 'native' is PostgreSQL's nested loop over l2_distance or
-- cosine_distance on the rows of a sample of the outer side (each unordered
-- pair once: a sample row against all later rows), scaled to the whole join.
-- Each runs as a statement of its own, so that statement_timeout bounds it.
CREATE OR REPLACE FUNCTION sjb_hd(workload text, tbl text, eps float8, metric text,
                                  engine text, sample int DEFAULT 500)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE n bigint; fn text := CASE metric WHEN 'cosine' THEN 'cosine_distance' ELSE 'l2_distance' END;
BEGIN
    EXECUTE format('SELECT count(*) FROM %I', tbl) INTO n;
    IF engine = 'native' THEN
        PERFORM sjb_time(workload, 'count', 'native',
            format('SELECT count(*) FROM %I a JOIN %I b ON %s(a.v, b.v) <= %s AND a.id < b.id WHERE a.id %% %s = 0',
                   tbl, tbl, fn, eps, greatest(1, n / sample)), 1, greatest(1, n / sample)::float8);
    ELSE
        PERFORM sjb_time(workload, 'count', engine,
            format('SELECT eps_join_count(%L, %L, %L, %s, %L)', tbl, 'id', 'v', eps, metric),
            CASE engine WHEN 'gpu' THEN 3 ELSE 1 END);
    END IF;
END $$;

-- one workload on every engine, as statements for \gexec, each a statement
-- of its own so that statement_timeout bounds it.  The CPU engine and the
-- nested loop (native) may take long: past timeout the time is recorded as
-- a lower bound
CREATE OR REPLACE FUNCTION sjb_hd_steps(ws text, tbl text, eps float8, metric text,
                                        native boolean, timeout text, sample int)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE call text := format('SELECT sjb_hd(%L, %L, %s, %L, ', ws, tbl, eps, metric);
BEGIN
    RETURN NEXT call || '''gpu'')';
    RETURN NEXT format('SET statement_timeout = %L', timeout);
    RETURN NEXT call || '''cpu'')';
    RETURN NEXT call || '''auto'')';
    IF native THEN
        RETURN NEXT call || format('%L, %s)', 'native', sample);
    END IF;
    RETURN NEXT 'RESET statement_timeout';
END $$;

-- :hd_run \gexec runs one workload: \set ws (its name), tbl, eps and metric
-- first
\if :{?hd_native}
\else
\set hd_native on
\endif
\set hd_run 'SELECT sjb_hd_steps(:''ws'', :''tbl'', :eps, :''metric'', :''hd_native'', :''hd_timeout'', :hd_sample)'

\if :{?hd_part}
\else
\set hd_part all
\endif
SELECT :'hd_part' IN ('all', 'l2') AS hd_l2, :'hd_part' IN ('all', 'l2', 'a') AS hd_a, :'hd_part' IN ('all', 'cosine') AS hd_cosine,
       :'hd_part' IN ('all', 'sweep') AS hd_sweep \gset

\if :hd_a
SELECT sjb_clustered('hd128', (1000000 * :hd_scale)::int, 128, 0.01);
\set ws 'hd128 (a) 1M x 128-D L2 eps=0.1'
\set tbl hd128
\set eps 0.1
\set metric l2
:hd_run \gexec
DROP TABLE hd128;
\endif
\if :hd_l2
SELECT sjb_clustered('hd96', (1000000 * :hd_scale)::int, 96, 0.01);
\set ws 'hd96 (b) 1M x 96-D L2 eps=0.09'
\set tbl hd96
\set eps 0.09
:hd_run \gexec
DROP TABLE hd96;
\endif

\if :hd_cosine
\set metric cosine
\set tbl hd384c
SELECT sjb_mixture('hd384c', (1000000 * :hd_scale)::int, 384);
\if :{?hd_eps}
\set eps :hd_eps
\else
SELECT sjb_pick_eps('hd384c', 'cosine', '{0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01}') AS eps \gset
\endif
\set ws 'hd384c (c) 1M x 384-D cosine eps=' :eps
\set tbl hd384c
:hd_run \gexec
DROP TABLE hd384c;
SELECT sjb_mixture('hd1536c', (200000 * :hd_scale)::int, 1536);
\if :{?hd_eps}
\set eps :hd_eps
\else
SELECT sjb_pick_eps('hd1536c', 'cosine', '{0.0001,0.0002,0.0005,0.001,0.002,0.005,0.01}') AS eps \gset
\endif
\set ws 'hd1536c (d) 200K x 1536-D cosine eps=' :eps
\set tbl hd1536c
:hd_run \gexec
DROP TABLE hd1536c;
\endif

-- the sweep: the same shape and pair density at every dimension
\if :hd_sweep
SELECT x.s
FROM unnest('{3, 8, 16, 33, 64, 128, 384, 768, 1536}'::int[],
            '{0.0142, 0.0232, 0.0328, 0.0471, 0.0656, 0.0928, 0.1607, 0.2272, 0.3214}'::float8[])
     WITH ORDINALITY AS w(d, eps, i),
     LATERAL (SELECT format('SELECT sjb_clustered(%L, %s, %s, 0.01)', 'hdsweep',
                            (50000 * :hd_scale)::int, w.d), 0::bigint
              UNION ALL
              SELECT * FROM sjb_hd_steps(format('sweep d=%4s L2 eps=%s', w.d, w.eps), 'hdsweep',
                                         w.eps, 'l2', :'hd_native', :'hd_timeout', :hd_sample)
                            WITH ORDINALITY) AS x(s, j)
ORDER BY w.i, x.j \gexec
DROP TABLE hdsweep;
\endif
DROP TABLE IF EXISTS sjb_id, sjb_comp;
