#!/usr/bin/env bash
# run.sh: simjoin's benchmarks against a running server (PG* variables).
#
#     bash test/bench/run.sh [eps|jaccard|theta|calibrate ...]
#
# Generates the data in SQL (deterministic), times every workload on the
# GPU, on the CPU engine and with PostgreSQL's native plan, and prints the
# table of medians and ratios last.  Not a test: it reports speed.
# "calibrate" (not run by default) measures the constants of the planner
# path's cost model instead (calibrate.sql); SJ_CALIBRATE_OPTS passes psql
# options to it, e.g. "-v sjc_scale=0.1 -v sjc_reps=1" for a quick check.
# "startup" (not run by default either) times a GPU join in five fresh
# backends, first and second: the first pays CUDA's start-up, as every
# parallel worker does (the cost model's SJ_GPU_PROCESS_START_MS); then in
# eight fresh backends at once, as the workers of a parallel plan start.
# "phases" (not run by default) prints EXPLAIN ANALYZE's time per phase of
# parallel plain-SQL joins, shared inner against each process reading it.
# SJ_BENCH_OPTS passes psql options to the *_bench.sql files, e.g.
# "-v gis_scale=0.01" for a quick check of postgis_bench.sql.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suites=("$@")
((${#suites[@]})) || suites=($(cd "$here" && ls *_bench.sql | sed 's/_bench.sql//'))
db=${SJ_BENCH_DB:-sj_bench}
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -X -q -d "$db" -f "$here/common.sql"
echo "simjoin benchmarks on $(hostname), $(date -u +%F), $(nproc) cores"
psql -X -d "$db" -At -c "SELECT name || ' ' || round(total_memory / 1073741824.0) || ' GiB, cc ' || compute_capability FROM simjoin_devices()"
# the bench files SET max_parallel_workers_per_gather = 8 for their session;
# the server's limits on workers apply on top
psql -X -d "$db" -At -c "SELECT string_agg(name || ' = ' || setting || coalesce(unit, ''), ', ' ORDER BY name) FROM pg_settings WHERE name IN ('max_parallel_workers_per_gather', 'max_parallel_workers', 'max_worker_processes', 'shared_buffers', 'work_mem', 'jit')"
benched=0
for s in "${suites[@]}"; do
    if [[ $s == calibrate ]]; then
        psql -X -q -d "$db" -v ON_ERROR_STOP=1 ${SJ_CALIBRATE_OPTS:-} -f "$here/calibrate.sql"
    elif [[ $s == startup ]]; then
        psql -X -q -d "$db" -c "CREATE TABLE sjb_startup AS SELECT i AS id, ARRAY[i % 10, i % 7]::float8[] AS v FROM generate_series(1, 1000) i"
        startup_pair() {
            psql -X -At -d "$db" -c "SET simjoin.device = gpu" -c '\timing on' \
                -c "SELECT eps_join_count('sjb_startup', 'id', 'v', 1.0)" \
                -c "SELECT eps_join_count('sjb_startup', 'id', 'v', 1.0)" |
                sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | paste -sd' '
        }
        echo "GPU join of 1,000 points in a fresh backend, first and second (ms):"
        for _ in 1 2 3 4 5; do startup_pair; done
        # as the workers of a parallel plan do: eight fresh backends at once
        echo "the same in 8 fresh backends at once (ms):"
        for _ in 1 2 3 4 5 6 7 8; do startup_pair & done
        wait
    elif [[ $s == phases ]]; then
        psql -X -q -d "$db" -v ON_ERROR_STOP=1 -f "$here/phases.sql" |
            grep -E "^==|Custom Scan|Device|Planned Pairs|Shared Inner|Shared Index|Worker|Time:|Execution Time"
    else
        psql -X -q -d "$db" -v ON_ERROR_STOP=1 ${SJ_BENCH_OPTS:-} -f "$here/${s}_bench.sql"
        benched=1
    fi
done
((benched == 0)) || psql -X -d "$db" -f "$here/report.sql"
