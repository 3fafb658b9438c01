#!/usr/bin/env bash
# test.sh: simjoin's whole test suite on a fresh Debian 12 machine.
#
#     bash scripts/test.sh
#
# Installs what is missing (scripts/deps.sh), builds and installs the
# extension, starts a throwaway cluster, and runs:
#   0. the file graph check (test/tools/filegraph.sh: no include or call
#      cycle between files);
#   1. the pg_regress suite (sql/, expected/) with simjoin.device as set in
#      PGOPTIONS (default: auto, i.e. the GPU where one is usable);
#   2. the engine tests (test/engine, no server);
#   3. the differential tests (test/diff: GPU vs CPU where a GPU is usable,
#      and both against plain-SQL oracles);
#   4. sessions ended and cancelled in the middle of joins over rows read
#      in place from parallel workers (test/stress/terminate.sh);
#   5. rows a join locks changed by another transaction meanwhile
#      (test/stress/recheck.sh: EvalPlanQual against PostgreSQL's plan);
#   6. where nvcc is found, the multi-device driver's host-only check
#      (make multi-check: its threads, shared units, uploads and values
#      against a fake operator; no GPU needed).
# Ends with one line "N passed, N failed" over the suites.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/deps.sh || exit 1
export PATH=$(pg_config --bindir):$PATH

make -s clean >/dev/null 2>&1
make -s -j"$(nproc)" 2>&1 | grep -v '^$' || true
[[ -f simjoin.so ]] || { echo "build failed"; exit 1; }
if [[ $(id -u) == 0 ]]; then make -s install >/dev/null; else sudo make -s install >/dev/null; fi || exit 1

source scripts/cluster.sh
sj_cluster_start || exit 1
trap sj_cluster_stop EXIT

passed=0 failed=0
suite() {   # suite NAME COMMAND...: run one suite, count it
    local name=$1; shift
    echo "== $name"
    if "$@"; then passed=$((passed + 1)); echo "== $name: ok"
    else failed=$((failed + 1)); echo "== $name: FAILED"; fi
}
regress() {
    make -s installcheck || { [[ -f regression.diffs ]] && head -200 regression.diffs; return 1; }
}
suite "file graph" bash test/tools/filegraph.sh
suite "pg_regress" regress
suite "engine tests" make -s engine-check
suite "differential tests" bash test/diff/run.sh
suite "sessions ended mid-join" bash test/stress/terminate.sh
suite "rows changed under a join's locks" bash test/stress/recheck.sh
if command -v nvcc >/dev/null 2>&1 || [[ -x ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc ]]; then
    suite "multi-device driver" make -s multi-check
else
    echo "== multi-device driver: skipped (no nvcc)"
fi

echo "$passed passed, $failed failed"
((failed == 0))
