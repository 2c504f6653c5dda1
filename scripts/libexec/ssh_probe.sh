# shellcheck shell=sh
# The probe 00_prereq_check.sh runs in every node of the ssh runtime, sent on
# ssh's stdin to `sh -s` (POSIX sh: the node's login shell may be dash).
# Prints key=value lines (the output contract of kv.sh; POSIX sh has no
# mvp::kv::emit, so plain echo), which runtime_ssh.sh reads with mvp::kv::read.
# Arguments: SHARED_ROOT NONCE_FILE NODE_REPO GPUS_NEEDED VERL_SRC NEEDS [IP:PORT...]
# NEEDS: "distribution:module ..." that a node's python3 must import (the
# answer's `lacks` names the distributions whose module is not there).
shared=$1 nonce_file=$2 repo=$3 gpus=$4 verl=$5 needs=$6
shift 6
echo "hostname=$(hostname 2>/dev/null || echo unknown)"
if command -v python3 >/dev/null 2>&1; then
  echo "python=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null || echo missing)"
  echo "ray=$(python3 -c 'from importlib.metadata import version; print(version("ray"))' 2>/dev/null || echo missing)"
  # A module is there when it has a file: an empty directory of its name
  # (a namespace package) is not the package. Nothing is imported.
  # shellcheck disable=SC2086  # NEEDS is one word per distribution
  echo "lacks=$(python3 - $needs <<'PY'
import importlib.util, sys
lacks = []
for item in sys.argv[1:]:
    dist, module = item.split(":", 1)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        lacks.append(dist)
print(" ".join(lacks))
PY
)"
else
  echo "python=missing"
  echo "ray=missing"
fi
command -v ray >/dev/null 2>&1 && echo "ray_cli=ok" || echo "ray_cli=missing"
if [ ! -d "$shared" ]; then
  echo "shared=missing"
elif [ ! -w "$shared" ]; then
  echo "shared=readonly"
else
  echo "shared=ok"
fi
if [ -n "$nonce_file" ] && [ -r "$shared/$nonce_file" ]; then
  echo "nonce=$(cat "$shared/$nonce_file")"
fi
[ -f "$repo/helpers/mvp/__init__.py" ] && echo "repo=ok" || echo "repo=missing"
if [ -n "$verl" ]; then
  [ -f "$verl/verl/__init__.py" ] && echo "verl=ok" || echo "verl=missing"
fi
if [ "$gpus" -gt 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
else
  echo "gpus=none"
fi
ifaces=""
for iface in /sys/class/net/*; do
  iface=${iface##*/}
  [ "$iface" = lo ] || [ "$iface" = '*' ] || ifaces="$ifaces $iface"
done
echo "ifaces=$ifaces"
if pgrep -x raylet >/dev/null 2>&1; then
  echo "ray_running=1"
elif [ $# -gt 0 ] && command -v python3 >/dev/null 2>&1; then
  # A port someone answers on is taken.
  echo "busy=$(python3 - "$@" <<'PY'
import socket, sys
busy = []
for item in sys.argv[1:]:
    ip, port = item.rsplit(":", 1)
    try:
        socket.create_connection((ip, int(port)), timeout=0.5).close()
        busy.append(item)
    except OSError:
        pass
print(" ".join(busy))
PY
)"
fi
