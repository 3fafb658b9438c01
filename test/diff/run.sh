#!/usr/bin/env bash
# run.sh: differential tests against a running server (PG* variables).
#
#     bash test/diff/run.sh [eps|jaccard|theta ...]
#
# Every run draws fresh random data (the seed is printed; SJ_DIFF_SEED=s
# replays it).  Each case compares, in SQL:
#   - the CPU engine with an independent oracle (plain SQL over the same
#     data: cube distances, set arithmetic with unnest, PostgreSQL's own
#     join), on inputs small enough for the oracle;
#   - where a GPU is usable, the GPU engine with the CPU engine: the same
#     pairs (multiset) and bit-identical values, also for large inputs
#     whose results span many batches and exceed gpu_memory_limit.
# Prints one line per case as it ends and ends with "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
seed=${SJ_DIFF_SEED:-$(( $(date +%s) % 100000 ))}
suites=("$@")
((${#suites[@]})) || suites=($(cd "$here" && ls *_diff.sql | sed 's/_diff.sql//'))
db=sj_diff_$$
psql -X -q -d postgres -c "CREATE DATABASE $db" || exit 1
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1' EXIT
echo "differential tests: seed $seed"
out=$(mktemp)
status=0
# each case's line as it ends (a run cut short still shows what passed),
# everything else after the last suite
for s in "${suites[@]}"; do
    PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" \
    psql -X -q -d "$db" -v ON_ERROR_STOP=1 -v seed="$seed" -At \
        -f "$here/common.sql" -f "$here/${s}_diff.sql" 2>&1 |
        tee -a "$out" | grep --line-buffered -E '^(ok|FAIL|SKIP) '
    ((PIPESTATUS[0] == 0)) || status=1
done
grep -vE '^(ok|FAIL|SKIP) ' "$out" | grep -v '^$' | sed 's/^/  /'
passed=$(grep -c '^ok ' "$out")
failed=$(grep -c '^FAIL ' "$out")
((status)) && failed=$((failed + 1)) && echo "FAIL a diff script stopped with an error"
rm -f "$out"
echo "$passed passed, $failed failed"
((failed == 0))
