#!/usr/bin/env bats
# The shell library keeps its layout: one sourced file per
# concern in scripts/lib, each function named after its file (mvp::ray:: in
# ray.sh; the runtimes share mvp::rt::), every mvp:: function a script, test
# or benchmark calls defined there, no executable beside the sourced files,
# and no file calling up into a file that sources it.

setup() {
  load ../test_helper/common
  CHECK=("$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/shell_layout.py")
}

@test "shell layout: scripts/lib keeps its prefixes, holds no executable, and nothing calls up or an undefined mvp:: function" {
  # Every script, test and benchmark that may call the library; not this
  # file, whose made-up breaches below are meant to be found.
  local -a scanned=(scripts bench tests/test_helper tests/fixtures tests/integration tests/real_verl
    tests/compose tests/ssh tests/slurm tests/kuberay tests/run)
  local f
  for f in "$MVP_REPO"/tests/unit/*.bats; do [[ $f == "$BATS_TEST_FILENAME" ]] || scanned+=("${f#"$MVP_REPO"/}"); done
  run "${CHECK[@]}" "$MVP_REPO" "${scanned[@]}"
  assert_success
  assert_output ""
}

# Prints FILE:NAME:LENGTH for each bash function in FILE... over 40 lines,
# counted from its `name() {` line to its closing `}` at column 0 (the
# layout every function here keeps; one-line functions are skipped).
long_functions() {
  awk 'FNR == 1 { name = "" }
    /^[A-Za-z_][A-Za-z0-9_:]*\(\) *\{/ { if ($0 ~ /\}$/) next; name = $0; sub(/\(\).*/, "", name); start = FNR; next }
    name != "" && /^\}/ { if (FNR - start + 1 > 40) print FILENAME ":" name ":" FNR - start + 1; name = "" }' "$@"
}

@test "shell layout: every bash function in scripts/ is at most 40 lines" {
  # As python_structure.bats holds the helpers' Python; an offender is named
  # FILE:NAME:LENGTH.
  cd "$MVP_REPO"
  run long_functions scripts/*.sh scripts/lib/*.sh scripts/libexec/*.sh
  assert_success
  assert_output ""
}

@test "shell layout: the length check names a 41-line function and passes one of 40" {
  local f=$BATS_TEST_TMPDIR/a.sh
  { echo 'long() {'; for _ in $(seq 39); do echo '  :'; done; echo '}'
    echo 'short() {'; for _ in $(seq 38); do echo '  :'; done; echo '}'
    echo 'one() { :; }'; } >"$f"
  run long_functions "$f"
  assert_success
  assert_output "$f:long:41"
}

@test "shell layout: the executables live in scripts/libexec, executable" {
  local f
  for f in local_node_init.sh slurm_job.sh; do [[ -x $MVP_REPO/scripts/libexec/$f ]]; done
  [[ -f $MVP_REPO/scripts/libexec/ssh_probe.sh ]]
}

@test "shell layout: the checker names each kind of breach" {
  local repo=$BATS_TEST_TMPDIR/repo
  mkdir -p "$repo/scripts/lib" "$repo/bench"
  cat >"$repo/scripts/lib/common.sh" <<'SH'
for lib in log conf; do source "$MVP_REPO/scripts/lib/$lib.sh"; done
SH
  printf 'mvp::log::say() { :; }\nmvp::shout() { :; }\n' >"$repo/scripts/lib/log.sh"
  printf 'mvp::conf::load() { source "$MVP_REPO/scripts/lib/runtime_$R.sh"; mvp::rt::derive; }\n' >"$repo/scripts/lib/conf.sh"
  printf 'mvp::rt::derive() { mvp::conf::load; }\n' >"$repo/scripts/lib/runtime_a.sh"
  printf '#!/bin/sh\necho probe\n' >"$repo/scripts/lib/probe.sh"
  printf 'echo not sourced\n' >"$repo/scripts/lib/stray.sh"
  printf 'mvp::log::say hi\nmvp::log::gone\n' >"$repo/bench/b.sh"
  run "${CHECK[@]}" "$repo"
  assert_failure 1
  assert_line "scripts/lib/log.sh:2: mvp::shout is not named mvp::log::... (the file it is in)"
  assert_line "scripts/lib/probe.sh: an executable in scripts/lib; move it to scripts/libexec"
  assert_line "scripts/lib/stray.sh: sourced by nothing common.sh loads; an executable belongs in scripts/libexec"
  assert_line "scripts/lib/runtime_a.sh:1: calls mvp::conf::load of scripts/lib/conf.sh, which sources it; move the function down to the file of its concern"
  assert_line "bench/b.sh:2: mvp::log::gone is defined nowhere in scripts/lib"
  refute_line --partial "mvp::log::say is"
  refute_line --partial "conf.sh:1: calls"
}

@test "flags: every numbered script refuses an unknown flag and a surplus word in one line each, the one parser's" {
  local s
  for s in "$MVP_REPO"/scripts/[0-9][0-9]_*.sh; do
    run "$s" --bogus
    assert_failure 1
    assert_output "ERROR: unknown argument '--bogus'; see --help"
  done
  for s in 00_prereq_check 01_up 20_start_head 31_snapshot_verl_code 60_nightly_regression 72_build_image; do
    run "$MVP_REPO/scripts/$s.sh" surplus
    assert_failure 1
    assert_output "ERROR: unexpected argument 'surplus'; see --help"
  done
  run "$MVP_REPO/scripts/71_render_kuberay.sh" job a.yaml b.yaml
  assert_output "ERROR: unexpected argument 'b.yaml'; see --help"
  # 50 takes one job's id.
  run "$MVP_REPO/scripts/50_status.sh" one-id surplus
  assert_output "ERROR: unexpected argument 'surplus'; see --help"
}

@test "flags: a value flag without its value says what it needs; no script parses its own flags" {
  run "$MVP_REPO/scripts/43_submit_jobspec.sh" spec.yaml --override
  assert_failure 1
  assert_output "ERROR: --override needs KEY=VALUE"
  run "$MVP_REPO/scripts/72_build_image.sh" --from
  assert_output "ERROR: --from needs BASE_IMAGE"
  run "$MVP_REPO/scripts/60_nightly_regression.sh" --only
  assert_output "ERROR: --only needs JOBS"
  run "$MVP_REPO/scripts/20_start_head.sh" --config
  assert_output "ERROR: --config needs a file"
  # A hand-rolled parser walks its arguments with case or shift.
  run grep -nE 'case \$\{?(1|arg|MVP_ARGS)|while \(\(\$#\)\)' "$MVP_REPO"/scripts/*.sh "$MVP_REPO"/scripts/lib/*.sh
  assert_output --regexp '^.*/scripts/lib/(flags|submit)\.sh:'
  refute_output --regexp '/scripts/[0-9][0-9]_'
}

@test "flags: the parser keeps order, repeats and a command's own arguments (70's SCRIPT...)" {
  run bash -c 'source "$1/scripts/lib/common.sh"
    mvp::flags::spec --test-only "--out=a file" "--override=KEY=VALUE" "SCRIPT..."
    mvp::flags::parse --override a=1 --out f --dry-run --override b=2 43_submit_jobspec.sh x.yaml --wait --out g --config c.env
    printf "<%s>" "${MVP_FLAG_WORDS[@]}"; echo; printf "<%s>" "${MVP_ARGS[@]}"; echo
    echo "${MVP_FLAG[--override]} ${MVP_FLAG[--out]} ${MVP_FLAG[--test-only]:-unset} $MVP_DRY_RUN ${MVP_FLAG_SETTINGS[*]}"' _ "$MVP_REPO"
  assert_success
  assert_line --index 0 "<--override><a=1><--out><f><--override><b=2>"
  assert_line --index 1 "<43_submit_jobspec.sh><x.yaml><--wait><--out><g>"
  assert_line --index 2 "b=2 f unset 1 MVP_CONFIG=c.env"
}
