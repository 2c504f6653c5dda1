#!/usr/bin/env bats
# What a code snapshot records of git (helpers/mvp/cluster/snapshot.py _git): the
# commit of the checkout a source tree belongs to, only when git tracks it.

setup() {
  load ../test_helper/common
  REPO=$BATS_TEST_TMPDIR/checkout
  mkdir -p "$REPO/verl" "$REPO/cache/verl"
  echo "cache/" >"$REPO/.gitignore"
  echo "v = 1" >"$REPO/verl/__init__.py"
  echo "v = 2" >"$REPO/cache/verl/__init__.py"
  git -C "$REPO" init -q && git -C "$REPO" add -A &&
    git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm one
}

git_facts() {
  env PYTHONPATH="$MVP_REPO/helpers" python3 -c 'import json, sys
from pathlib import Path
from mvp.cluster import snapshot
print(json.dumps(snapshot._git(Path(sys.argv[1]))))' "$1"
}

@test "snapshot: a tree git tracks records its checkout's commit, clean; one file changed makes it dirty" {
  run git_facts "$REPO/verl"
  assert_success
  jq -e --arg c "$(git -C "$REPO" rev-parse HEAD)" '.git_commit == $c and .git_dirty == false' <<<"$output"
  echo "v = 3" >"$REPO/verl/__init__.py"
  run git_facts "$REPO/verl"
  jq -e '.git_dirty == true' <<<"$output"
}

@test "snapshot: a tree inside a checkout that ignores it (a download under an ignored cache) has no commit, so its id comes from its content" {
  run git_facts "$REPO/cache/verl"
  assert_success
  jq -e '.git_commit == null and .git_dirty == null' <<<"$output"
  run env PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from pathlib import Path
from mvp.cluster import snapshot
print(snapshot.default_id(Path("."), "ab" * 32, snapshot._git(Path("'"$REPO/cache/verl"'"))))'
  assert_output "src-abababababab"
}
