#!/usr/bin/env bats
# The nightly's judgment of each job against its own history
# (helpers/mvp/nightly/history.py): synthetic nights, each judged by the real
# check and recorded by the real index.record (tests/test_helper/nightly_sim.py).
# A verdict is true (within tolerance), false (regression) or null (not judged yet).

setup() {
  load ../test_helper/common
  REG=$BATS_TEST_TMPDIR/regressions
  mkdir -p "$REG"
}

# sim EXPR: EXPR evaluated with REG (a Path) defined; prints JSON.
sim() {
  mvp_eval REG "$REG" 'import random
from nightly_sim import *' "$1"
}

@test "history: a flat history passes tonight's +5% and fails +30%, with the figure, the median and the night count as evidence" {
  run sim 'series(REG, [10.0] * 7 + [10.5, 13.0])'
  assert_success
  assert_output '[null, null, null, true, true, true, true, true, false]'
  run jq -r '.[-1].jobs.grpo.failed_checks[]' "$REG/history.json"
  assert_output regression
  run sim 'regression(night(REG, 20, [job(step_s=14.2)], settings()))["evidence"]'
  assert_output '"s/step 14.2 vs median 10 of 7 nights: +42% (worse than 10%)"'
}

@test "history: a figure whose good nights spread wider than its tolerance is allowed MVP_NIGHTLY_BAND_K MADs of them: a host of two speeds (SFT at 0.42-0.81 s a step) is not a regression, 1.2 s still is; with 1 MAD the tolerance alone decides" {
  # SFT's s/step on one machine of the detector corpus: some nights 0.42-0.50 s, others 0.66-0.81 s.
  run sim 'series(REG, [0.5, 0.71, 0.49, 0.42, 0.42, 0.81], cfg=settings(nightly_tolerance={"step_s": "35"}))'
  assert_success
  assert_output '[null, null, null, true, true, true]'
  run sim 'regression(night(REG, 6, [job(step_s=1.2)], settings(nightly_tolerance={"step_s": "35"})))["evidence"]'
  assert_output '"s/step 1.2 vs median 0.495 of 6 nights: +142% (worse than 76%: 5 MADs of its nights)"'
  rm -rf "$REG" && mkdir "$REG"
  run sim 'series(REG, [0.5, 0.71, 0.49, 0.42, 0.42, 0.81], cfg=settings(nightly_tolerance={"step_s": "35"}, nightly_band_k="1"))'
  assert_output '[null, null, null, true, true, false]'
  run jq -r '.[-1].jobs.grpo.figures.step_s' "$REG/history.json"
  assert_output 0.81
}

@test "history: too little history is not judged yet (null), which fails nothing; the first judgment needs MVP_NIGHTLY_MIN_HISTORY good nights" {
  run sim '[regression(night(REG, d, [job()], settings(nightly_min_history=2)), "grpo") for d in range(3)]'
  assert_success
  jq -e 'map(.passed) == [null, null, true] and (.[0].evidence | test("not judged yet \\(0 good nights in history, 2 needed\\)"))' <<<"$output"
  run sim 'night(REG, 5, [job(step_s=100.0)], settings(nightly_min_history=9))["passed"]'
  assert_output true
}

@test "history: a slow drift of 1% a night is never flagged; one of 3% a night widens its own nights' spread (5 MADs) and is not either, unless MVP_NIGHTLY_BAND_K=1 leaves the tolerance to decide: then once it adds up past 10% of the median" {
  run sim 'series(REG, [10 * 1.01 ** t for t in range(20)])'
  assert_success
  [[ $(jq 'map(select(. == false)) | length' <<<"$output") == 0 ]]
  rm -rf "$REG" && mkdir "$REG"
  run sim 'series(REG, [10 * 1.03 ** t for t in range(12)])'
  assert_output '[null, null, null, true, true, true, true, true, true, true, true, true]'
  rm -rf "$REG" && mkdir "$REG"
  run sim 'series(REG, [10 * 1.03 ** t for t in range(12)], cfg=settings(nightly_band_k="1"))'
  assert_output '[null, null, null, true, true, true, false, false, false, false, false, false]'
}

@test "history: one step change is flagged that night and every night after: a regressed night never joins the baseline" {
  run sim 'series(REG, [10.0] * 8 + [12.0] * 6)'
  assert_success
  assert_output '[null, null, null, true, true, true, true, true, false, false, false, false, false, false]'
}

@test "history: noise of +-4% around a steady figure raises no false alarm in 40 nights" {
  run sim 'series(REG, [10 * (1 + random.Random(night).uniform(-0.04, 0.04)) for night in range(40)])'
  assert_success
  [[ $(jq 'map(select(. == false)) | length' <<<"$output") == 0 ]]
  [[ $(jq 'map(select(. == true)) | length' <<<"$output") == 37 ]]
}

@test "history: missing nights (the job FAILED, not run, or without the figure) are skipped: the baseline is the last K good nights" {
  # Five good nights of 10 s, then failures and gaps, then tonight at 10.5 s.
  run sim '[series(REG, [10.0] * 5 + [None, None]), night(REG, 7, [job(name="sft")], settings()),
            night(REG, 8, [job(step_s=None)], settings()), regression(night(REG, 9, [job(step_s=10.5)], settings()))]'
  assert_success
  jq -e '.[0][5:] == [null, null]' <<<"$output"
  jq -e '.[3].passed == true and (.[3].evidence | test("s/step 10.5 vs median 10 of 5 nights: \\+5%"))' <<<"$output"
  # A FAILED job is not judged: its figures do not compare.
  run sim 'regression(night(REG, 10, [job(status="FAILED")], settings()))'
  jq -e '.passed == null and (.evidence | test("not judged: the job ended FAILED"))' <<<"$output"
}

@test "history: a figure is worse only in its direction: faster steps and more throughput pass, a lower score fails; tolerances are per figure" {
  run sim '[series(REG, [10.0] * 5), regression(night(REG, 5, [job(step_s=5.0, throughput=300.0)], settings()))["passed"]]'
  assert_output '[[null, null, null, true, true], true]'
  run sim 'regression(night(REG, 6, [job(throughput=80.0)], settings()))["evidence"]'
  assert_output '"throughput 80 vs median 100 of 6 nights: -20% (worse than 10%)"'
  run sim 'regression(night(REG, 7, [job(throughput=80.0)], settings(nightly_tolerance={"throughput": "25"})))["passed"]'
  assert_output true
  run sim '[night(REG, 8 + d, [job(final_score=0.5)], settings())["passed"] for d in range(3)] + [regression(night(REG, 11, [job(final_score=0.4)], settings()))["evidence"]]'
  assert_output '[true, true, true, "final score 0.4 vs median 0.5 of 3 nights: -20% (worse than 10%)"]'
}

@test "history: MVP_NIGHTLY_HISTORY_SINCE starts the history afresh after an intended change: earlier nights are not the baseline" {
  run sim '[series(REG, [10.0] * 5), regression(night(REG, 5, [job(step_s=20.0)], settings(nightly_history_since="nightly-20260104T000000Z")))]'
  assert_success
  jq -e '.[1].passed == null and (.[1].evidence | test("2 good nights in history, 3 needed"))' <<<"$output"
}

@test "history: index.html draws each judged night's band, marks the regressed night in red, puts dates on the x axis and names the failed check" {
  run sim 'series(REG, [10.0] * 7 + [13.0])'
  assert_success
  local svg
  svg=$(sed 's|</svg>|</svg>\n|g' "$REG/index.html" | grep 'data-job="grpo" data-metric="step_s"')
  [[ $(grep -o 'class="band"' <<<"$svg" | wc -l) == 1 ]]
  [[ $(grep -o 'class="pt regressed"' <<<"$svg" | wc -l) == 1 ]]
  [[ $(grep -o 'class="pt"' <<<"$svg" | wc -l) == 7 ]]
  grep -q '>2026-01-01</text>' <<<"$svg"
  grep -q '>2026-01-08</text>' <<<"$svg"
  grep -q '<td>SUCCEEDED 60.0s <span class="fail">regression</span></td>' "$REG/index.html"
}

@test "signal: a score that must rise (rises: true) and is flat from step 1, or at its cap, is FAIL no signal; one that rises or falls is a signal (a fall is the bands' to judge); a job that did not succeed is not judged" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import json
from mvp.nightly.judge import check_signal
job = lambda values, status="SUCCEEDED": {"status": status, "curves": {"score": {"key": "critic/score/mean",
    "steps": list(range(1, len(values) + 1)), "values": values}}}
print(json.dumps([check_signal(job([1.0] * 10)), check_signal(job([0.2, 0.21, 0.205, 0.2, 0.21])),
                  check_signal(job([0.22, 0.4, 0.9, 1.0])), check_signal(job([0.22, 0.1, 0.0])),
                  check_signal(job([0.2], "FAILED")), check_signal({"status": "SUCCEEDED", "curves": {}})]))'
  assert_success
  jq -e 'map(.passed) == [false, false, true, true, null, false]' <<<"$output"
  jq -r '.[0].evidence' <<<"$output" | grep -x 'no signal: the score is flat (score 1 at step 1, 1 to 1 over 10 steps; it moved at most 0.02): an untrained model already earns the probe.s reward on this data, or nothing is learnt'
  jq -r '.[2].evidence' <<<"$output" | grep -x 'the score moves (score 0.22 at step 1, 0.22 to 1 over 4 steps)'
  jq -r '.[5].evidence' <<<"$output" | grep -x 'no signal: the log has no score (critic/score/mean) at any step'
}

@test "rerun: a job whose one failed check is regression is asked to run again (not with MVP_NIGHTLY_RERUN=0, nor once its rerun ran); its check then passes only when the rerun's passes, and says so" {
  run env REG="$REG" PYTHONPATH="$MVP_REPO/helpers:$MVP_REPO/tests/test_helper" "$MVP_REPO/.venv/bin/python" -c 'import json, os
from pathlib import Path
from nightly_sim import *
from mvp.nightly import main
REG = Path(os.environ["REG"])
for d in range(7):
    night(REG, d, [job()], settings())
past = json.loads((REG / "history.json").read_text())
check = lambda j: history.check(j, past, "nightly-20260301T023000Z", settings())
def judged(step_s, other_failed=False):
    j = job(step_s=step_s)
    j["checks"][0]["passed"] = not other_failed
    j["checks"].append(check(j))
    return j
slow, slow_and_failed, fine = judged(13.0), judged(13.0, True), judged(10.1)
asked = [main.to_rerun([slow, slow_and_failed, fine], {}, settings(nightly_rerun=1)),
         main.to_rerun([slow], {}, settings(nightly_rerun=0)),
         main.to_rerun([slow], {"reruns": [{"name": "grpo", "submission_id": "again"}]}, settings(nightly_rerun=1))]
out = []
for rerun in (job(step_s=10.2), job(step_s=13.5), {"submission_id": None, "status": "NOT_SUBMITTED",
              "checks": [{"name": "submitted", "passed": False, "evidence": "the submit script failed"}]}):
    first = check(job(step_s=13.0))
    again = check({**job(), **rerun, "name": "grpo"}) if rerun["submission_id"] else \
        {"passed": None, "evidence": "not judged"}
    judge.confirm(first, {**rerun, "submission_id": rerun["submission_id"] and "grpo-again"}, again)
    out.append([first["passed"], first["rerun"]["passed"], first["evidence"]])
print(json.dumps({"asked": asked, "confirmed": out}))'
  assert_success
  jq -e '.asked == [["grpo"], [], []]' <<<"$output"
  jq -e '[.confirmed[] | .[0:2]] == [[true, true], [false, false], [false, null]]' <<<"$output"
  jq -r '.confirmed[0][2]' <<<"$output" | grep -Ex "its rerun grpo-again passed \(s/step 10.2 vs median 10 of 7 nights: .*\), so the first run.s figures were the machine.s, not the code.s: s/step 13 vs median 10 of 7 nights: \+30% \(worse than 10%\)"
  jq -r '.confirmed[1][2]' <<<"$output" | grep -Ex "s/step 13 vs median 10 of 7 nights: \+30% \(worse than 10%\); its rerun grpo-again too: s/step 13.5 vs median 10 of 7 nights: \+35% \(worse than 10%\)"
  jq -r '.confirmed[2][2]' <<<"$output" | grep -Ex ".*; its rerun \(not submitted\) could not be judged: the submit script failed"
}
