#!/usr/bin/env bash
# demo.sh: simjoin on a throwaway local server, on a fresh Debian 12 machine.
#
#     bash scripts/demo.sh
#
# Installs what is missing, builds and installs simjoin, starts a cluster
# of its own in a temporary directory (never yours), loads sample data and
# runs every operator, as functions and as plain SQL joins (the cluster
# preloads simjoin), printing results, time and the device used (the GPU
# when one is usable, else the CPU engine).  The cluster is removed at exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/deps.sh
export PATH=$(pg_config --bindir):$PATH
make -s >/dev/null
if [[ $(id -u) == 0 ]]; then make -s install >/dev/null; else sudo make -s install >/dev/null; fi
source scripts/cluster.sh
sj_cluster_start
trap sj_cluster_stop EXIT
psql -X -q -v ON_ERROR_STOP=1 -f scripts/demo.sql
