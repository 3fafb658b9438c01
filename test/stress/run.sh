#!/usr/bin/env bash
# run.sh: concurrency stress test of every operator, through the functions
# and through plain SQL (Custom Scan (SimJoin)).
#
#     bash test/stress/run.sh                    # against the server in PG*, or
#                                                # a throwaway cluster if PGHOST is unset
#     SJ_STRESS_CLIENTS="2 4" SJ_STRESS_ROWS=1000 SJ_STRESS_SECONDS=10 bash test/stress/run.sh
#
# Each transaction (pgbench) runs one query of test/stress/setup.sql and
# compares its answer with one PostgreSQL's own plans computed beforehand;
# st_check logs ok, wrong or canceled.  Phases:
#   1. mixed queries with 8, 32 and 64 clients (SJ_STRESS_CLIENTS);
#   2. a cancel storm: 32 clients (SJ_STRESS_STORM_CLIENTS) with
#      statement_timeout (SJ_STRESS_TIMEOUT_MS, default 50) shorter than
#      the long joins mixed in;
#   3. the mixed queries again, with the largest client count.
# Passes with no wrong answer, no client aborted (a server crash aborts them
# all), the server still answering, and the devices' free memory after
# within 64 MiB of before (simjoin_devices(), fresh sessions both).
# simjoin.device follows PGOPTIONS (default auto: the GPU where usable).
# Not part of CI.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rows=${SJ_STRESS_ROWS:-3000}
secs=${SJ_STRESS_SECONDS:-20}
clients=(${SJ_STRESS_CLIENTS:-8 32 64})
storm_clients=${SJ_STRESS_STORM_CLIENTS:-32}
timeout_ms=${SJ_STRESS_TIMEOUT_MS:-50}
threads=$(nproc)

if [[ -z ${PGHOST:-} ]]; then
    source "$root/scripts/cluster.sh"
    SJ_PG_CONF="max_connections = $((${clients[-1]} + storm_clients + 40));${SJ_PG_CONF:-}" \
        sj_cluster_start || exit 1
    trap sj_cluster_stop EXIT
fi
db=sj_stress_$$
psql -X -q -d postgres -c "CREATE DATABASE $db" || exit 1
cleanup() {
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
    [[ -n ${SJ_CLUSTER_DIR:-} ]] && sj_cluster_stop
}
trap cleanup EXIT

devmem() {   # free device memory (bytes) and device count, from a fresh session
    psql -X -At -F ' ' -d "$db" -c "SELECT coalesce(sum(free_memory), 0), count(*) FROM simjoin_devices()"
}

echo "simjoin stress test: $rows rows a table, ${secs} s a phase, PGOPTIONS='${PGOPTIONS:-}'"
t0=$SECONDS
psql -X -q -d "$db" -v rows="$rows" -f "$here/setup.sql" -At -F ' | ' | sed 's/^/  answer /' || exit 1
echo "setup and answers: $((SECONDS - t0)) s"
read -r mem_before ndev < <(devmem)

total_wrong=0 total_aborted=0
printf '%-12s %7s %12s %9s %7s %9s %8s\n' phase clients transactions ok wrong canceled aborted
phase() {   # phase NAME CLIENTS EXTRA_PGOPTIONS SCRIPT...
    local name=$1 c=$2 opts=$3; shift 3
    local args=() f out rc aborted tx counts
    for f in "$@"; do args+=(-f "$here/$f"); done
    out=$(PGOPTIONS="${PGOPTIONS:-} -c sj_stress.phase=$name $opts" \
          pgbench -n -c "$c" -j $((c < threads ? c : threads)) -T "$secs" "${args[@]}" "$db" 2>&1)
    rc=$?
    aborted=$(grep -c 'aborted in command' <<<"$out")
    ((rc != 0 && aborted == 0)) && aborted=1
    tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
    read -r ok wrong canceled < <(psql -X -At -F ' ' -d "$db" -c \
        "SELECT count(*) FILTER (WHERE outcome = 'ok'), count(*) FILTER (WHERE outcome = 'wrong'),
                count(*) FILTER (WHERE outcome = 'canceled') FROM st_log WHERE phase = '$name'")
    printf '%-12s %7s %12s %9s %7s %9s %8s\n' "$name" "$c" "${tx:-?}" "${ok:-?}" "${wrong:-?}" \
        "${canceled:-?}" "$aborted"
    ((aborted)) && grep -m3 -E 'aborted|error|FATAL' <<<"$out" | sed 's/^/    /'
    total_wrong=$((total_wrong + ${wrong:-1}))
    total_aborted=$((total_aborted + aborted))
}
for c in "${clients[@]}"; do
    phase "mixed-$c" "$c" "" mixed.sql
done
phase "storm-$storm_clients" "$storm_clients" "-c statement_timeout=$timeout_ms" mixed.sql heavy.sql
phase "again-${clients[-1]}" "${clients[-1]}" "" mixed.sql

psql -X -At -d "$db" -c "SELECT 'wrong answer: query ' || q || ' got ' || coalesce(got, 'NULL') FROM st_log
                         WHERE outcome = 'wrong' LIMIT 5"
alive=yes
psql -X -At -d "$db" -c "SELECT 1" >/dev/null 2>&1 || alive=no
read -r mem_after _ < <(devmem)
echo "server answering after the run: $alive"
if ((ndev > 0)); then
    left=$(( (mem_before - mem_after) / 1048576 ))
    echo "device free memory: before $((mem_before / 1048576)) MiB, after $((mem_after / 1048576)) MiB ($left MiB less)"
else
    left=0
    echo "device free memory: no GPU usable (CPU engine)"
fi
echo "total time: $((SECONDS - t0)) s"
if ((total_wrong == 0 && total_aborted == 0)) && [[ $alive == yes ]] && ((left <= 64)); then
    echo "stress test passed: 0 wrong answers, 0 clients aborted"
else
    echo "stress test FAILED: $total_wrong wrong answers, $total_aborted phases with clients aborted"
    exit 1
fi
