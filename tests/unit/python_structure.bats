#!/usr/bin/env bats
# The helper package keeps the shape issue 22 asked for: no two modules import
# each other (directly or round a longer loop), and the submission's plan and
# the preflight are made of named steps of at most 40 lines.

setup() {
  load ../test_helper/common
  CHECK=("$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/python_structure.py")
}

@test "python structure: the mvp package has no import circle" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp"
  assert_success
  assert_output ""
}

@test "python structure: plan.py and preflight.py have no function over 40 lines" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp" --short-functions "$MVP_REPO/helpers/mvp/plan.py" "$MVP_REPO/helpers/mvp/preflight.py"
  assert_success
  assert_output ""
}

@test "python structure: the checker names a circle and an over-long function when there are some" {
  local pkg=$BATS_TEST_TMPDIR/pkg
  mkdir -p "$pkg/sub"
  touch "$pkg/__init__.py" "$pkg/sub/__init__.py"
  printf 'from . import b\n' >"$pkg/a.py"
  printf 'def f():\n    from .sub import c\n' >"$pkg/b.py"
  printf 'from .. import a\n' >"$pkg/sub/c.py"
  { echo 'def long():'; for _ in $(seq 41); do echo '    pass'; done; } >"$pkg/d.py"
  run "${CHECK[@]}" "$pkg" --short-functions "$pkg/d.py"
  assert_failure 1
  assert_line "import circle: pkg.a -> pkg.b -> pkg.sub.c -> pkg.a"
  assert_line "$pkg/d.py:1: long is 42 lines (at most 40)"
}
