#!/usr/bin/env bash
# 72_build_image.sh: builds the runbook's image from templates/image/Containerfile:
# your verl image (--from) with this runbook at MVP_K8S_RUNBOOK_DIR, where the
# KubeRay manifests of 71 run it from. The build context is the repo's tracked
# files only (git ls-files; no .venv, .mvp or .git), staged in a temporary
# directory that is removed afterwards.
#
# The image is labelled io.mvp.runbook-dir (MVP_K8S_RUNBOOK_DIR) and
# io.mvp.version (the file VERSION).
#
# The default tag, MVP_K8S_IMAGE, is MVP_K8S_IMAGE_REPO:<VERSION> (verl-mvp:1.1.0)
# unless set: the image 71 renders, so build, push and render agree without naming it.
# Then: push IMAGE (docker push IMAGE) and render with 71 (same settings).
# Safe to re-run: it builds IMAGE again from the same inputs (the engine's
# cache reuses its layers); nothing else is touched.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "--from BASE_IMAGE  the verl image to build on (Ray, PyYAML, pyarrow and verl's dependencies in it); default MVP_K8S_BASE_IMAGE (empty: MVP_IMAGE)" \
  "--tag IMAGE  the image to make; default MVP_K8S_IMAGE" \
  "--engine docker|podman  the container CLI; default docker when its engine answers, else podman"

# stage DIR: the repo's tracked files (as they are in the work tree) in DIR.
stage() {
  local dir=$1
  if git -C "$MVP_REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$MVP_REPO" && git ls-files -z | xargs -0 cp --parents -t "$dir" 2>/dev/null) ||
      mvp::log::die "could not copy the repo's tracked files into the build context $dir (a tracked file deleted? see git status)"
  else
    # A release tarball: everything but what a checkout makes for itself.
    tar -C "$MVP_REPO" --exclude=./.venv --exclude=./.mvp --exclude=./.git --exclude=./tests/artifacts -cf - . |
      tar -C "$dir" -xf -
  fi
}

main() {
  mvp::config::init "$@"
  local base=${MVP_FLAG[--from]:-$MVP_K8S_BASE_IMAGE} tag=${MVP_FLAG[--tag]:-$MVP_K8S_IMAGE} engine=${MVP_FLAG[--engine]:-}
  [[ -n $base && -n $tag ]] || mvp::log::die "give --from BASE_IMAGE (your verl image) and --tag IMAGE (the one to make), or set MVP_K8S_BASE_IMAGE and MVP_K8S_IMAGE_REPO"
  [[ $base != "$tag" ]] || mvp::log::die "--tag '$tag' is the base image itself; name the image to make (default: MVP_K8S_IMAGE_REPO:<VERSION>)"
  if [[ -z $engine ]]; then
    engine=podman
    command -v docker >/dev/null && docker version >/dev/null 2>&1 && engine=docker
  fi
  [[ $engine =~ ^(docker|podman)$ ]] || mvp::log::die "--engine '$engine': use docker or podman"
  command -v "$engine" >/dev/null || mvp::log::die "$engine is not installed; install it or pass --engine"
  [[ $MVP_K8S_RUNBOOK_DIR == /* ]] || mvp::log::die "MVP_K8S_RUNBOOK_DIR='$MVP_K8S_RUNBOOK_DIR' must be an absolute path in the image"
  local -a build=("$engine" build -f "$MVP_REPO/templates/image/Containerfile" --build-arg "BASE_IMAGE=$base"
    --build-arg "RUNBOOK_DIR=$MVP_K8S_RUNBOOK_DIR" --build-arg "RUNBOOK_VERSION=$MVP_RUNBOOK_VERSION" -t "$tag")
  if [[ $MVP_DRY_RUN == 1 ]]; then
    echo "would stage the repo's tracked files and run: ${build[*]} <context>"
    return 0
  fi
  local ctx
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/mvp-image-context.XXXXXX")
  MVP_IMAGE_CTX=$ctx
  trap 'rm -rf -- "$MVP_IMAGE_CTX"' EXIT
  stage "$ctx"
  mvp::log::step "building $tag from $base with the runbook at $MVP_K8S_RUNBOOK_DIR ($engine)"
  "${build[@]}" -q "$ctx" >&2 || mvp::log::die "$engine build failed (its output is above); is $base an image $engine has or can pull?"
  echo "$tag"
}

main "$@"
