#!/usr/bin/env bats
# 31_snapshot_verl_code.sh: immutable code snapshots with a marker and a
# manifest, hard-linked to the newest one where files did not change. The
# tree is the real verl 0.9.1 source (.mvp/cache/verl-0.9.1, from `make setup`).

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  CODE="$SHARED_ROOT/common/code/verl"
  # A git checkout of real verl 0.9.1 (419 files, 6 MB), with build litter.
  SRC=$BATS_TEST_TMPDIR/verl-src
  [[ -f $MVP_REPO/.mvp/cache/verl-0.9.1/verl/__init__.py ]] || { echo "no real verl tree; run make setup" >&3; return 1; }
  mkdir -p "$SRC"
  cp -r "$MVP_REPO/.mvp/cache/verl-0.9.1/verl" "$SRC/verl"
  mkdir -p "$SRC/verl/__pycache__" "$SRC/build"
  touch "$SRC/verl/__pycache__/x.pyc" "$SRC/build/junk"
  git -C "$SRC" init -q && git -C "$SRC" add -A && git -C "$SRC" -c user.name=t -c user.email=t@t commit -qm tree
  export MVP_VERL_SRC=$SRC
}

@test "31_snapshot: marker and manifest written, excluded paths left out" {
  run --separate-stderr env CODE_ID=codeA "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_success
  assert_output codeA
  run cat "$CODE/codeA/mvp_marker.py"
  assert_line 'MARKER = "codeA"'
  run jq -r '[.code_id, .source_path, .git_commit, .git_dirty, .file_count, (.size_bytes > 0), (.created_at | length > 0)] | @tsv' "$CODE/codeA/MANIFEST.json"
  assert_output "codeA	$SRC	$(git -C "$SRC" rev-parse HEAD)	false	$(git -C "$SRC" ls-files | grep -vc -e __pycache__ -e '^build/')	true	true"
  [[ ! -e $CODE/codeA/.git && ! -e $CODE/codeA/verl/__pycache__ && ! -e $CODE/codeA/build ]]
  [[ ! -w $CODE/codeA/verl/__init__.py || $(stat -c %a "$CODE/codeA/verl/__init__.py") == 444 ]]
}

@test "31_snapshot: the same content under the same id is a SKIP and changes nothing" {
  CODE_ID=codeA "$MVP_REPO/scripts/31_snapshot_verl_code.sh" 2>/dev/null
  local before
  before=$(find "$CODE/codeA" -printf '%p %i %T@\n' | sort)
  run env CODE_ID=codeA "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_success
  assert_output --partial "SKIP: code snapshot codeA ($CODE/codeA holds the same content)"
  [[ $(find "$CODE/codeA" -printf '%p %i %T@\n' | sort) == "$before" ]]
}

@test "31_snapshot: other content under an existing id is refused and the snapshot is untouched" {
  CODE_ID=codeA "$MVP_REPO/scripts/31_snapshot_verl_code.sh" 2>/dev/null
  local before
  before=$(cd "$CODE/codeA" && find . -type f -exec sha256sum {} + | sort)
  echo "# changed" >>"$SRC/verl/trainer/main_ppo.py"
  run env CODE_ID=codeA "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_failure
  assert_output --partial "ERROR: code snapshot codeA already exists at $CODE/codeA with other content; snapshots are immutable, pick a new CODE_ID"
  [[ $(cd "$CODE/codeA" && find . -type f -exec sha256sum {} + | sort) == "$before" ]]
  [[ -z $(find "$CODE" -maxdepth 1 -name '.tmp-*') ]]
}

@test "31_snapshot: a second snapshot of an unchanged real verl 0.9.1 tree adds no file data, only its directories, manifest and marker" {
  CODE_ID=codeA "$MVP_REPO/scripts/31_snapshot_verl_code.sh" 2>/dev/null
  run --separate-stderr env CODE_ID=codeB "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_success
  [[ $stderr == *"(0 copied, "*" hard-linked from codeA)"* ]]
  local first both dirs meta
  first=$(du -sk "$CODE/codeA" | cut -f1)
  both=$(du -sk "$CODE/codeA" "$CODE/codeB" | awk '{s += $1} END {print s}')
  # verl 0.9.1 has 94 directories: their 4K blocks are most of what a snapshot of it costs twice.
  dirs=$(find "$CODE/codeB" -type d | wc -l)
  meta=$(du -sk "$CODE/codeB/MANIFEST.json" "$CODE/codeB/mvp_marker.py" | awk '{s += $1} END {print s}')
  echo "first ${first}K, second adds $((both - first))K ($((100 * (both - first) / first))%): $dirs directories, ${meta}K manifest and marker" >&3
  (( both - first <= dirs * 4 + meta ))
  (( (both - first) * 100 < first * 10 ))
}

@test "31_snapshot: without CODE_ID a clean git tree is git-<commit>, a dirty one src-<content hash>" {
  run --separate-stderr "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_success
  assert_output "git-$(git -C "$SRC" rev-parse HEAD | cut -c1-12)"
  echo "# dirty" >>"$SRC/verl/__init__.py"
  run --separate-stderr "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_success
  [[ $output == src-* ]]
  run jq -r .git_dirty "$CODE/$output/MANIFEST.json"
  assert_output true
}

@test "31_snapshot: an invalid id is refused and nothing is created" {
  run env CODE_ID="../escape" "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_failure
  assert_output --partial "ERROR: CODE_ID: '../escape' is not a valid id"
  [[ ! -e $SHARED_ROOT/common/code/escape && -z $(find "$CODE" -mindepth 1 -maxdepth 1 2>/dev/null) ]]
}

@test "31_snapshot: a source that is not a verl tree says how to get one" {
  MVP_VERL_SRC=$BATS_TEST_TMPDIR/empty run "$MVP_REPO/scripts/31_snapshot_verl_code.sh"
  assert_failure
  assert_output --partial "is not a verl source tree (no verl/__init__.py); git clone https://github.com/volcengine/verl.git"
}
