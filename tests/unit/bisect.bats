#!/usr/bin/env bats
# 61_bisect_regression.sh and 31 --git-repo without a cluster: the commits a
# bisection searches, the binary search against a fake verdict oracle, the
# probe's verdict from the judge's checks and figures, the one-line refusals
# and their exit codes, --dry-run, and git snapshots (helpers/mvp/nightly/bisection.py,
# helpers/mvp/cluster/snapshot.py). The end-to-end run is tests/integration/bisect.bats.

setup() {
  load ../test_helper/common
  mvp_isolate "$BATS_TEST_TMPDIR"
  REPO="$BATS_TEST_TMPDIR/my fork"
  mkdir -p "$REPO/verl"
  echo 'X = 1' >"$REPO/verl/__init__.py"
  GIT=(git -C "$REPO" -c user.name=t -c user.email=t@t)
  "${GIT[@]}" init -q -b main
  "${GIT[@]}" add -A && "${GIT[@]}" commit -qm "base"
}

# commits N: N more commits on the current branch, "c1".."cN".
commits() {
  local i
  for ((i = 1; i <= $1; i++)); do
    echo "v$i" >"$REPO/verl/f${2:-}$i.py"
    "${GIT[@]}" add -A && "${GIT[@]}" commit -qm "c${2:-}$i"
  done
}

py() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "$1" "${@:2}"
}

bisect61() { run --separate-stderr "$MVP_REPO/scripts/61_bisect_regression.sh" "$@"; }

# refused MESSAGE WORDS...: 61 WORDS exits 2 with one ERROR line, MESSAGE, and nothing on stdout.
refused() {
  local want=$1
  shift
  bisect61 "$@"
  assert_failure 2
  assert_output ""
  [[ $(grep -c '^ERROR: ' <<<"$stderr") == 1 ]]
  grep -qF "ERROR: $want" <<<"$stderr" || { echo "61 $*: $stderr"; return 1; }
}

@test "bisect search: a fake oracle's first bad commit is found wherever it sits, in at most ceil(log2 n)+3 probes (n commits, GOOD included; GOOD probed twice)" {
  run py '
import math
from mvp.nightly import bisection as bisect
worst = {}
for after in range(1, 12):                      # commits after GOOD; n = after + 1
    for culprit in range(after):
        outcomes, probes = [], bisect.GOOD_RUNS + 1  # GOOD twice, BAD once
        while True:
            index, first = bisect.search_step(after, outcomes)
            if index is None:
                break
            probes += 1
            outcomes.append((index, index >= culprit))
        assert first == culprit, (after, culprit, first)
        assert probes <= math.ceil(math.log2(after + 1)) + 3, (after, culprit, probes)
        assert probes <= bisect.most_probes(after)
        worst[after + 1] = max(worst.get(after + 1, 0), probes)
print(worst[8])'
  assert_success
  # 8 commits (GOOD and 7 after it): GOOD twice, BAD, three halvings.
  assert_output 6
}

@test "bisect search: an oracle that calls every probe good ends at BAD; one that calls every probe bad ends at the first commit after GOOD" {
  run py '
from mvp.nightly import bisection as bisect
for verdict, want in ((False, 6), (True, 0)):
    outcomes = []
    while (step := bisect.search_step(7, outcomes))[0] is not None:
        outcomes.append((step[0], verdict))
    assert step[1] == want, (verdict, step)
print("ok")'
  assert_output ok
}

@test "bisect path: BAD's first-parent line back to GOOD, oldest first; a side branch's commits merged in are one step (the merge)" {
  commits 2
  local good
  good=$("${GIT[@]}" rev-parse HEAD~1)
  "${GIT[@]}" checkout -qb side HEAD~1 && commits 3 s && "${GIT[@]}" checkout -q main
  "${GIT[@]}" merge -q --no-ff -m "merge side" side && commits 1 m
  run py 'import sys; from pathlib import Path; from mvp.nightly import bisection as bisect
print(" ".join(bisect.subject(Path(sys.argv[1]), c) for c in bisect.commit_path(Path(sys.argv[1]), sys.argv[2], sys.argv[3])))' \
    "$REPO" "$good" "$("${GIT[@]}" rev-parse HEAD)"
  assert_success
  assert_output "c2 merge side cm1"
}

@test "61: --dry-run lists GOOD and the commits after it, in order, and submits nothing" {
  commits 4
  bisect61 --repo "$REPO" --good HEAD~4 --bad HEAD --dry-run
  assert_success
  local i want=("good=$("${GIT[@]}" rev-parse HEAD~4) base")
  for i in 1 2 3 4; do want+=("commit_$i=$("${GIT[@]}" rev-parse "HEAD~$((4 - i))") c$i"); done
  assert_equal "$output" "$(printf '%s\n' "${want[@]}")"
  grep -q "would probe GOOD 2 times, BAD once, then at most 2 of these 4 commits (at most 5 probes)" <<<"$stderr"
  grep -q "scripts/41_submit_grpo_epoch1.sh --wait --override trainer.total_training_steps=2 --override data.seed=1; nothing submitted" <<<"$stderr"
  [[ ! -e $SHARED_ROOT/regressions && ! -e $SHARED_ROOT/common/code/verl ]]
}

@test "61: bad input is one ERROR line and exit 2, nothing written: not a git checkout, an unknown rev, GOOD not an ancestor of BAD, GOOD on a merged side branch, GOOD = BAD" {
  commits 2
  "${GIT[@]}" checkout -qb side HEAD~1 && commits 1 s && "${GIT[@]}" checkout -q main
  "${GIT[@]}" merge -q --no-ff -m "merge side" side
  local side
  side=$("${GIT[@]}" rev-parse side)
  refused "--repo $BATS_TEST_TMPDIR is not a git checkout; give the directory of a git clone of verl (your fork)" \
    --repo "$BATS_TEST_TMPDIR" --good a --bad b
  refused "--good nosuch is not a commit of $REPO; give a sha, branch or tag" --repo "$REPO" --good nosuch --bad HEAD
  refused "--good HEAD ($("${GIT[@]}" rev-parse HEAD)) is not an ancestor of --bad HEAD~2" --repo "$REPO" --good HEAD --bad HEAD~2
  refused "--good $side ($side) is not on the first-parent line of --bad HEAD" --repo "$REPO" --good "$side" --bad HEAD
  refused "--good HEAD and --bad main are the same commit" --repo "$REPO" --good HEAD --bad main
  refused "--steps 0 is not a whole number of training steps >= 1" --repo "$REPO" --good HEAD~1 --bad HEAD --steps 0
  refused "--job nope is not a job of the nightly suite" --repo "$REPO" --good HEAD~1 --bad HEAD --job nope
  refused "--spec $BATS_TEST_TMPDIR/none.yaml: spec $BATS_TEST_TMPDIR/none.yaml does not exist" --repo "$REPO" --good HEAD~1 --bad HEAD \
    --spec "$BATS_TEST_TMPDIR/none.yaml"
  [[ ! -e $SHARED_ROOT/regressions ]]
}

@test "bisect verdict: a failed check is bad; a figure past GOOD's band is bad; within the band widened by GOOD's own spread is good; GOOD's probes are judged on checks only" {
  run py '
from types import SimpleNamespace as S
from mvp.nightly import bisection as bisect
s = S(nightly_tolerance={"final_score": "10", "step_s": "10"})
def job(score, step_s=1.0, failed=False):
    return {"status": "SUCCEEDED", "checks": [{"name": "succeeded_in_time", "passed": not failed, "evidence": "status X"}],
            "metrics": {"final_score": score, "best_score": score, "mean_step_s": step_s, "mean_throughput": None,
                        "final_loss": None, "peak_memory_gb": None}}
good = [job(0.50, 1.0), job(0.50, 1.3)]          # their s/step spread: 26 %
v = [bisect.verdict(job(0.50, failed=True), good, s), bisect.verdict(job(0.25), good, s),
     bisect.verdict(job(0.48, 1.5), good, s), bisect.verdict(job(0.25, failed=True), [], s)]
print([x["bad"] for x in v]); print(v[0]["reasons"][0]); print(v[1]["reasons"][0])
print(v[3]["reasons"])
probe = {"commit": "abc", "role": "probe", "code_id": "git-abc", "submission_id": "",
         "verdict": {"bad": True, "reasons": ["succeeded_in_time: status FAILED; Traceback\n  line 2\nError"]}}
print(bisect.probe_line(probe))'
  assert_success
  assert_line --index 0 "[True, True, False, True]"
  assert_line --index 1 "succeeded_in_time: status X"
  assert_line --index 2 --partial "final score 0.25 vs median 0.5 of GOOD's 2 probes: -50% (worse than 10%)"
  assert_line --index 3 "['succeeded_in_time: status X']"
  # A job's multi-line message stays on the probe's one key=value line.
  assert_line --index 4 "abc probe BAD snapshot git-abc job -: succeeded_in_time: status FAILED; Traceback line 2 Error"
  assert_equal "${#lines[@]}" 5
}

@test "bisect verdict: a curve no single figure stands for (grad_norm at 0, advantages zeroed) outside GOOD's two probes' band for every step is bad, named by its band; within GOOD's noise is good; one reference (the control's pair) makes no band" {
  run py '
from types import SimpleNamespace as S
from mvp.nightly import bisection as bisect
s = S(nightly_tolerance={}, nightly_band_k="5", nightly_band_steps=2, nightly_band_floor="2", nightly_min_history=3)
def job(*grad_norm):
    rows = [{"step": float(i), "actor/grad_norm": g, "actor/entropy": 7.6} for i, g in enumerate(grad_norm, 1)]
    return {"status": "SUCCEEDED", "checks": [],
            "metrics": {"mean_step_s": None, "mean_throughput": None, "final_score": None, "best_score": None,
                        "final_loss": None, "peak_memory_gb": None},
            "curves": bisect.bands.curves(rows)}
good = [job(0.30, 0.27), job(0.31, 0.29)]
v = [bisect.verdict(job(3e-6, 2e-6), good, s), bisect.verdict(job(0.33, 0.25), good, s),
     bisect.verdict(job(0.30, 2e-6), good, s), bisect.verdict(job(3e-6, 2e-6), good[:1], s)]
print([x["bad"] for x in v]); print(v[0]["reasons"][0]); print(v[1]["reasons"][0]); print(v[3]["reasons"])'
  assert_success
  assert_line --index 0 "[True, False, False, False]"
  assert_line --index 1 --regexp "^grad_norm \(actor/grad_norm\) below its band at steps 1-2 \(2 in a row, 2 make a regression\): 3e-06 vs band \[[-0-9.e]+, [0-9.e]+\] \(median 0.305 \+- 15 MAD of 2 GOOD probes\) at step 1$"
  assert_line --index 2 --partial "grad_norm (actor/grad_norm) within its band at 2/2 steps (median +- 15 MAD of 2 GOOD probes;"
  assert_line --index 3 "['every check passed']"
}

@test "bisect outcome: GOOD that fails stops at once (not good); BAD judged good stops (not bad); finish exits 1 saying which, 0 with first_bad= last" {
  commits 3
  local dir=$SHARED_ROOT/regressions/bisect-x
  run py '
import json, sys
from pathlib import Path
from types import SimpleNamespace as S
from mvp.nightly import bisection as bisect; from mvp.worker import fsutil
repo, d = Path(sys.argv[1]), Path(sys.argv[2])
good, bad = bisect.commit_of(repo, "HEAD~3", "--good"), bisect.commit_of(repo, "HEAD", "--bad")
path = bisect.commit_path(repo, good, bad)
p = lambda role, is_bad, index=-1: {"role": role, "index": index, "commit": "x", "subject": "s", "code_id": "c",
                                   "submission_id": "j", "verdict": {"bad": is_bad, "reasons": ["r"]}}
base = {"id": "bisect-x", "repo": str(repo), "good": good, "bad": bad, "path": path,
        "job": {"name": "grpo", "steps": 2}, "probes": []}
print(bisect.plan_next({**base, "probes": [p("good", True)]}))
print(bisect.plan_next({**base, "probes": [p("good", False)]})["role"])
print(bisect.plan_next({**base, "probes": [p("good", False), p("good", False), p("bad", False, 2)]}))
d.mkdir(parents=True)
for name, probes in (("notbad", [p("good", False), p("good", False), p("bad", False, 2)]),
                     ("found", [p("good", False), p("good", False), p("bad", True, 2), p("probe", False, 1)])):
    (d / name).mkdir()
    bisect.save(d / name, {**base, "id": name, "probes": probes})
' "$REPO" "$dir"
  assert_success
  assert_line --index 0 "{'done': 'good_not_good'}"
  assert_line --index 1 good
  assert_line --index 2 "{'done': 'bad_not_bad'}"
  run --separate-stderr py 'import sys; from mvp.__main__ import main; sys.exit(main(["bisect", "finish", "--dir", sys.argv[1]]))' "$dir/notbad"
  assert_failure 1
  assert_output ""
  grep -q "^ERROR: BAD $("${GIT[@]}" rev-parse HEAD) is not bad" <<<"$stderr"
  run --separate-stderr py 'import sys; from mvp.__main__ import main; sys.exit(main(["bisect", "finish", "--dir", sys.argv[1]]))' "$dir/found"
  assert_success
  assert_equal "$(last_line)" "first_bad=$("${GIT[@]}" rev-parse HEAD)"
  grep -q "^first bad commit $("${GIT[@]}" rev-parse HEAD): c3" <<<"$stderr"
  grep -q "first bad commit: $("${GIT[@]}" rev-parse HEAD) (c3)" "$dir/found/report.md"
}

@test "31 --git-repo: the commit's tree, never the work tree's edits; the manifest has the full sha and subject; the same commit again is a SKIP; the checkout is untouched" {
  commits 1
  echo 'uncommitted' >>"$REPO/verl/__init__.py"
  local sha porcelain
  sha=$("${GIT[@]}" rev-parse HEAD)
  porcelain=$("${GIT[@]}" status --porcelain)
  run --separate-stderr "$MVP_REPO/scripts/31_snapshot_verl_code.sh" --porcelain --git-repo "$REPO" --rev main
  assert_success
  assert_output "code_id=git-${sha:0:12}"
  local snap=$SHARED_ROOT/common/code/verl/git-${sha:0:12}
  run jq -r '[.git_commit, .git_subject, .git_rev, .git_dirty, .source_path, .file_count] | @tsv' "$snap/MANIFEST.json"
  assert_output "$sha	c1	main	false	$REPO	2"
  [[ $(cat "$snap/verl/__init__.py") == "X = 1" ]]
  local before
  before=$(find "$snap" -printf '%p %i %T@\n' | sort)
  run --separate-stderr "$MVP_REPO/scripts/31_snapshot_verl_code.sh" --git-repo "$REPO" --rev "$sha"
  assert_success
  grep -q "SKIP: code snapshot git-${sha:0:12} ($snap holds the same content)" <<<"$stderr"
  [[ $(find "$snap" -printf '%p %i %T@\n' | sort) == "$before" ]]
  [[ $("${GIT[@]}" status --porcelain) == "$porcelain" && $("${GIT[@]}" rev-parse HEAD) == "$sha" ]]
  # No temporary tree left beside the snapshots.
  [[ $(ls -A "$SHARED_ROOT/common/code/verl") == "git-${sha:0:12}" ]]
}

@test "31 --git-repo: not a checkout, an unknown rev, --rev alone: one ERROR line, nothing written" {
  local c
  for c in "--git-repo $BATS_TEST_TMPDIR|--git-repo $BATS_TEST_TMPDIR is not a git checkout" \
    "--rev HEAD|--rev needs --git-repo DIR"; do
    local -a words
    read -r -a words <<<"${c%%|*}"
    run --separate-stderr "$MVP_REPO/scripts/31_snapshot_verl_code.sh" "${words[@]}"
    assert_failure 1
    [[ $(grep -c '^ERROR: ' <<<"$stderr") == 1 ]] && grep -qF "ERROR: ${c#*|}" <<<"$stderr"
  done
  run --separate-stderr "$MVP_REPO/scripts/31_snapshot_verl_code.sh" --git-repo "$REPO" --rev nosuch
  assert_failure 1
  grep -qF "ERROR: --rev nosuch is not a commit of $REPO" <<<"$stderr"
  [[ ! -e $SHARED_ROOT/common/code ]]
}

@test "bisect night: a failed night whose commit descends from the last good night's is bisected with its first failed job; otherwise a SKIP saying why" {
  commits 3
  local reg=$SHARED_ROOT/regressions good bad
  good=$("${GIT[@]}" rev-parse HEAD~3) bad=$("${GIT[@]}" rev-parse HEAD)
  # night NAME PASSED CODE_ID COMMIT FAILED_JOB: a judged night and its snapshot's manifest.
  night() {
    mkdir -p "$reg/$1" "$SHARED_ROOT/common/code/verl/$3"
    jq -n --argjson passed "$2" --arg code "$3" --arg failed "$5" '{passed: $passed, failed_step: null, code_id: $code,
      jobs: [{name: "ppo1", checks: [{name: "regression", passed: true}]},
             {name: "grpo", checks: [{name: "regression", passed: ($failed != "grpo")}]}]}' >"$reg/$1/report.json"
    jq -n --arg c "$4" '{git_commit: $c, git_dirty: false}' >"$SHARED_ROOT/common/code/verl/$3/MANIFEST.json"
  }
  night nightly-20261101T000000Z true git-good "$good" ""
  night nightly-20261102T000000Z false git-bad "$bad" grpo
  night nightly-20261103T000000Z false git-old "$good" grpo
  night nightly-20261104T000000Z true git-x "$bad" ""
  plan() {
    py 'import sys
from pathlib import Path
from types import SimpleNamespace as S
from mvp.nightly import bisection
from mvp.core.layout import Layout
plan = bisection.night_plan(Path(sys.argv[1]), S(layout=Layout(Path(sys.argv[2])), nightly_bisect_repo=sys.argv[3], nightly_suite=""))
print(" ".join(f"{k}={v}" for k, v in plan.items()))' \
      "$reg/$1" "$SHARED_ROOT" "$REPO"
  }
  run plan nightly-20261102T000000Z
  assert_output "good=$good bad=$bad job=grpo"
  run plan nightly-20261103T000000Z
  assert_output "skip=tonight ran the last good night's commit $good: not a code change"
  run plan nightly-20261104T000000Z
  assert_output "skip=the night passed, or failed before its jobs ran"
  # The good night after the bad one is not a night before it; nothing earlier passed.
  rm -r "$reg/nightly-20261101T000000Z"
  run plan nightly-20261102T000000Z
  assert_output "skip=no good night kept to start from"
  night nightly-20261101T000000Z true git-good "$bad" ""
  night nightly-20261102T000000Z false git-bad "$good" grpo
  run plan nightly-20261102T000000Z
  assert_output "skip=$good is not a known descendant of the last good night's $bad in $REPO"
}

@test "bisect night: the mail's first line and the webhook's bisection name the first bad commit (bisection.json beside the night's report)" {
  local run=$SHARED_ROOT/regressions/nightly-20261102T000000Z
  mkdir -p "$run"
  echo '{"line": "first bad commit: abc123 (change 3)", "first_bad": "abc123", "report": "/r/bisect-x/report.md"}' >"$run/bisection.json"
  echo '# report' >"$run/report.md"
  printf '#!/bin/sh\ncat >"%s"\n' "$BATS_TEST_TMPDIR/mail" >"$BATS_TEST_TMPDIR/sendmail"
  chmod +x "$BATS_TEST_TMPDIR/sendmail"
  run py 'import sys
from pathlib import Path
from types import SimpleNamespace as S
from mvp.nightly import notify
notify.send_mail(S(nightly_mail_to=["ops@example.com"], nightly_sendmail=sys.argv[2]), {"summary": "NIGHTLY FAIL x"}, Path(sys.argv[1]))' \
    "$run" "$BATS_TEST_TMPDIR/sendmail"
  assert_success
  grep -A1 -m1 '^$' "$BATS_TEST_TMPDIR/mail" | grep -qx 'Bisection: first bad commit: abc123 (change 3) (/r/bisect-x/report.md)'
}

@test "bisect reuse: a bisection starts from GOOD's two good probes of the newest earlier one with the same GOOD, job (words, JobSpec content, steps) and cluster within MVP_BISECT_REUSE_HOURS, marked as reused; none when any of those differs, a GOOD probe was bad, they are older, or the setting is 0" {
  run py '
import sys
from datetime import timedelta
from pathlib import Path
from mvp.nightly import bisection as bisect
from mvp.worker import fsutil
regs = Path(sys.argv[1])
job = {"name": "learn", "spec": "", "spec_sha256": "", "words": ["--override", "a=1"], "steps": 10}
good = lambda sid, bad=False: {"role": "good", "index": -1, "commit": "g", "subject": "s", "code_id": "c",
                               "submission_id": sid, "verdict": {"bad": bad, "reasons": ["r"]}}
def earlier(name, hours_ago=1, probes=None, **diff):
    old = {"id": name, "good": "g", "job": job, "cluster": "local@h", **diff,
           "started_at": (bisect._now() - timedelta(hours=hours_ago)).strftime(bisect.TIME),
           "probes": probes if probes is not None else [good(name + "-1"), good(name + "-2"), {**good("b"), "role": "bad"}]}
    (regs / name).mkdir(parents=True)
    fsutil.write_json(regs / name / bisect.STATE, old)
now = {"id": "bisect-9", "good": "g", "job": job, "cluster": "local@h"}
def reused(hours=12):
    return " ".join("%s<%s" % (p["submission_id"], p["reused_from"]) for p in bisect.reusable_goods(regs, now, hours)) or "none"
earlier("bisect-1", hours_ago=2)
print("same:", reused(), "| setting 0:", reused(0))
earlier("bisect-2", cluster="other@h")
earlier("bisect-3", job={**job, "steps": 2})
earlier("bisect-4", job={**job, "spec_sha256": "other"})
earlier("bisect-5", good="h")
earlier("bisect-6", probes=[good("x"), good("y", bad=True)])
earlier("bisect-7", probes=[good("z")])
print("newer ones differ:", reused())
earlier("bisect-8", hours_ago=13)
print("older than the hours past newer ones:", reused())
print("all older than 1 hour:", reused(1))
' "$BATS_TEST_TMPDIR/regs"
  assert_success
  assert_line --index 0 "same: bisect-1-1<bisect-1 bisect-1-2<bisect-1 | setting 0: none"
  assert_line --index 1 "newer ones differ: bisect-1-1<bisect-1 bisect-1-2<bisect-1"
  assert_line --index 2 "older than the hours past newer ones: bisect-1-1<bisect-1 bisect-1-2<bisect-1"
  assert_line --index 3 "all older than 1 hour: none"
}

@test "bisect outcome: a GOOD probe of a job whose score must rise (rises: true) that is flat fails the check signal, and finish says in one line that it carries no signal and nothing was bisected" {
  commits 2
  local dir=$SHARED_ROOT/regressions/bisect-flat
  run py '
import sys
from pathlib import Path
from mvp.nightly import bisection as bisect, judge
repo, d = Path(sys.argv[1]), Path(sys.argv[2])
good, bad = bisect.commit_of(repo, "HEAD~2", "--good"), bisect.commit_of(repo, "HEAD", "--bad")
flat = {"status": "SUCCEEDED", "curves": {"score": {"key": "critic/score/mean", "steps": list(range(1, 11)), "values": [1.0] * 10}}}
check = judge.check_signal(flat)
probe = {"role": "good", "index": -1, "commit": good, "subject": "s", "code_id": "c", "submission_id": "j",
         "judged": {"checks": [check]}, "verdict": bisect.verdict({**flat, "checks": [check]}, [], None)}
d.mkdir(parents=True)
bisect.save(d, {"id": "bisect-flat", "repo": str(repo), "good": good, "bad": bad, "path": bisect.commit_path(repo, good, bad),
                "job": {"name": "learn", "steps": 10, "rises": True}, "probes": [probe]})
print(bisect.plan_next(bisect.load(d)))' "$REPO" "$dir"
  assert_success
  assert_output "{'done': 'good_not_good'}"
  run --separate-stderr py 'import sys; from mvp.__main__ import main; sys.exit(main(["bisect", "finish", "--dir", sys.argv[1]]))' "$dir"
  assert_failure 1
  assert_output ""
  [[ $(wc -l <<<"$stderr") == 1 ]]
  grep -qE "^ERROR: GOOD [0-9a-f]{40}'s probe of job learn carries no signal \(no signal: the score is flat \(score 1 at step 1, 1 to 1 over 10 steps; it moved at most 0.02\).*\): it cannot tell a good commit from a bad one here; .*nothing bisected" <<<"$stderr"
}

@test "bisect skip: a skipped commit is never probed again and the nearest other one goes instead; the first bad is found around skips that do not hide it, else the search ends with the skipped ones and the first bad as candidates" {
  run py '
from mvp.nightly import bisection as bisect
def search(n, culprit, skipped):
    outcomes, seen, probes = [], set(), 0
    while (step := bisect.search_step(n, outcomes, frozenset(seen & skipped)))[0] is not None:
        index = step[0]
        assert index not in seen, (n, culprit, skipped, index)
        seen.add(index)
        probes += 1
        if index not in skipped:
            outcomes.append((index, index >= culprit))
    lo = bisect.bounds(n, outcomes)[0]
    return step[1], [i for i in range(lo + 1, step[1]) if i in skipped], probes
# 8 commits after GOOD, the culprit at 5; 3 (the first middle) skipped: 4 instead, then 5.
print(search(8, 5, {3}))
# The commit just before the culprit skipped: the first bad is 4 or 5.
print(search(8, 5, {4}))
# Everywhere: a skip costs at most one probe more, and hides the culprit only when it is the culprit
# (then the candidates are it and the next, known bad) or sits right before it (it and the culprit).
for n in range(2, 12):
    for culprit in range(n):
        for skip in range(n - 1):
            first, hidden, probes = search(n, culprit, {skip})
            assert first == (culprit + 1 if skip == culprit else culprit), (n, culprit, skip, first)
            assert hidden == ([skip] if skip in (culprit - 1, culprit) else []), (n, culprit, skip, hidden)
            assert probes <= bisect.most_probes(n) - bisect.GOOD_RUNS - 1 + 1, (n, culprit, skip, probes)
print("ok")'
  assert_success
  assert_line --index 0 "(5, [], 3)"
  assert_line --index 1 "(5, [4], 3)"
  assert_line --index 2 ok
}

@test "bisect skip: untestable is a skip for no snapshot, the preflight's CPU-layer refusal (exit 69), a job the cluster did not admit (exit 75) or lost, and a failed job whose driver log holds the CPU layer's marker; a crash in verl and any other refusal are no skip (BAD)" {
  local jobs=$SHARED_ROOT/jobs
  mkdir -p "$jobs/layer/logs" "$jobs/crash/logs"
  printf 'start\n(TaskRunner pid=7) MVP_CPU_LAYER_FAILED: the runbook'"'"'s CPU layer cannot serve this verl: cannot import name X\n' \
    >"$jobs/layer/logs/driver.log"
  printf 'Traceback\nZeroDivisionError: division by zero\n' >"$jobs/crash/logs/driver.log"
  run py '
from types import SimpleNamespace as S
from mvp.core.settings import load
from mvp.nightly import bisection as bisect
settings = load()
a = lambda code="c", sid="", rc="": S(code_id=code, submission_id=sid, submit_rc=rc)
cases = [
    (a(code=""), {}),
    (a(rc="69"), {}),
    (a(rc="75"), {}),
    (a(sid="lost"), {"status": "LOST"}),
    (a(sid="layer"), {"status": "FAILED"}),
    (a(sid="crash"), {"status": "FAILED"}),
    (a(rc="1"), {}),
    (a(sid="layer"), {"status": "SUCCEEDED"}),
]
for args, judged in cases:
    print(bisect.untestable(args, judged, settings) or "-")'
  assert_success
  assert_line --index 0 "no snapshot of its commit (31 --git-repo failed; see bisect.log)"
  assert_line --index 1 "the runbook's CPU layer cannot serve its verl (the preflight's refusal, exit 69; its ERROR line is in bisect.log)"
  assert_line --index 2 "the cluster did not admit its job (exit 75; its ERROR line is in bisect.log)"
  assert_line --index 3 "its job was lost to the cluster (LOST: its driver's node or the head went away)"
  assert_line --index 4 "its job died in the runbook's CPU layer, not in verl: (TaskRunner pid=7) MVP_CPU_LAYER_FAILED: the runbook's CPU layer cannot serve this verl: cannot import name X"
  assert_line --index 5 -
  assert_line --index 6 -
  assert_line --index 7 -
}

@test "bisect skip: skipped commits that hide the first bad one: finish exits 1 with 'first bad is one of A..B' naming each skipped commit and why; the report marks them skip; a skipped GOOD could not be tested" {
  commits 3
  local dir=$SHARED_ROOT/regressions/bisect-x
  run py '
import sys
from pathlib import Path
from mvp.nightly import bisection as bisect
repo, d = Path(sys.argv[1]), Path(sys.argv[2])
good, bad = bisect.commit_of(repo, "HEAD~3", "--good"), bisect.commit_of(repo, "HEAD", "--bad")
path = bisect.commit_path(repo, good, bad)
def p(role, is_bad, index=-1, skip=""):
    commit = path[index] if index >= 0 else good
    return {"role": role, "index": index, "commit": commit, "subject": "s", "code_id": "c", "submission_id": "j",
            "verdict": {"bad": is_bad, "reasons": [f"skipped: {skip}" if skip else "r"], **({"skip": skip} if skip else {})}}
base = {"id": "bisect-x", "repo": str(repo), "good": good, "bad": bad, "path": path,
        "job": {"name": "grpo", "steps": 2}, "probes": []}
d.mkdir(parents=True)
for name, probes in (("hidden", [p("good", False), p("good", False), p("bad", True, 2), p("probe", False, 1, "no snapshot"),
                                 p("probe", False, 0)]),
                     ("goodskip", [p("good", False, -1, "its job was lost")])):
    (d / name).mkdir()
    bisect.save(d / name, {**base, "id": name, "probes": probes})
print(bisect.plan_next(bisect.load(d / "hidden"))["done"])' "$REPO" "$dir"
  assert_success
  assert_output ambiguous
  run --separate-stderr py 'import sys; from mvp.__main__ import main; sys.exit(main(["bisect", "finish", "--dir", sys.argv[1]]))' "$dir/hidden"
  assert_failure 1
  assert_output ""
  local c2 c3
  c2=$("${GIT[@]}" rev-parse HEAD~1) c3=$("${GIT[@]}" rev-parse HEAD)
  assert_equal "$stderr" "ERROR: first bad is one of $c2..$c3 (2 commits, BAD's first-parent line): ${c2:0:12} skipped: no snapshot; test those by hand, or bisect with a job the runbook can run on them ($dir/hidden/report.md)"
  grep -q "| probe | $c2 | s | c | j | skip | skipped: no snapshot |" "$dir/hidden/report.md"
  run jq -c .outcome.one_of "$dir/hidden/bisect.json"
  assert_output "[\"$c2\",\"$c3\"]"
  run --separate-stderr py 'import sys; from mvp.__main__ import main; sys.exit(main(["bisect", "finish", "--dir", sys.argv[1]]))' "$dir/goodskip"
  assert_failure 1
  grep -q "^ERROR: GOOD $("${GIT[@]}" rev-parse HEAD~3) could not be tested: its job was lost; nothing bisected" <<<"$stderr"
}
