#!/usr/bin/env bats
# 71_render_kuberay.sh: the RayCluster, RayJob and RayCronJob it writes are
# valid against KubeRay v1.7's CRDs (../shared/schemas/kuberay-v1.7, made
# strict: unknown fields fail), and carry the runbook's topology and job plan.
# The snapshot is real verl 0.9.1: a job's overrides pass the preflight first.

setup_file() {
  load ../test_helper/common
  mvp_preflight_facts "$BATS_FILE_TMPDIR/preflight" || { echo "no preflight facts of real verl; run make setup" >&3; return 1; }
}

setup() {
  load ../test_helper/common
  SCHEMAS=${MVP_TEST_SCHEMAS:-$(cd "$MVP_REPO/../shared/schemas/kuberay-v1.7" 2>/dev/null && pwd)}
  [[ -f $SCHEMAS/ray.io_rayjobs.yaml ]] || { echo "KubeRay CRDs not found; set MVP_TEST_SCHEMAS" >&2; return 1; }
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=local
  export SHARED_ROOT="$BATS_TEST_TMPDIR/shared root" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4 CODE_ID=""
  local snap="$SHARED_ROOT/common/code/verl/codeA"
  mkdir -p "$SHARED_ROOT/common/models/Qwen/Qwen2.5-0.5B-Instruct" "$SHARED_ROOT/datasets/gsm8k" \
    "$SHARED_ROOT/datasets/gsm8k_sft"
  mvp_real_verl_snapshot "$snap" "$BATS_FILE_TMPDIR/preflight"
  echo 'MARKER = "codeA"' >"$snap/mvp_marker.py"
  echo '{"created_at": "2026-01-01T00:00:00+00:00", "files": {}}' >"$snap/MANIFEST.json"
  mvp_model_files "$SHARED_ROOT/common/models/Qwen/Qwen2.5-0.5B-Instruct"
  touch "$SHARED_ROOT"/datasets/gsm8k/{train,test}.parquet "$SHARED_ROOT"/datasets/gsm8k_sft/{train,val}.parquet
}

render() { "$MVP_REPO/scripts/71_render_kuberay.sh" "$@" 2>/dev/null; }

validate() { "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/validate_kuberay.py" "$SCHEMAS" "$1"; }

# doc FILE KIND: that kind's document of FILE as JSON.
doc() {
  "$MVP_REPO/.venv/bin/python" -c 'import json, sys, yaml
print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == sys.argv[2]][0]))' "$1" "$2"
}

@test "71 cluster: valid RayCluster; head control plane only, GPU workers with worker_node, RWX claim at /private, token auth" {
  render cluster --out "$BATS_TEST_TMPDIR/c.yaml"
  run validate "$BATS_TEST_TMPDIR/c.yaml"
  assert_success
  local c
  c=$(doc "$BATS_TEST_TMPDIR/c.yaml" RayCluster)
  jq -e '.spec.headGroupSpec.rayStartParams == {"num-cpus": "0", "num-gpus": "0"}' <<<"$c"
  # worker_node in the group's resources field, which KubeRay quotes for bash
  # itself; never in rayStartParams, which it pastes into bash unquoted.
  jq -e '.spec.workerGroupSpecs[0] | .replicas == 2 and .resources == {"worker_node": "100"}
         and .rayStartParams == {"num-gpus": "4"} and .template.spec.containers[0].resources.limits["nvidia.com/gpu"] == 4' <<<"$c"
  jq -e '[.spec.headGroupSpec.template, .spec.workerGroupSpecs[0].template]
         | all(.spec.containers[0].volumeMounts == [{"name": "shared", "mountPath": "/private"}]
               and .spec.volumes[0].persistentVolumeClaim.claimName == "mvp-shared")' <<<"$c"
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
  jq -e --arg id "$id" '.spec.entrypoint == "python3 /workspace/mvp/helpers/mvp/launch.py /private/jobs/" + $id' <<<"$j"
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
}

@test "71 nightly: valid RayCronJobs, one per nightly job, on the schedule; each run's id is KubeRay's" {
  MVP_K8S_TIME_ZONE=Europe/Berlin render nightly --out "$BATS_TEST_TMPDIR/n.yaml"
  run validate "$BATS_TEST_TMPDIR/n.yaml"
  assert_success
  run grep -c '^kind: RayCronJob$' "$BATS_TEST_TMPDIR/n.yaml"
  assert_output 4
  local n
  n=$(doc "$BATS_TEST_TMPDIR/n.yaml" RayCronJob)
  jq -e '.spec.schedule == "30 2 * * *" and .spec.timeZone == "Europe/Berlin"' <<<"$n"
  jq -e '.spec.jobTemplate | has("jobId") | not' <<<"$n"
  jq -e '.spec.jobTemplate.submitterPodTemplate.spec.containers[0].command as $c
         | $c[($c | index("--submission-id")) + 1] == "$(RAY_JOB_SUBMISSION_ID)"' <<<"$n"
  jq -e '.spec.jobTemplate | .activeDeadlineSeconds > 0 and .shutdownAfterJobFinishes and .ttlSecondsAfterFinished > 0' <<<"$n"
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
