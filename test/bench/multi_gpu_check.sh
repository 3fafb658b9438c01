#!/usr/bin/env bash
# multi_gpu_check.sh: the checks of issue #22 (one join over several GPUs)
# on a host with two GPUs, in one command, against a running server (PG*
# variables, PG_CONFIG), from the project root:
#
#     bash .gpu/on-gpu bash test/bench/multi_gpu_check.sh OUTDIR [step ...]
#
# (start the server with SIMJOIN_PG_CONF="shared_preload_libraries='simjoin'":
# the shared device-load counters and 02_preload need it).  Steps, in this
# order unless named:
#   devices   simjoin_devices(), nvidia-smi, the server's settings
#   engine    engine tests of the multi-device path (engine_test multi_gpu:
#             .gpu/engine_test, else test/engine/engine_test)
#   regress   pg_regress with simjoin.device = gpu (simjoin.devices = all;
#             SJ_CHECK_DEVICE=cpu runs it on the CPU engine, for a check
#             of this script on a machine without a GPU)
#   bench     multi_bench.sql: simjoin.devices = 0 against all
#             (SJ_CHECK_MB_SCALE shrinks its tables, 1 by default;
#             SJ_CHECK_MB_WORKERS: workers a table scan, 8 by default;
#             SJ_CHECK_MB_LISTS: its device lists, "0;all" by default,
#             "0;0,1;all" with more than two GPUs;
#             SJ_CHECK_MB_SUITE=off: without the suite's extra rows)
#   sessions  sessions_bench.sh: 32 sessions, joins per device (its
#             SJ_SESSIONS_* variables apply)
#   diff      differential tests (SJ_CHECK_DIFF, default "eps jaccard": the
#             theta diff alone takes about 5 minutes) with simjoin.devices
#             = all and their device-list loops (0,0 and 0,1)
# Each step runs under its own time limit, and all of them within
# SJ_CHECK_BUDGET seconds (540 by default: the device tool stops a command
# at 600 s, and on-gpu's server start comes first); a step that no longer
# fits is "skipped: out of time".  A step past its limit is stopped, its
# queries cancelled (multi_bench's runs so far are appended to its log),
# and the next one runs.  Logs go to OUTDIR/<step>.log, the
# table of steps to OUTDIR/summary.txt (written as each step ends) and is
# printed last.  With one GPU visible the two-device parts say "skipped:
# one device".  Exit status: 0 when no step failed or timed out.
# shellcheck disable=SC2317  # the step_* functions run through bash -c
set -uo pipefail
out=${1:?usage: multi_gpu_check.sh OUTDIR [devices|engine|regress|bench|sessions|diff ...]}
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
steps=("$@")
((${#steps[@]})) || steps=(devices engine regress bench sessions diff)
budget=${SJ_CHECK_BUDGET:-540}
summary=$out/summary.txt
failed=0

# the GPUs the server sees (simjoin_devices() in a scratch database)
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS sj_check" -c "CREATE DATABASE sj_check" >/dev/null 2>&1
psql -X -q -d sj_check -c "CREATE EXTENSION IF NOT EXISTS simjoin" >/dev/null 2>&1
ndev=$(psql -X -At -d sj_check -c "SELECT count(*) FROM simjoin_devices()" 2>/dev/null || echo 0)
[[ $ndev =~ ^[0-9]+$ ]] || ndev=0
export SJ_CHECK_NDEV=$ndev SJ_CHECK_OUT=$out

{
    echo "multi_gpu_check on $(hostname), $(date -u '+%F %T') UTC, revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "$ndev GPU(s) visible to the server; budget ${budget}s; steps: ${steps[*]}"
    printf '%-9s %-8s %6s  %s\n' step status seconds note
} >"$summary"

# Stop what a step that ran out of time left behind on the server.
cancel_backends() {
    psql -X -q -At -d postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" >/dev/null 2>&1 || true
    # test/diff/run.sh's database, when its own clean-up was cut short
    psql -X -q -At -d postgres -c "SELECT datname FROM pg_database WHERE datname LIKE 'sj\_diff\_%'" 2>/dev/null |
        while read -r d; do psql -X -q -d postgres -c "DROP DATABASE IF EXISTS \"$d\"" >/dev/null 2>&1; done
}

# A step's note: the last line of its log that starts with "RESULT: ".
note_of() {
    grep '^RESULT: ' "$1" 2>/dev/null | tail -1 | sed 's/^RESULT: //'
}

# run_step NAME LIMIT: run step_NAME under min(LIMIT, what the budget has left).
# step functions exit 0 (PASS), 1 (FAIL) or 3 (SKIP), with a RESULT: line.
run_step() {
    local name=$1 limit=$2 left rc t0 status note
    left=$((budget - SECONDS))
    if ((left < 20)); then
        printf '%-9s %-8s %6s  %s\n' "$name" SKIP 0 "skipped: out of time (SJ_CHECK_BUDGET ${budget}s)" >>"$summary"
        return
    fi
    ((limit > left)) && limit=$left
    echo "== $name (at most ${limit}s)"
    t0=$SECONDS
    timeout --kill-after=10 "$limit" bash -c "step_$name" >"$out/$name.log" 2>&1
    rc=$?
    note=$(note_of "$out/$name.log")
    case $rc in
        0) status=PASS ;;
        3) status=SKIP ;;
        124 | 137)
            status=TIMEOUT
            note="stopped after ${limit}s${note:+; $note}"
            cancel_backends
            [[ $name == diff ]] && note="$note; $(grep -c '^ok ' "$out/diff.log") passed, $(grep -c '^FAIL ' "$out/diff.log") failed before it"
            [[ $name == bench ]] && psql -X -d sj_check_bench -c "SELECT workload, devs, engine,
                round(ms::numeric, 1) AS ms, round(engine_ms::numeric, 1) AS engine_ms, result,
                strategy, devices FROM sjm_runs ORDER BY n" >>"$out/bench.log" 2>&1
            ;;
        *) status=FAIL ;;
    esac
    [[ $status == FAIL || $status == TIMEOUT ]] && failed=1
    printf '%-9s %-8s %6s  %s\n' "$name" "$status" $((SECONDS - t0)) "${note:-see $name.log}" >>"$summary"
    tail -n 3 "$out/$name.log" | sed 's/^/   /'
}

step_devices() {
    command -v nvidia-smi >/dev/null && nvidia-smi -L
    psql -X -d sj_check -c "SELECT * FROM simjoin_devices()" || exit 1
    psql -X -d sj_check -c "SELECT name, setting FROM pg_settings WHERE name IN
        ('shared_preload_libraries', 'max_worker_processes', 'max_parallel_workers',
         'max_parallel_workers_per_gather', 'shared_buffers', 'work_mem', 'simjoin.devices',
         'simjoin.device') ORDER BY name"
    local names
    names=$(psql -X -At -d sj_check -c "SELECT string_agg(name, ', ' ORDER BY device) FROM simjoin_devices()")
    echo "RESULT: $SJ_CHECK_NDEV GPU(s)${names:+: $names}"
    ((SJ_CHECK_NDEV >= 1)) || exit 1
}

step_engine() {
    local bin=.gpu/engine_test
    [[ -x $bin ]] || bin=test/engine/engine_test
    if [[ ! -x $bin ]]; then
        echo "RESULT: skipped: no engine_test binary (.gpu/engine_test or test/engine/engine_test)"
        exit 3
    fi
    "$bin" multi_gpu
    local rc=$? line lists
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$SJ_CHECK_OUT/engine.log" | tail -1)
    lists=$(grep -m1 -E '^ *device lists:' "$SJ_CHECK_OUT/engine.log" | sed 's/^ *device //')
    if ((SJ_CHECK_NDEV == 0)); then
        echo "RESULT: skipped: no GPU ($bin multi_gpu: ${line:-no summary})"
        ((rc == 0)) && exit 3
    elif ((SJ_CHECK_NDEV < 2)); then
        echo "RESULT: $bin multi_gpu: ${line:-no summary}; two-device lists skipped: one device"
    else
        echo "RESULT: $bin multi_gpu: ${line:-no summary} (${lists:-lists not shown})"
    fi
    exit $((rc != 0))
}

step_regress() {
    rm -f regression.diffs
    PGOPTIONS="${PGOPTIONS:-} -c simjoin.device=${SJ_CHECK_DEVICE:-gpu}" \
        make -s installcheck PG_CONFIG="${PG_CONFIG:-pg_config}" NVCC=
    local rc=$? line
    [[ -f regression.diffs ]] && cp regression.diffs "$SJ_CHECK_OUT/regression.diffs"
    line=$(grep -E 'tests? (passed|failed)' "$SJ_CHECK_OUT/regress.log" | tail -1 | sed 's/^[ =]*//; s/[ =]*$//')
    echo "RESULT: simjoin.device = ${SJ_CHECK_DEVICE:-gpu}, devices = all: ${line:-no summary}"
    exit $((rc != 0))
}

step_bench() {
    local db=sj_check_bench rc met notmet differ lists='0;all'
    # the targets are for two devices: with more, 0,1 as well as all
    ((SJ_CHECK_NDEV > 2)) && lists='0;0,1;all'
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" || exit 1
    psql -X -q -d "$db" -f test/bench/common.sql >/dev/null || exit 1
    psql -X -d "$db" -v mb_scale="${SJ_CHECK_MB_SCALE:-1}" -v mb_workers="${SJ_CHECK_MB_WORKERS:-8}" \
        -v mb_lists="${SJ_CHECK_MB_LISTS:-$lists}" -v mb_suite="${SJ_CHECK_MB_SUITE:-on}" \
        -f test/bench/multi_bench.sql
    rc=$?
    met=$(grep -cE '\| met +\|' "$SJ_CHECK_OUT/bench.log")
    notmet=$(grep -cE '\| NOT met +\|' "$SJ_CHECK_OUT/bench.log")
    differ=$(grep -c 'COUNTS DIFFER' "$SJ_CHECK_OUT/bench.log")
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db"
    if ((rc != 0)); then
        echo "RESULT: multi_bench.sql stopped with an error"
        exit 1
    fi
    if ((SJ_CHECK_NDEV < 2)); then
        echo "RESULT: skipped: $( ((SJ_CHECK_NDEV)) && echo 'one device (the first list only)' ||
            echo 'no GPU (ran on the CPU engine)')"
        exit 3
    fi
    echo "RESULT: targets: $met met, $notmet NOT met; $differ with differing counts (table at the end of bench.log)"
    ((notmet == 0 && differ == 0 && met > 0))
}

step_sessions() {
    bash test/bench/sessions_bench.sh
    local rc=$? verdicts mode
    verdicts=$(grep -E '\| (even|UNEVEN.*|skipped: one device|too few runs to judge.*) *$' "$SJ_CHECK_OUT/sessions.log" |
        awk -F'|' '{gsub(/ /, "", $1); gsub(/ /, "", $2); gsub(/^ +| +$/, "", $NF); print $1 "/" $2 " " $NF " (runs " $6 ", busy " $7 ")"}' |
        sed 's/  */ /g' | paste -sd ';' -)
    mode=$(grep -q '^mode: preloaded' "$SJ_CHECK_OUT/sessions.log" && echo preloaded || echo "NOT preloaded")
    echo "RESULT: $mode; ${verdicts:-no spread table}"
    ((rc == 0)) || exit 1
    ((SJ_CHECK_NDEV >= 2)) || exit 3
    ! grep -qE '\| UNEVEN' "$SJ_CHECK_OUT/sessions.log"
}

step_diff() {
    # shellcheck disable=SC2086
    bash test/diff/run.sh ${SJ_CHECK_DIFF:-eps jaccard}
    local rc=$? line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$SJ_CHECK_OUT/diff.log" | tail -1)
    if ((SJ_CHECK_NDEV < 2)); then
        echo "RESULT: ${SJ_CHECK_DIFF:-eps jaccard}: ${line:-no summary}; devices 0,1 skipped: one device"
    else
        echo "RESULT: ${SJ_CHECK_DIFF:-eps jaccard}: ${line:-no summary} (devices all, 0,0 and 0,1)"
    fi
    exit $((rc != 0))
}
export -f step_devices step_engine step_regress step_bench step_sessions step_diff

for s in "${steps[@]}"; do
    case $s in
        devices) run_step devices 30 ;;
        engine) run_step engine 180 ;;
        regress) run_step regress 180 ;;
        bench) run_step bench 420 ;;
        sessions) run_step sessions 90 ;;
        diff) run_step diff 480 ;;
        *) printf '%-9s %-8s %6s  %s\n' "$s" FAIL 0 "unknown step" >>"$summary"; failed=1 ;;
    esac
done
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS sj_check" >/dev/null 2>&1
# the server's log, where the on-gpu runtime keeps it
[[ -r /tmp/sj-pgdata/server.log ]] && tail -n 400 /tmp/sj-pgdata/server.log >"$out/server.log"
echo "total ${SECONDS}s" >>"$summary"
echo
cat "$summary"
exit $failed
