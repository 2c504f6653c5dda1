#!/usr/bin/env bats
# docs/troubleshooting.md has a row for every one-line ERROR the code can
# print (each mvp::log::die of scripts/, each MvpError of helpers/, read by
# tests/test_helper/error_lines.py), and no row for a line no code prints:
# a new ERROR without a row fails here until make docs/troubleshooting.

setup() {
  load ../test_helper/common
  LINES=(python3 "$MVP_REPO/tests/test_helper/error_lines.py")
}

@test "troubleshooting: every ERROR line of scripts/ and helpers/ has its row, and every row is a line the code prints" {
  run "${LINES[@]}" "$MVP_REPO" --check
  assert_output ""
  assert_success
}

@test "troubleshooting: a new ERROR in a script or the helper without a row, and a row whose line is gone, fail the check" {
  local tree=$BATS_TEST_TMPDIR/tree
  mkdir -p "$tree"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/helpers" "$MVP_REPO/docs" "$tree/"
  # shellcheck disable=SC2016 # the script's text, not this shell's
  printf '%s\n' 'mvp::log::die "the planted refusal of $thing; do what it says"' >>"$tree/scripts/52_stop.sh"
  printf '%s\n' 'raise MvpError(f"a planted helper refusal {x}: no row yet")' >>"$tree/helpers/mvp/jobs/planning/plan.py"
  sed -i 's/^mvp::log::die "--config needs a file"/mvp::log::die "--config needs a config file"/; s/"--config needs a file"/"--config needs a config file"/' \
    "$tree/scripts/lib/flags.sh"
  run "${LINES[@]}" "$tree" --check
  assert_failure 1
  assert_output "docs/troubleshooting.md: no row for ERROR: --config needs a config file (make docs/troubleshooting)
docs/troubleshooting.md: no row for ERROR: a planted helper refusal …: no row yet (make docs/troubleshooting)
docs/troubleshooting.md: no row for ERROR: the planted refusal of …; do what it says (make docs/troubleshooting)
docs/troubleshooting.md: a row for ERROR: --config needs a file, which no code prints"
  # make docs/troubleshooting's writing makes it whole again.
  "${LINES[@]}" "$tree" --write
  run "${LINES[@]}" "$tree" --check
  assert_success
  grep -qF '| `the planted refusal of …; do what it says` | `scripts/52_stop.sh` | do what it says |' "$tree/docs/troubleshooting.md"
}
