#!/usr/bin/env bats
# The KubeRay tier's operator (tests/test_helper/kuberay_reconcile.py): what
# Kubernetes and KubeRay v1.7.0 do when the Ray container of a RayCluster's
# pod ends, by restartPolicy. Always (Kubernetes' default, the rendered Ray
# groups') and OnFailure after a failure: the kubelet restarts the container
# in its pod (a new container, same name and address, after its back-off),
# KubeRay keeps the pod (raycluster_controller.go:1533-1539). Never, or a pod Succeeded: KubeRay
# deletes it (:1517-1532) and the next reconcile creates a pod of the same
# group (:1025-1055, :1167-1215), with a new name (GenerateName) and, for a
# worker, a new address. One pass of the loop over the pods kuberay_pods.py
# builds from a rendered RayCluster, with the containers' states given.

setup_file() {
  load ../test_helper/common
  mvp_preflight_facts "$BATS_FILE_TMPDIR/preflight" || { echo "no preflight facts of real verl; run make setup" >&3; return 1; }
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=local
  export SHARED_ROOT="$BATS_FILE_TMPDIR/shared root" MVP_WORKERS=2 MVP_GPUS_PER_WORKER=4 CODE_ID=""
  mvp_check_root Qwen/Qwen2.5-0.5B-Instruct "$BATS_FILE_TMPDIR/preflight" "$BATS_FILE_TMPDIR/data"
  "$MVP_REPO/scripts/71_render_kuberay.sh" cluster --out "$BATS_FILE_TMPDIR/c.yaml" 2>/dev/null
  echo t0ken >"$BATS_FILE_TMPDIR/token"
}

setup() {
  load ../test_helper/common
  PY=$MVP_REPO/.venv/bin/python
}

# pods_of [POLICY [KEY VALUE]]: kuberay_pods.py's lines for the rendered
# cluster, its Ray groups' restartPolicy set to POLICY first (and its
# metadata's annotation KEY to VALUE).
pods_of() {
  local f=$BATS_FILE_TMPDIR/c.yaml
  if (($#)); then
    f=$BATS_TEST_TMPDIR/planted.yaml
    "$PY" -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "RayCluster":
        for g in [d["spec"]["headGroupSpec"], *d["spec"]["workerGroupSpecs"]]:
            g["template"]["spec"]["restartPolicy"] = sys.argv[3]
        if len(sys.argv) > 4:
            d["metadata"].setdefault("annotations", {})[sys.argv[4]] = sys.argv[5]
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))' "$BATS_FILE_TMPDIR/c.yaml" "$f" "$@"
  fi
  PYTHONPATH=$MVP_REPO/tests/test_helper "$PY" "$MVP_REPO/tests/test_helper/kuberay_pods.py" "$f" --shared /srv/s \
    --token-file "$BATS_FILE_TMPDIR/token" --network n --subnet-prefix 10.9.1
}

# reconcile PODS STATES: one pass of the operator over PODS' head and worker
# pods, the containers' states STATES ({name: [podman state, exit code]};
# one absent: not started yet): {"kept": [pods], "created": [pods],
# "restarted": [pods], "log": [lines]}.
reconcile() {
  "$PY" -c 'import json, random, sys
sys.path.insert(0, sys.argv[1])
import kuberay_reconcile as k
live = [p for p in map(json.loads, sys.argv[2].splitlines()) if p["role"] in ("head", "worker")]
log = []
kept, created, restarted = k.reconcile_once(live, {n: tuple(v) for n, v in json.loads(sys.argv[3]).items()}, "10.9.1",
                                            {p["ip"] for p in live}, random.Random(), log.append, set(sys.argv[4:]))
print(json.dumps({"kept": kept, "created": created, "restarted": restarted, "log": log}))' \
    "$MVP_REPO/tests/test_helper" "$@"
}

W0=mvp11-ray-gpu-workers-worker-0 W1=mvp11-ray-gpu-workers-worker-1 HEAD=mvp11-ray-head

@test "kuberay operator: the rendered Ray pods (no restartPolicy: Kubernetes' Always) restart in place: a pod whose Ray container exited is kept (raycluster_controller.go:1533-1539) and its container started again, same name, address and argv, after the kubelet's back-off; planted OnFailure: restarted after a failure" {
  run pods_of
  assert_success
  local pods=$output
  # No podman --restart: that would start the same container, its files as they were.
  jq -e -s '[.[] | select(.role == "head" or .role == "worker")] | length == 3
              and all(.restartPolicy == "Always" and (.argv | index("--restart")) == null)' <<<"$pods"
  run reconcile "$pods" "{\"$HEAD\": [\"running\", 0], \"$W0\": [\"exited\", 1], \"$W1\": [\"exited\", 0]}"
  assert_success
  local r=$output
  jq -e --arg w0 "$W0" --arg w1 "$W1" --argjson pods "$(jq -s 'map(select(.role != "submitter"))' <<<"$pods")" '.created == []
    and [.restarted[] | [.name, .restartCount]] == [[$w0, 1], [$w1, 1]]
    and ([.kept[] | del(.restartCount)] == $pods) and ([.restarted[] | del(.restartCount)] == $pods[1:])
    and (.log | length == 2 and all(test("restartPolicy Always: the kubelet restarts it, kept [(]raycluster_controller.go:1533-1539[)]: restart 1 in place")))' <<<"$r"
  # A second end: restart 2; a pod whose restart is under way is left alone.
  run reconcile "$(jq -c '.kept[]' <<<"$r")" "{\"$W0\": [\"exited\", 1], \"$W1\": [\"exited\", 1]}" "$W1"
  jq -e --arg w0 "$W0" '[.restarted[] | [.name, .restartCount]] == [[$w0, 2]]' <<<"$output"
  # The kubelet's back-off: at once, then 10 s doubling to 5 min.
  run "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import kuberay_reconcile as k; print([k.restart_delay(n) for n in range(8)])' \
    "$MVP_REPO/tests/test_helper"
  assert_output "[0, 10, 20, 40, 80, 160, 300, 300]"
  run reconcile "$(pods_of OnFailure)" "{\"$W0\": [\"exited\", 1]}"
  jq -e --arg w0 "$W0" '.created == [] and [.restarted[].name] == [$w0] and (.kept | length) == 3' <<<"$output"
}

@test "kuberay operator: restartPolicy Never: a worker pod whose Ray container exited is deleted and a pod of its group made in its place (a new GenerateName name, a new address, its init container too), never restarted in place; a running one is kept" {
  run pods_of Never
  assert_success
  local pods=$output
  jq -e -s '[.[] | select(.role == "head" or .role == "worker")] | length == 3 and all(.restartPolicy == "Never")' <<<"$pods"
  run reconcile "$pods" "{\"$HEAD\": [\"running\", 0], \"$W0\": [\"exited\", 1], \"$W1\": [\"running\", 0]}"
  assert_success
  local r=$output
  jq -e --arg w0 "$W0" --arg w1 "$W1" '(.created | length) == 1 and .created[0].replaces == $w0
    and [.kept[].name] == ["mvp11-ray-head", .created[0].name, $w1] and .kept[1] == .created[0]' <<<"$r"
  # KubeRay's form and Kubernetes' alphabet; the address after the highest taken.
  jq -e '.created[0] | (.name | test("^mvp11-ray-gpu-workers-worker-[bcdfghjklmnpqrstvwxz2456789]{5}$"))
    and .ip == "10.9.1.5" and .group == "gpu-workers" and .restartPolicy == "Never"' <<<"$r"
  # Nothing of the old pod's name or address is left in the new one's argv.
  jq -e --arg w0 "$W0" '.created[0] as $p | ($p.argv + $p.init[0].argv) as $a | ($a | map(select(contains($w0)))) == []
    and ($a | map(select(. == "10.9.1.3"))) == [] and $p.init[0].name == $p.name + "-wait-gcs-ready"
    and ($p.argv | index("RAY_CLOUD_INSTANCE_ID=" + $p.name)) != null
    and ([$p.argv, $p.init[0].argv][] | .[index("--ip") + 1]) == "10.9.1.5"' <<<"$r"
  jq -e '.restarted == [] and .created[0].restartCount == 0' <<<"$r"
  jq -e '.log | length == 1 and (.[0] | test("restartPolicy Never: deleted [(]raycluster_controller.go:1525-1532"))' <<<"$r"
  # Planted: the same exit under the rendered policy (Always) makes no pod, it restarts one.
  run reconcile "$(pods_of)" "{\"$W0\": [\"exited\", 1]}"
  jq -e --arg w0 "$W0" '.created == [] and [.restarted[].name] == [$w0]' <<<"$output"
}

@test "kuberay operator: restartPolicy Never: the head pod whose Ray container exited is replaced by <cluster>-head-<5> at the head Service's address (what every pod's /etc/hosts holds); planted OnFailure: a Succeeded pod (exit 0) is deleted and replaced too (raycluster_controller.go:1517-1524)" {
  run reconcile "$(pods_of Never)" "{\"$HEAD\": [\"exited\", 0]}"
  assert_success
  jq -e --arg h "$HEAD" '(.created | length) == 1 and .created[0].replaces == $h
    and (.created[0].name | test("^mvp11-ray-head-[bcdfghjklmnpqrstvwxz2456789]{5}$")) and .created[0].ip == "10.9.1.2"
    and (.created[0].argv | index("mvp11-ray-head-svc:10.9.1.2")) != null and .kept[0] == .created[0]' <<<"$output"
  run reconcile "$(pods_of OnFailure)" "{\"$W1\": [\"exited\", 0], \"$W0\": [\"exited\", 2]}"
  assert_success
  jq -e --arg w1 "$W1" --arg w0 "$W0" '[.created[].replaces] == [$w1] and [.restarted[].name] == [$w0]
    and (.log | any(test("pod Succeeded [(]restartPolicy OnFailure, exit 0[)]: a terminal phase, deleted")))' <<<"$output"
}

@test "kuberay_pods.py starts no pod KubeRay or the API server would refuse: a restartPolicy the API does not know, a cluster KubeRay's ported rules refuse, the annotation whose head KubeRay keeps down; one ERROR line each" {
  run --separate-stderr pods_of Sometimes
  assert_failure
  assert_output ""
  [[ $stderr == "ERROR: restartPolicy 'Sometimes': the API server takes only Always, OnFailure, Never" ]]
  run --separate-stderr pods_of Never ray.io/ft-enabled "true"
  assert_failure
  assert_output ""
  [[ $stderr == "ERROR: RayCluster mvp11-ray: KubeRay would refuse it: "*"ray.io/ft-enabled"*"; no pod is started" ]]
  run --separate-stderr pods_of Never ray.io/disable-provisioned-head-restart "true"
  assert_failure
  assert_output ""
  [[ $stderr == "ERROR: RayCluster mvp11-ray: annotation ray.io/disable-provisioned-head-restart: the head it keeps down is not imitated (kuberay_reconcile.py); no pod is started" ]]
}
