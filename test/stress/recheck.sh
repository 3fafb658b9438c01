#!/usr/bin/env bash
# recheck.sh: rows a join locks (SELECT ... FOR UPDATE) that another
# transaction changes meanwhile: PostgreSQL rechecks the join on the new
# row versions (EvalPlanQual), and Custom Scan (SimJoin) must return what
# PostgreSQL's own plan returns.
#
#     bash test/stress/recheck.sh      # against the server in PG*, or a
#                                      # throwaway cluster if PGHOST is unset
#
# Each case runs twice, through the node and with simjoin.enable_customscan
# = off: a second session updates row 1 (moving its vector away from every
# other, changing its set or its group) and holds the lock for a second;
# the case's query (a SELECT ... FOR UPDATE, an UPDATE with EXISTS) blocks
# on that row and, once the update commits, rechecks its pairs.  Passes
# when both runs of every case return the same rows (sorted) and leave the
# same table, and the node's plan is the one named (a self-join where it
# says so).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/db.sh"
sj_stress_db sj_recheck

setup() {
    q -q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simjoin;
DROP TABLE IF EXISTS rt;
CREATE TABLE rt (id int PRIMARY KEY, g int, v float8[], s int4[]);
INSERT INTO rt SELECT i, i % 3, ARRAY[i % 4, (i * 7) % 5]::float8[],
                      ARRAY[i % 4, 10 + i % 3, 20]::int4[]
FROM generate_series(1, 12) i;
ANALYZE rt;
SQL
}

# run QUERY UPDATE NODE: the query's rows (sorted) while UPDATE commits
# after a second, then the table's; NODE on: through Custom Scan (SimJoin)
run() {
    local query=$1 update=$2 node=$3 out
    setup
    q -q -c "BEGIN; $update; SELECT pg_sleep(1.5); COMMIT;" >/dev/null &
    local writer=$!
    sleep 0.5
    if [[ $node == on ]]; then
        out=$(q -c "SET enable_nestloop = off" -c "SET enable_hashjoin = off" \
                -c "SET enable_mergejoin = off" -c "$query" 2>&1)
    else
        out=$(q -c "SET simjoin.enable_customscan = off" -c "$query" 2>&1)
    fi
    wait "$writer"
    sort <<<"$out" | grep -v '^SET$'
    q -c "SELECT * FROM rt ORDER BY id"
}

passed=0 failed=0
# check LABEL PLAN-PATTERN QUERY UPDATE
check() {
    local label=$1 pattern=$2 query=$3 update=$4 plan on off
    setup
    plan=$(q -c "SET enable_nestloop = off" -c "SET enable_hashjoin = off" \
             -c "SET enable_mergejoin = off" -c "EXPLAIN (COSTS OFF) $query")
    if ! grep -q "Custom Scan (SimJoin)" <<<"$plan" || ! grep -q -- "$pattern" <<<"$plan"; then
        echo "FAIL $label: the plan has no Custom Scan (SimJoin) with '$pattern'"
        failed=$((failed + 1))
        return
    fi
    on=$(run "$query" "$update" on)
    off=$(run "$query" "$update" off)
    if [[ $on == "$off" && -n $off ]]; then
        echo "ok $label ($(wc -l <<<"$off") rows)"
        passed=$((passed + 1))
    else
        echo "FAIL $label"; diff <(echo "$off") <(echo "$on") | head -20
        failed=$((failed + 1))
    fi
}

move='UPDATE rt SET v = ARRAY[v[1] + 100, v[2]] WHERE id = 1'
check "self-join, row 1 moved away" "Self-Join" \
    "SELECT a.id, b.id FROM rt a JOIN rt b ON a.v <-> b.v <= 2 WHERE a.g < 2 AND b.g < 2 FOR UPDATE" "$move"
check "self-join, row 1 moved onto row 2" "Self-Join" \
    "SELECT a.id, b.id FROM rt a JOIN rt b ON a.v <-> b.v <= 0.5 FOR UPDATE OF a" \
    "UPDATE rt SET v = (SELECT v FROM rt WHERE id = 2) WHERE id = 1"
check "two inputs, a residual" "Join Filter" \
    "SELECT a.id, b.id, b.g FROM rt a JOIN rt b ON a.v <-> b.v <= 2 AND a.id <> b.id FOR UPDATE" "$move"
check "left join" "Join Type: Left" \
    "SELECT a.id, b.id FROM rt a LEFT JOIN rt b ON a.v <-> b.v <= 1 AND a.id < b.id FOR UPDATE OF a" "$move"
check "jaccard self-join, set changed" "Self-Join" \
    "SELECT a.id, b.id FROM rt a JOIN rt b ON jaccard(a.s, b.s) >= 0.5 FOR UPDATE" \
    "UPDATE rt SET s = ARRAY[99, 98] WHERE id = 1"
check "theta band, row 1 moved" "theta_join" \
    "SELECT a.id, b.id FROM rt a JOIN rt b ON a.g BETWEEN b.g - 0 AND b.g + 0 AND a.id < b.id FOR UPDATE" \
    "UPDATE rt SET g = 7 WHERE id = 1"
# a semi join's row carries its match (the inner relation's row mark)
check "semi join, UPDATE ... WHERE EXISTS" "Join Type: Semi" \
    "UPDATE rt t SET g = t.g + 10 WHERE EXISTS (SELECT 1 FROM rt a WHERE a.v <-> t.v <= 1 AND a.id <> t.id) RETURNING t.id" \
    "UPDATE rt SET g = g + 100 WHERE id = 1"
check "semi join, FOR UPDATE OF t" "Join Type: Semi" \
    "SELECT t.id FROM rt t WHERE EXISTS (SELECT 1 FROM rt a WHERE a.v <-> t.v <= 1 AND a.id <> t.id) FOR UPDATE OF t" \
    "UPDATE rt SET g = g + 100 WHERE id = 1"
check "anti join, row 1 moved away" "Join Type: Anti" \
    "SELECT t.id FROM rt t WHERE NOT EXISTS (SELECT 1 FROM rt a WHERE a.v <-> t.v <= 1 AND a.id <> t.id) FOR UPDATE OF t" "$move"
# the other clauses first: row 1's new vector has another length, and only
# pairs of one group reach the distance
check "other clauses before the distance" "Join Filter" \
    "SELECT a.id, b.id FROM rt a JOIN rt b ON a.v <-> b.v <= 2 AND a.g = b.g AND a.id <> b.id FOR UPDATE OF a" \
    "UPDATE rt SET v = '{1,2,3}', g = 9 WHERE id = 1"
echo "$passed passed, $failed failed"
((failed == 0))
