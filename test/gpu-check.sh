#!/usr/bin/env bash
# gpu-check.sh: everything that must pass on a GPU host, in one go.
#
#     bash .gpu/on-gpu bash test/gpu-check.sh [LOGDIR]
#
# Runs against the server that on-gpu started (PG* variables):
#   1. the pg_regress suite with simjoin.device = cpu, then = gpu, then = gpu
#      with simjoin.devices = '0,0' (one join on two shares of device 0: the
#      multi-device path on any GPU host), against the same expected files;
#   2. the engine tests (test/engine/engine_test, built on the build machine
#      and carried as .gpu/engine_test), CPU and GPU;
#   3. the differential tests (GPU vs CPU, both vs SQL oracles).
# Writes full logs to LOGDIR (default /tmp/sj-gpu-logs) and prints a short
# table last.
set -uo pipefail
logs=${1:-/tmp/sj-gpu-logs}
mkdir -p "$logs"
declare -A result
step() {   # step NAME LOG COMMAND...
    local name=$1 log=$2; shift 2
    local t0=$SECONDS
    if "$@" >"$logs/$log" 2>&1; then result[$name]="ok ($((SECONDS - t0)) s)"
    else result[$name]="FAILED ($((SECONDS - t0)) s), see $log"; fi
    echo "$name: ${result[$name]}"
}
regress() {   # regress DEVICE [DEVICES]
    PGOPTIONS="-c simjoin.device=$1${2:+ -c simjoin.devices=$2}" \
        make -s installcheck PG_CONFIG="$PG_CONFIG" NVCC=
    local rc=$?
    [[ -f regression.diffs ]] && cp regression.diffs "$logs/regression-$1${2:+-$2}.diffs"
    return $rc
}
nvidia-smi -L
psql -X -At -c "CREATE EXTENSION IF NOT EXISTS simjoin" -c "SELECT * FROM simjoin_devices()"
step "regress cpu" regress-cpu.log regress cpu
step "regress gpu" regress-gpu.log regress gpu
step "regress gpu 0,0" regress-gpu-00.log regress gpu 0,0
if [[ -x .gpu/engine_test ]]; then
    step "engine tests" engine.log .gpu/engine_test
fi
step "differential" diff.log bash test/diff/run.sh
echo
echo "---- summary"
grep -h "passed\|failed" "$logs/engine.log" "$logs/diff.log" 2>/dev/null | tail -2
grep -h "FAIL" "$logs/engine.log" "$logs/diff.log" 2>/dev/null | head -20
for k in "regress cpu" "regress gpu" "regress gpu 0,0" "engine tests" "differential"; do
    printf '%-14s %s\n' "$k" "${result[$k]:-not run}"
done
