#!/usr/bin/env bats
# The helper package keeps the shape issue 22 asked for: no two modules import
# each other (directly, round a longer loop, or through an import inside a
# function), every function is a named step of at most 40 lines, and nothing
# is defined that nothing uses.

setup() {
  load ../test_helper/common
  CHECK=("$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/python_structure.py")
}

@test "python structure: the mvp package has no import circle, counting imports inside functions" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp"
  assert_success
  assert_output ""
}

@test "python structure: plan.py and preflight.py have no function over 40 lines" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp" --short-functions "$MVP_REPO/helpers/mvp/jobs/plan.py" "$MVP_REPO/helpers/mvp/jobs/preflight.py"
  assert_success
  assert_output ""
}

@test "python structure: no function anywhere in the mvp package is over 40 lines" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp" --all-functions
  assert_success
  assert_output ""
}

@test "python structure: every definition in the mvp package is used somewhere in the repository" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp" --dead-code "$MVP_REPO"
  assert_success
  assert_output ""
  # The two the issue named stay gone (not merely used again by something).
  run grep -rnE "def (regression_run|reward_key)\b" "$MVP_REPO/helpers/mvp/core/layout.py"
  assert_failure 1
  run grep -nE "^def reward_key\b" "$MVP_REPO/helpers/mvp/jobs/preflight.py"
  assert_failure 1
}

@test "python structure: no stand-in knob in production code (tests inject +mvp_standin.* themselves)" {
  # The stand-in (tests/fixtures/verl_standin) is a test double: scripts,
  # helpers, templates and config must work against real verl unchanged.
  run grep -rlI "mvp_standin" "$MVP_REPO/scripts" "$MVP_REPO/helpers" "$MVP_REPO/templates" "$MVP_REPO/config"
  assert_failure 1
  assert_output ""
}

@test "python structure: the checker names a circle, an over-long function and dead code when there are some" {
  local pkg=$BATS_TEST_TMPDIR/pkg
  mkdir -p "$pkg/sub"
  touch "$pkg/__init__.py" "$pkg/sub/__init__.py"
  printf 'from . import b\n\n\ndef unused_helper():\n    return b.f\n' >"$pkg/a.py"
  printf 'def f():\n    from .sub import c\n' >"$pkg/b.py"
  printf 'from .. import a\n' >"$pkg/sub/c.py"
  { echo 'def long():'; for _ in $(seq 41); do echo '    pass'; done; } >"$pkg/d.py"
  cp "$pkg/d.py" "$pkg/e.py"
  run "${CHECK[@]}" "$pkg" --short-functions "$pkg/d.py"
  assert_failure 1
  assert_line "import circle: pkg.a -> pkg.b -> pkg.sub.c -> pkg.a"
  assert_line "$pkg/d.py:1: long is 42 lines (at most 40)"
  run "${CHECK[@]}" "$pkg" --all-functions --allow d.py:long --dead-code "$pkg"
  assert_failure 1
  assert_line "$pkg/e.py:1: long is 42 lines (at most 40)"
  refute_line --partial "d.py:1: long"
  assert_line "$pkg/a.py:4: unused_helper is defined and never used"
  refute_line --partial " f is defined"
}
