#!/usr/bin/env bash
# tests/compose/build_image.sh: builds the CPU test image of the compose and
# KubeRay tiers and prints its reference (localhost/mvp-compose-test:<hash>).
#
# Usage: tests/compose/build_image.sh [--print-tag|--print-base-tag] [--help]
#   --print-tag        print the image's tag the current inputs give, build nothing
#   --print-base-tag   the same for the base (verl's stand-in) alone
# Needs root, mmdebstrap and a container CLI: `docker` when its engine answers
# (DOCKER_HOST), else `podman`.
# Two layers. The base (localhost/mvp-compose-base:<hash>), standing in for
# verl's image, is a Debian bookworm rootfs (mmdebstrap) with helpers/requirements.txt
# (ray[default] at the host venv's version, PyYAML, pyarrow, hydra-core) pip-installed into
# the system Python, as verl's images have it: python3 in /usr/bin, `ray` in
# /usr/local/bin. The wheels are downloaded on this host, with this host's pip
# configuration (index, mirror, CA bundle), and installed offline in the rootfs.
# On it, the user's image recipe (scripts/72_build_image.sh,
# templates/image/Containerfile) adds the runbook at MVP_K8S_RUNBOOK_DIR.
# Safe to re-run: each tag is a hash of its inputs (the base's: this file and
# the requirements; the image's: the base and the runbook's tracked files); an
# image with that tag is reused, other inputs build a new one.
set -Eeuo pipefail
# shellcheck source=../../scripts/lib/log.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/log.sh"
# shellcheck source=../../scripts/lib/retry.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/retry.sh"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SUITE=bookworm
# procps: the scripts look for Ray's processes with pgrep inside the nodes.
PACKAGES=python3,python3-pip,procps,ca-certificates
PY_VERSION=3.11   # bookworm's python3
REQUIREMENTS=$REPO/helpers/requirements.txt

# The requirement lines count, not the comments beside them.
base_tag() {
  { cat "${BASH_SOURCE[0]}"; grep -v '^[[:space:]]*\(#\|$\)' "$REQUIREMENTS"; } | sha256sum | cut -c1-16
}

# The base's tag and the content of every file of the runbook the recipe
# copies (72's build context: the tracked files as in the work tree; outside a
# checkout, every file but what a checkout makes for itself).
image_tag() {
  {
    base_tag
    cd "$REPO"
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files -z
    else
      find . -type f -not -path './.venv/*' -not -path './.mvp/*' -not -path './.git/*' \
        -not -path './tests/artifacts/*' -print0 | LC_ALL=C sort -z
    fi | xargs -0 sha256sum
  } | sha256sum | cut -c1-16
}

# The container CLI: docker when its engine answers, else podman.
ENGINE=podman
command -v docker >/dev/null && docker version >/dev/null 2>&1 && ENGINE=docker

# Wheels for the image's Python and glibc (bookworm: 3.11, glibc 2.36),
# whatever Python this host runs pip with.
download_wheels() {
  local dest=$1 v
  local -a tags=(--only-binary=:all: --python-version "$PY_VERSION" --implementation cp --abi "cp${PY_VERSION/./}")
  for ((v = 36; v >= 17; v--)); do tags+=(--platform "manylinux_2_${v}_x86_64"); done
  tags+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
  # The project venv (make setup) has pip; a bare system python3 may not.
  local python=$REPO/.venv/bin/python
  [[ -x $python ]] || python=python3
  # hydra-core needs antlr4-python3-runtime 4.9.*, which PyPI has as source
  # only; it is pure Python, so a wheel built here fits the image.
  mvp::retry::download "pip wheel antlr4-python3-runtime" "$python" -m pip wheel --quiet --disable-pip-version-check \
    --no-deps --wheel-dir "$dest" 'antlr4-python3-runtime==4.9.*'
  mvp::retry::download "pip download (the image's wheels)" "$python" -m pip download --quiet --disable-pip-version-check \
    --dest "$dest" --find-links "$dest" "${tags[@]}" -r "$REQUIREMENTS"
}

# rootfs DIR: from nothing each time, so that a try after a failed one starts clean.
rootfs() {
  rm -rf "$1"
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" --aptopt='Acquire::Retries "3"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    "$SUITE" "$1"
}

# build_base REF: the rootfs of verl's stand-in image, imported as REF.
build_base() {
  local ref=$1 work
  work=$(mktemp -d "${TMPDIR:-/tmp}/mvp-image.XXXXXX")
  # shellcheck disable=SC2064  # the directory is fixed now, on purpose
  trap "rm -rf '$work'" EXIT
  mvp::log::step "downloading wheels for $(grep -cv '^\s*\(#\|$\)' "$REQUIREMENTS") requirements (Python $PY_VERSION)"
  mkdir "$work/wheels"
  download_wheels "$work/wheels"
  cp "$REQUIREMENTS" "$work/wheels/requirements.txt"
  mvp::log::step "building a Debian $SUITE rootfs with $PACKAGES"
  # apt's own retries come seconds apart: once here its download failed as a
  # whole, twice, and the same build went through a minute later.
  mvp::retry::download "mmdebstrap (Debian $SUITE)" rootfs "$work/root"
  cp -r "$work/wheels" "$work/root/tmp/wheels"
  mvp::log::step "pip-installing the requirements into the rootfs's system Python"
  # A clean environment: this host's PIP_* settings name paths the rootfs lacks.
  env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root chroot "$work/root" \
    python3 -m pip install --quiet --no-index --find-links /tmp/wheels --root-user-action=ignore \
    --break-system-packages --no-warn-script-location -r /tmp/wheels/requirements.txt
  rm -rf "$work/root/tmp/wheels" "$work/root/var/lib/apt/lists/"* "$work/root/var/cache/apt/"*
  [[ -x $work/root/usr/local/bin/ray && -x $work/root/usr/bin/python3 ]] ||
    mvp::log::die "the rootfs lacks /usr/local/bin/ray or /usr/bin/python3; the pip install did not do what this image is for"
  mvp::log::step "importing the rootfs as $ref"
  tar -C "$work/root" --numeric-owner -cf - . |
    "$ENGINE" import --change 'CMD ["sleep", "infinity"]' - "$ref" >/dev/null
  rm -rf "$work"
}

# remove_older REF: the images of REF's repository built from earlier inputs
# (never used again; the base is about 0.8 GB).
remove_older() {
  local ref=$1 old
  while IFS= read -r old; do
    [[ $old == "$ref" ]] && continue
    mvp::log::info "removing $old (built from earlier inputs)"
    "$ENGINE" rmi "$old" >/dev/null || mvp::log::warn "could not remove $old"
  done < <("$ENGINE" images --format '{{.Repository}}:{{.Tag}}' "${ref%:*}")
}

main() {
  case ${1:-} in
    -h|--help) mvp::flags::usage; exit 0 ;;
    --print-tag) image_tag; exit 0 ;;
    --print-base-tag) base_tag; exit 0 ;;
    "") ;;
    *) mvp::log::die "unknown argument '$1'; see --help" ;;
  esac
  [[ $(id -u) == 0 ]] || mvp::log::die "building the test image needs root (mmdebstrap, chroot); run as root"
  command -v mmdebstrap >/dev/null || mvp::log::die "mmdebstrap is missing; apt-get install mmdebstrap (make setup does)"
  # One build at a time: tests/run starts one in the background while the
  # unit and integration tiers run, and a tier that needs the image waits here
  # for it, then finds it built.
  mkdir -p "$REPO/.mvp"
  exec 9>"$REPO/.mvp/image-build.lock"
  flock 9
  local ref base
  ref=localhost/mvp-compose-test:$(image_tag)
  if "$ENGINE" image inspect "$ref" >/dev/null 2>&1; then
    mvp::log::skip "test image $ref (built from the current inputs)"
    echo "$ref"
    return 0
  fi
  base=localhost/mvp-compose-base:$(base_tag)
  if "$ENGINE" image inspect "$base" >/dev/null 2>&1; then
    mvp::log::skip "base image $base (built from the current inputs)"
  else
    build_base "$base"
  fi
  # The user's recipe, as the README tells it: the runbook at MVP_K8S_RUNBOOK_DIR.
  MVP_K8S_RUNBOOK_DIR=/workspace/mvp "$REPO/scripts/72_build_image.sh" --runtime local --engine "$ENGINE" \
    --from "$base" --tag "$ref" >/dev/null
  remove_older "$ref"
  remove_older "$base"
  echo "$ref"
}

main "$@"
