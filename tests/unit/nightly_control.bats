#!/usr/bin/env bats
# The same-night control (60 --control, helpers/mvp/nightly/control.py)
# without a cluster: the pair's verdict from planted probes (code worse than
# its control; the machine slower, control and candidate alike; equal), its
# section in the report and its line beside a failed regression check, the
# plan without a last good night, and 60's refusals and --dry-run. The night
# on a real cluster is tests/integration/nightly.bats (the cron test).

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  REG=$BATS_TEST_TMPDIR/regressions
  mkdir -p "$REG"
}

py() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "$1" "${@:2}"
}

# PLANT: a Python prelude: probe(step_s, score) a judged probe; night(run, passed,
# control_s, candidate_s) a night directory with its report.json and control.json.
PLANT='
import sys
from pathlib import Path
from types import SimpleNamespace as S
from mvp.worker import fsutil
from mvp.nightly import control, report
reg = Path(sys.argv[1])
s = S(nightly_tolerance={"step_s": "10", "final_score": "10"})
def probe(step_s, score=0.5):
    return {"status": "SUCCEEDED", "checks": [{"name": "succeeded_in_time", "passed": True, "evidence": "ok"}],
            "metrics": {"mean_step_s": step_s, "mean_throughput": None, "final_score": score, "best_score": score,
                        "final_loss": None, "peak_memory_gb": None}}
def night(run, passed, control_s, candidate_s, score=0.5):
    d = reg / run
    d.mkdir()
    fsutil.write_json(d / "report.json", {"run_id": run, "passed": passed, "code_id": "snap-" + run, "jobs": []})
    fsutil.write_json(d / "control.json", {"run_id": "nightly-20260101T000000Z", "code_id": "snap-good",
        "job": {"name": "grpo", "steps": 2},
        "control": {"code_id": "snap-good", "submission_id": "c-" + run, "judged": probe(control_s, score)},
        "candidate": {"code_id": "snap-" + run, "submission_id": "k-" + run, "judged": probe(candidate_s, score)}})
    return d
for n in (1, 2, 3):                     # three earlier good nights: both probes at 1.0 s/step
    night(f"nightly-2026010{n}T000000Z", True, 1.0, 1.0)
night("nightly-20260104T000000Z", False, 3.0, 3.0)   # a failed night: never history
'

@test "control pair: a candidate slower than its control on the same night is the code's doing; the night fails and the regression check cites the pair" {
  run py "$PLANT"'
d = night("nightly-20260110T000000Z", True, 1.0, 1.5)
pair = control.judge(d, s)
print(pair["verdict"]); print(pair["line"])
rep = {"run_id": d.name, "started_at": "x", "finished_at": "y", "code_id": "snap-tonight", "log": "l", "passed": False,
       "control": pair, "summary": "NIGHTLY FAIL", "jobs": [{"name": "grpo", "submission_id": "g", "status": "SUCCEEDED",
       "duration_s": 1.0, "metrics": {"steps": 2, "mean_step_s": 1.5, "mean_throughput": None, "sps": None},
       "checks": [{"name": "regression", "passed": False, "evidence": "s/step 1.5 vs median 1 of 3 nights: +50%"}]}]}
control.cite(rep)
print(rep["jobs"][0]["checks"][0]["evidence"])
from mvp.nightly import judge
print(judge.summary_line({**rep, "jobs": []}))
print(report.markdown(rep))
assert report.control_html(rep).count("<tr>") == 3, report.control_html(rep)' "$REG"
  assert_success
  assert_line --index 0 "code"
  assert_line --index 1 --partial "code worse/slower than its control (same machine, same night): s/step 1.5 vs median 1 of GOOD's 1 probes: +50% (worse than 10%)"
  assert_line --index 2 --partial "+50%; control: code worse/slower than its control"
  assert_line --index 3 "NIGHTLY FAIL nightly-20260110T000000Z: 0/0 jobs failed (control: code worse than its control)"
  assert_line "## Control (grpo, 2 steps; control: the last good night nightly-20260101T000000Z)"
  assert_line "| control | snap-good | c-nightly-20260110T000000Z | SUCCEEDED | 1.000 | 0.500 |"
  assert_line "| candidate | snap-nightly-20260110T000000Z | k-nightly-20260110T000000Z | SUCCEEDED | 1.500 | 0.500 |"
}

@test "control pair: control and candidate both slower than the earlier good nights' probes, alike: the machine's doing, not the code's (the failed night's probes are not history)" {
  run py "$PLANT"'
d = night("nightly-20260110T000000Z", True, 1.5, 1.55)
pair = control.judge(d, s)
print(pair["verdict"]); print(pair["line"])
print(len(control.earlier_probes(reg, d.name)))' "$REG"
  assert_success
  assert_line --index 0 "machine"
  assert_line --index 1 --partial "the machine is slower tonight, control and candidate alike (step_s: control s/step 1.5 vs median 1 of the good nights' 6 probes: +50% (worse than 10%), candidate s/step 1.55"
  # Three good nights, two probes each; nightly-20260104's (failed) are left out.
  assert_line --index 2 "6"
}

@test "control pair: a candidate as fast and as good as its control, both as the history: equal, nothing cited" {
  run py "$PLANT"'
d = night("nightly-20260110T000000Z", True, 1.0, 1.04)
pair = control.judge(d, s)
print(pair["verdict"]); print(pair["line"])
rep = {"control": pair, "jobs": [{"checks": [{"name": "regression", "passed": False, "evidence": "e"}]}]}
control.cite({**rep, "control": {"verdict": "skip", "line": "why"}})
print(rep["jobs"][0]["checks"][0]["evidence"])' "$REG"
  assert_success
  assert_line --index 0 "equal"
  assert_line --index 1 --partial "the candidate is within its control (same machine, same night): s/step 1.04 vs median 1 of GOOD's 1 probes: +4% (within 10%)"
  assert_line --index 1 --partial "; 6 earlier probes"
  assert_line --index 2 "e"
}

@test "control plan: no last good night is one skip reason and a report section saying why; a good night whose snapshot is gone, too; else the control's snapshot and bisection's probe words" {
  run py '
import sys
from pathlib import Path
from types import SimpleNamespace as S
from mvp.worker import fsutil
from mvp.nightly import control, report
reg, snaps = Path(sys.argv[1]), Path(sys.argv[2])
s = S(nightly_suite="", nightly_tolerance={}, layout=S(snapshot=lambda c: snaps / c))
tonight = reg / "nightly-20260110T000000Z"
tonight.mkdir()
print(control.plan(tonight, s)["skip"])
pair = control.judge(tonight, s)
print(pair["verdict"]); print("\n".join(report.control_markdown({"control": pair})))
assert "<table>" not in report.control_html({"control": pair}) and "no good night kept" in report.control_html({"control": pair})
good = reg / "nightly-20260109T000000Z"
good.mkdir()
fsutil.write_json(good / "report.json", {"run_id": good.name, "passed": True, "code_id": "snap-9"})
print(control.plan(tonight, s)["skip"])
(snaps / "snap-9").mkdir(parents=True)
p = control.plan(tonight, s)
print(p["control_code_id"], p["control_run"], p["job"], p["script"])
print(" ".join(p[f"arg_{i}"] for i in range(p["argc"])))' "$REG" "$BATS_TEST_TMPDIR/snapshots"
  assert_success
  assert_line --index 0 "no good night kept to take the control from"
  assert_line --index 1 "skip"
  assert_line --index 2 "## Control"
  # Nothing ran: the verdict and why, no table.
  assert_line --index 3 "**skip**: no good night kept to take the control from"
  refute_line --partial "| probe |"
  assert_line "the last good night nightly-20260109T000000Z's snapshot snap-9 is not in the shared root"
  assert_line "snap-9 nightly-20260109T000000Z grpo 41_submit_grpo_epoch1"
  assert_line --partial "--override trainer.total_training_steps=2 --override data.seed=1"
}

@test "60: MVP_NIGHTLY_CONTROL other than 0 or 1 is one ERROR line (its contract type, flag) and exit 1; --control --dry-run plans the control before the jobs" {
  run --separate-stderr env MVP_NIGHTLY_CONTROL=yes "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run
  assert_failure 1
  assert_output ""
  [[ $(grep -c '^ERROR: ' <<<"$stderr") == 1 ]]
  grep -qxF "ERROR: MVP_NIGHTLY_CONTROL='yes' must be 0 or 1; fix it where it is set: config file, environment or flag (config/settings.contract: type flag)" <<<"$stderr"
  run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run --control --only sft
  assert_success
  assert_line --index 2 --partial "then the same-night control: the last good night's snapshot, then tonight's"
  assert_line --index 3 --partial "then sft: "
  run --separate-stderr "$MVP_REPO/scripts/60_nightly_regression.sh" --dry-run --only sft
  refute_output --partial "same-night control"
  [[ ! -e $SHARED_ROOT/regressions ]]
}
