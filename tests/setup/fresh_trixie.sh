#!/usr/bin/env bash
# tests/setup/fresh_trixie.sh: the README's `make demo` as a new user meets it:
# a Debian trixie root file system (Python 3.13, built with mmdebstrap as the
# compose tier builds its image), run by podman as a non-root user, with pip
# configured for the package registry alone (no pip.conf, no PIP_* setting, no
# local wheel directory), in a fresh `git clone` of this checkout's branch.
# Prints the wall time of `make setup` and of `make demo`, and the venv's
# size. Not in CI: it downloads torch's default build (several GB) and trains.
#
# Usage: tests/setup/fresh_trixie.sh [setup|demo|all] [--help]
#   setup  builds the rootfs and the clone, runs `make setup` (the downloads)
#   demo   runs `make demo` in what setup left (hold a heavy-run lock for this one)
#   all    both (the default)
# Needs root, mmdebstrap and podman; network access to Debian's mirror and PyPI.
# Works in MVP_FRESH_DIR (default /tmp/mvp-fresh-trixie; the home of the user
# and the rootfs stay there between the phases; remove it when done).
set -Eeuo pipefail
# shellcheck source=../../scripts/lib/log.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/log.sh"
# shellcheck source=../../scripts/lib/retry.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/retry.sh"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${MVP_FRESH_DIR:-/tmp/mvp-fresh-trixie}
IMAGE=localhost/mvp-fresh-trixie:latest
# What a user of the README has: Python with venv, git, make, and the demo's
# own packages (scripts/libexec/system_packages.sh demo names them).
PACKAGES=ca-certificates,python3,python3-venv,git,make,jq,util-linux,procps
USER_UID=1000

rootfs() {
  rm -rf "$1"
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' trixie "$1"
}

build() {
  if podman image inspect "$IMAGE" >/dev/null 2>&1; then
    mvp::log::skip "image $IMAGE (remove it to build anew)"
  else
    mvp::log::step "building a Debian trixie rootfs with $PACKAGES"
    mvp::retry::download "mmdebstrap (Debian trixie)" rootfs "$WORK/rootfs"
    chroot "$WORK/rootfs" useradd --create-home --uid "$USER_UID" --shell /bin/bash demo
    tar -C "$WORK/rootfs" --numeric-owner -cf - . | podman import - "$IMAGE" >/dev/null
    rm -rf "$WORK/rootfs"
  fi
  local branch
  branch=$(git -C "$REPO" rev-parse --abbrev-ref HEAD)
  rm -rf "${WORK:?}/home"
  mkdir -p "$WORK/home"
  git clone --quiet --branch "$branch" "file://$REPO" "$WORK/home/mvp"
  mvp::log::info "fresh clone of $branch at $(git -C "$WORK/home/mvp" rev-parse --short HEAD)"
  chown -R "$USER_UID:$USER_UID" "$WORK/home"
}

# in_container CMD: CMD as the user `demo` in the clone, with nothing of this
# host's environment. The local runtime's nodes are user, PID and mount
# namespaces made inside the container: podman's seccomp profile and its
# masked /proc paths are lifted for that (as on a host, not in a container).
# The host's CA bundle stands in for the trixie one: where this runs, a
# proxy with a CA of its own may stand between it and PyPI (a machine's trust
# store, not pip's configuration).
# podman's default ulimits are more than this host grants ("error setting
# rlimit"): the host's own open files, and 32768 processes (what the demo's
# three Ray nodes need, with room; runc was refused 65536 here).
in_container() {
  local nofile nproc=32768
  nofile=$(ulimit -Hn)
  podman run --rm --network host --user demo --workdir /home/demo/mvp \
    --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" \
    --security-opt seccomp=unconfined --security-opt unmask=ALL --security-opt label=disable \
    -v "$WORK/home:/home/demo" -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
    --env HOME=/home/demo --env PATH=/usr/local/bin:/usr/bin:/bin \
    "$IMAGE" bash -c "$1"
}

timed() {
  local what=$1 start=$SECONDS
  mvp::log::step "$what"
  in_container "$2"
  mvp::log::info "$what: $((SECONDS - start)) s"
}

main() {
  local phase=${1:-all}
  case $phase in
    -h|--help) sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    setup|demo|all) ;;
    *) mvp::log::die "unknown argument '$phase'; see --help" ;;
  esac
  [[ $(id -u) == 0 ]] || mvp::log::die "this needs root (mmdebstrap, chroot, podman); run as root"
  mkdir -p "$WORK"
  if [[ $phase != demo ]]; then
    build
    in_container 'python3 --version; pip3 config list 2>/dev/null; env | grep ^PIP_ || echo "no PIP_* settings"; id'
    timed "make setup (as user demo, pip with PyPI alone)" 'make setup'
  fi
  if [[ $phase != setup ]]; then
    timed "make demo" 'make demo'
    in_container 'du -sh .venv; du -sm .venv/lib/python3*/site-packages/{torch,nvidia,triton} 2>/dev/null; .venv/bin/python -c "import torch; print(\"torch\", torch.__version__)"'
  fi
}

main "$@"
