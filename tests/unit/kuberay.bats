#!/usr/bin/env bats
# 71_render_kuberay.sh: the RayCluster and RayJob it writes are
# valid against KubeRay v1.7's CRDs (../shared/schemas/kuberay-v1.7, made
# strict: unknown fields fail), the nightly's CronJob has the batch/v1
# structure it relies on, and all carry the runbook's topology and job plan;
# each Ray group's container command, rebuilt as KubeRay v1.7.0 builds it
# (a schema cannot see it), runs in bash to a `ray start` that Ray's own
# parser takes.
# The snapshot is real verl 0.9.1: a job's overrides pass the preflight first.

setup_file() {
  load ../test_helper/common
  mvp_preflight_facts "$BATS_FILE_TMPDIR/preflight" || { echo "no preflight facts of real verl; run make setup" >&3; return 1; }
  export MVP_TEST_CRD_CACHE=$BATS_FILE_TMPDIR/crd-cache  # each CRD parsed once (validate_kuberay.py)
}

setup() {
  load ../test_helper/common
  SCHEMAS=${MVP_TEST_SCHEMAS:-$(cd "$MVP_REPO/../shared/schemas/kuberay-v1.7" 2>/dev/null && pwd)}
  [[ -f $SCHEMAS/ray.io_rayjobs.yaml ]] || { echo "KubeRay CRDs not found; set MVP_TEST_SCHEMAS" >&2; return 1; }
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=local
  export SHARED_ROOT="$BATS_TEST_TMPDIR/shared root" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4 CODE_ID=""
  mvp_check_root Qwen/Qwen2.5-0.5B-Instruct "$BATS_FILE_TMPDIR/preflight" "$BATS_FILE_TMPDIR/data"
}

render() { "$MVP_REPO/scripts/71_render_kuberay.sh" "$@" 2>/dev/null; }

validate() { "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/validate_kuberay.py" "$SCHEMAS" "$1"; }

# doc FILE KIND: that kind's document of FILE as JSON.
doc() {
  "$MVP_REPO/.venv/bin/python" -c 'import json, sys, yaml
print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == sys.argv[2]][0]))' "$1" "$2"
}

# ray_starts FILE...: every Ray group of the rendered FILEs, its container
# command rebuilt as KubeRay v1.7.0 builds it (tests/test_helper/kuberay_pod_command.py)
# and executed as the kubelet would (command + args, so by /bin/bash -c), with
# a `ray` that only records its arguments; then those arguments as Ray 2.60's
# own `ray start` parser takes them (tests/test_helper/ray_start_args.py).
# One JSON line per group: resource, group, command, args, exit (of bash),
# argv (what `ray` got) and params + resources, or error (Ray's refusal).
ray_starts() {
  local py=$MVP_REPO/.venv/bin/python dir f line i=0
  local -a cmd=() argv=()
  dir=$(mktemp -d "$BATS_TEST_TMPDIR/ray-starts.XXXXXX")
  mkdir -p "$dir/bin" "$dir/argv"
  cat >"$dir/bin/ray" <<'STUB'
#!/bin/bash
printf '%s\0' "$@" >"$RAY_ARGV_FILE"
STUB
  chmod +x "$dir/bin/ray"
  for f in "$@"; do "$py" "$MVP_REPO/tests/test_helper/kuberay_pod_command.py" "$f" || return 1; done >"$dir/groups.json"
  while IFS= read -r line; do
    mapfile -d '' cmd < <(jq -j '(.command + .args)[] | "\(.)\u0000"' <<<"$line")
    : >"$dir/argv/$i"  # stays empty if bash never runs `ray`
    RAY_ARGV_FILE=$dir/argv/$i PATH="$dir/bin:$PATH" "${cmd[@]}" </dev/null 2>/dev/null
    echo "{\"exit\": $?}" >>"$dir/exits.json"
    argv+=("$dir/argv/$i")
    i=$((i + 1))
  done <"$dir/groups.json"
  ((i > 0)) || return 1
  "$py" "$MVP_REPO/tests/test_helper/ray_start_args.py" "${argv[@]}" 2>/dev/null >"$dir/ray.json" || return 1
  jq -c -n --slurpfile g "$dir/groups.json" --slurpfile e "$dir/exits.json" --slurpfile r "$dir/ray.json" \
    '[$g, $e, $r] | transpose[] | add'
}

@test "71 cluster: valid RayCluster; head control plane only, GPU workers with worker_node, RWX claim at /private, token auth" {
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  run validate "$BATS_TEST_TMPDIR/c.yaml"
  assert_success
  local c
  c=$(doc "$BATS_TEST_TMPDIR/c.yaml" RayCluster)
  jq -e '.spec.headGroupSpec.rayStartParams == {"num-cpus": "0", "num-gpus": "0"}' <<<"$c"
  # worker_node in the group's resources map, which KubeRay quotes for bash
  # itself; never in rayStartParams, which it pastes into bash unquoted, and
  # no rayStartParams resource beside the map (v1.7.0 refuses both). The GPUs
  # are the container's nvidia.com/gpu limit, KubeRay's source of --num-gpus.
  jq -e '.spec.workerGroupSpecs[0] | .replicas == 2 and .resources == {"worker_node": "100"}
         and (has("rayStartParams") | not) and .template.spec.containers[0].resources.limits["nvidia.com/gpu"] == 4' <<<"$c"
  # No GPUs: no limit, and Ray's GPU 0 in the map (Ray never counts a GPU the node shows the pod).
  MVP_GPUS_PER_WORKER=0 render cluster --out "$BATS_TEST_TMPDIR/cpu.yaml"
  jq -e '.spec.workerGroupSpecs[0] | .resources == {"worker_node": "100", "GPU": "0"}
         and (.template.spec.containers[0].resources.limits | has("nvidia.com/gpu") | not)' \
    <<<"$(doc "$BATS_TEST_TMPDIR/cpu.yaml" RayCluster)"
  jq -e '[.spec.headGroupSpec.template, .spec.workerGroupSpecs[0].template]
         | all(.spec.containers[0].volumeMounts[0] == {"name": "shared", "mountPath": "/private"}
               and .spec.volumes[0].persistentVolumeClaim.claimName == "mvp-shared")' <<<"$c"
  # The workers' /dev/shm is memory-backed and MVP_K8S_SHM_SIZE big (a container's own is 64 MiB).
  jq -e '.spec.workerGroupSpecs[0].template.spec | .containers[0].volumeMounts[1] == {"name": "dshm", "mountPath": "/dev/shm"}
         and .volumes[1] == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}' <<<"$c"
  jq -e '.spec.authOptions.mode == "token"' <<<"$c"
  jq -e '.spec.accessModes == ["ReadWriteMany"]' <<<"$(doc "$BATS_TEST_TMPDIR/c.yaml" PersistentVolumeClaim)"
  MVP_K8S_AUTH=0 render cluster --out "$BATS_TEST_TMPDIR/noauth.yaml"
  jq -e '.spec | has("authOptions") | not' <<<"$(doc "$BATS_TEST_TMPDIR/noauth.yaml" RayCluster)"
}

@test "71 job: valid RayJob; entrypointResources a JSON string, PYTHONPATH the snapshot, no working_dir, deadlines set" {
  render job "$MVP_REPO/templates/jobspecs/ppo.yaml" --override trainer.total_training_steps=5 --out "$BATS_TEST_TMPDIR/j.yaml"
  run validate "$BATS_TEST_TMPDIR/j.yaml"
  assert_success
  local j id
  j=$(doc "$BATS_TEST_TMPDIR/j.yaml" RayJob)
  id=$(jq -r .spec.jobId <<<"$j")
  [[ $id =~ ^ppo-[0-9]{8}T[0-9]{6}-[0-9a-f]{6}$ ]]
  jq -e '.spec.entrypointResources == "{\"worker_node\": 1}" and .spec.entrypointNumCpus == 1' <<<"$j"
  jq -e --arg id "$id" '.spec.entrypoint == "python3 /workspace/mvp/helpers/mvp/worker/launch.py /private/jobs/" + $id' <<<"$j"
  jq -e '.spec.runtimeEnvYAML | contains("PYTHONPATH: /private/common/code/verl/codeA:${PYTHONPATH}")' <<<"$j"
  jq -e '.spec.runtimeEnvYAML | contains("working_dir") | not' <<<"$j"
  jq -e '.spec.shutdownAfterJobFinishes == true and .spec.ttlSecondsAfterFinished == 3600
         and .spec.activeDeadlineSeconds == 7200 + 1800' <<<"$j"
  jq -e '.spec.rayClusterSpec.headGroupSpec.rayStartParams["num-cpus"] == "0"' <<<"$j"
  # The submitter pod runs the runbook's submit path with this id and waits.
  jq -e --arg id "$id" '.spec.submitterPodTemplate.spec.containers[0].command as $c
         | $c[0:2] == ["sh", "-c"] and ($c[2] | contains("| exec python3 -m mvp submit \"$@\""))
         and ($c | index("--wait")) != null
         and $c[($c | index("--submission-id")) + 1] == $id
         and $c[($c | index("--override")) + 1] == "trainer.total_training_steps=5"' <<<"$j"
  jq -e '.spec.submitterPodTemplate.spec.containers[0].volumeMounts[0].mountPath == "/private"' <<<"$j"
  run grep -F "$SHARED_ROOT" "$BATS_TEST_TMPDIR/j.yaml"
  assert_failure
}

@test "71 job: the submitter's command, run as rendered, is taken by the runbook's submit (spec and config on its stdin, not argv)" {
  render job "$MVP_REPO/templates/jobspecs/ppo.yaml" --override trainer.total_training_steps=5 --out "$BATS_TEST_TMPDIR/j.yaml"
  local c
  c=$(doc "$BATS_TEST_TMPDIR/j.yaml" RayJob | jq -c .spec.submitterPodTemplate.spec.containers[0])
  # The pod's environment, with this host's paths where the pod has its mounts.
  local -a env=() cmd=()
  mapfile -d '' env < <(jq -j '.env[] | select(.name != "SHARED_ROOT" and .name != "PYTHONPATH")
    | "\(.name)=\(.value)\u0000"' <<<"$c")
  mapfile -d '' cmd < <(jq -j '.command[] | "\(.)\u0000"' <<<"$c")
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  ln -s "$MVP_REPO/.venv/bin/python" "$BATS_TEST_TMPDIR/bin/python3"
  run --separate-stderr env -i "${env[@]}" "SHARED_ROOT=$SHARED_ROOT" "PYTHONPATH=$MVP_REPO/helpers" \
    RAY_DASHBOARD_ADDRESS=127.0.0.1:1 "PATH=$BATS_TEST_TMPDIR/bin:/usr/bin:/bin" "${cmd[@]}" --check-only
  assert_success
  jq -e --arg id "$(jq -r '.command as $c | $c[($c | index("--submission-id")) + 1]' <<<"$c")" \
    '.resolved | .submission_id == $id and .address == "http://127.0.0.1:1"
     and .trainer_overrides["trainer.total_training_steps"] == "5"' <<<"$output"
  # Neither text is on the command line.
  run grep -c -F "trainer_overrides" <<<"$(jq -r '.command[]' <<<"$c")"
  assert_output 0
  # The job record names the RayCluster, from KubeRay's head service address.
  run --separate-stderr env -i "${env[@]}" "SHARED_ROOT=$SHARED_ROOT" "PYTHONPATH=$MVP_REPO/helpers" \
    RAY_DASHBOARD_ADDRESS=rayjob-ppo-x7k2p-head-svc.mvp.svc.cluster.local:8265 "PATH=$BATS_TEST_TMPDIR/bin:/usr/bin:/bin" \
    "${cmd[@]}" --check-only
  assert_success
  jq -e '.resolved.cluster == "kuberay@rayjob-ppo-x7k2p"' <<<"$output"
}

@test "71 nightly: the RayCluster and a plain batch/v1 CronJob (no RayCronJob, no feature gate): Forbid, on the schedule, its pod runs 60 (runtime kuberay) against the cluster's head Service with the token of the cluster's Secret and the shared claim" {
  MVP_K8S_TIME_ZONE=Europe/Berlin render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  run validate "$BATS_TEST_TMPDIR/n.yaml"
  assert_success
  run grep '^kind: ' "$BATS_TEST_TMPDIR/n.yaml"
  assert_output $'kind: PersistentVolumeClaim\nkind: RayCluster\nkind: CronJob'
  # No schema of batch/v1 here: the structure the nightly relies on, field by field.
  local c
  c=$(doc "$BATS_TEST_TMPDIR/n.yaml" CronJob)
  jq -e '.apiVersion == "batch/v1" and .metadata.name == "mvp-nightly"
         and .spec.schedule == "30 2 * * *" and .spec.timeZone == "Europe/Berlin" and .spec.concurrencyPolicy == "Forbid"
         and .spec.startingDeadlineSeconds > 0
         and (.spec.jobTemplate.spec | .backoffLimit == 0 and .activeDeadlineSeconds == 4 * 7200 + 1800
              and .template.spec.restartPolicy == "Never")' <<<"$c"
  jq -e '.spec.jobTemplate.spec.template.spec | (.containers | length) == 1 and .containers[0].name == "nightly"
         and .containers[0].command == ["bash", "/workspace/mvp/scripts/60_nightly_regression.sh"]
         and .containers[0].args == []
         and .containers[0].volumeMounts == [{"name": "shared", "mountPath": "/private"}]
         and .volumes == [{"name": "shared", "persistentVolumeClaim": {"claimName": "mvp-shared"}}]' <<<"$c"
  # Its env: the runtime, the cluster by its Service (KubeRay: <RayCluster>-head-svc), the token
  # from the Secret KubeRay makes for it (named after the cluster, key auth_token), no value of it.
  jq -e --argjson rc "$(doc "$BATS_TEST_TMPDIR/n.yaml" RayCluster)" '.spec.jobTemplate.spec.template.spec.containers[0].env
         | from_entries as $e | map(select(.valueFrom)) as $refs
         | $e.MVP_RUNTIME == "kuberay" and $e.SHARED_ROOT == "/private"
         and $e.MVP_K8S_HEAD_SERVICE == ($rc.metadata.name + "-head-svc") and $e.RAY_AUTH_MODE == "token"
         and $refs == [{"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": $rc.metadata.name, "key": "auth_token"}}}]
         and $e.MVP_WORKERS == "2" and $e.MVP_GPUS_PER_WORKER == "4" and ($e | has("MVP_NIGHTLY_OVERRIDES"))' <<<"$c"
  # The cluster it runs on is the one `71 cluster` renders.
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  assert_equal "$(doc "$BATS_TEST_TMPDIR/n.yaml" RayCluster)" "$(doc "$BATS_TEST_TMPDIR/c.yaml" RayCluster)"
  # MVP_K8S_NIGHTLY_ONLY becomes 60's --only, and the deadline counts those jobs; a wrong name is one line.
  MVP_K8S_NIGHTLY_ONLY=ppo,sft render nightly --out "$BATS_TEST_TMPDIR/n3.yaml"
  jq -e '.spec.jobTemplate.spec | .template.spec.containers[0].args == ["--only", "ppo,sft"]
         and .activeDeadlineSeconds == 3 * 7200 + 1800' <<<"$(doc "$BATS_TEST_TMPDIR/n3.yaml" CronJob)"
  local error
  refused MVP_K8S_NIGHTLY_ONLY=ppo,dpo -- nightly
  assert_equal "$error" "ERROR: MVP_K8S_NIGHTLY_ONLY='ppo,dpo': 'dpo' is not a nightly job of $MVP_REPO/config/nightly.yaml; use ppo1, ppo2, grpo, sft (ppo = ppo1, ppo2), or leave it empty for all of them"
}

@test "71 nightly: the CronJob's container, run as rendered (its env only, the runbook at MVP_K8S_RUNBOOK_DIR) with --dry-run, is 60 planning the night on runtime kuberay against the cluster named by its Service" {
  MVP_K8S_RUNBOOK_DIR=$MVP_REPO MVP_K8S_NIGHTLY_ONLY=ppo1,grpo render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  local -a cmd=() env=()
  mapfile -d '' cmd < <(jq -j '.spec.jobTemplate.spec.template.spec.containers[0] | (.command + .args)[] | "\(.)\u0000"' \
    <<<"$(doc "$BATS_TEST_TMPDIR/n.yaml" CronJob)")
  mapfile -d '' env < <(jq -j '.spec.jobTemplate.spec.template.spec.containers[0].env[] | select(.value != null)
    | "\(.name)=\(.value)\u0000"' <<<"$(doc "$BATS_TEST_TMPDIR/n.yaml" CronJob)")
  run --separate-stderr env -i PATH=/usr/bin:/bin HOME="$BATS_TEST_TMPDIR" "${env[@]}" "${cmd[@]}" --dry-run
  assert_success
  assert_line --regexp "^plan of nightly-[0-9TZ]+ \(runtime kuberay, shared root /private\):$"
  assert_line --partial "then ppo1: scripts/40_submit_ppo_epoch1.sh --wait"
  assert_line --partial "then grpo: scripts/41_submit_grpo_epoch1.sh --wait"
  refute_line --partial "then sft"
  assert_line --partial "lock: /private/regressions/.nightly.lock"
}

@test "71 nightly: the CronJob runs the suite file (MVP_NIGHTLY_SUITE on the shared volume, as the pod sees it), its deadline counting the suite's jobs; a suite the pod cannot read is one ERROR line" {
  cat >"$SHARED_ROOT/suite.yaml" <<'EOF'
jobs:
  - name: team_grpo
    spec: templates/jobspecs/grpo.yaml
  - name: my_cmd
    command: python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo
EOF
  MVP_NIGHTLY_SUITE="$SHARED_ROOT/suite.yaml" MVP_NIGHTLY_RESUME=my_cmd render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  # Two jobs and my_cmd's resume-fidelity run after it.
  jq -e '.spec.jobTemplate.spec | .activeDeadlineSeconds == 3 * 7200 + 1800 and .template.spec.containers[0].args == []
         and ([.template.spec.containers[0].env[] | select(.name == "MVP_NIGHTLY_SUITE")] == [{"name": "MVP_NIGHTLY_SUITE", "value": "/private/suite.yaml"}])' \
    <<<"$(doc "$BATS_TEST_TMPDIR/n.yaml" CronJob)"
  cp "$SHARED_ROOT/suite.yaml" "$BATS_TEST_TMPDIR/elsewhere.yaml"
  local error
  refused MVP_NIGHTLY_RESUME= MVP_NIGHTLY_SUITE="$BATS_TEST_TMPDIR/elsewhere.yaml" -- nightly
  assert_equal "$error" "ERROR: MVP_NIGHTLY_SUITE=$BATS_TEST_TMPDIR/elsewhere.yaml: the nightly pod cannot read it (neither in the runbook, which the image holds, nor under SHARED_ROOT $SHARED_ROOT); move it into one of them"
  printf 'jobs:\n  - name: a\n    spec: %s\n' "$BATS_TEST_TMPDIR/elsewhere.yaml" >"$SHARED_ROOT/suite.yaml"
  cp "$MVP_REPO/templates/jobspecs/sft.yaml" "$BATS_TEST_TMPDIR/elsewhere.yaml"
  refused MVP_NIGHTLY_RESUME= MVP_NIGHTLY_SUITE="$SHARED_ROOT/suite.yaml" -- nightly
  assert_equal "$error" "ERROR: $SHARED_ROOT/suite.yaml: spec $BATS_TEST_TMPDIR/elsewhere.yaml: the nightly pod reads the suite's JobSpecs from the runbook in its image; put it in the runbook and name it relative to the repo"
}

@test "kuberay validation: a misspelt field is caught (ttlSecondsAfterFinish)" {
  render job "$MVP_REPO/templates/jobspecs/sft.yaml" --out "$BATS_TEST_TMPDIR/j.yaml"
  sed 's/^  ttlSecondsAfterFinished:/  ttlSecondsAfterFinish:/' "$BATS_TEST_TMPDIR/j.yaml" >"$BATS_TEST_TMPDIR/bad.yaml"
  run cmp -s "$BATS_TEST_TMPDIR/j.yaml" "$BATS_TEST_TMPDIR/bad.yaml"
  assert_failure
  run validate "$BATS_TEST_TMPDIR/bad.yaml"
  assert_failure
  assert_output --regexp "^RayJob/sft-.*: spec: Additional properties are not allowed \('ttlSecondsAfterFinish' was unexpected\)$"
}

@test "kuberay validation: entrypointResources as a mapping is caught (the CRD wants a JSON string)" {
  render job "$MVP_REPO/templates/jobspecs/ppo.yaml" --out "$BATS_TEST_TMPDIR/j.yaml"
  sed 's/^  entrypointResources: .*/  entrypointResources: {worker_node: 1}/' "$BATS_TEST_TMPDIR/j.yaml" >"$BATS_TEST_TMPDIR/bad.yaml"
  run cmp -s "$BATS_TEST_TMPDIR/j.yaml" "$BATS_TEST_TMPDIR/bad.yaml"
  assert_failure
  run validate "$BATS_TEST_TMPDIR/bad.yaml"
  assert_failure
  assert_output --regexp "^RayJob/ppo-.*: spec.entrypointResources: \{'worker_node': 1\} is not of type 'string'$"
}

@test "71 job: a secret-named env var is refused with one ERROR line, nothing written" {
  sed 's/^env_vars: {}/env_vars: {WANDB_API_KEY: abc}/' "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_TEST_TMPDIR/s.yaml"
  run --separate-stderr "$MVP_REPO/scripts/71_render_kuberay.sh" job "$BATS_TEST_TMPDIR/s.yaml" --out "$BATS_TEST_TMPDIR/s-out.yaml"
  assert_failure
  assert_equal "$(grep -c '^ERROR: ' <<<"$stderr")" 1
  assert_regex "$stderr" "ERROR: env_vars WANDB_API_KEY: a manifest is a file"
  run ls "$BATS_TEST_TMPDIR"
  refute_output --partial s-out.yaml
}

@test "71 job: the JobSpec reaches the renderer on stdin; one too big for the helper (256 KiB) or for the submitter pod's environment (128 KiB a string) is one ERROR line, nothing written" {
  local case size want
  for case in "300000|bytes is more than the 262144 a JobSpec or Ray config may have" \
    "150000|bytes; the submitter pod gets the JobSpec in one environment variable, which Linux limits to 131072"; do
    size=${case%%|*} want=${case#*|}
    { cat "$MVP_REPO/templates/jobspecs/ppo.yaml"; head -c "$size" /dev/zero | tr '\0' '#' | fold -w 100; echo; } \
      >"$BATS_TEST_TMPDIR/big.yaml"
    run --separate-stderr "$MVP_REPO/scripts/71_render_kuberay.sh" job "$BATS_TEST_TMPDIR/big.yaml" --out "$BATS_TEST_TMPDIR/big-out.yaml"
    assert_failure 1
    assert_equal "$(grep -c '^ERROR: ' <<<"$stderr")" 1
    assert_regex "$stderr" "ERROR: $BATS_TEST_TMPDIR/big.yaml: [0-9]+ $want"
    [[ ! -e $BATS_TEST_TMPDIR/big-out.yaml ]]
  done
}

@test "71: every Ray group (RayCluster, RayJob, the nightly's RayCluster), its command built as KubeRay v1.7 builds it and run by bash, is taken by Ray's own ray start parser; --resources arrives as ONE argument of JSON worker_node 100" {
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  render job "$MVP_REPO/templates/jobspecs/ppo.yaml" --out "$BATS_TEST_TMPDIR/j.yaml"
  render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  run ray_starts "$BATS_TEST_TMPDIR"/{c,j,n}.yaml
  assert_success
  local all=$output
  # A head and a worker group in each of the 3 Ray resources (the nightly's is the cluster's).
  jq -e -s 'length == 6 and (map(.group) | unique) == ["gpu-workers", "headgroup"]
            and (map(.resource | sub("^RayJob/ppo-.*"; "RayJob/ppo-ID")) | group_by(.) | map([.[0], length]))
             == [["RayCluster/mvp11-ray", 4], ["RayJob/ppo-ID", 2]]' <<<"$all"
  # KubeRay's shape: /bin/bash -c -- "ulimit ...; ray start ...", and bash ran it.
  jq -e -s 'all(.command == ["/bin/bash", "-c", "--"] and (.args | length) == 1
                and (.args[0] | startswith("ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start "))
                and .exit == 0 and .argv[0] == "start" and .error == null)' <<<"$all"
  # Workers: exactly one --resources argument, the JSON {"worker_node": 100}
  # for Ray, 4 GPUs, the head's address; the head: no custom resource, no CPU or GPU.
  jq -e -s '[.[] | select(.group == "gpu-workers")] | length == 3 and all(
              ([.argv[] | select(startswith("--resources"))] == ["--resources={\"worker_node\":100}"])
              and .resources == {"worker_node": 100} and .params.num_gpus == 4 and .params.num_cpus == 16
              and .params.block and (.params.address | endswith("-head-svc.default.svc.cluster.local:6379")))' <<<"$all"
  jq -e -s '[.[] | select(.group == "headgroup")] | all(
              ([.argv[] | select(startswith("--resources"))] == []) and .resources == {}
              and .params.num_cpus == 0 and .params.num_gpus == 0 and .params.head and .params.block)' <<<"$all"
}

@test "71 job: its pods as KubeRay v1.7.0 builds them (the podman tier's): head /dev/shm sized to its memory limit, workers' --num-gpus from their nvidia.com/gpu limit, a wait-gcs-ready init container with the token before each worker, the head Service named in every /etc/hosts" {
  render job "$MVP_REPO/templates/jobspecs/ppo.yaml" --out "$BATS_TEST_TMPDIR/j.yaml"
  echo t0ken >"$BATS_TEST_TMPDIR/token"
  run env PYTHONPATH="$MVP_REPO/tests/test_helper" "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/kuberay_pods.py" \
    "$BATS_TEST_TMPDIR/j.yaml" --shared /srv/s --token-file "$BATS_TEST_TMPDIR/token" --network n --subnet-prefix 10.9.1
  assert_success
  local pods=$output
  # BuildPod's /dev/shm: the head's memory limit (8Gi); the workers mount their own (16Gi).
  jq -e -s '[.[] | select(.role != "submitter") | .argv as $a | [.role, $a[($a | index("--shm-size")) + 1]]]
            == [["head", "8589934592"], ["worker", "17179869184"], ["worker", "17179869184"]]' <<<"$pods"
  jq -e -s '.[0] | .role == "head" and .init == [] and (.argv | index("RAY_USAGE_STATS_EXTRA_TAGS=kuberay_version=v1.7.0;kuberay_crd=RayJob")) != null' <<<"$pods"
  # The nvidia.com/gpu path: no num-gpus in the group, 4 from the limit.
  jq -e -s '[.[] | select(.role == "worker") | .argv[-1] | test(" --num-gpus=4 ") and test(" --num-cpus=16 ")] == [true, true]' <<<"$pods"
  jq -e -s '[.[] | select(.role == "worker") | .init[0] | .name | endswith("-wait-gcs-ready")] == [true, true]' <<<"$pods"
  jq -e -s '[.[] | select(.role == "worker") | .init[0].argv] | all(
              (index("RAY_AUTH_TOKEN=t0ken") != null) and (index("RAY_AUTH_MODE=token") != null)
              and (map(select(startswith("FQ_RAY_IP="))) | length == 1)
              and (.[-1] | test("^until ray health-check --address [a-z0-9-]+-head-svc[.]default[.]svc[.]cluster[.]local:6379 ")))' <<<"$pods"
  # The head Service's names, as cluster DNS answers them, in every pod's and init container's /etc/hosts.
  jq -e -s '(.[0] | .name + "-svc") as $svc | (.[0].ip) as $ip | [.[] | ., (.init // [])[]] | length == 6 and all(.argv as $a
              | [range(0; $a | length) | select($a[.] == "--add-host") | $a[. + 1]]
              == ["\($svc).default.svc.cluster.local:\($ip)", "\($svc):\($ip)"])' <<<"$pods"
}

# shellcheck disable=SC2030  # bats' run sets output here, refused() reads another run's
@test "71: the test tier's KubeRay rebuild catches the unquoted rayStartParams resources Ray refuses, and takes the shell-quoted one" {
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  # The worker group as it was rendered before (unquoted), and in the other
  # form v1.7 documents (shell-quoted): both files in one Python, both groups
  # through one ray_starts (Ray's parser imported once), in this order.
  "$MVP_REPO/.venv/bin/python" -c 'import sys, yaml
for form, out in zip(sys.argv[2::2], sys.argv[3::2]):
    docs = list(yaml.safe_load_all(open(sys.argv[1])))
    group = [d for d in docs if d["kind"] == "RayCluster"][0]["spec"]["workerGroupSpecs"][0]
    del group["resources"]
    group.setdefault("rayStartParams", {})["resources"] = form
    yaml.safe_dump_all(docs, open(out, "w"), sort_keys=False)' "$BATS_TEST_TMPDIR/c.yaml" \
    '{"worker_node": 100}' "$BATS_TEST_TMPDIR/unquoted.yaml" "'{\"worker_node\": 100}'" "$BATS_TEST_TMPDIR/shell-quoted.yaml"
  run ray_starts "$BATS_TEST_TMPDIR/unquoted.yaml" "$BATS_TEST_TMPDIR/shell-quoted.yaml"
  assert_success
  local unquoted='.error == "Got unexpected extra argument (100})"
            and ([.argv[] | select(startswith("--resources"))] == ["--resources={worker_node:"])'
  local quoted='.error == null and .resources == {"worker_node": 100}'
  jq -e -s "[.[] | select(.group == \"gpu-workers\")] | length == 2 and (.[0] | $unquoted) and (.[1] | $quoted)" <<<"$output"
}

# refused SETTINGS... -- ARGS...: 71 with those settings exits 1 and says, on
# stderr after every script's "config:" line, one line: $error, an ERROR; it
# writes nothing (no --out file, no temporary beside it).
# shellcheck disable=SC2031  # output and stderr are bats' run's
refused() {
  local -a settings=()
  while [[ $1 != -- ]]; do settings+=("$1"); shift; done
  shift
  run --separate-stderr env "${settings[@]}" "$MVP_REPO/scripts/71_render_kuberay.sh" "$@" --out "$BATS_TEST_TMPDIR/out.yaml"
  assert_failure 1
  assert_equal "$output" ""
  assert_regex "$(head -n 1 <<<"$stderr")" "^[0-9TZ:-]+ +config: "
  error=$(tail -n +2 <<<"$stderr")
  assert_equal "$(wc -l <<<"$error")" 1
  assert_regex "$error" "^ERROR: "
  run compgen -G "$BATS_TEST_TMPDIR/out.yaml*"
  assert_failure
}

@test "71 nightly: MVP_K8S_TIME_ZONE is the CronJob's own timeZone (Kubernetes', not KubeRay's: no RayCronJob)" {
  MVP_K8S_TIME_ZONE=Europe/Berlin render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  jq -e '.spec.timeZone == "Europe/Berlin"' <<<"$(doc "$BATS_TEST_TMPDIR/n.yaml" CronJob)"
  render nightly --out "$BATS_TEST_TMPDIR/n0.yaml"
  jq -e '.spec | has("timeZone") | not' <<<"$(doc "$BATS_TEST_TMPDIR/n0.yaml" CronJob)"
  run grep -c RayCronJob "$BATS_TEST_TMPDIR/n.yaml"
  assert_output 0
}

@test "71: a KubeRay release that is not X.Y.Z is refused in one ERROR line, nothing written (the releases it takes: kuberay_rules.bats)" {
  local error
  refused MVP_KUBERAY_VERSION=1.7 -- cluster
  assert_equal "$error" "ERROR: MVP_KUBERAY_VERSION='1.7' is not a KubeRay release; set it to your operator's, e.g. 1.7.0"
}

@test "71: the pods' image is by default the one 72 builds (MVP_K8S_IMAGE_REPO:VERSION); verl's own image, which lacks the runbook, is refused in one ERROR line" {
  local version
  version=$(<"$MVP_REPO/VERSION")
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  jq -e --arg img "verl-mvp:$version" '[.spec.headGroupSpec, .spec.workerGroupSpecs[0]] | all(.template.spec.containers[0].image == $img)' \
    <<<"$(doc "$BATS_TEST_TMPDIR/c.yaml" RayCluster)"
  # 72 with no flags builds exactly that tag, on MVP_IMAGE, labelled with the version.
  run --separate-stderr "$MVP_REPO/scripts/72_build_image.sh" --dry-run --engine podman
  assert_success
  assert_output --partial "--build-arg BASE_IMAGE=verlai/verl:vllm017.latest"
  assert_output --partial "--build-arg RUNBOOK_VERSION=$version -t verl-mvp:$version "
  MVP_K8S_IMAGE_REPO=registry.example.com/team/verl-mvp render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  jq -e --arg img "registry.example.com/team/verl-mvp:$version" '.spec.jobTemplate.spec.template.spec.containers[0].image == $img' \
    <<<"$(doc "$BATS_TEST_TMPDIR/n.yaml" CronJob)"
  MVP_K8S_IMAGE_REPO=registry.example.com/team/verl-mvp run --separate-stderr "$MVP_REPO/scripts/72_build_image.sh" --dry-run --engine podman
  assert_output --partial " -t registry.example.com/team/verl-mvp:$version "
  local error img
  for img in verlai/verl:vllm017.latest docker.io/verlai/verl:app-verl0.9 verlai/verl@sha256:0123; do
    refused "MVP_K8S_IMAGE=$img" -- cluster
    assert_equal "$error" "ERROR: MVP_K8S_IMAGE=$img is verl's own image, which lacks this runbook (every pod runs it from /workspace/mvp); build the runbook's image with scripts/72_build_image.sh, push it, and leave MVP_K8S_IMAGE empty (it is then the image 72 builds: MVP_K8S_IMAGE_REPO:<VERSION>)"
  done
  # Another name cannot be looked into without pulling it: it is taken.
  MVP_K8S_IMAGE=registry.example.com/team/verl-mvp:2026-11-25 render cluster --out "$BATS_TEST_TMPDIR/own.yaml"
}

@test "71: every file it writes starts with the shared volume's claim, so kubectl apply -f creates it before any pod that mounts it" {
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  render job "$MVP_REPO/templates/jobspecs/ppo.yaml" --out "$BATS_TEST_TMPDIR/j.yaml"
  render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  local f
  for f in c j n; do
    run "$MVP_REPO/.venv/bin/python" -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
print(docs[0]["kind"], docs[0]["metadata"]["name"], sum(d["kind"] == "PersistentVolumeClaim" for d in docs))' "$BATS_TEST_TMPDIR/$f.yaml"
    assert_output "PersistentVolumeClaim mvp-shared 1"
  done
}

@test "71 job: a JobSpec asking for retries is refused in one ERROR line (a RayJob's cluster ends with its one Ray job), nothing written; retries: 0 renders" {
  local n
  for n in 1 3; do
    sed "s/^retries:.*/retries: $n/" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_TEST_TMPDIR/r.yaml"
    run --separate-stderr "$MVP_REPO/scripts/71_render_kuberay.sh" job "$BATS_TEST_TMPDIR/r.yaml" --out "$BATS_TEST_TMPDIR/r-out.yaml"
    assert_failure 1
    assert_equal "$(grep -c '^ERROR: ' <<<"$stderr")" 1
    assert_regex "$stderr" "ERROR: $BATS_TEST_TMPDIR/r.yaml: retries: $n cannot be honoured by a RayJob .*set retries: 0 for a RayJob, or render a long-lived cluster \(71 cluster\) and submit to it with MVP_RUNTIME=kuberay and --wait --retry N"
    [[ ! -e $BATS_TEST_TMPDIR/r-out.yaml ]]
  done
  sed "s/^retries:.*/retries: 0/" "$MVP_REPO/templates/jobspecs/ppo.yaml" >"$BATS_TEST_TMPDIR/r0.yaml"
  run "$MVP_REPO/scripts/71_render_kuberay.sh" job "$BATS_TEST_TMPDIR/r0.yaml" --out "$BATS_TEST_TMPDIR/r0-out.yaml"
  assert_success
  grep -q '^kind: RayJob' "$BATS_TEST_TMPDIR/r0-out.yaml"
}
