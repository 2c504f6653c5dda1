#!/usr/bin/env bash
# scripts_doc.sh: docs/scripts.md on stdout, its generated part made anew:
# for each numbered script, the synopsis its --help prints first (usage line,
# flags, common flags), which mvp::flags::synopsis makes from the script's
# flag spec (mvp::flags::spec). The rest of the page is kept as written.
# `make docs/scripts` writes the page; tests/unit/scripts_doc.bats fails when
# it is stale.
#
# Usage: scripts/libexec/scripts_doc.sh [--help]
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

BEGIN_MARK="<!-- generated from each script's flag spec by make docs/scripts: edit the spec (mvp::flags::spec), not this part -->"
END_MARK="<!-- end of the generated part -->"

# generated: one section per numbered script: its name and its synopsis.
generated() {
  local script help fence='```'
  for script in "$MVP_REPO"/scripts/[0-9][0-9]_*.sh; do
    help=$("$script" --help)
    printf '\n### %s\n\n%stext\n%s\n%s\n' "$(basename "$script")" "$fence" "${help%%$'\n\n'*}" "$fence"
  done
  echo
}

main() {
  mvp::flags::parse "$@"
  local page=$MVP_REPO/docs/scripts.md line state=before
  { grep -qxF "$BEGIN_MARK" "$page" && grep -qxF "$END_MARK" "$page"; } ||
    mvp::log::die "$page lacks the marker lines of its generated part; put $BEGIN_MARK and $END_MARK where the flags go"
  while IFS= read -r line; do
    case $state in
      before) printf '%s\n' "$line"; [[ $line == "$BEGIN_MARK" ]] && { generated; state=inside; } ;;
      inside) [[ $line == "$END_MARK" ]] && { printf '%s\n' "$line"; state=after; } ;;
      after) printf '%s\n' "$line" ;;
    esac
  done <"$page"
}

main "$@"
