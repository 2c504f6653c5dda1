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
    grep -v '^[^:]*/helpers/mvp/worker/redact.py:[0-9]*:SECRET_NAME = re.compile(r"') || return 0
  echo "$hits"
  return 1
}

@test "one owner: the secret-name rule is written only in helpers/mvp/worker/redact.py (SECRET_NAME)" {
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
  want=$(PYTHONPATH="$MVP_REPO/helpers" python3 -c 'from mvp.worker import redact; print(redact.SECRET_NAME.pattern)')
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
from mvp.core.settings import read_contract

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
  echo 'PODS = ("MVP_WORKERS", "MVP_JOB_TIMEOUT", "MVP_MODEL_ID")' >>"$BATS_TEST_TMPDIR/tree/helpers/mvp/render/render_kuberay.py"
  run check_pod_settings "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --partial "/helpers/mvp/render/render_kuberay.py:"
}

# ${NAME:-VALUE} on a setting under scripts/ with a VALUE that is not empty:
# a second default beside the contract's. Each exception, FILE:NAME, and why
# it is not one.
DEFAULT_EXCEPTIONS=(
  # Set by --dry-run or the environment before config.sh runs; 0 is its start value, not a setting's default.
  "scripts/lib/common.sh:MVP_DRY_RUN"
  # kind env, read before the config is loaded; 0 is the switch left off.
  "scripts/lib/config.sh:MVP_QUIET_CONFIG"
  # kind internal, set by 51 and 52 only: unset is "not head-only", not a setting's default.
  "scripts/lib/runtime_kuberay.sh:MVP_HEAD_ONLY"
  # The Makefile and libexec/system_packages.sh download before any config is loaded (no contract read);
  # the contract's doc states the same "30 90".
  "scripts/lib/retry.sh:MVP_DOWNLOAD_RETRY_DELAYS"
  # Computed at render time from the number of jobs (MVP_JOB_TIMEOUT per job + 15 min), as the contract's doc says.
  "scripts/70_render_sbatch.sh:MVP_SLURM_TIME"
  # A message's word for empty (Slurm's default partition is then used): no value is given to Slurm.
  "scripts/70_render_sbatch.sh:MVP_SLURM_HEAD_PARTITION"
  "scripts/70_render_sbatch.sh:MVP_SLURM_PARTITION"
  # kind internal: 1 only in the nightly run that holds its lock (flock's child); unset is "not that run".
  "scripts/60_nightly_regression.sh:MVP_NIGHTLY_HOLDS_LOCK"
  # A message's words for an unset CODE_ID (31 derives it from the tree), in the nightly's plan line.
  "scripts/60_nightly_regression.sh:CODE_ID"
)

# check_defaults ROOT: FILE:LINE: NAME of each ${NAME:-VALUE} with VALUE not
# empty on a setting under ROOT/scripts that DEFAULT_EXCEPTIONS does not
# list; exit 1 if any.
check_defaults() {
  local hits=() line file name rest
  while IFS= read -r line; do
    file=${line#"$1/"} file=${file%%:*} rest=$line
    while [[ $rest =~ \$\{((MVP_[A-Z0-9_]+|SHARED_ROOT|CODE_ID):-[^}])(.*) ]]; do
      name=${BASH_REMATCH[2]} rest=${BASH_REMATCH[3]}
      [[ " ${DEFAULT_EXCEPTIONS[*]} " == *" $file:$name "* ]] || hits+=("${line%%:*}:$(cut -d: -f2 <<<"$line"): $name")
    done
  done < <(grep -rnE '\$\{(MVP_[A-Z0-9_]+|SHARED_ROOT|CODE_ID):-[^}]' "$1/scripts")
  ((${#hits[@]} == 0)) && return 0
  printf '%s\n' "${hits[@]}"
  return 1
}

@test "one owner: no setting under scripts/ has a second default (\${MVP_X:-value}) beside the contract's, but the listed exceptions" {
  run check_defaults "$MVP_REPO"
  assert_success
}

@test "one owner: a planted \${MVP_X:-value} default fails the check with its file, line and name" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo 'x=${MVP_SSH_USER:-root}' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh"
  run check_defaults "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --regexp "/scripts/lib/runtime_ssh.sh:[0-9]+: MVP_SSH_USER$"
}

@test "one owner: the job's launcher keeps no default of its own for the log copy's period (the contract's MVP_LOG_SYNC_SECONDS)" {
  run grep -nE 'log_sync_s", *[0-9]' "$MVP_REPO/helpers/mvp/worker/launch.py"
  assert_failure
}

# check_hand_validation ROOT: FILE:LINE of each `=~` on a setting (a name the
# contract declares of kind setting or env) under ROOT/scripts: a setting's
# form is its contract type, checked once by config.sh (mvp::config::check_types).
check_hand_validation() {
  PYTHONPATH="$1/helpers" python3 - "$1" <<'PY'
import re, sys
from pathlib import Path
from mvp.core.settings import read_contract

root = Path(sys.argv[1])
settings = {e.name for e in read_contract(root / "config" / "settings.contract") if e.kind != "internal"}
pattern = re.compile(r"\$\{?!?([A-Z][A-Z0-9_]*)[^\s]*\s*=~")
problems = []
for path in sorted((root / "scripts").rglob("*")):
    if not path.is_file():
        continue
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        for name in pattern.findall(line):
            if name in settings:
                problems.append(f"{path}:{n}: {name} checked by hand; its type in config/settings.contract is the check")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}

@test "one owner: no script checks a setting's form by hand (=~); the contract's type, checked by config.sh, is the one check" {
  run check_hand_validation "$MVP_REPO"
  assert_success
}

@test "one owner: a planted hand regex on a setting fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo '[[ $MVP_LOG_SYNC_SECONDS =~ ^[0-9]+$ ]] || exit 1' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/config.sh"
  echo '[[ ${MVP_NIGHTLY_KEEP:-} =~ ^[1-9] ]] || exit 1' >>"$BATS_TEST_TMPDIR/tree/scripts/60_nightly_regression.sh"
  run check_hand_validation "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_line --regexp "/scripts/lib/config.sh:[0-9]+: MVP_LOG_SYNC_SECONDS checked by hand"
  assert_line --regexp "/scripts/60_nightly_regression.sh:[0-9]+: MVP_NIGHTLY_KEEP checked by hand"
}

# A runtime's mvp::rt::derive that sets a name the contract gives per runtime
# (default.RUNTIME or default.*) to a value it computes with no command: a
# second owner of that default. Each exception, FILE:NAME, and why.
RUNTIME_EXCEPTIONS=(
  # The head Service's URL, needed inside derive itself to wait for the cluster's pods.
  "runtime_kuberay.sh:MVP_DASHBOARD_URL"
  # The pod's auth is what its environment says (RAY_AUTH_MODE from the CronJob), not a default.
  "runtime_kuberay.sh:MVP_RAY_AUTH"
  # What the sbatch script asked Slurm for (--cpus-per-task), over any value baked into the script.
  "runtime_slurm.sh:MVP_WORKER_CPUS"
  # The allocation's head address, asked of Slurm (its slurm_node_ip runs scontrol and getent).
  "runtime_slurm.sh:MVP_HEAD_IP"
)

# check_runtime_defaults ROOT: FILE:LINE: NAME of each such assignment in
# ROOT/scripts/lib/runtime_*.sh; exit 1 if any. A value built through $(...)
# counts too when what it runs is one of the runtime's own mvp::rt:: functions
# (FILE:LINE: NAME (built by FUNCTION)): a rule the runtime keeps for itself,
# as its own host<->node mapping was; a command, or a function of the shared
# library (mvp::nodes::path), computes it where every runtime can ask.
check_runtime_defaults() {
  PYTHONPATH="$1/helpers" python3 - "$1" "${RUNTIME_EXCEPTIONS[@]}" <<'PY'
import re, sys
from pathlib import Path
from mvp.core.settings import read_contract

root, exceptions = Path(sys.argv[1]), set(sys.argv[2:])
per_runtime = {e.name for e in read_contract(root / "config" / "settings.contract") if e.derived}
problems = []
for path in sorted((root / "scripts" / "lib").glob("runtime_*.sh")):
    body = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        body = body or line.startswith("mvp::rt::derive()")
        for name, value in re.findall(r"(?:^|[\s;&|{(])([A-Z][A-Z0-9_]*)=(\S*)", line) if body else ():
            if name not in per_runtime or f"{path.name}:{name}" in exceptions:
                continue
            own = re.match(r'"?\$\((mvp::rt::[a-z0-9_]+)', value)
            if not value.startswith("$("):
                problems.append(f"{path}:{n}: {name}")
            elif own:
                problems.append(f"{path}:{n}: {name} (built by {own.group(1)})")
        body = body and not line.startswith("}") and not line.endswith("; }")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}

@test "one owner: every per-runtime default is the contract's default.RUNTIME; no runtime's derive sets one of its own" {
  run check_runtime_defaults "$MVP_REPO"
  assert_success
}

@test "one owner: a per-runtime default planted in a runtime's derive fails the check with its file, line and name" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  sed -i 's/^mvp::rt::derive() { :; }$/mvp::rt::derive() {\n  MVP_PYTHON=$MVP_VENV\/bin\/python\n}/' "$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_local.sh"
  grep -q '^  MVP_PYTHON=' "$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_local.sh"
  run check_runtime_defaults "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --regexp "/scripts/lib/runtime_local.sh:[0-9]+: MVP_PYTHON$"
}

@test "one owner: a per-runtime value built through \$(...) by a function of the runtime's own fails the check with its file, line, name and that function" {
  local ssh=$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh rt=mvp::rt::
  copy_tree "$BATS_TEST_TMPDIR/tree"
  # The planted lines, as the ssh runtime's own mapping once read ($rt: no such
  # function is defined in the real library, which shell_layout.bats checks).
  sed -i "s|^  mvp::nodes::path --outside-as-is \"\\\$MVP_REPO\" MVP_NODE_REPO\$|  MVP_NODE_REPO=\$(${rt}node_path \"\\\$MVP_REPO\")|" "$ssh"
  grep -qF "  MVP_NODE_REPO=\$(${rt}node_path \"\$MVP_REPO\")" "$ssh"
  # shellcheck disable=SC2016  # the copy's body, as written in the runtime
  echo "${rt}node_path() "'{ local p=$1 host=${MVP_HOST_SHARED_DIR%/}; echo "${SHARED_ROOT%/}${p#"$host"}"; }' >>"$ssh"
  run check_runtime_defaults "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --regexp "/scripts/lib/runtime_ssh.sh:[0-9]+: MVP_NODE_REPO \(built by ${rt}node_path\)$"
}

# check_node_names ROOT: the nodes' names (mvp11-ray-head, mvp11-ray-worker-N)
# are spelled in code under ROOT/scripts and ROOT/helpers only in the body of
# mvp::nodes::name_all (nodes.sh), however the value is built; FILE:LINE
# of each other and exit 1 if any.
check_node_names() {
  local owner=$1/scripts/lib/nodes.sh first last hits
  read -r first last < <(awk '/^mvp::nodes::name_all\(\) \{$/ { f = NR } f && /^}$/ { print f, NR; exit }' "$owner")
  [[ -n $first ]] || { echo "$owner has no mvp::nodes::name_all, the owner"; return 1; }
  hits=$(grep -rnE --exclude-dir=__pycache__ 'mvp11-ray-(head|worker)' "$1/scripts" "$1/helpers" | grep -vE '^[^:]*:[0-9]+: *#' |
    awk -F: -v owner="$owner" -v first="$first" -v last="$last" '!($1 == owner && $2 > first && $2 < last)') || true
  [[ -z $hits ]] && return 0
  echo "$hits"
  return 1
}

@test "one owner: the nodes' names are spelled only in mvp::nodes::name_all (nodes.sh); config.sh and the ssh runtime asks it again after its count" {
  run check_node_names "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "one owner: a second node-naming loop in a runtime, its name built through \$(...), fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  # shellcheck disable=SC2016  # the planted line
  echo 'for ((i = 0; i < MVP_WORKERS; i++)); do MVP_NODES+=("$(printf "mvp11-ray-worker-%s" "$i")"); done' >>"$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh"
  run check_node_names "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --regexp "^$BATS_TEST_TMPDIR/tree/scripts/lib/runtime_ssh.sh:[0-9]+:for "
}

@test "one owner: each default.WHEN of the contract names a runtime (a scripts/lib/runtime_*.sh), a trainer profile or *; MVP_RUNTIME's choices are those files, MVP_TRAINER_PROFILE's trainer_profile.py's" {
  run env PYTHONPATH="$MVP_REPO/helpers" python3 - "$MVP_REPO" <<'PY'
import sys
from pathlib import Path
from mvp.core.settings import read_contract

root = Path(sys.argv[1])
entries = {e.name: e for e in read_contract()}
runtimes = sorted(p.name[len("runtime_"):-3] for p in (root / "scripts" / "lib").glob("runtime_*.sh"))
profiles = entries["MVP_TRAINER_PROFILE"].type.split()[1:]
if sorted(entries["MVP_RUNTIME"].type.split()[1:]) != runtimes:
    print(f"MVP_RUNTIME's type {entries['MVP_RUNTIME'].type} is not the runtimes {runtimes}")
from mvp.jobs.planning import trainer_profile
if tuple(profiles) != trainer_profile.PROFILES:
    print(f"MVP_TRAINER_PROFILE's type {entries['MVP_TRAINER_PROFILE'].type} is not trainer_profile.py's PROFILES {trainer_profile.PROFILES}")
for e in entries.values():
    for when, _ in e.derived:
        if when != "*" and when not in runtimes and when not in profiles:
            print(f"{e.name}: default.{when} is neither a runtime nor a profile")
PY
  assert_success
  assert_output ""
}

# check_renderer_environ ROOT: render_kuberay.py reads no variable from the
# environment (os.environ, getenv): its settings come through the one
# settings object (settings.k8s_*, settings.text). FILE:LINE each, exit 1 if any.
check_renderer_environ() {
  local hits
  hits=$(grep -nE '\benviron\b|getenv' "$1/helpers/mvp/render/render_kuberay.py") || return 0
  sed "s|^|$1/helpers/mvp/render/render_kuberay.py:|" <<<"$hits"
  return 1
}

@test "one owner: the KubeRay renderer reads its MVP_K8S_* settings through the settings object, not os.environ" {
  run check_renderer_environ "$MVP_REPO"
  assert_success
}

@test "one owner: a planted os.environ read of an MVP_K8S_* setting in the renderer fails the check with its file and line" {
  copy_tree "$BATS_TEST_TMPDIR/tree"
  echo 'PVC = os.environ["MVP_K8S_PVC"]' >>"$BATS_TEST_TMPDIR/tree/helpers/mvp/render/render_kuberay.py"
  run check_renderer_environ "$BATS_TEST_TMPDIR/tree"
  assert_failure
  assert_output --regexp "/helpers/mvp/render/render_kuberay.py:[0-9]+:PVC = os.environ"
}

# check_layout_paths ROOT: no script under ROOT/scripts builds a path of the
# shared root's layout by hand ($SHARED_ROOT/<dir> or $MVP_HOST_SHARED_DIR/<dir>,
# <dir> a directory of shared-layout.txt): mvp::config::layout (and mvp::nodes::path)
# own those; FILE:LINE of each and exit 1 if any.
check_layout_paths() {
  local dirs hits
  dirs=$(awk '!/^#/ && NF >= 2 {print $2}' "$MVP_REPO/shared-layout.txt" | cut -d/ -f1 | sort -u | paste -sd'|')
  [[ -n $dirs ]] || return 2
  hits=$(grep -rnE "\\\$\\{?(SHARED_ROOT|MVP_HOST_SHARED_DIR)\\}?/($dirs)\\b" "$1/scripts" | grep -vE '^[^:]*:[0-9]+: *#') || return 0
  echo "$hits"
  return 1
}

@test "one owner: no script builds a shared-root path of the layout by hand; mvp::config::layout (from shared-layout.txt) owns them, the Ray token's included" {
  run check_layout_paths "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "one owner: a planted \$SHARED_ROOT/secrets/... in config.sh fails the layout check with its file and line" {
  local tree=$BATS_TEST_TMPDIR/tree
  copy_tree "$tree"
  echo '  MVP_RAY_TOKEN_FILE=$SHARED_ROOT/secrets/ray_auth_token' >>"$tree/scripts/lib/config.sh"
  run check_layout_paths "$tree"
  assert_failure 1
  assert_output --regexp "^$tree/scripts/lib/config.sh:[0-9]+:  MVP_RAY_TOKEN_FILE=\\\$SHARED_ROOT/secrets/ray_auth_token$"
}

# check_workload_facts ROOT: a per-workload fact (a key, a figure, a
# behaviour of verl's trainer) is a field of helpers/mvp/jobs/planning/workloads.py's
# table; no other file of helpers/mvp or scripts/ compares a workload with a
# name or keys a mapping by one. FILE:LINE each, exit 1 if any.
check_workload_facts() {
  local hits
  hits=$(grep -rnE --include=*.py --include=*.sh --exclude-dir=__pycache__ \
    "workload[^=]*(==|!=) *[\"']?(ppo|grpo|sft)\\b|(^|[{,]) *[\"'](ppo|grpo|sft)[\"'] *:" "$1/helpers/mvp" "$1/scripts" |
    grep -v '^[^:]*/helpers/mvp/jobs/planning/workloads.py:') || return 0
  echo "$hits"
  return 1
}

@test "one owner: every per-workload fact is a field of the Workload table (workloads.py); no other file compares a workload with a name or keys a mapping by one" {
  run check_workload_facts "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "one owner: a planted per-workload fact in plan.py, a mapping by workload in bisection.py and 60's bash copy fail the check with their file and line" {
  local tree=$BATS_TEST_TMPDIR/tree
  copy_tree "$tree"
  printf '%s\n' '    if workload == "sft":' >>"$tree/helpers/mvp/jobs/planning/plan.py"
  printf '%s\n' 'SEED_KEYS = {"ppo": "data.seed", "grpo": "data.seed", "sft": "trainer.seed"}' >>"$tree/helpers/mvp/nightly/bisection.py"
  printf '%s\n' '  [[ ${SUITE[job_${job}_workload]} != sft ]] || keep=trainer.max_ckpt_to_keep=1' >>"$tree/scripts/60_nightly_regression.sh"
  run check_workload_facts "$tree"
  assert_failure 1
  assert_equal "${#lines[@]}" 3
  assert_line --regexp "^$tree/helpers/mvp/jobs/planning/plan.py:[0-9]+:    if workload == \"sft\":$"
  assert_line --regexp "^$tree/helpers/mvp/nightly/bisection.py:[0-9]+:SEED_KEYS = "
  assert_line --regexp "^$tree/scripts/60_nightly_regression.sh:[0-9]+:  \[\[ "
}

# check_lists ROOT: the trainer profiles are listed only in the contract
# (MVP_TRAINER_PROFILE's one-of; trainer_profile.PROFILES reads it) and the
# judge's check names only in helpers/mvp/nightly/suite.py (CHECKS, and
# NIGHT_CHECKS, from which bisection.PROBE_CHECKS is derived): a line of
# another file of helpers/mvp or scripts/ naming two profiles or two checks is
# a second list. FILE:LINE each, exit 1 if any.
check_lists() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" - "$1" <<'PY'
import re, sys
from pathlib import Path
from mvp.nightly import suite
from mvp.jobs.planning import trainer_profile

root = Path(sys.argv[1])
lists = {"check": (set(suite.CHECKS), root / "helpers/mvp/nightly/suite.py"),
         "profile": (set(trainer_profile.PROFILES) - {"gpu"}, None)}
hits = []
for path in sorted([*(root / "helpers/mvp").rglob("*.py"), *(root / "scripts").rglob("*.sh")]):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        quoted = set(re.findall(r"[\"']([a-z_-]+)[\"']", line))
        if any(len(quoted & names) >= 2 and path != owner for names, owner in lists.values()):
            hits.append(f"{path}:{n}: {line.strip()}")
print("\n".join(hits), end="")
sys.exit(1 if hits else 0)
PY
}

@test "one owner: the trainer profiles are listed only in the contract, the judge's check names only in suite.py (61's probe checks derived from them)" {
  run check_lists "$MVP_REPO"
  assert_success
  assert_output ""
}

@test "one owner: a second list of the profiles in suite.py and of the checks in bisection.py fail the check with their file and line" {
  local tree=$BATS_TEST_TMPDIR/tree
  copy_tree "$tree"
  printf '%s\n' 'PROFILES = ("gpu", "cpu", "gpu-smoke")' >>"$tree/helpers/mvp/nightly/suite.py"
  printf '%s\n' 'PROBE_CHECKS = ("submitted", "driver_on_worker", "job_dir_complete")' >>"$tree/helpers/mvp/nightly/bisection.py"
  run check_lists "$tree"
  assert_failure 1
  assert_equal "${#lines[@]}" 2
  assert_line --regexp "^$tree/helpers/mvp/nightly/bisection.py:[0-9]+: PROBE_CHECKS = "
  assert_line --regexp "^$tree/helpers/mvp/nightly/suite.py:[0-9]+: PROFILES = "
}
