#!/usr/bin/env bash
# PID 1 of a test node of the ssh tier: a PID + mount + UTS namespace on this
# host that stands in for one of the platform's containers. It names itself,
# mounts its own /run and /tmp/ray, the shared storage at /private (or, with
# an empty SHARED_DIR, a /private of its own that nothing else sees), and runs
# a real OpenSSH server on its own address. On SIGTERM it stops sshd and
# exits, which ends every process left in its PID namespace.
# Usage: ssh_node_init.sh NAME NODE_DIR SHARED_DIR|""
set -Eeuo pipefail
name=$1 dir=$2 shared=$3
for fd in "/proc/$$/fd/"*; do
  fd=${fd##*/}
  if ((fd > 2)); then exec {fd}>&-; fi
done
hostname "$name"
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -m 0755 /run/sshd
mkdir -p /tmp/ray
mount --bind "$dir/tmp-ray" /tmp/ray
if [[ -n $shared ]]; then
  mount --bind "$shared" /private
else
  mount -t tmpfs -o mode=0755 tmpfs /private
fi
/usr/sbin/sshd -D -e -f "$dir/sshd_config" 2>>"$dir/sshd.log" &
sshd=$!
echo "$sshd" >"$dir/sshd.nspid"
trap 'kill -TERM "$sshd" 2>/dev/null || true; exit 0' TERM INT
echo "$name" >"$dir/ready"
# A foreground `sleep` would delay the trap until it ends; `wait` does not.
while :; do
  sleep 3600 &
  wait $! || true
done
