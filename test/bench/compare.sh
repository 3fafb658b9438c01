#!/usr/bin/env bash
# compare.sh: the same workloads (compare.sql) on two builds of simjoin in
# one run, against a running server (PG* variables): "after", the build
# installed now, then "before", a build swapped in from a folder, on the
# same data; prints before ms, after ms and after/before for each workload
# and device, and puts back the build it found.
#
#     bash test/bench/compare.sh [OUT]
#     bash .gpu/on-gpu bash test/bench/compare.sh $OUT      # on the GPU host
#
# The "before" folder (SJ_BEFORE, default .gpu/before) holds simjoin.so (or
# simjoin.so.gz / .xz), simjoin--*.sql and simjoin.control.  The swap copies
# them over "$(pg_config --pkglibdir)/simjoin.so" and into
# "$(pg_config --sharedir)/extension/", restarts the server (simjoin may be
# preloaded) and recreates the extension; the data and the result table
# sjc_results are plain tables and survive that.  On exit the installed
# build is put back, the server restarted and the extension recreated
# (on the GPU host the next .gpu/on-gpu call re-installs .gpu/stage anyway).
# The server runs each tag's workloads after a restart of its own, so both
# start with the same cold caches (sjb_time warms up before timing).
#
# Settings: SJ_COMPARE_SCALE (1: the sizes in compare.sql; 0.01 for a quick
# check), SJ_COMPARE_DB (sj_compare), SJ_COMPARE_STMT_TIMEOUT (a workload on
# one device, 90s), SJ_COMPARE_ONLY (a regular expression: the workloads
# whose "workload, form" match, e.g. 'theta|jaccard'),
# SJ_COMPARE_TIMEOUT_DATA / _RUN (seconds for generating the data / for
# each tag's run, 150 / 180: all within ten minutes), SJ_PGDATA and
# SJ_PGLOG (the server's data directory and log; default from SHOW
# data_directory).
# Files in OUT: compare.log (everything), compare.txt (the table),
# compare.csv (sjc_results).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-/tmp/sj-compare}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee "$out/compare.log") 2>&1

before=${SJ_BEFORE:-$root/.gpu/before}
scale=${SJ_COMPARE_SCALE:-1}
db=${SJ_COMPARE_DB:-sj_compare}
stmt_timeout=${SJ_COMPARE_STMT_TIMEOUT:-90s}
t_data=${SJ_COMPARE_TIMEOUT_DATA:-150}
t_run=${SJ_COMPARE_TIMEOUT_RUN:-180}
pg_config=${PG_CONFIG:-pg_config}
pkglib=$("$pg_config" --pkglibdir)
extdir=$("$pg_config" --sharedir)/extension
bindir=$("$pg_config" --bindir)
start=$SECONDS

say() { echo "== compare.sh [$((SECONDS - start)) s] $*"; }
die() { say "FAILED: $*"; exit 1; }

# psql under a time limit; past it, the session's query is ended too
tpsql() {
    local limit=$1 rc
    shift
    timeout "$limit" psql -X "$@"
    rc=$?
    if ((rc == 124)); then
        say "timed out after $limit s; ending the sessions in $db"
        psql -X -q -At -d postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()" >/dev/null
    fi
    return $rc
}

[[ -f $pkglib/simjoin.so ]] || die "no simjoin.so in $pkglib"
so=
for f in "$before/simjoin.so" "$before/simjoin.so.gz" "$before/simjoin.so.xz"; do
    [[ -f $f ]] && so=$f && break
done
[[ -n $so ]] || die "no simjoin.so[.gz|.xz] in $before"
ls "$before"/simjoin--*.sql >/dev/null 2>&1 && [[ -f $before/simjoin.control ]] ||
    die "no simjoin--*.sql or simjoin.control in $before"

# the server: its data directory, its owner and its log, for pg_ctl restart
data=${SJ_PGDATA:-$(timeout 30 psql -X -At -d postgres -c 'SHOW data_directory')} || die "no server"
pglog=${SJ_PGLOG:-}
if [[ -z $pglog ]]; then
    for f in "$data/server.log" "$(dirname "$data")/server.log"; do
        [[ -f $f ]] && pglog=$f && break
    done
    pglog=${pglog:-$data/server.log}
fi
owner=$(stat -c %U "$data")
restart_server() {
    local cmd=("$bindir/pg_ctl" -D "$data" -l "$pglog" -w -t 120 restart)
    if [[ $(id -un) == "$owner" ]]; then
        timeout 150 "${cmd[@]}" >/dev/null
    elif command -v runuser >/dev/null; then
        timeout 150 runuser -u "$owner" -- env LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "${cmd[@]}" >/dev/null
    else
        timeout 150 su "$owner" -c "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} ${cmd[*]}" >/dev/null
    fi || { tail -n 20 "$pglog"; return 1; }
}
recreate_extension() {
    tpsql 60 -q -d "$db" -v ON_ERROR_STOP=1 \
        -c 'DROP EXTENSION IF EXISTS simjoin CASCADE' -c 'CREATE EXTENSION simjoin' \
        -At -c "SELECT 'simjoin ' || extversion || ', ' || (SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e' WHERE d.refobjid = e.oid) || ' functions' FROM pg_extension e WHERE extname = 'simjoin'"
}

# the installed build, kept aside to put back
saved=$(mktemp -d /tmp/sj-compare-saved.XXXXXX)
cp -p "$pkglib/simjoin.so" "$extdir"/simjoin.control "$extdir"/simjoin--*.sql "$saved/" || die "cannot save the installed build"
swapped=0
install_build() {   # folder with simjoin.so[.gz|.xz], simjoin--*.sql, simjoin.control
    local src=$1 lib
    lib=$(ls "$src"/simjoin.so "$src"/simjoin.so.gz "$src"/simjoin.so.xz 2>/dev/null | head -1)
    case $lib in
        *.gz) gzip -dc "$lib" >"$pkglib/.simjoin.so.new" ;;
        *.xz) xz -dc "$lib" >"$pkglib/.simjoin.so.new" ;;
        *) cp "$lib" "$pkglib/.simjoin.so.new" ;;
    esac || return 1
    chmod 0755 "$pkglib/.simjoin.so.new"
    # a rename: processes that have the old file mapped keep it
    mv -f "$pkglib/.simjoin.so.new" "$pkglib/simjoin.so" || return 1
    rm -f "$extdir"/simjoin--*.sql
    cp "$src"/simjoin--*.sql "$src"/simjoin.control "$extdir/"
}
put_back() {
    ((swapped)) || return 0
    say "putting back the installed build"
    install_build "$saved" && swapped=0
    restart_server && recreate_extension
}
trap 'put_back; rm -rf "$saved"' EXIT

say "host $(hostname), $(nproc) cores, scale $scale, before from $before ($(basename "$so")), out $out"
tpsql 30 -At -d postgres -c "SELECT version()"
tpsql 30 -At -d postgres -c "SHOW shared_preload_libraries" | sed 's/^/shared_preload_libraries: /'
[[ -f $before/BUILD.txt ]] && sed 's/^/before: /' "$before/BUILD.txt"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

say "generating the data"
tpsql 120 -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" || die "cannot create $db"
# common.sql as run.sh runs it (cube and pg_trgm are optional here)
tpsql 60 -q -d "$db" -f "$here/common.sql"
tpsql "$t_data" -q -d "$db" -v ON_ERROR_STOP=1 -v scale="$scale" -v step=data \
    -f "$here/compare.sql" || die "generating the data"

early=0
run_tag() {   # tag
    say "restarting the server, then the workloads with the $1 build"
    restart_server || return 1
    recreate_extension || return 1
    echo "library: $(md5sum <"$pkglib/simjoin.so" | cut -c1-12) $(stat -c %s "$pkglib/simjoin.so") bytes, server started $(timeout 30 psql -X -At -d postgres -c 'SELECT pg_postmaster_start_time()')"
    tpsql "$t_run" -q -d "$db" -v scale="$scale" -v tag="$1" -v timeout="$stmt_timeout" -v only="${SJ_COMPARE_ONLY:-}" \
        -f "$here/compare.sql" || { say "the $1 run ended early (rc $?)"; early=1; }
}
run_tag after || die "the after run"

say "swapping in the before build"
swapped=1
install_build "$before" || die "installing the before build"
run_tag before || die "the before run"

put_back || say "could not put back the installed build (saved in $saved)"

say "report"
tpsql 120 -d "$db" -v scale="$scale" -v only="${SJ_COMPARE_ONLY:-}" <<'EOF' | tee "$out/compare.txt"
\pset footer off
\echo 'after/before of the median of 3 runs after a warm-up (scale' :scale'); same: the two builds gave the same result'
WITH l AS (
    -- the latest row of each; a time limit or a plan without SimJoin is no time
    SELECT DISTINCT ON (tag, workload, form, device) tag, ord, workload, form, device,
           CASE WHEN strategy IN ('timed out', 'not SimJoin: skipped') THEN NULL ELSE ms END AS ms,
           result, strategy
    FROM sjc_results ORDER BY tag, workload, form, device, at DESC),
a AS (SELECT * FROM l WHERE tag = 'after'),
b AS (SELECT * FROM l WHERE tag = 'before'),
-- every workload run, on every device that ran one
w AS (SELECT w.ord, w.workload, w.form, d.device
      FROM sjc_workloads w,
           (SELECT DISTINCT device FROM sjc_results UNION SELECT 'cpu') d
      WHERE w.workload || ', ' || w.form ~ :'only')
SELECT workload || ', ' || form AS workload, device,
       round(b.ms::numeric, 1) AS before_ms, round(a.ms::numeric, 1) AS after_ms,
       round((a.ms / nullif(b.ms, 0))::numeric, 2) AS "after/before",
       CASE WHEN a.ms IS NULL OR b.ms IS NULL
            THEN concat_ws('; ', CASE WHEN a.ms IS NULL THEN 'after: ' || coalesce(a.strategy, 'missing') END,
                           CASE WHEN b.ms IS NULL THEN 'before: ' || coalesce(b.strategy, 'missing') END)
            WHEN a.ms > 1.10 * b.ms AND a.ms - b.ms > 5 THEN 'SLOWER'
            ELSE '' END AS verdict,
       CASE WHEN a.result IS NULL OR b.result IS NULL THEN ''
            WHEN a.result = b.result THEN 'yes' ELSE 'NO' END AS same,
       coalesce(a.strategy, '') AS strategy_after,
       CASE WHEN a.strategy IS DISTINCT FROM b.strategy THEN coalesce(b.strategy, '') ELSE '=' END AS strategy_before
FROM w LEFT JOIN a USING (workload, form, device) LEFT JOIN b USING (workload, form, device)
ORDER BY w.ord, device DESC;
\echo 'geometric mean of after/before by device (SLOWER: more than 10% and 5 ms slower)'
WITH l AS (
    SELECT DISTINCT ON (tag, workload, form, device) *
    FROM sjc_results ORDER BY tag, workload, form, device, at DESC)
SELECT a.device, count(*) AS workloads,
       round(exp(avg(ln(a.ms / b.ms)))::numeric, 3) AS geomean,
       round(min(a.ms / b.ms)::numeric, 2) AS min, round(max(a.ms / b.ms)::numeric, 2) AS max
FROM l a JOIN l b USING (workload, form, device)
WHERE a.tag = 'after' AND b.tag = 'before' AND a.ms > 0 AND b.ms > 0
  AND a.strategy IS DISTINCT FROM 'timed out' AND b.strategy IS DISTINCT FROM 'timed out'
GROUP BY a.device ORDER BY a.device DESC;
EOF
tpsql 60 -d "$db" -c "\copy (SELECT * FROM sjc_results ORDER BY ord, device, tag) TO '$out/compare.csv' CSV HEADER"
say "done"
exit $early
