#!/usr/bin/env bats
# The helper package keeps its shape: no two modules import
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
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp" --short-functions "$MVP_REPO/helpers/mvp/jobs/planning/plan.py" "$MVP_REPO/helpers/mvp/jobs/planning/preflight.py"
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
}

# The groups of helpers/mvp/, lowest first (docs/ARCHITECTURE.md's picture);
# jobs and data are peers. __main__ is the package's own top-level files.
LAYERS=(worker core cluster jobs,data nightly render __main__)

# picture_groups FILE: the groups docs/ARCHITECTURE.md's picture of helpers/mvp/
# draws, top to bottom, one line (the code block after "One folder per place
# the code runs"; ../jobenv/, outside the package, left out).
picture_groups() {
  awk '/^One folder per place the code runs/ {on = 1} on && /^```/ {n++; if (n == 2) exit; next}
    on && n == 1 && match($0, /^ *([a-z_]+\/|__main__\.py) /) {w = $1; sub(/\/$|\.py$/, "", w); printf "%s ", w}' "$1"
}

# layers_top_down: LAYERS as the picture draws them, top to bottom, one line.
layers_top_down() {
  local i
  for ((i = ${#LAYERS[@]} - 1; i >= 0; i--)); do printf '%s ' ${LAYERS[i]//,/ }; done
}

@test "python structure: ARCHITECTURE.md's picture of helpers/mvp/ draws the groups in the order the import check holds them to (LAYERS), each folder there" {
  [[ $(picture_groups "$MVP_REPO/docs/ARCHITECTURE.md") == "$(layers_top_down)" ]] ||
    fail "the picture draws '$(picture_groups "$MVP_REPO/docs/ARCHITECTURE.md")', the check holds '$(layers_top_down)'"
  local g
  for g in ${LAYERS[@]//,/ }; do
    [[ $g == __main__ || -d $MVP_REPO/helpers/mvp/$g ]] || fail "LAYERS names $g, not a folder of helpers/mvp/"
  done
}

@test "python structure: a picture with two groups swapped fails the picture check" {
  sed '/^  jobs\/ /{h;d}; /^  data\/ /G' "$MVP_REPO/docs/ARCHITECTURE.md" | sed '/^  nightly\/ /{h;d}; /^  jobs\/ /G' >"$BATS_TEST_TMPDIR/a.md"
  [[ $(picture_groups "$BATS_TEST_TMPDIR/a.md") != "$(layers_top_down)" ]]
  [[ -n $(picture_groups "$BATS_TEST_TMPDIR/a.md") ]]
}

@test "python structure: each group of the mvp package imports only the groups below it (worker: nothing outside itself), and no module is named as the standard library's" {
  run "${CHECK[@]}" "$MVP_REPO/helpers/mvp" --layers "${LAYERS[@]}" --shadow
  assert_success
  assert_output ""
}

@test "python structure: the layer check names an import up, one sideways, a file in no group and a module that shadows the standard library" {
  local pkg=$BATS_TEST_TMPDIR/mvp
  mkdir -p "$pkg/worker" "$pkg/core" "$pkg/jobs" "$pkg/data" "$pkg/odd"
  touch "$pkg/__init__.py" "$pkg/worker/__init__.py" "$pkg/core/__init__.py" "$pkg/jobs/__init__.py" "$pkg/data/__init__.py" "$pkg/odd/__init__.py"
  printf 'def f():\n    from ..core import log\n' >"$pkg/worker/fsutil.py"
  printf 'from ..worker import errors\n' >"$pkg/core/log.py"
  printf 'x = 1\n' >"$pkg/worker/errors.py"
  printf 'from ..data import prep\n' >"$pkg/jobs/plan.py"
  printf 'from ..core import log\n' >"$pkg/data/prep.py"
  printf 'x = 1\n' >"$pkg/odd/thing.py"
  printf 'x = 1\n' >"$pkg/core/profile.py"
  run "${CHECK[@]}" "$pkg" --layers "${LAYERS[@]}" --shadow
  assert_failure 1
  assert_output "group odd ($pkg/odd/thing.py) is in no layer
import against the layers: mvp.jobs.plan (jobs) imports mvp.data (data)
import against the layers: mvp.jobs.plan (jobs) imports mvp.data.prep (data)
import against the layers: mvp.worker.fsutil (worker) imports mvp.core (core)
import against the layers: mvp.worker.fsutil (worker) imports mvp.core.log (core)
$pkg/core/profile.py: shadows the standard library's profile"
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
