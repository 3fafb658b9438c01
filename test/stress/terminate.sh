#!/usr/bin/env bash
# terminate.sh: sessions ended and cancelled in the middle of a join whose
# real[] rows the parallel workers read (their parts kept mapped until the
# join ends; simjoin.debug_row_pieces makes the CPU engine read them in
# place too, so this runs without a GPU).
#
#     bash test/stress/terminate.sh         # against the server in PG*, or a
#                                           # throwaway cluster if PGHOST is unset
#     SJ_TERM_ROWS=200000 SJ_TERM_DIM=384 SJ_TERM_METRIC=cosine \
#         PGOPTIONS='-c simjoin.device=gpu' bash test/stress/terminate.sh
#
# Each round starts a join in a session of its own (a count over the emitted
# pairs, the count form, or the same count in plain SQL), waits until the server shows the query active,
# then a delay (SJ_TERM_DELAYS, seconds), and ends the session with
# pg_terminate_backend (its backend exits with FATAL, the path of
# on_dsm_detach) or cancels the query with pg_cancel_backend (an ERROR).
# The sessions run the CPU engine on one thread; the table grows (its rows
# doubled, up to 4 M rows or 16 M floats) until one whole count join lasts
# 3 x the largest delay + 1 s, on whatever engine runs it; where it never
# does (a fast GPU), the count form's rounds are skipped and the output
# says so.
# Passes when every round's session reports that signal (not a finished
# join: a round whose join ended first fails, so that no round is vacuous),
# the server never restarts (its checkpointer keeps its process), no
# backend or parallel worker of the rounds is left, the devices' free
# memory is within 64 MiB of before (fresh sessions both), and the same
# count afterwards equals the one before.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${SJ_TERM_ROWS:-30000}
dim=${SJ_TERM_DIM:-3}
metric=${SJ_TERM_METRIC:-l2}
read -r -a delays <<<"${SJ_TERM_DELAYS:-0 0.2 0.5}"

source "$here/db.sh"
sj_stress_db sj_term

# the rounds' sessions: workers read every row (their parts kept), one CPU
# thread (a join's length must not shrink with the machine's cores)
opts="-c simjoin.debug_row_pieces=on -c max_parallel_workers_per_gather=2 \
-c min_parallel_table_scan_size=0 -c parallel_leader_participation=off \
-c simjoin.cpu_threads=1"
qv() { PGOPTIONS="${PGOPTIONS:-} $opts" q "$@"; }

# rows x dim floats: groups of 10 near-copies (hashes, deterministic), each
# copy within 0.007 of its group's point in every dimension
make_table() {
    q -q <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS tv;
SET max_parallel_workers_per_gather = 4;
CREATE TABLE tv AS
SELECT i AS id, ARRAY(SELECT ((hashint8(i / 10 * 4096 + k) & 1023) / 10.0
                             + (hashint8(i * 4096 + k + 1) & 7) / 1000.0)::float4
                      FROM generate_series(1, $dim) k) AS v
FROM generate_series(1::bigint, $1) i;
VACUUM ANALYZE tv;
SQL
}
q -q -c "CREATE EXTENSION simjoin" && make_table "$rows" || exit 1

# every pair in reach: about rows^2 / 2 pairs to emit (the executor's pace:
# long anywhere) or to count (the engine's: grown below until it lasts)
emit="SELECT count(*) FROM eps_join('tv', 'id', 'v', 1e9, '$metric')"
count="SELECT eps_join_count('tv', 'id', 'v', 1e9, '$metric')"
# the same count in plain SQL: the custom scan's count node, whose workers'
# parts stay mapped under its open cursor (the comment names it for the
# rounds' lookup below)
case $metric in cosine) op='<=>' ;; *) op='<->' ;; esac
sqlcount="SELECT /* eps_join */ count(*) FROM tv a JOIN tv b ON a.v $op b.v <= 1e9"
max_delay=$(printf '%s\n' "${delays[@]}" | sort -g | tail -1)
need_ms=$(awk -v d="$max_delay" 'BEGIN { print int(3000 * d + 1000) }')
count_ms() {   # ms of one whole count join in a session of its own
    local t0
    t0=$(date +%s%N)
    qv -c "$count" >/dev/null || return 1
    echo $((($(date +%s%N) - t0) / 1000000))
}
ms=$(count_ms) || exit 1
while ((ms < need_ms && rows < 4000000 && rows * dim < 16000000)); do
    rows=$((rows * 2))
    make_table "$rows" || exit 1
    ms=$(count_ms) || exit 1
done
joins=("$emit")
if ((ms >= need_ms)); then
    joins+=("$count" "$sqlcount")
    echo "terminate test: the count form takes $ms ms at $rows rows (at least $need_ms wanted)"
else
    echo "terminate test: the count form takes $ms ms at $rows rows, under $need_ms: its rounds skipped"
fi

case $metric in
    cosine) eps=1e-4 ;;
    *) eps=$(awk -v d="$dim" 'BEGIN { print 0.01 * sqrt(d) }') ;;
esac
check="SELECT eps_join_count('tv', 'id', 'v', $eps, '$metric')"
before=$(qv -c "$check") || exit 1
devmem() { q -c "SELECT coalesce(sum(free_memory), 0) FROM simjoin_devices()"; }
checkpointer() { q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"; }
mem_before=$(devmem)
ckpt_before=$(checkpointer)
echo "terminate test: $rows x $dim-D $metric rows, PGOPTIONS='${PGOPTIONS:-}', count $before"

rounds=0 bad=0
for how in terminate cancel; do
    for j in "${joins[@]}"; do
        for d in "${delays[@]}"; do
            rounds=$((rounds + 1))
            log=$(mktemp)
            # (PGAPPNAME: psql sets application_name over PGOPTIONS'; a
            # safety timeout)
            PGAPPNAME=sj_term_$$ PGOPTIONS="${PGOPTIONS:-} $opts -c statement_timeout=120s" \
                q -c "$j" >"$log" 2>&1 &
            victim=$!
            pid=
            for _ in $(seq 1 200); do   # up to 10 s for the join to start
                pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'sj_term_$$'
                            AND backend_type = 'client backend' AND state = 'active'
                            AND query LIKE '%eps_join%' LIMIT 1")
                [[ -n $pid ]] && break
                sleep 0.05
            done
            sleep "$d"
            [[ -n $pid ]] && q -c "SELECT pg_${how}_backend($pid)" >/dev/null
            wait "$victim"
            case $how in
                terminate) want='terminating connection due to administrator command' ;;
                cancel) want='canceling statement due to user request' ;;
            esac
            if [[ -n $pid ]] && grep -q "$want" "$log"; then
                outcome=ok
            else
                outcome="FAILED: $(tr '\n' ' ' <"$log" | cut -c1-160)"
                bad=$((bad + 1))
            fi
            printf '  %-9s %-48s after %4ss: %s\n' "$how" "${j:0:48}" "$d" "$outcome"
            rm -f "$log"
        done
    done
done

after=$(qv -c "$check")
left=
for _ in $(seq 1 100); do   # the ended sessions' processes and the check's, gone within 5 s
    left=$(q -c "SELECT count(*) FROM pg_stat_activity
                 WHERE (datname = current_database() AND pid <> pg_backend_pid())
                    OR backend_type = 'parallel worker'")
    [[ $left == 0 ]] && break
    sleep 0.05
done
mem_after=$(devmem)   # with no other session's device context left
ckpt_after=$(checkpointer)
less=$(( (${mem_before:-0} - ${mem_after:-0}) / 1048576 ))
echo "  processes left: $left; server restarted: $([[ $ckpt_before == "$ckpt_after" ]] && echo no || echo YES)"
echo "  count after: $after (before $before); device free memory $less MiB less than before"
if ((bad == 0)) && [[ $left == 0 && $ckpt_before == "$ckpt_after" && $after == "$before" ]] &&
    ((less <= 64)); then
    echo "terminate test passed: $rounds rounds"
else
    echo "terminate test FAILED: $bad of $rounds rounds"
    exit 1
fi
