#!/usr/bin/env bats
# The nightly on Kubernetes, run as Kubernetes and KubeRay would run it: the
# file `71_render_kuberay.sh nightly` writes (claim, RayCluster, batch/v1
# CronJob) becomes pods (tests/test_helper/kuberay_pods.py): the RayCluster's
# head and workers with KubeRay v1.7.0's own command lines, then the CronJob's
# pod, twice (two nights), with exactly the template's image, command, args,
# env and mounts, the token from the cluster's Secret. The pod runs
# 60_nightly_regression.sh (runtime kuberay) against the one long-lived
# cluster. Two short nightly jobs (MVP_K8S_NIGHTLY_ONLY=ppo1,grpo) on the CPU
# STAND-IN for verl; the image is the one the recipe builds (kuberay_exec.bats).
# What KubeRay and the kubelet do when a Ray container ends is done by the
# tier's operator (tests/test_helper/kuberay_reconcile.py).
# teardown_file stops the operator and removes every pod (those the operator
# created too) and the network, even when a test fails.

setup_file() {
  load ../test_helper/common
  export MVP_K8S_NIGHTLY_ONLY=ppo1,grpo
  load ../test_helper/kuberay_tier
  kuberay_tier_setup mvpn 120 || return 1
  # The verl tree the nightly's 31 snapshots (the same content as CODE_ID's
  # snapshot, so it is kept), where the pod sees it: on the shared volume.
  mkdir -p "$SHARED_ROOT/src"
  cp -a "$MVP_REPO/$MVP_VERL_SRC/." "$SHARED_ROOT/src/verl"
  export MVP_VERL_SRC=$SHARED_ROOT/src/verl
  (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16))' >"$BATS_FILE_TMPDIR/token")
  render_pods good ""
  render_pods bad "grpo:+mvp_standin.fail_at_step=3"
  podman network rm -f "$NET" >/dev/null 2>&1 || true
  podman network create --subnet "$PREFIX.0/24" "$NET" >/dev/null
  kuberay_operator_start "$BATS_FILE_TMPDIR/good.jsonl" "$BATS_FILE_TMPDIR/bad.jsonl"
  # The one RayCluster both nights run on.
  local pod
  while read -r pod; do
    pod_start "$pod"
  done < <(jq -c 'select(.role == "head" or .role == "worker")' "$BATS_FILE_TMPDIR/good.jsonl")
}

# render_pods NAME OVERRIDES: the nightly file (NAME.yaml) and its pods (NAME.jsonl).
render_pods() {
  MVP_NIGHTLY_OVERRIDES=$2 "$MVP_REPO/scripts/71_render_kuberay.sh" nightly --out "$BATS_FILE_TMPDIR/$1.yaml" \
    2>>"$MVP_TEST_LOG" || { cat "$MVP_TEST_LOG" >&3; return 1; }
  PYTHONPATH=$MVP_REPO/tests/test_helper "$MVP_REPO/.venv/bin/python" "$MVP_REPO/tests/test_helper/kuberay_pods.py" \
    "$BATS_FILE_TMPDIR/$1.yaml" --shared "$SHARED_ROOT" --token-file "$BATS_FILE_TMPDIR/token" --network "$NET" \
    --subnet-prefix "$PREFIX" >"$BATS_FILE_TMPDIR/$1.jsonl"
}

teardown_file() {
  load ../test_helper/common
  load ../test_helper/kuberay_tier
  kuberay_tier_teardown "$BATS_FILE_TMPDIR/good.jsonl"
}

setup() {
  load ../test_helper/common
  load ../test_helper/kuberay_tier
}


# night NAME: one run of the CronJob's pod from NAME.yaml, as Kubernetes runs it.
night() {
  pod_argv "$(jq -c 'select(.role == "cronjob")' "$BATS_FILE_TMPDIR/$1.jsonl")"
  run --separate-stderr podman_within 900 run --rm "${ARGV[@]}"
  RUN_ID=$(sed -n '1s/: log .*//p' <<<"$output")
  REG=$SHARED_ROOT/regressions/$RUN_ID
}

@test "kuberay nightly: the CronJob's pod runs 60 against the one RayCluster: a good night exits 0, its two jobs one after another on that cluster's workers, plan, report and judgment on the shared volume" {
  night good
  [[ $status == 0 ]] || { echo "$stderr" | tail -40; cat "$REG/nightly.log" | tail -40; false; }
  assert_equal "$(last_line)" "NIGHTLY PASS $RUN_ID: 2/2 jobs passed every check"
  [[ -s $REG/plan.json && -s $REG/report.json && -s $REG/report.md && -s $REG/nightly.log ]]
  jq -e '.passed == true and ([.jobs[].name] == ["ppo1", "grpo"])' "$REG/report.json"
  # The cluster's pods, as the night found them (pod IPs Ray reported): the
  # worker pods as they are (a pod KubeRay replaced: its replacement's address).
  local workers
  workers=$(live_pods worker | jq -sc 'map(.ip) | sort')
  [[ $workers == "[\"$PREFIX."* ]]
  jq -e --argjson w "$workers" '(.worker_ips | sort) == $w and .cluster == "kuberay@mvp11-ray"' "$REG/plan.json"
  # One after another, each on a worker pod of the one cluster, submitted from the CronJob's pod.
  local id prev_end=0 head="" heads
  for id in $(jq -r '.jobs[].submission_id' "$REG/report.json"); do
    (( $(job_json "$id" result.json .start_time_ms) >= prev_end ))
    prev_end=$(job_json "$id" result.json .end_time_ms)
    jq -e --argjson w "$workers" '.status == "SUCCEEDED" and .cluster == "kuberay@mvp11-ray"
      and (.driver_node_ip | IN($w[]))' "$SHARED_ROOT/jobs/$id/result.json"
    heads=$(job_json "$id" result.json '.head_node_ids | join(",")')
    [[ -z $head || $heads == "$head" ]]
    head=$heads
    jq -se '[.[] | select(.event == "submitted" and (.host | startswith("mvp-nightly-")))] | length == 1' \
      "$SHARED_ROOT/jobs/$id/logs/submit.log"
  done
  echo "$RUN_ID" >"$BATS_FILE_TMPDIR/night1"
}

@test "kuberay nightly: a night whose grpo job fails exits non-zero, names grpo, and the night after it on the same cluster is judged in its own run directory" {
  night bad
  assert_equal "$status" 1
  assert_equal "$(last_line)" "NIGHTLY FAIL $RUN_ID: 1/2 jobs failed: grpo [succeeded_in_time]"
  [[ $RUN_ID != "$(cat "$BATS_FILE_TMPDIR/night1")" && -s $REG/report.json ]]
  run jq -r '.jobs[] | "\(.name) \(.status)"' "$REG/report.json"
  assert_output $'ppo1 SUCCEEDED\ngrpo FAILED'
  # The token came from the environment (the cluster's Secret), never into a file of the night.
  run grep -rl "$(<"$BATS_FILE_TMPDIR/token")" "$REG" "$SHARED_ROOT/jobs"
  assert_output ""
}
