#!/usr/bin/env bash
# PID 1 of a local-runtime node: names the node, gives it a private /tmp/ray,
# then waits. On SIGTERM it exits, and the kernel SIGKILLs every process left
# in the node's PID namespace: what `ray stop --force` would do inside it, without its
# seconds of Python start-up (3 CPU-seconds a node on 2 cores).
# Usage (from runtime_local.sh): local_node_init.sh NODE TMP_RAY_DIR READY_FILE
set -Eeuo pipefail
node=$1 tmp_ray=$2 ready=$3
# This process lives as long as the node: keep none of the caller's files
# open (a lock, a test runner's pipe) beyond stdin, stdout and stderr.
for fd in "/proc/$$/fd/"*; do
  fd=${fd##*/}
  if ((fd > 2)); then exec {fd}>&-; fi
done
hostname "$node"
mkdir -p /tmp/ray
mount --bind "$tmp_ray" /tmp/ray
trap 'exit 0' TERM INT
echo "$node" >"$ready"
# A foreground `sleep` would delay the trap until it ends; `wait` does not.
while :; do
  sleep 3600 &
  wait $! || true
done
