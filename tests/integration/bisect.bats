#!/usr/bin/env bats
# 61_bisect_regression.sh end to end on a real local cluster: a git repository
# made from the CPU stand-in's tree (real verl 0.9.1's config under the
# stand-in's entrypoints) with five commits after GOOD, one of which plants a
# silent regression (the reward halved: the job succeeds, its score drops);
# 61 snapshots each probed commit with 31 --git-repo, runs the suite's grpo
# job for 2 steps through 41 --wait, and the nightly judge names the planted
# commit. Off GOOD, the branch slow: a comment, then a step five times as long
# (the judge's s/step), bisected with GOOD's two probes lent by the first.

setup_file() {
  load ../test_helper/common
  mvp_isolate "$BATS_FILE_TMPDIR"
  export MVP_TEST_LOG=$BATS_FILE_TMPDIR/cluster.log
  # Steps of 0.5 s: the figures judged against GOOD's (s/step, throughput)
  # are then the stand-in's sleep, not this shared machine's load.
  export MVP_NIGHTLY_SUITE=$BATS_FILE_TMPDIR/suite.yaml
  printf 'jobs:\n  - name: grpo\n    spec: templates/jobspecs/grpo.yaml\n    overrides: [+mvp_standin.step_seconds=0.5]\n' \
    >"$MVP_NIGHTLY_SUITE"
  REPO="$BATS_FILE_TMPDIR/verl fork"
  cp -r "$MVP_REPO/$MVP_VERL_SRC" "$REPO"
  local -a git=(git -C "$REPO" -c user.name=t -c user.email=t@t)
  "${git[@]}" init -q -b main && "${git[@]}" add -A && "${git[@]}" commit -qm "verl 0.9.1 with the stand-in"
  local i
  for i in 1 2 3 4 5; do
    if ((i == 3)); then
      sed -i 's|"critic/score/mean": knobs.figure(config, rng.random(), resumed)|"critic/score/mean": knobs.figure(config, rng.random() / 2, resumed)|' \
        "$REPO/verl/_standin/ppo.py"
      grep -q 'rng.random() / 2' "$REPO/verl/_standin/ppo.py"
    else
      echo "# harmless change $i" >>"$REPO/verl/__init__.py"
    fi
    "${git[@]}" commit -qam "change $i$( ((i == 3)) && echo ': the reward halved')"
  done
  "${git[@]}" checkout -qb slow HEAD~5
  echo "# slow change 1" >>"$REPO/verl/__init__.py"
  "${git[@]}" commit -qam "slow change 1: a comment"
  sed -i 's|float(get(config, "step_seconds", 0.02)) \* share)|float(get(config, "step_seconds", 0.02)) * share * 5)|' \
    "$REPO/verl/_standin/knobs.py"
  grep -q 'share \* 5)' "$REPO/verl/_standin/knobs.py"
  "${git[@]}" commit -qam "slow change 2: five times the step"
  "${git[@]}" checkout -q main
  HEAD_BEFORE=$(git -C "$REPO" rev-parse HEAD)
  export REPO HEAD_BEFORE
  mvp_cluster_up
  mvp_script 30_prepare_data_and_model >/dev/null
}

teardown_file() {
  load ../test_helper/common
  mvp_cluster_down
}

setup() {
  load ../test_helper/common
}

@test "61: finds the planted commit among 5 after GOOD in at most ceil(log2 6)+3 probes, judged by the nightly judge; the report page names it" {
  local planted
  planted=$(git -C "$REPO" rev-parse HEAD~2)
  run --separate-stderr "$MVP_REPO/scripts/61_bisect_regression.sh" --repo "$REPO" --good HEAD~5 --bad HEAD --steps 2
  assert_success
  assert_equal "$(last_line)" "first_bad=$planted"
  grep -q "^first bad commit $planted: change 3: the reward halved" <<<"$stderr"
  # Every stdout line is key=value: report=, probe_N=..., first_bad= last.
  local dir probes
  dir=$(sed -n 's/^report=//p' <<<"$output")
  probes=$(grep -c '^probe_[0-9]*=' <<<"$output")
  ((probes <= 6))
  # GOOD twice, then BAD: bad by the judge's figure check, not by a failed job.
  run jq -r '.probes[] | "\(.role) \(.verdict.bad) \(.judged.status)"' "$dir/bisect.json"
  assert_line --index 0 "good false SUCCEEDED"
  assert_line --index 1 "good false SUCCEEDED"
  assert_line --index 2 "bad true SUCCEEDED"
  run jq -r '.probes[2].verdict.reasons[]' "$dir/bisect.json"
  assert_output --partial "final score"
  assert_output --partial "(worse than"
  # Each probe ran its own commit's snapshot, whose manifest has the commit.
  local sha code
  while read -r sha code; do
    [[ $(jq -r .git_commit "$SHARED_ROOT/common/code/verl/$code/MANIFEST.json") == "$sha" ]]
  done < <(jq -r '.probes[] | "\(.commit) \(.code_id)"' "$dir/bisect.json")
  # The user's checkout is untouched.
  [[ -z $(git -C "$REPO" status --porcelain) && $(git -C "$REPO" rev-parse HEAD) == "$HEAD_BEFORE" ]]
  grep -q "first bad commit: $planted (change 3: the reward halved)" "$dir/report.md"
  [[ -s $dir/report.html ]]
  basename "$dir" >"$BATS_FILE_TMPDIR/first.bisection"
}

@test "61 on the branch slow off the same GOOD: GOOD's two probes lent by the bisection above (same GOOD, job and cluster: none of them run again), the commit whose steps take five times as long named by the judge's s/step, its job SUCCEEDED; the commit before it good" {
  local planted first
  planted=$(git -C "$REPO" rev-parse slow)
  first=$(cat "$BATS_FILE_TMPDIR/first.bisection") || fail "no earlier bisection to lend GOOD's probes"
  run --separate-stderr "$MVP_REPO/scripts/61_bisect_regression.sh" --repo "$REPO" --good "$(git -C "$REPO" rev-parse slow~2)" --bad slow --steps 2
  assert_success
  assert_equal "$(last_line)" "first_bad=$planted"
  grep -q "^first bad commit $planted: slow change 2: five times the step" <<<"$stderr"
  [[ $(grep -c "^probe_[12]=.* (reused from $first): " <<<"$output") == 2 ]]
  local dir
  dir=$(sed -n 's/^report=//p' <<<"$output")
  run jq -r '.probes[] | "\(.role) \(.judged.status) \(.verdict.bad) \(.reused_from // "ran")"' "$dir/bisect.json"
  assert_output "good SUCCEEDED false $first"$'\n'"good SUCCEEDED false $first"$'\nbad SUCCEEDED true ran\nprobe SUCCEEDED false ran'
  run jq -r '.probes[2].verdict.reasons[]' "$dir/bisect.json"
  assert_line --regexp "^s/step [0-9.]+ vs median [0-9.]+ of GOOD's 2 probes: \+[0-9]+% \(worse than [0-9.]+%\)$"
  grep -q "| good (reused from $first) |" "$dir/report.md"
  [[ -z $(git -C "$REPO" status --porcelain) && $(git -C "$REPO" rev-parse HEAD) == "$HEAD_BEFORE" ]]
}
