#!/usr/bin/env bash
# 31_snapshot_verl_code.sh: copies a verl source tree (MVP_VERL_SRC, default
# the verl checkout) to <SHARED_ROOT>/common/code/verl/<CODE_ID>/ with
# mvp_marker.py (MARKER = "<CODE_ID>") and MANIFEST.json. Jobs pick a
# snapshot through PYTHONPATH, so several verl versions share one cluster.
#
# --git-repo DIR [--rev REV]: the tree of one commit of the git checkout DIR
# instead (default HEAD), read with `git archive`: DIR's work tree, index and
# branches are never touched, uncommitted changes never enter. The manifest
# records the commit's full sha and subject (git_commit, git_subject).
#
# The id: CODE_ID=<id> in the environment; empty: git-<commit> for a clean
# git tree (or a commit of --git-repo), else src-<content hash>. Prints the
# code id on stdout.
# Safe to re-run: the same content under the same id is a SKIP; other content
# under an existing id is refused (snapshots are immutable). Files unchanged
# since the newest snapshot are hard-linked to it, not copied.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "--porcelain  print code_id=ID (a key=value line, for programs) instead of the bare id" \
  "--git-repo DIR  snapshot a commit of this git checkout (read with git archive; the checkout is not touched) instead of MVP_VERL_SRC" \
  "--rev REV  with --git-repo: the commit (a sha, branch or tag; default HEAD)"

# git_commit DIR REV: the full sha of REV in the git checkout DIR (GIT_SHA)
# and its subject (GIT_SUBJECT); one ERROR line when DIR is no checkout or
# REV no commit of it. Reads only.
git_commit() {
  local repo=$1 rev=$2
  git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 ||
    mvp::log::die "--git-repo $repo is not a git checkout; give the directory of a git clone of verl"
  GIT_SHA=$(git -C "$repo" rev-parse --verify --quiet --end-of-options "$rev^{commit}") ||
    mvp::log::die "--rev $rev is not a commit of $repo; give a sha, branch or tag that 'git -C $repo log' shows"
  GIT_SUBJECT=$(git -C "$repo" log -1 --format=%s "$GIT_SHA")
}

# git_tree DIR SHA: the commit's files, by `git archive | tar -x`, in a
# temporary directory under the snapshots' directory (GIT_TREE, as this host
# sees it), which the node that runs the helper sees too; removed on exit.
git_tree() {
  local snapshots
  snapshots=$(mvp::config::layout snapshots)
  mkdir -p "$snapshots"
  GIT_TREE=$(mktemp -d "$snapshots/.tmp-git-XXXXXX")
  # shellcheck disable=SC2064  # the path is fixed now, on purpose
  trap "rm -rf '$GIT_TREE'" EXIT
  git -C "$1" archive --format=tar "$2" | tar -x -C "$GIT_TREE"
}

main() {
  mvp::config::init "$@"
  local porcelain=${MVP_FLAG[--porcelain]:-0}
  local repo=${MVP_FLAG[--git-repo]-} rev=${MVP_FLAG[--rev]:-HEAD}
  local -a args=(snapshot)
  [[ -z ${MVP_FLAG[--rev]+set} || -n $repo ]] || mvp::log::die "--rev needs --git-repo DIR (the checkout the commit is in)"
  if [[ -n $repo ]]; then
    repo=$(cd "$repo" 2>/dev/null && pwd) || mvp::log::die "--git-repo ${MVP_FLAG[--git-repo]} is not a directory; give a git clone of verl"
    git_commit "$repo" "$rev"
    args+=(--git-repo "$repo" --git-rev "$rev" --git-commit "$GIT_SHA" --git-subject "$GIT_SUBJECT")
  fi
  if [[ $MVP_DRY_RUN == 1 ]]; then
    [[ -z $repo ]] || mvp::run::cmd git -C "$repo" archive --format=tar "$GIT_SHA"
    mvp::run::cmd mvp::helper::run "${args[@]}"
    return 0
  fi
  if [[ -n $repo ]]; then
    git_tree "$repo" "$GIT_SHA"
    # The tree as the node that runs the helper sees it (mvp::helper::env passes it).
    # shellcheck disable=SC2034  # read by name in mvp::helper::env
    MVP_NODE_VERL_SRC=$(mvp::nodes::path "$GIT_TREE")
  fi
  local out
  local -A answer=()
  # A refusal is the helper's one ERROR line: nothing to add to it.
  out=$(mvp::helper::run "${args[@]}") || exit
  mvp::kv::read answer <<<"$out" || mvp::log::die "the helper's snapshot answer: $MVP_KV_ERROR"
  if ((porcelain)); then mvp::kv::emit code_id "${answer[code_id]}"; else printf '%s\n' "${answer[code_id]}"; fi
}

main "$@"
