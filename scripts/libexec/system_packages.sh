#!/usr/bin/env bash
# system_packages.sh: the system packages of `make demo` and of `make test`.
#
# Usage: scripts/libexec/system_packages.sh demo|tests|tests-demo [--help]
#   demo   checks that what the demo runs is here (Python 3.10-3.13 with venv,
#          jq, util-linux, procps, git); when something is missing, prints one
#          ERROR line naming the packages and the command that installs them,
#          and installs nothing. Any user; starts nothing.
#   tests-demo  as tests, for the demo's packages alone (DEMO_PACKAGES: what
#          the venv's build needs), so that make setup-tests can build the
#          venv while the rest of the tiers' packages install beside it
#   tests  the test tiers' Debian packages (TEST_PACKAGES): as root, installs
#          those missing (apt-get, tried again with backoff); otherwise one
#          ERROR line with the command. Some of them (slurmd, munge,
#          openssh-server, podman) may start daemons when installed as root.
# Run by the Makefile (make setup, make setup-tests). Safe to re-run: what is
# installed is a SKIP.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

# What the demo runs, as `command:Debian package` (the package names are
# Debian's and Ubuntu's; python3-venv: `python3 -m venv` on Debian needs it).
DEMO_NEEDS=(python3:python3 jq:jq unshare:util-linux nsenter:util-linux flock:util-linux
  pgrep:procps git:git)

# The test tiers. chromium renders the nightly report in a test; GNU parallel
# is what `bats --jobs` needs (tests/run: the unit tier two files at a time).
# The demo's own come first: make setup-tests runs make setup after it.
DEMO_PACKAGES=(python3-venv jq util-linux procps git)
TEST_PACKAGES=("${DEMO_PACKAGES[@]}")
TEST_PACKAGES+=(bats parallel bats-support bats-assert shellcheck curl chromium)
# The Slurm tier runs a real three-node Slurm on this host (tests/slurm).
TEST_PACKAGES+=(slurmctld slurmd slurm-client munge)
# The ssh tier runs real sshd servers (tests/ssh); the runtime uses openssh-client.
TEST_PACKAGES+=(openssh-client openssh-server)
# The compose tier (tests/compose): a real engine (podman, its Docker-API
# socket, runc, catatonit for `init: true`), the compose v1 CLI
# (docker-compose), the image build (mmdebstrap); docker.io only for its
# `docker` CLI when none is here.
TEST_PACKAGES+=(podman runc catatonit uidmap slirp4netns docker-compose mmdebstrap)

install_command() {
  local -a cmd=(apt-get install -y "$@")
  ((EUID == 0)) || cmd=(sudo "${cmd[@]}")
  if command -v apt-get >/dev/null; then echo "${cmd[*]}"; else echo "your package manager's install of $* (Debian's names)"; fi
}

# Whether python3 is 3.10-3.13 and makes a venv with pip (tried in a scratch
# directory unless the project venv already works).
python_ok() {
  command -v python3 >/dev/null || return 1
  python3 -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' ||
    mvp::log::die "python3 is Python $(python3 -c 'import platform; print(platform.python_version())'); the demo needs 3.10-3.13 (the trainer lock's platforms); put one first on PATH as python3"
  [[ -x $MVP_REPO/.venv/bin/python ]] && return 0
  local tmp rc=0
  tmp=$(mktemp -d)
  python3 -m venv "$tmp/venv" >/dev/null 2>&1 || rc=1
  rm -rf "$tmp"
  return "$rc"
}

demo() {
  local need cmd pkg
  local -a missing=()
  for need in "${DEMO_NEEDS[@]}"; do
    cmd=${need%%:*} pkg=${need#*:}
    [[ $cmd == python3 ]] && { python_ok || missing+=(python3 python3-venv); continue; }
    command -v "$cmd" >/dev/null || [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    mvp::log::die "make demo needs ${missing[*]}; install them with: $(install_command "${missing[@]}")"
  fi
  mvp::log::skip "system packages of the demo (python3 with venv, jq, util-linux, procps, git are here)"
}

# tests [WHO_NEEDS PACKAGE...]: installs the PACKAGEs (default: the test
# tiers') that are missing; WHO_NEEDS ("the demo needs") names them in the log.
tests() {
  local what=${1:-the test tiers need} pkg
  local -a want=("${@:2}") missing=()
  if ((${#want[@]} == 0)); then
    want=("${TEST_PACKAGES[@]}")
    command -v docker >/dev/null || want+=(docker.io)
  fi
  for pkg in "${want[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  if ((${#missing[@]} == 0)); then
    mvp::log::skip "Debian packages: all ${#want[@]} that $what are installed"
    return 0
  fi
  ((EUID == 0)) || mvp::log::die "$what the Debian packages ${missing[*]}; install them with: $(install_command "${missing[@]}")"
  mvp::log::step "installing ${missing[*]}"
  mvp::retry::download "apt-get update" apt-get update -qq
  mvp::retry::download "apt-get install" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

main() {
  case ${1:-} in
    -h|--help) mvp::flags::usage; exit 0 ;;
    demo) demo ;;
    tests) tests ;;
    tests-demo) tests "the demo needs" "${DEMO_PACKAGES[@]}" ;;
    *) mvp::log::die "usage: scripts/libexec/system_packages.sh demo|tests|tests-demo" ;;
  esac
}

main "$@"
