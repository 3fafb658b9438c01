#!/usr/bin/env bash
# sessions_bench.sh: many sessions at once, each running GPU joins in a loop
# (pgbench), against a running server (PG* variables); which devices took
# the joins, and how evenly (issue #22: 32 concurrent sessions spread
# evenly over both cards).
#
#     bash test/bench/sessions_bench.sh
#
# Two phases, SJ_SESSIONS_SECONDS (20) each, SJ_SESSIONS_CLIENTS (32)
# clients on SJ_SESSIONS_JOBS (16) pgbench threads:
#   sessions  each client runs eps_join_count (no parallel workers): with
#             simjoin.devices = all every join spreads over every device;
#             after each join the session logs simjoin_last_stats().devices
#             ("gpu0 52% 8.1 ms, gpu1 48% 7.9 ms"): joins per device and
#             the busy time each device took.
#   workers   SJ_SESSIONS_WORKER_CLIENTS clients (by default as many as
#             max_worker_processes can give two workers each, at least 2)
#             each run a plain SQL join with two parallel workers; a
#             worker runs its part on one device, the least loaded
#             (src/devices.c); EXPLAIN ANALYZE's worker lines name it
#             (GPU Devices): worker runs per device.  With 32 clients
#             the workers were taken after the first few joins, and the
#             rest ran in their leaders alone.
# The load counters that pick the least loaded device live in shared
# memory only when simjoin is in shared_preload_libraries; otherwise each
# process picks by its process id.  The script says which mode it ran in.
# Ends with a table per phase: runs per device and the spread (max / min);
# a role with fewer than 20 runs is not judged ("too few runs").
# Without a usable GPU the joins run on the CPU engine (a check of the
# script); with one GPU the spread is "skipped: one device".
# SJ_SESSIONS_ROWS (200000) sets the points of the join's table.
set -euo pipefail
db=${SJ_SESSIONS_DB:-sj_sessions}
clients=${SJ_SESSIONS_CLIENTS:-32}
jobs=${SJ_SESSIONS_JOBS:-16}
secs=${SJ_SESSIONS_SECONDS:-20}
rows=${SJ_SESSIONS_ROWS:-200000}
((jobs <= clients)) || jobs=$clients
wclients=${SJ_SESSIONS_WORKER_CLIENTS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -X -q -d "$db" -v ON_ERROR_STOP=1 -v rows="$rows" <<'SQL'
CREATE EXTENSION IF NOT EXISTS simjoin;
-- 2-D points in [0, 100)^2 from hashes (deterministic), about 16 neighbours
-- within 0.5 at 200 K points
CREATE TABLE ss_pts AS
    SELECT i AS id, ARRAY[((hashint4(i) & 16777215) / 16777216.0) * 100,
                          ((hashint4(i + 1000000000) & 16777215) / 16777216.0) * 100]::float8[] AS v
    FROM generate_series(1, :rows) i;
ALTER TABLE ss_pts SET (parallel_workers = 2);
ANALYZE ss_pts;
-- one row per join (sessions) or per process of a join (workers)
CREATE TABLE ss_log (phase text, role text, pid int, device text, devices text,
                     ms float8, pairs bigint, at timestamptz DEFAULT clock_timestamp());

-- 'sessions': a function join in this session; 'workers': a plain SQL join
-- with two workers, EXPLAIN ANALYZE's worker lines naming their devices
CREATE FUNCTION ss_join(phase text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); n bigint; js jsonb; node jsonb; w jsonb;
BEGIN
    IF phase = 'sessions' THEN
        PERFORM set_config('max_parallel_workers_per_gather', '0', true);
        n := eps_join_count('ss_pts', 'id', 'v', 0.5);
        INSERT INTO ss_log(phase, role, pid, device, devices, ms, pairs)
        SELECT phase, 'session', pg_backend_pid(), s.device, s.devices,
               extract(epoch FROM clock_timestamp() - t0) * 1000, n
        FROM simjoin_last_stats() s;
        RETURN;
    END IF;
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum(a.id + b.id) FROM ss_pts a JOIN ss_pts b ON a.v <-> b.v <= 0.5'
        INTO js;
    -- the SimJoin node (Parallel Custom Scan under Gather where workers ran):
    -- its own figures are the leader's
    SELECT p INTO node FROM jsonb_path_query(js, 'strict $.**') p
    WHERE jsonb_typeof(p) = 'object' AND p->>'Custom Plan Provider' = 'SimJoin' LIMIT 1;
    IF node IS NULL THEN
        RAISE EXCEPTION 'ss_join: the plan has no SimJoin node: %', js;
    END IF;
    INSERT INTO ss_log(phase, role, pid, device, devices, ms, pairs)
    VALUES (phase, 'leader', pg_backend_pid(), node->>'Run Device', node->>'GPU Devices',
            extract(epoch FROM clock_timestamp() - t0) * 1000, (node->>'Pairs')::bigint);
    FOR w IN SELECT jsonb_array_elements(coalesce(node->'SimJoin Workers', '[]')) LOOP
        INSERT INTO ss_log(phase, role, pid, device, devices, pairs)
        VALUES (phase, 'worker', pg_backend_pid(), w->>'Run Device', w->>'GPU Devices',
                (w->>'Pairs')::bigint);
    END LOOP;
END $$;
SQL

ndev=$(psql -X -At -d "$db" -c "SELECT count(*) FROM simjoin_devices()")
preloaded=$(psql -X -At -d "$db" -c "SELECT current_setting('shared_preload_libraries') ~ 'simjoin'")
if [[ -z $wclients ]]; then
    wclients=$(psql -X -At -d "$db" -c "SELECT greatest(2, least(current_setting('max_worker_processes')::int,
        current_setting('max_parallel_workers')::int) / 2)")
fi
echo "sessions_bench: $clients clients ($wclients in the workers phase), $jobs threads, ${secs}s a phase, $rows points; $ndev GPU(s) visible"
if [[ $preloaded == t ]]; then
    echo "mode: preloaded (shared_preload_libraries): shared load counters, a worker takes the least loaded device"
else
    echo "mode: NOT preloaded: no shared load counters, each process picks a device by its process id"
fi
if ((ndev == 0)); then
    echo "no usable GPU: the joins run on the CPU engine (a check of the script; no device counts)"
    device=auto
else
    device=gpu
fi

status=0
for phase in sessions workers; do
    echo "SELECT ss_join('$phase');" >"$tmp/$phase.sql"
    c=$clients
    [[ $phase == workers ]] && c=$wclients
    j=$((jobs < c ? jobs : c))
    echo "== $phase: pgbench -c $c -j $j -T $secs"
    # the settings reach every pgbench connection through PGOPTIONS
    if ! PGOPTIONS="${PGOPTIONS:-} -c simjoin.device=$device -c simjoin.devices=all" \
        pgbench -n -d "$db" -c "$c" -j "$j" -T "$secs" -f "$tmp/$phase.sql" >"$tmp/pgbench.out" 2>&1; then
        status=1
        echo "pgbench failed ($phase):"
    fi
    grep -E "number of (transactions|failed)|tps|aborted|ERROR|error" "$tmp/pgbench.out" | head -20 || true
done

# Runs per device and phase: a 'sessions' join counts once for every device
# it spread over (with that device's busy time); a 'workers' row is one
# process's part of a join (the leader's spreads, a worker's takes one).
psql -X -d "$db" -v ON_ERROR_STOP=1 -v ndev="$ndev" <<'SQL'
CREATE TEMP VIEW ss_parts AS
SELECT l.phase, l.role, m[1]::int AS device, nullif(m[2], '')::float8 AS share,
       nullif(m[3], '')::float8 AS busy_ms
FROM ss_log l,
     LATERAL regexp_matches(coalesce(l.devices, ''), 'gpu([0-9]+)(?: ([0-9.]+)% ([0-9.]+) ms)?', 'g') m;
\echo 'runs per phase (role: session = a whole join; leader/worker = one process of a parallel join)'
SELECT phase, role, count(*) AS runs, count(*) FILTER (WHERE device = 'gpu') AS on_gpu,
       round(avg(ms)::numeric, 1) AS avg_ms, sum(pairs) AS pairs,
       count(DISTINCT pairs) FILTER (WHERE role = 'session') AS distinct_counts
FROM ss_log GROUP BY 1, 2 ORDER BY 1, 2;
\echo 'runs per device (busy_ms: summed device busy time of multi-device joins)'
SELECT phase, role, 'gpu' || device AS device, count(*) AS runs,
       round(avg(share)::numeric, 1) AS avg_share_pct, round(sum(busy_ms)::numeric, 1) AS busy_ms
FROM ss_parts GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
\echo 'spread over the devices (max / min; 1.00 = even)'
WITH per AS (
    SELECT phase, role, device, count(*) AS runs, sum(busy_ms) AS busy
    FROM ss_parts GROUP BY 1, 2, 3),
agg AS (
    SELECT phase, role, count(*) AS devices_used, sum(runs) AS total_runs,
           max(runs) AS max_runs, min(runs) AS min_runs,
           round((max(runs)::numeric / nullif(min(runs), 0)), 2) AS runs_spread,
           round((max(busy) / nullif(min(busy), 0))::numeric, 2) AS busy_spread
    FROM per GROUP BY 1, 2)
SELECT phase, role, devices_used, max_runs, min_runs, runs_spread, busy_spread,
       CASE WHEN :ndev < 2 THEN 'skipped: one device'
            WHEN total_runs < 20 THEN 'too few runs to judge (' || total_runs || ')'
            WHEN devices_used < :ndev THEN 'UNEVEN: ' || devices_used || ' of ' || :ndev || ' devices used'
            WHEN runs_spread <= 1.25 AND coalesce(busy_spread, 1) <= 1.25 THEN 'even'
            ELSE 'UNEVEN' END AS verdict
FROM agg ORDER BY 1, 2;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM ss_log WHERE role = 'worker') THEN
        RAISE NOTICE 'no parallel worker ran a part of a join (the plans chose none, '
                     'or max_worker_processes was taken)';
    END IF;
END $$;
SQL
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db"
exit $status
