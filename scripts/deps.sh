#!/usr/bin/env bash
# deps.sh: install what simjoin needs to build and test on Debian 12, with
# apt, where it is missing: PostgreSQL 15 server and contrib (cube, pg_trgm),
# its server headers, a C compiler and make, and PostGIS 3 (only the tests
# of eps_join over PostGIS points use it; simjoin builds without it).  The CUDA toolkit is optional and
# never installed here: when nvcc is found (PATH or /usr/local/cuda), the
# GPU engine is built too.
set -euo pipefail
need=()
for pkg in postgresql-15 postgresql-server-dev-15 postgresql-contrib postgresql-15-postgis-3 gcc make; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    sudo=""
    [[ $(id -u) == 0 ]] || sudo="sudo"
    echo "deps: installing ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
