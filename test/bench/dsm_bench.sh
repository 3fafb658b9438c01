#!/usr/bin/env bash
# dsm_bench.sh: what min_dynamic_shared_memory does to simjoin's parallel
# scans.  A parallel worker hands its rows to the leader in a dynamic
# shared memory segment of its own (src/parscan.c); by default PostgreSQL
# creates each one as a new POSIX shared memory file, whose pages the
# kernel allocates, zeroes and maps one by one as the worker writes them.
# With min_dynamic_shared_memory, segments come out of memory reserved when
# the server starts (huge pages where huge_pages allows them).
#
# Against a running server (PG* variables), as a superuser, from the
# project root:
#
#     SJ_DSM_RESTART='pg_ctl -D DATA -w restart' bash test/bench/dsm_bench.sh [SIZE]
#
# It creates the 200 K x 384-D vectors and the 1 M sets of multi_bench.sql
# in a scratch database, then, four rounds in turn (default, SIZE, default,
# SIZE; SIZE defaults to 4GB), sets min_dynamic_shared_memory with ALTER
# SYSTEM, restarts the server with SJ_DSM_RESTART and times
# eps_join_count and jaccard_join_count, each in one session (a warm-up,
# then SJ_DSM_REPS runs, 5 by default), with the slowest worker's copy
# into shared memory from the scan's DEBUG2 line.  Prints a table of
# medians; leaves the setting reset (the server restarted) and the
# database dropped (kept with SJ_DSM_KEEP=1, for more runs on its
# tables).  SJ_DSM_SCALE (1 by default) shrinks both tables, for a check
# of the script on a machine without a GPU.
set -euo pipefail
size=${1:-4GB}
reps=${SJ_DSM_REPS:-5}
scale=${SJ_DSM_SCALE:-1}
restart=${SJ_DSM_RESTART:?set SJ_DSM_RESTART to the command that restarts the server}
db=sj_dsm_bench
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

restart_with() {
    if [[ $1 == default ]]; then
        psql -X -q -d postgres -c "ALTER SYSTEM RESET min_dynamic_shared_memory"
    else
        psql -X -q -d postgres -c "ALTER SYSTEM SET min_dynamic_shared_memory = '$1'"
    fi
    eval "$restart" >/dev/null
    for _ in $(seq 1 60); do
        psql -X -q -d postgres -c 'SELECT 1' >/dev/null 2>&1 && return
        sleep 0.5
    done
    echo "dsm_bench: the server did not come back" >&2
    exit 1
}

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -X -q -d "$db" -f "$here/common.sql" >/dev/null
psql -X -q -d "$db" -v scale="$scale" >/dev/null <<'SQL'
SET max_parallel_workers_per_gather = 8;
SELECT sjb_clustered('sjm_hd', (200000 * :scale)::int, 384, 0.01);
SELECT sjb_ids((1000000 * :scale)::int);
SELECT sjb_zipf_sets('sjm_sets');
SQL

declare -A queries=(
    [hd]="SELECT eps_join_count('sjm_hd', 'id', 'v', 0.0003, 'cosine')"
    [jaccard]="SELECT jaccard_join_count('sjm_sets', 'id', 's', 0.5)"
)
# one session: a warm-up (the device's start-up, the table into shared
# buffers), then reps runs, each as "wall_ms copy_ms result"
run_session() {
    local args=(-c "SET client_min_messages = debug2" -c "SET max_parallel_workers_per_gather = 8" -c '\timing on')
    for _ in $(seq 0 "$reps"); do args+=(-c "$1"); done
    psql -X -d "$db" -At "${args[@]}" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
    # the Time: of a query follows its result; SET and \timing print none
    awk '/copy into shared memory/{match($0, /shared memory [0-9.]+ ms/); c = substr($0, RSTART + 14, RLENGTH - 17)}
         /^[0-9]+$/{r = $1; q = 1}
         /^Time: / && q {n++; if (n > 1) print $2, (c == "" ? "-" : c), r; c = ""; q = 0}' "$tmp/out"
}

echo "config workload wall_ms copy_ms result" >"$tmp/runs"
for round in default "$size" default "$size"; do
    restart_with "$round"
    for w in hd jaccard; do
        run_session "${queries[$w]}" | sed "s/^/$round $w /" >>"$tmp/runs"
    done
done
restart_with default
[[ ${SJ_DSM_KEEP:-0} == 1 ]] || psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db"

echo "dsm_bench: min_dynamic_shared_memory default against $size, rounds alternating, $reps runs a round"
cat "$tmp/runs"
echo
printf '%-10s %-8s %14s %14s %s\n' config workload "median wall" "median copy" results
for cfg in default "$size"; do
    for w in hd jaccard; do
        awk -v c="$cfg" -v w="$w" '$1 == c && $2 == w {print $3, $4, $5}' "$tmp/runs" >"$tmp/sel"
        wall=$(cut -d' ' -f1 "$tmp/sel" | sort -g | awk '{a[NR] = $1} END{print a[int((NR + 1) / 2)]}')
        copy=$(cut -d' ' -f2 "$tmp/sel" | sort -g | awk '{a[NR] = $1} END{print a[int((NR + 1) / 2)]}')
        res=$(cut -d' ' -f3 "$tmp/sel" | sort -u | paste -sd/ -)
        printf '%-10s %-8s %11s ms %11s ms %s\n' "$cfg" "$w" "$wall" "$copy" "$res"
    done
done
