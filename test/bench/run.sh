#!/usr/bin/env bash
# run.sh: simjoin's benchmarks against a running server (PG* variables).
#
#     bash test/bench/run.sh [eps|jaccard|theta ...]
#
# Generates the data in SQL (deterministic), times every workload on the
# GPU, on the CPU engine and with PostgreSQL's native plan, and prints the
# table of medians and ratios last.  Not a test: it reports speed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suites=("$@")
((${#suites[@]})) || suites=($(cd "$here" && ls *_bench.sql | sed 's/_bench.sql//'))
db=${SJ_BENCH_DB:-sj_bench}
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -X -q -d "$db" -f "$here/common.sql"
echo "simjoin benchmarks on $(hostname), $(date -u +%F), $(nproc) cores"
psql -X -d "$db" -At -c "SELECT name || ' ' || round(total_memory / 1073741824.0) || ' GiB, cc ' || compute_capability FROM simjoin_devices()"
for s in "${suites[@]}"; do
    psql -X -q -d "$db" -v ON_ERROR_STOP=1 -f "$here/${s}_bench.sql"
done
psql -X -d "$db" -f "$here/report.sql"
