#!/usr/bin/env bats
# One owner per fact: each rule below is written in one place and every other
# place asks that owner. Each check runs on a tree given as its argument, so
# that a test can prove it fails on a copy with a second owner planted.

setup() {
  load ../test_helper/common
}

# copy_tree DEST: the parts of the repo the checks read.
copy_tree() {
  mkdir -p "$1/helpers"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/config" "$1/"
  cp -r "$MVP_REPO/helpers/mvp" "$1/helpers/"
}

# check_secret_rule ROOT: the secret-name rule's words (TOKEN|SECRET|...)
# appear under ROOT/scripts and ROOT/helpers only on redact.py's SECRET_NAME
# line; FILE:LINE of each other and exit 1 if any.
check_secret_rule() {
  local hits
  hits=$(grep -rnE --exclude-dir=__pycache__ 'TOKEN\|SECRET\|PASSWORD\|KEY' "$1/scripts" "$1/helpers" |
    grep -v '^[^:]*/helpers/mvp/redact.py:[0-9]*:SECRET_NAME = re.compile(r"') || return 0
  echo "$hits"
  return 1
}

@test "one owner: the secret-name rule is written only in helpers/mvp/redact.py (SECRET_NAME)" {
  run check_secret_rule "$MVP_REPO"
  assert_success
}

@test "one owner: a second copy of the secret-name rule in scripts/ fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo '[[ $x =~ TOKEN|SECRET|PASSWORD|KEY ]]' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/config.sh"
  run check_secret_rule "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --partial "/scripts/lib/config.sh:"
}

@test "one owner: config.sh's secret-name rule is redact.py's SECRET_NAME, read without a process" {
  local want
  want=$(PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from mvp import redact; print(redact.SECRET_NAME.pattern)')
  run bash -c 'source "$MVP_REPO/scripts/lib/common.sh" && mvp::config::secret_name_rule && echo "$MVP_SECRET_NAME_RULE"'
  assert_success
  assert_output "$want"
}

# check_port_arithmetic ROOT: code (not comments) under ROOT/scripts that
# computes a Ray port from MVP_NODE_PORT_BASE or offsets a base by +N, outside
# the body of mvp::ray::pinned_port_words in scripts/lib/ray.sh; FILE:LINE
# each, exit 1 if any.
check_port_arithmetic() {
  local ray=$1/scripts/lib/ray.sh first last hits
  read -r first last < <(awk '/^mvp::ray::pinned_port_words\(\) \{$/ { f = NR } f && /^}$/ { print f, NR; exit }' "$ray")
  [[ -n $first ]] || { echo "$ray has no mvp::ray::pinned_port_words, the owner"; return 1; }
  hits=$(grep -rnE 'MVP_NODE_PORT_BASE *[-+*]|\(\(base *\+ *[0-9]+\)\)' "$1/scripts" | grep -vE '^[^:]*:[0-9]+: *#' |
    awk -F: -v ray="$ray" -v first="$first" -v last="$last" '!($1 == ray && $2 > first && $2 < last)') || true
  [[ -z $hits ]] && return 0
  echo "$hits"
  return 1
}

@test "one owner: the pinned-port arithmetic is only mvp::ray::pinned_port_words (ray.sh); the runtimes call it" {
  run check_port_arithmetic "$MVP_REPO"
  assert_success
}

@test "one owner: a second copy of the pinned-port arithmetic in a runtime fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo 'x() { local base=$((MVP_NODE_PORT_BASE + 1000 * $1)); echo $((base + 1)); }' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh"
  run check_port_arithmetic "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_line --partial "/scripts/lib/runtime_ssh.sh:"
}

# check_pod_settings ROOT: the KubeRay pods' settings are listed once, as the
# contract's MVP_K8S_POD_SETTINGS. A line under ROOT/scripts or ROOT/helpers
# that names three or more of them (the start of a second list, as
# render_kuberay.py's SUBMITTER_SETTINGS and 71's export were) is printed as
# FILE:LINE, exit 1 if any. NAME=value words (a setting given a value, as
# gpu_smoke.sh's) are not a list of names.
check_pod_settings() {
  PYTHONPATH="$1/helpers" python3 - "$1" <<'PY'
import re, sys
from pathlib import Path
from mvp.settings import read_contract

root = Path(sys.argv[1])
names = set(next(e for e in read_contract(root / "config" / "settings.contract")
                 if e.name == "MVP_K8S_POD_SETTINGS").default.split())
problems = []
for top in ("scripts", "helpers"):
    for path in sorted((root / top).rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if len(names & set(re.findall(r"\bMVP_[A-Z0-9_]+\b(?!=)", line))) >= 3:
                problems.append(f"{path}:{n}: lists settings of MVP_K8S_POD_SETTINGS; read that contract key instead")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}

@test "one owner: the KubeRay pods' settings are listed only in the contract (MVP_K8S_POD_SETTINGS); 71 and the renderer read it" {
  run check_pod_settings "$MVP_REPO"
  assert_success
}

@test "one owner: a second list of the pods' settings in the renderer fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo 'PODS = ("MVP_WORKERS", "MVP_JOB_TIMEOUT", "MVP_MODEL_ID")' >>"$BATS_TEST_TMPDIR/tree/helpers/mvp/render_kuberay.py"
  run check_pod_settings "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --partial "/helpers/mvp/render_kuberay.py:"
}
