#!/usr/bin/env bash
# 31_snapshot_verl_code.sh: copies a verl source tree (MVP_VERL_SRC, default
# the verl checkout) to <SHARED_ROOT>/common/code/verl/<CODE_ID>/ with
# mvp_marker.py (MARKER = "<CODE_ID>") and MANIFEST.json. Jobs pick a
# snapshot through PYTHONPATH, so several verl versions share one cluster.
#
# The id: CODE_ID=<id> in the environment; empty: git-<commit> for a clean
# git tree, else src-<content hash>. Prints the code id on stdout.
# Safe to re-run: the same content under the same id is a SKIP; other content
# under an existing id is refused (snapshots are immutable). Files unchanged
# since the newest snapshot are hard-linked to it, not copied.
set -Eeuo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# What this script takes beyond the common flags: the source of its --help
# and of docs/scripts.md (mvp::flags::spec).
mvp::flags::spec "--porcelain  print code_id=ID (a key=value line, for programs) instead of the bare id"

main() {
  mvp::config::init "$@"
  local porcelain=${MVP_FLAG[--porcelain]:-0}
  local -a args=(snapshot)
  if [[ $MVP_DRY_RUN == 1 ]]; then
    mvp::run::cmd mvp::helper::run "${args[@]}"
    return 0
  fi
  local out
  local -A answer=()
  # A refusal is the helper's one ERROR line: nothing to add to it.
  out=$(mvp::helper::run "${args[@]}") || exit
  mvp::kv::read answer <<<"$out" || mvp::log::die "the helper's snapshot answer: $MVP_KV_ERROR"
  if ((porcelain)); then mvp::kv::emit code_id "${answer[code_id]}"; else printf '%s\n' "${answer[code_id]}"; fi
}

main "$@"
