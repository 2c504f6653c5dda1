#!/usr/bin/env bats
# The settings contract (config/settings.contract): the one declaration of
# every setting. docs/settings.md must be what it generates, and no file
# under scripts/ or helpers/ may name an MVP_* variable it does not declare.
# Each check runs on a tree given as its argument, so that the tests below
# can prove it fails on a copy with a planted fault.

setup() {
  load ../test_helper/common
}

# check_docs ROOT: exit 1 (and a diff) when ROOT/docs/settings.md is not
# what ROOT's contract generates.
check_docs() {
  local root=$1
  diff -u "$root/docs/settings.md" <(PYTHONPATH="$root/helpers" python3 -m mvp settings --markdown) ||
    { echo "docs/settings.md is stale; run make docs/settings"; return 1; }
}

# check_names ROOT: one line per MVP_* name that a file under ROOT/scripts or
# ROOT/helpers names and ROOT's contract does not declare (FILE:LINE: NAME),
# exit 1 if any. A name followed by *, @, $ or { (a prefix or part of one:
# ${!MVP_K8S_@}, MVP_WORKER${i}_IP) passes when a declared name starts with it.
check_names() {
  PYTHONPATH="$1/helpers" python3 - "$1" <<'PY'
import re, sys
from pathlib import Path
from mvp.core.settings import read_contract

root = Path(sys.argv[1])
entries = read_contract(root / "config" / "settings.contract")
exact = {e.name for e in entries if "*" not in e.name}
families = [re.compile("^" + ".*".join(map(re.escape, e.name.split("*"))) + "$") for e in entries if "*" in e.name]
prefixes = sorted(exact | {e.name.split("*")[0] for e in entries if "*" in e.name})
token = re.compile(r"\bMVP_[A-Z0-9_]*(?=([*@${]?))")
problems = []
for top in ("scripts", "helpers"):
    for path in sorted((root / top).rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in token.finditer(line):
                name = m.group(0)
                if m.group(1) or name.endswith("_"):
                    ok = any(p.startswith(name) for p in prefixes)
                else:
                    ok = name in exact or any(f.match(name) for f in families)
                if not ok:
                    problems.append(f"{path.relative_to(root)}:{n}: {name} is not declared in config/settings.contract")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}

# A copy of what the checks and config.sh read, to plant a fault in.
copy_tree() {
  local dest=$BATS_TEST_TMPDIR/tree
  mkdir -p "$dest"
  cp -r "$MVP_REPO/scripts" "$MVP_REPO/config" "$MVP_REPO/docs" "$dest/"
  mkdir -p "$dest/helpers" && cp -r "$MVP_REPO/helpers/mvp" "$dest/helpers/"
  cp "$MVP_REPO/shared-layout.txt" "$dest/"
  echo "$dest"
}

@test "settings: docs/settings.md is exactly what config/settings.contract generates (make docs/settings)" {
  run check_docs "$MVP_REPO"
  assert_success
}

@test "settings: a contract changed without regenerating docs/settings.md fails the docs check" {
  local tree
  tree=$(copy_tree)
  sed -i 's/^  doc      Worker count\./  doc      How many workers./' "$tree/config/settings.contract"
  run check_docs "$tree"
  assert_failure
  assert_output --partial "+| \`MVP_WORKERS\` | int 1..99 | \`2\` | How many workers."
  assert_output --partial "docs/settings.md is stale; run make docs/settings"
}

@test "settings: every MVP_* name under scripts/ and helpers/ is declared in the contract" {
  run check_names "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "settings: a planted read of an undeclared MVP_* name fails the name check with its file and line" {
  local tree
  tree=$(copy_tree)
  printf 'knob=${MVP_PLANTED_KNOB:-1}\n' >>"$tree/scripts/lib/run.sh"
  printf 'PLANTED = os.environ.get("MVP_PLANTED_PY")\n' >>"$tree/helpers/mvp/jobs/inspection/status.py"
  run check_names "$tree"
  assert_failure
  assert_line "scripts/lib/run.sh:$(wc -l <"$tree/scripts/lib/run.sh"): MVP_PLANTED_KNOB is not declared in config/settings.contract"
  assert_line "helpers/mvp/jobs/inspection/status.py:$(wc -l <"$tree/helpers/mvp/jobs/inspection/status.py"): MVP_PLANTED_PY is not declared in config/settings.contract"
  # Declared, the same read passes: the check is the contract, not a list of its own.
  printf 'MVP_PLANTED_*\n  kind     internal\n  doc      Planted.\n' >>"$tree/config/settings.contract"
  run check_names "$tree"
  assert_success
}

@test "settings: bash and Python read the same contract (settings, defaults, what the helper gets)" {
  run bash -c 'source "$1/scripts/lib/common.sh"; mvp::config::read_contract
    printf "setting %s\n" "${MVP_CONTRACT_SETTINGS[@]}"; printf "default %s\n" "${MVP_CONTRACT_DEFAULTS[@]}"
    printf "helper %s\n" "${MVP_CONTRACT_HELPER[@]}"; printf "type %s\n" "${MVP_CONTRACT_TYPES[@]}"
    printf "derived %s\n" "${MVP_CONTRACT_DERIVED[@]}"; printf "computed %s\n" "${MVP_CONTRACT_COMPUTED[@]}"' _ "$MVP_REPO"
  assert_success
  local bash_view=$output
  run env PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from mvp.core.settings import read_contract
es = read_contract()
for e in es:
    if e.kind == "setting": print("setting", e.name)
for e in es:
    if e.default is not None: print(f"default {e.name}={e.default}")
for e in es:
    if e.helper: print(f"helper {e.name}={e.source}")
for e in es:
    if e.kind != "internal" and "*" not in e.name: print(f"type {e.name} {e.type}")
for kind in ("derived", "computed"):
    for e in es:
        if (e.kind == "internal") == (kind == "computed"):
            for when, value in e.derived: print(f"{kind} {e.name} {when} {value}")'
  assert_success
  [[ $output == "$bash_view" ]]
  # The helper's quick scan (settings.fields) agrees with the full reader.
  run env PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from mvp.core import settings
full = {e.helper: (e.name, settings.CONVERT[e.type.split()[0]]) for e in settings.read_contract() if e.helper}
print(full == settings.fields(), len(full))'
  assert_output "True 71"
  # 102 settings, each documented; none a secret by value on the helper's
  # command line (its environment is argv of env(1)).
  [[ $(grep -c '^setting ' <<<"$bash_view") == 102 ]]
  run env PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from mvp.core.settings import read_contract
bad = [e.name for e in read_contract() if not e.doc or (e.secret == "value" and (e.helper or e.kind == "setting"))
       or e.secret not in ("", "file", "value")]
print(" ".join(bad))'
  assert_success
  assert_output ""
}

@test "settings: a contract line config.sh does not know is one ERROR line with the file and line, and nothing runs" {
  local tree
  tree=$(copy_tree)
  sed -i 's/^  default  local$/  defualt  local/' "$tree/config/settings.contract"
  local n
  n=$(grep -n '^  defualt  local$' "$tree/config/settings.contract" | cut -d: -f1)
  MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env run "$tree/scripts/50_status.sh"
  assert_failure
  assert_output "ERROR: $tree/config/settings.contract:$n: '  defualt  local' is not a KEY VALUE line of the contract"
}

@test "settings: a name the contract would set that is not a setting's is refused (printf -v sets no other variable)" {
  local tree
  tree=$(copy_tree)
  printf 'PATH\n  default  /tmp/evil\n  doc      Planted.\n' >>"$tree/config/settings.contract"
  MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env run "$tree/scripts/50_status.sh"
  assert_failure
  assert_output --partial "'PATH' is not a setting's name (MVP_*, SHARED_ROOT, CODE_ID)"
}

@test "settings: per-runtime and per-profile defaults fill only what every layer left empty" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  unset SHARED_ROOT MVP_HEAD_IP MVP_WORKER_CPUS MVP_RAY_AUTH MVP_K8S_IMAGE MVP_SLURM_GPUS_PER_NODE MVP_TRAINER_PROFILE
  local show='source "$1/scripts/lib/common.sh"; shift; mvp::flags::parse "$@"; mvp::config::load
    echo "$SHARED_ROOT|$MVP_HEAD_IP|$MVP_RAY_AUTH|$MVP_WORKER_CPUS|$MVP_K8S_IMAGE|$MVP_SLURM_GPUS_PER_NODE"'
  run bash -c "$show" _ "$MVP_REPO" --runtime slurm
  assert_output "$MVP_REPO/.mvp/shared|127.0.0.2|token||verl-mvp:$(<"$MVP_REPO/VERSION")|4"
  MVP_TRAINER_PROFILE=cpu MVP_K8S_IMAGE_REPO=my/img MVP_GPUS_PER_WORKER=2 run bash -c "$show" _ "$MVP_REPO" --runtime compose
  assert_output "/private|172.28.0.2|off|16|my/img:$(<"$MVP_REPO/VERSION")|2"
  MVP_WORKER_CPUS=4 MVP_RAY_AUTH=token MVP_K8S_IMAGE=k/img MVP_SLURM_GPUS_PER_NODE=0 MVP_TRAINER_PROFILE=cpu \
    run bash -c "$show" _ "$MVP_REPO" --runtime local --shared-root /srv/x
  assert_output "/srv/x|127.0.0.2|token|4|k/img|0"
}

@test "settings: an internal name the contract gives per runtime is the runtime's (or the contract's) value, never one from outside" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  local show='source "$1/scripts/lib/common.sh"; shift; mvp::flags::parse "$@"; mvp::config::load
    echo "$MVP_NODE_REPO|$MVP_PYTHON|$MVP_HOST_SEES_NODE_FILES|$MVP_DASHBOARD_URL|$MVP_HOST_DASHBOARD_URL"'
  MVP_NODE_REPO=/elsewhere MVP_PYTHON=/bin/false MVP_DASHBOARD_URL=http://x:1 run bash -c "$show" _ "$MVP_REPO" --runtime local
  assert_output "$MVP_REPO|$MVP_REPO/.venv/bin/python|1|http://127.0.0.2:8265|http://127.0.0.2:8265"
  MVP_DASHBOARD_PORT=18265 run bash -c "$show" _ "$MVP_REPO" --runtime compose
  assert_output "/workspace/mvp|python3|0|http://127.0.0.1:8265|http://127.0.0.1:18265"
}

# of_type ROOT TYPE VALUE...: "VALUE yes|no" per value, bash's verdict (mvp::config::of_type).
of_type() {
  local root=$1 type=$2
  shift 2
  bash -c 'source "$1/scripts/lib/common.sh"; type=$2; shift 2
    for v in "$@"; do
      # shellcheck disable=SC2086
      if mvp::config::of_type "$v" $type; then echo "$v yes"; else echo "$v no"; fi
    done' _ "$root" "$type" "$@"
}

@test "settings: each contract type has one check (bash's), and the helper converts every value it lets through" {
  local type value verdict
  local -A samples=(
    [int]="0 7 12345 -1 1.5 x" [seconds]="0 30 0.5 1.5 -1 .5 5. 1.2.3 x" [flag]="0 1 2 yes"
    [words]="a a_b" [pairs]="a=1 a=1_b=2 =1 a" [url]="http://h:1 https://h ftp://h h"
    [ipv4]="1.2.3.4 1.2.3 a.b.c.d" [abspath]="/a a" [name]="a@b.c ../x" [dns]="a-b.c A_b" [size]="16g 16x 7"
    ["int 1..99"]="1 99 0 100" ["one-of gpu cpu"]="gpu cpu tpu"
  )
  # MVP_LOG_SYNC_SECONDS=1.5 (the issue's case): both sides take it; x neither.
  run of_type "$MVP_REPO" seconds 1.5 x
  assert_output $'1.5 yes\nx no'
  for type in "${!samples[@]}"; do
    run of_type "$MVP_REPO" "$type" ${samples[$type]}
    assert_success
    while read -r value verdict; do
      [[ $verdict == no ]] && continue
      # What bash lets through, settings.py's CONVERT reads.
      PYTHONPATH="$MVP_REPO/helpers" python3 -c 'import sys; from mvp.core.settings import CONVERT; CONVERT[sys.argv[1]](sys.argv[2])' \
        "${type%% *}" "$value" || fail "type $type: bash takes '$value', settings.py cannot convert it"
    done <<<"$output"
  done
  run of_type "$MVP_REPO" "int 1..99" 0 100 5
  assert_output $'0 no\n100 no\n5 yes'
}

@test "settings: every default in the contract is of its own type (config.sh checks only values that differ from it)" {
  run bash -c 'source "$1/scripts/lib/common.sh"; mvp::config::read_contract
    for entry in "${MVP_CONTRACT_TYPES[@]}"; do
      name=${entry%% *}
      [[ -n ${MVP_CONTRACT_DEFAULT_OF[$name]+set} ]] || continue
      # shellcheck disable=SC2086
      mvp::config::of_type "${MVP_CONTRACT_DEFAULT_OF[$name]}" ${entry#* } || [[ -z ${MVP_CONTRACT_DEFAULT_OF[$name]} ]] ||
        echo "$name: default ${MVP_CONTRACT_DEFAULT_OF[$name]} is not ${entry#* }"
    done' _ "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "settings: a wrong value is one ERROR line naming the setting, what it must be and where to fix it; nothing runs" {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env
  local case
  for case in "MVP_WORKERS=0|a whole number from 1 to 99" "MVP_LOG_SYNC_SECONDS=soon|a number of seconds, e.g. 30 or 0.5" \
    "MVP_SHM_SIZE=16x|a size such as 16g: a number, then b, k, m or g" "MVP_NIGHTLY_KEEP=0|a whole number >= 1" \
    "SHARED_ROOT=rel|an absolute path" "MVP_SSH_LOGICAL_GPUS=2|0 or 1" "MVP_K8S_HEAD_SERVICE=Head_Svc|a DNS name"; do
    run --separate-stderr env "${case%%|*}" "$MVP_REPO/scripts/50_status.sh"
    assert_failure 1
    assert_output ""
    [[ $(grep -c . <<<"$stderr") == 1 ]]
    [[ $stderr == "ERROR: ${case%%=*}='$(cut -d= -f2 <<<"${case%%|*}")' must be ${case#*|}"*"; fix it where it is set: config file, environment or flag (config/settings.contract: type "* ]] ||
      fail "$case: $stderr"
  done
  MVP_LOG_SYNC_SECONDS=1.5 run bash -c 'source "$1/scripts/lib/common.sh"; MVP_QUIET_CONFIG=1 mvp::config::init; echo "$MVP_LOG_SYNC_SECONDS"' _ "$MVP_REPO"
  assert_output "1.5"
}

@test "settings: an entry's kind is its first line (config.sh places each line by it in one pass); a kind after its type is refused with the line" {
  local tree n
  tree=$(copy_tree)
  python3 - "$tree/config/settings.contract" <<'PY'
import sys
from pathlib import Path
p = Path(sys.argv[1])
t = p.read_text()
p.write_text(t.replace("MVP_STOP_AT_STEP\n  kind     internal\n  type     word\n", "MVP_STOP_AT_STEP\n  type     word\n  kind     internal\n"))
PY
  n=$(grep -n -A2 '^MVP_STOP_AT_STEP$' "$tree/config/settings.contract" | grep 'kind' | cut -d- -f1)
  run env PYTHONPATH="$tree/helpers" python3 -m mvp settings --markdown
  assert_failure
  assert_output --partial "settings.contract:$n: kind 'internal' is not one of setting, env, internal on the entry's first line"
}
