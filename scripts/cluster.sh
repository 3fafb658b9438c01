# cluster.sh: start and stop a throwaway PostgreSQL cluster of our own,
# never the user's.  Source it, then:
#     sj_cluster_start        # sets PGHOST, PGPORT, PGUSER, PGDATABASE
#     sj_cluster_stop         # stops it and removes its directory
# The cluster lives in a fresh temporary directory, listens only on a Unix
# socket there, runs as the invoking user (as "postgres" when invoked by
# root, since the server refuses to run as root), and preloads simjoin
# (install it first).
SJ_PGBIN=${SJ_PGBIN:-$(pg_config --bindir)}

sj_as_server_user() {
    if [[ $(id -u) == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

sj_cluster_start() {
    SJ_CLUSTER_DIR=$(mktemp -d /tmp/simjoin-cluster.XXXXXX)
    chmod 755 "$SJ_CLUSTER_DIR"
    [[ $(id -u) == 0 ]] && chown postgres "$SJ_CLUSTER_DIR"
    local port=$((20000 + RANDOM % 20000))
    sj_as_server_user "$SJ_PGBIN/initdb" -D "$SJ_CLUSTER_DIR/data" -A trust -U postgres \
        --no-sync >"$SJ_CLUSTER_DIR/initdb.log" 2>&1 ||
        { cat "$SJ_CLUSTER_DIR/initdb.log"; return 1; }
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$SJ_CLUSTER_DIR'"
        echo "port = $port"
        echo "fsync = off"
        echo "max_parallel_workers_per_gather = ${SJ_PARALLEL_WORKERS:-2}"
        # plain SQL joins planned as Custom Scan (SimJoin) from a session's first query
        echo "shared_preload_libraries = 'simjoin'"
        echo "${SJ_PG_CONF:-}" | tr ';' '\n'
    } >>"$SJ_CLUSTER_DIR/data/postgresql.conf"
    sj_as_server_user "$SJ_PGBIN/pg_ctl" -D "$SJ_CLUSTER_DIR/data" \
        -l "$SJ_CLUSTER_DIR/server.log" -w start >/dev/null ||
        { cat "$SJ_CLUSTER_DIR/server.log"; return 1; }
    export PGHOST=$SJ_CLUSTER_DIR PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

sj_cluster_stop() {
    [[ -n ${SJ_CLUSTER_DIR:-} && -d $SJ_CLUSTER_DIR ]] || return 0
    sj_as_server_user "$SJ_PGBIN/pg_ctl" -D "$SJ_CLUSTER_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$SJ_CLUSTER_DIR"
    SJ_CLUSTER_DIR=
}
