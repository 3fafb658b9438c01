# db.sh: sourced by the stress tests.  A database of their own ($db, named
# after prefix) on the server in PG*, or on a throwaway cluster if PGHOST
# is unset; dropped (and the cluster stopped) when the script exits.
#     sj_stress_db sj_term      # then q ... runs psql -X -At on it
sj_stress_db() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    own_cluster=
    if [[ -z ${PGHOST:-} ]]; then
        source "$root/scripts/cluster.sh"
        sj_cluster_start || exit 1
        own_cluster=yes
    fi
    db=${1}_$$
    trap sj_stress_cleanup EXIT
    psql -X -q -d postgres -c "CREATE DATABASE $db" || exit 1
}
sj_stress_cleanup() {
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
    [[ -n $own_cluster ]] && sj_cluster_stop
}
q() { psql -X -At -d "$db" "$@"; }
