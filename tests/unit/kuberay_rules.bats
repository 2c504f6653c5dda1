#!/usr/bin/env bats
# KubeRay v1.7.0's own refusals, ported in helpers/mvp/render/kuberay_rules.py (each
# rule cites ray-operator/controllers/ray/utils/validation.go file:line at
# commit 59d663aeec13760646da3db9c1cf8cfe883e30b7): every object 71 renders
# (the cluster, a job for each JobSpec template, the nightly) passes them and
# KubeRay v1.7's CRD schemas made strict; each rule refuses a bad object
# planted into a rendered one; a render that breaks a rule is a failed render.
# The snapshot is real verl 0.9.1: a job's overrides pass the preflight first.

setup_file() {
  load ../test_helper/common
  mvp_preflight_facts "$BATS_FILE_TMPDIR/preflight" || { echo "no preflight facts of real verl; run make setup" >&3; return 1; }
  export MVP_TEST_CRD_CACHE=$BATS_FILE_TMPDIR/crd-cache  # each CRD parsed once (validate_kuberay.py)
  kuberay_env "$BATS_FILE_TMPDIR"
  R=$BATS_FILE_TMPDIR/rendered
  mkdir -p "$R"
  local t
  "$MVP_REPO/scripts/71_render_kuberay.sh" cluster --out "$R/cluster.yaml" 2>/dev/null
  "$MVP_REPO/scripts/71_render_kuberay.sh" nightly --out "$R/nightly.yaml" 2>/dev/null
  for t in "$MVP_REPO"/templates/jobspecs/*.yaml; do
    "$MVP_REPO/scripts/71_render_kuberay.sh" job "$t" --out "$R/job-$(basename "$t")" 2>/dev/null
  done
}

setup() {
  load ../test_helper/common
  kuberay_env "$BATS_FILE_TMPDIR"
  R=$BATS_FILE_TMPDIR/rendered
}

# kuberay_env DIR: the settings and inputs 71 renders from (a snapshot of real
# verl, the model's files, the datasets), under DIR.
kuberay_env() {
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=local
  export SHARED_ROOT="$1/shared root" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4 CODE_ID=""
  [[ -d $SHARED_ROOT ]] && return 0
  mvp_check_root Qwen/Qwen2.5-0.5B-Instruct "$1/preflight" "$1/data"
  # The learning probe's template names the CPU profile's tiny model and its reward in user/code/.
  mvp_model_files "$SHARED_ROOT/common/models/mvp-tiny/qwen2"
  mkdir -p "$SHARED_ROOT/user/code"
  cp "$MVP_REPO/templates/rewards/learning_probe.py" "$SHARED_ROOT/user/code/"
}

# plant FILE KIND 'PYTHON': the ported rules' answer on FILE's KIND document
# after PYTHON changed it (tests/test_helper/kuberay_plant.py).
plant() {
  run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/kuberay_plant.py" "$@"
  assert_success
}

# refuses RULE FILE KIND 'PYTHON': that rule, and no other, refuses the planted object.
refuses() {
  local rule=$1
  shift
  plant "$@"
  assert_output --regexp "^refused $rule: .* \(KubeRay v1\.7\.0 [a-z_./]*go:[0-9].*, rule $rule\)$"
}

@test "kuberay rules: every object 71 renders (cluster, a job for each template, the nightly) passes KubeRay v1.7.0's ported rules and its strict CRD schemas" {
  local f kind n=0
  for f in "$R"/*.yaml; do
    for kind in RayCluster RayJob; do
      grep -q "^kind: $kind$" "$f" || continue
      plant "$f" "$kind" ''
      assert_output ok
      n=$((n + 1))
    done
  done
  # All files in one validator: each CRD is parsed once; any problem fails it.
  run "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/validate_kuberay.py" \
    "$MVP_REPO/../shared/schemas/kuberay-v1.7" "$R"/*.yaml
  assert_success
  assert_output ""
  # cluster, nightly (its RayCluster), and one RayJob per template.
  assert_equal "$n" "$((2 + $(compgen -G "$MVP_REPO/templates/jobspecs/*.yaml" | wc -l)))"
}

@test "kuberay rules: every rule of kuberay_rules.py cites its v1.7.0 source and has a test here that plants its violation" {
  run "$MVP_REPO/.venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1])
from mvp.render import kuberay_rules as k
for name, (target, fn, where) in k.RULES.items():
    assert any(f in where for f in ("validation.go:", "webhook.go:")), (name, where)
    print(name)' "$MVP_REPO/helpers"
  assert_success
  local name
  for name in $output; do
    grep -qE "^  refuses $name " "$BATS_TEST_FILENAME" || { echo "no planted violation of $name"; false; }
  done
  (($(wc -w <<<"$output") >= 24))
}

@test "kuberay rule group_resources: the worker group as 71 rendered it before (rayStartParams num-gpus beside the resources map) is refused" {
  refuses group_resources "$R/cluster.yaml" RayCluster 'worker["rayStartParams"] = {"num-gpus": "4"}'
  assert_output --partial "the gpu-workers group sets rayStartParams num-gpus and a group-level resources map"
  refuses group_resources "$R/job-ppo.yaml" RayJob 'head["resources"] = {"cpu": "0"}'
}

@test "kuberay rule cluster_name: a RayCluster name over 53 characters or not a DNS-1035 label is refused" {
  refuses cluster_name "$R/cluster.yaml" RayCluster 'doc["metadata"]["name"] = "c" * 54'
  refuses cluster_name "$R/cluster.yaml" RayCluster 'doc["metadata"]["name"] = "9mvp"'
  plant "$R/cluster.yaml" RayCluster 'doc["metadata"]["name"] = "c" * 53'
  assert_output ok
}

@test "kuberay rule rayjob_name: a RayJob name over 47 characters (its cluster adds 6) or not a DNS-1035 label is refused" {
  refuses rayjob_name "$R/job-sft.yaml" RayJob 'doc["metadata"]["name"] = "j" * 48'
  refuses rayjob_name "$R/job-sft.yaml" RayJob 'doc["metadata"]["name"] = "sft_1"'
}

@test "kuberay rule group_container: a group whose pod template has no container is refused" {
  refuses group_container "$R/cluster.yaml" RayCluster 'worker["template"]["spec"]["containers"] = []'
  refuses group_container "$R/cluster.yaml" RayCluster 'head["template"]["spec"]["containers"] = []'
}

@test "kuberay rule group_labels: rayStartParams labels, or a group label Kubernetes would not take, is refused" {
  refuses group_labels "$R/cluster.yaml" RayCluster 'worker["rayStartParams"] = {"labels": "a=b"}'
  refuses group_labels "$R/cluster.yaml" RayCluster 'worker["labels"] = {"bad key": "v"}'
  refuses group_labels "$R/cluster.yaml" RayCluster 'worker["labels"] = {"ok": "-v"}'
  plant "$R/cluster.yaml" RayCluster 'worker["labels"] = {"ray.io/accelerator": "H100"}'
  assert_output ok
}

@test "kuberay rule worker_replicas: without autoscaling minReplicas and maxReplicas are required, not negative, min <= max" {
  refuses worker_replicas "$R/cluster.yaml" RayCluster 'del worker["minReplicas"]'
  refuses worker_replicas "$R/cluster.yaml" RayCluster 'worker["minReplicas"] = -1'
  refuses worker_replicas "$R/cluster.yaml" RayCluster 'worker["minReplicas"] = 3'
}

@test "kuberay rule worker_idle_timeout: idleTimeoutSeconds without autoscaler v2 is refused" {
  refuses worker_idle_timeout "$R/cluster.yaml" RayCluster 'worker["idleTimeoutSeconds"] = 60'
}

@test "kuberay rule worker_priority: a priority without autoscaler v2 (or below Ray 2.56) is refused" {
  refuses worker_priority "$R/cluster.yaml" RayCluster 'worker["priority"] = 5'
  refuses worker_priority "$R/cluster.yaml" RayCluster 'worker["priority"] = 5; spec["rayVersion"] = "2.55.0"'
}

@test "kuberay rule worker_suspend: a suspended worker group with autoscaling is refused" {
  refuses worker_suspend "$R/cluster.yaml" RayCluster 'worker["suspend"] = True; spec["enableInTreeAutoscaling"] = True'
}

@test "kuberay rule gcs_fault_tolerance: RAY_REDIS_ADDRESS without GCS fault tolerance, or a redis username, is refused" {
  refuses gcs_fault_tolerance "$R/cluster.yaml" RayCluster \
    'head["template"]["spec"]["containers"][0]["env"] = [{"name": "RAY_REDIS_ADDRESS", "value": "r:6379"}]'
  refuses gcs_fault_tolerance "$R/cluster.yaml" RayCluster 'head["rayStartParams"]["redis-username"] = "u"'
}

@test "kuberay rule autoscaler_v2_env: RAY_enable_autoscaler_v2=1 in the head with autoscaling off is refused" {
  refuses autoscaler_v2_env "$R/cluster.yaml" RayCluster \
    'head["template"]["spec"]["containers"][0]["env"] = [{"name": "RAY_enable_autoscaler_v2", "value": "1"}]'
}

@test "kuberay rule gated_fields: tlsOptions, networkPolicy or historyServerOptions (alpha gates, off by default) are refused" {
  refuses gated_fields "$R/cluster.yaml" RayCluster 'spec["tlsOptions"] = {"enabled": True}'
  refuses gated_fields "$R/job-grpo.yaml" RayJob 'spec["networkPolicy"] = {}'
}

@test "kuberay rule token_auth: authOptions token with a Ray below 2.52 (or no rayVersion) is refused" {
  refuses token_auth "$R/cluster.yaml" RayCluster 'spec["rayVersion"] = "2.51.0"'
  refuses token_auth "$R/cluster.yaml" RayCluster 'del spec["rayVersion"]'
  refuses token_auth "$R/cluster.yaml" RayCluster 'spec["authOptions"]["enableK8sTokenAuth"] = True; spec["rayVersion"] = "2.54.0"'
  plant "$R/cluster.yaml" RayCluster 'spec["rayVersion"] = "2.52.0"'
  assert_output ok
}

@test "kuberay rule unique_group_names: two worker groups of one name are refused (the operator's webhook)" {
  refuses unique_group_names "$R/cluster.yaml" RayCluster 'spec["workerGroupSpecs"].append(dict(worker))'
}

@test "kuberay rule upgrade_strategy: an unknown type, or any upgradeStrategy on the cluster a RayJob makes, is refused" {
  refuses upgrade_strategy "$R/cluster.yaml" RayCluster 'spec["upgradeStrategy"] = {"type": "Rolling"}'
  refuses upgrade_strategy "$R/job-ppo.yaml" RayJob 'spec["upgradeStrategy"] = {"type": "Recreate"}'
  plant "$R/cluster.yaml" RayCluster 'spec["upgradeStrategy"] = {"type": "Recreate"}'
  assert_output ok
}

@test "kuberay rule unported: a field whose v1.7.0 rules are not ported (GCS fault tolerance, autoscaling) is refused, not passed unchecked" {
  refuses unported "$R/cluster.yaml" RayCluster 'spec["gcsFaultToleranceOptions"] = {"redisAddress": "r:6379"}'
  refuses unported "$R/cluster.yaml" RayCluster 'spec["enableInTreeAutoscaling"] = True'
}

@test "kuberay rule cluster_status: a status both Suspending and Suspended is refused" {
  refuses cluster_status "$R/cluster.yaml" RayCluster \
    'doc["status"] = {"conditions": [{"type": "RayClusterSuspending", "status": "True"}, {"type": "RayClusterSuspended", "status": "True"}]}'
}

@test "kuberay rule rayjob_shutdown: ttlSecondsAfterFinished without shutdownAfterJobFinishes (or negative, or a suspend) is refused" {
  refuses rayjob_shutdown "$R/job-ppo.yaml" RayJob 'job["shutdownAfterJobFinishes"] = False'
  refuses rayjob_shutdown "$R/job-ppo.yaml" RayJob 'job["ttlSecondsAfterFinished"] = -1'
  refuses rayjob_shutdown "$R/job-ppo.yaml" RayJob 'job["shutdownAfterJobFinishes"] = False; job["ttlSecondsAfterFinished"] = 0; job["suspend"] = True'
}

@test "kuberay rule rayjob_cluster_selector: a RayJob with neither rayClusterSpec nor clusterSelector is refused" {
  refuses rayjob_cluster_selector "$R/job-ppo.yaml" RayJob 'del job["rayClusterSpec"]'
  refuses rayjob_cluster_selector "$R/job-ppo.yaml" RayJob 'job["clusterSelector"] = {"ray.io/cluster": "c"}; job["submitterConfig"] = {}; job["backoffLimit"] = 1'
}

@test "kuberay rule rayjob_submission_mode: SidecarMode with a submitter template, or InteractiveMode with retries, is refused" {
  refuses rayjob_submission_mode "$R/job-ppo.yaml" RayJob 'job["submissionMode"] = "SidecarMode"'
  refuses rayjob_submission_mode "$R/job-ppo.yaml" RayJob 'job["submissionMode"] = "InteractiveMode"; job["backoffLimit"] = 2'
}

@test "kuberay rule rayjob_k8s_auth: a RayJob's cluster with enableK8sTokenAuth is refused" {
  refuses rayjob_k8s_auth "$R/job-ppo.yaml" RayJob 'spec["authOptions"]["enableK8sTokenAuth"] = True'
}

@test "kuberay rule rayjob_runtime_env: a runtimeEnvYAML that is not a YAML mapping is refused" {
  refuses rayjob_runtime_env "$R/job-ppo.yaml" RayJob 'job["runtimeEnvYAML"] = "env_vars: {a: [1"'
  refuses rayjob_runtime_env "$R/job-ppo.yaml" RayJob 'job["runtimeEnvYAML"] = "- a list"'
}

@test "kuberay rule rayjob_deadlines: activeDeadlineSeconds 0, or a negative backoffLimit, is refused" {
  refuses rayjob_deadlines "$R/job-sft.yaml" RayJob 'job["activeDeadlineSeconds"] = 0'
  refuses rayjob_deadlines "$R/job-sft.yaml" RayJob 'job["backoffLimit"] = -1'
}

@test "kuberay rule rayjob_status: a status Waiting outside InteractiveMode is refused" {
  refuses rayjob_status "$R/job-sft.yaml" RayJob 'doc["status"] = {"jobDeploymentStatus": "Waiting"}'
}

@test "71: a render that breaks a rule is a failed render: one ERROR line naming the rule, exit 1, nothing written" {
  local what
  for what in cluster nightly "job $MVP_REPO/templates/jobspecs/ppo.yaml"; do
    # shellcheck disable=SC2086  # what is words on purpose
    run --separate-stderr env MVP_K8S_RAY_VERSION=2.51.0 "$MVP_REPO/scripts/71_render_kuberay.sh" $what \
      --out "$BATS_TEST_TMPDIR/out.yaml"
    assert_failure 1
    assert_equal "$output" ""
    assert_equal "$(grep -vc ' config: ' <<<"$stderr")" 1
    assert_regex "$(tail -n 1 <<<"$stderr")" "^ERROR: KubeRay v1\.7\.0 would refuse Ray(Cluster|Job)/[a-z0-9-]+: authOptions\.mode token needs rayVersion 2\.52\.0 or later, not 2\.51\.0 \(KubeRay v1\.7\.0 validation\.go:284-313, rule token_auth\)$"
    run compgen -G "$BATS_TEST_TMPDIR/out.yaml*"
    assert_failure
  done
}

@test "71: MVP_KUBERAY_VERSION renders only at the ported rules' release; an older one is refused naming the rendered field it lacks and the release that has it" {
  # The contract's default is the release whose rules are ported.
  run "$MVP_REPO/.venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1])
from mvp.render import kuberay_rules as k; print(".".join(map(str, k.VERSION)))' "$MVP_REPO/helpers"
  assert_equal "$(sed -n '/^MVP_KUBERAY_VERSION$/,/^MVP_/s/^  default  //p' "$MVP_REPO/config/settings.contract")" "$output"
  local v want
  for v in "1.4.2|the worker group's resources map (worker_node), which 71 renders, needs KubeRay v1.5.0" \
    "1.5.0|authOptions (MVP_K8S_AUTH=1, token auth), which 71 renders, needs KubeRay v1.5.1" \
    "1.6.2|MVP_KUBERAY_VERSION is 1.6.2, and 71 checks what it renders against KubeRay v1.7.0's own rules only" \
    "1.8.0|MVP_KUBERAY_VERSION is 1.8.0, and 71 checks"; do
    want=${v#*|}
    run --separate-stderr env "MVP_KUBERAY_VERSION=${v%%|*}" "$MVP_REPO/scripts/71_render_kuberay.sh" cluster \
      --out "$BATS_TEST_TMPDIR/out.yaml"
    assert_failure 1
    assert_equal "$(grep -c '^ERROR: ' <<<"$stderr")" 1
    [[ $(tail -n 1 <<<"$stderr") == "ERROR: $want"* ]] || { echo "$stderr"; false; }
    [[ ! -e $BATS_TEST_TMPDIR/out.yaml ]]
  done
  # Without token auth, 1.5.0 still lacks nothing rendered, and is refused for the rules' release alone.
  run --separate-stderr env MVP_KUBERAY_VERSION=1.5.0 MVP_K8S_AUTH=0 "$MVP_REPO/scripts/71_render_kuberay.sh" cluster
  assert_failure 1
  assert_regex "$(tail -n 1 <<<"$stderr")" "^ERROR: MVP_KUBERAY_VERSION is 1\.5\.0, and 71 checks"
}

@test "71: MVP_KUBERAY_VERSION=1.7.1 renders byte for byte what 1.7.0 renders (v1.7.1 changed none of the ported rules nor a CRD: docs/versions.md)" {
  local kind v
  for kind in cluster nightly; do
    for v in 1.7.0 1.7.1; do
      run --separate-stderr env "MVP_KUBERAY_VERSION=$v" "$MVP_REPO/scripts/71_render_kuberay.sh" "$kind" \
        --out "$BATS_TEST_TMPDIR/$kind-$v.yaml"
      assert_success
    done
    cmp "$BATS_TEST_TMPDIR/$kind-1.7.0.yaml" "$BATS_TEST_TMPDIR/$kind-1.7.1.yaml"
  done
  run --separate-stderr env MVP_KUBERAY_VERSION=1.7.2 "$MVP_REPO/scripts/71_render_kuberay.sh" cluster
  assert_failure 1
  assert_equal "$(tail -n 1 <<<"$stderr")" "ERROR: MVP_KUBERAY_VERSION is 1.7.2, and 71 checks what it renders against KubeRay v1.7.0's own rules only (helpers/mvp/render/kuberay_rules.py, commit 59d663aeec13), which are v1.7.0 or v1.7.1's; run one of those operators and set MVP_KUBERAY_VERSION to it"
}
