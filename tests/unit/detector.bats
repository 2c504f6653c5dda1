#!/usr/bin/env bats
# The nightly judge's measured error rates (helpers/mvp/nightly/calibration.py):
# the corpus of real verl 0.9.1 runs in tests/fixtures/detector/ (recorded by
# bench/detector/record.sh: same-code nights and nights of a fork with a
# planted regression) replayed through the judge's own code, in seconds.
# config/detector.json holds what the replay measured; the nightly's reports
# quote it, and the guard below keeps the judge to it.

setup() {
  load ../test_helper/common
  CORPUS=$MVP_REPO/tests/fixtures/detector/corpus
}

detector() { PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -m mvp detector "$@"; }

# py CODE: CODE run with the helper on the path (the corpus's records as `records`).
py() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "from mvp.nightly import calibration as cal
records = cal.load()
$1"
}

@test "detector: config/detector.json is what the replay of the corpus of real runs measures today (make bench-detector rewrites it)" {
  run detector --write "$BATS_TEST_TMPDIR/detector.json"
  assert_success
  # The table, then the key=value lines the benchmark promises.
  assert_line --regexp '^false alarms / 100 nights +[0-9.]+ +<= 1 '
  assert_line --regexp '^same_code_runs=[0-9]+$'
  assert_line --regexp '^false_alarms_per_100_nights=[0-9.]+$'
  assert_line --regexp '^false_alarms_per_100_nights_ci95_high=[0-9.]+$'
  for kind in $(jq -r '.detected | keys[]' "$BATS_TEST_TMPDIR/detector.json"); do
    assert_line --regexp "^detected\\.$kind=[0-9.]+$"
  done
  diff -u "$MVP_REPO/config/detector.json" "$BATS_TEST_TMPDIR/detector.json"
  # Each machine's own rates, one row each, its nights as the corpus counts them.
  jq -e '(.by_machine | keys) == (.corpus.machines | keys) and
         all(.by_machine | to_entries[]; .value.same_code_nights == $c[.key])' \
    --argjson c "$(jq .corpus.machines "$BATS_TEST_TMPDIR/detector.json")" "$BATS_TEST_TMPDIR/detector.json"
  for machine in $(jq -r '.by_machine | to_entries[] | select(.value.false_alarms_per_100_nights) | .key' "$BATS_TEST_TMPDIR/detector.json"); do
    assert_line --regexp "^  on ${machine:0:24} +[0-9.]+ +[0-9]+ nights; 95% high "
  done
  # A machine with too few nights for a history and a night beyond it still has its row: its nights, no rate.
  for machine in $(jq -r '.by_machine | to_entries[] | select(.value.false_alarms_per_100_nights == null) | .key' "$BATS_TEST_TMPDIR/detector.json"); do
    (($(jq --arg m "$machine" '.corpus.machines[$m]' "$BATS_TEST_TMPDIR/detector.json") <= $(jq .judge.history "$BATS_TEST_TMPDIR/detector.json")))
    assert_line --regexp "^  on ${machine:0:24} +- +[0-9]+ nights; its false alarms not counted"
  done
  # The exact bound: 0 alarms in 10 nights allow 31 per 100, in 72 5; 200 in 5000 4.58 (comb(5000, 200) is past a float).
  run py 'print([round(100 * cal.binomial_high(h, n), 2) for h, n in ((0, 10), (0, 72), (200, 5000))], cal.nights_needed(0.0, 0.05))'
  assert_output "[30.85, 4.99, 4.58] 72"
}

@test "detector guard: the judge keeps its measured word on the corpus; a rule that cries wolf more (k=1 MAD, 1 step) or misses more (k=1000 MAD, tolerances 1000%) fails it, naming the figure" {
  run detector --guard "$MVP_REPO/config/detector.json"
  assert_success
  assert_output 'guard: the judge keeps its measured word'
  MVP_NIGHTLY_BAND_K=1 MVP_NIGHTLY_BAND_STEPS=1 run detector --guard "$MVP_REPO/config/detector.json"
  assert_failure 1
  assert_line --regexp '^WORSE: false alarms [0-9.]+ per 100 nights, above the 95% interval.s high end [0-9.]+ measured in config/detector.json$'
  MVP_NIGHTLY_BAND_K=1000 MVP_NIGHTLY_TOLERANCE="step_s=1000 throughput=1000 final_score=1000 best_score=1000 final_loss=1000 peak_memory_gb=1000" \
    run detector --guard "$MVP_REPO/config/detector.json"
  assert_failure 1
  assert_line --regexp '^WORSE: detected\.[a-z]+ [0-9.]+, below the 95% interval.s low end [0-9.]+ measured in config/detector.json$'
  refute_line --regexp '^WORSE: false alarms'
}

@test "detector corpus: real runs only (real verl's tree, the runbook's own path), each with every figure at every step, the job's words and JobSpec digest, its fingerprint and load (and the CPU's steal where sampled), planted or not; at most 2 MiB" {
  (( $(du -cb "$CORPUS"/* | tail -n 1 | cut -f1) <= 2 * 1024 * 1024 ))
  run py 'import json
bad = [r["record"] for r in records if not (r["rows"] and all("step" in row for row in r["rows"])
       and r["fingerprint"].get("snapshot.id") == r["code_id"] and r["load"]["samples"] > 0
       and (r["planted"] is None) == (r["plant_commit"] is None) and r["spec_sha256"] and "overrides" in r)]
real = {r["fingerprint"].get("snapshot.id") for r in records}
print(json.dumps({"bad": bad, "records": len(records), "snapshots": sorted(real),
                  "jobs": sorted({r["job"] for r in records}), "planted": sorted({r["planted"] or "-" for r in records})}))'
  assert_success
  jq -e '.bad == [] and .records > 0 and (.jobs | index("learn")) and (.jobs | index("grpo")) and (.jobs | index("sft"))' <<<"$output"
  # verl as released for the same-code nights, a planted commit's snapshot for the others; never the stand-in.
  jq -e '.snapshots | all(. == "verl-0.9.1" or startswith("plant-"))' <<<"$output"
  # The recorder's load samples: the load average, and where sampled the CPU's steal and total ticks
  # (steal 30 of 300 ticks while the job ran: 10%); samples of load alone give no steal share.
  printf '%s\n' '100 4.0 1000 10000' '105 6.0 1010 10100' '110 5.0 1030 10300' '200 9.0 2000 20000' >"$BATS_TEST_TMPDIR/load"
  printf '%s\n' '100 4.0' '110 5.0' >"$BATS_TEST_TMPDIR/load-only"
  run env PYTHONPATH="$MVP_REPO/bench/detector:$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import harvest, pathlib, sys
for name in ("load", "load-only"):
    print(harvest.load_during(harvest.read_samples(pathlib.Path(sys.argv[1]) / name), 100, 110))' "$BATS_TEST_TMPDIR"
  assert_output "{'mean': 5.0, 'max': 6.0, 'samples': 3, 'steal_pct': 10.0}
{'mean': 4.5, 'max': 5.0, 'samples': 2}"
}

@test "detector regimes: the replay judges one trainer profile's records: today's once its same-code nights outnumber the history, else the profile with the most nights; the others are left out" {
  run py 'import json
cur = cal.profile_sha256()
# The corpus twice (the copy'"'"'s nights renamed): more older nights than today'"'"'s in either case.
records = records + [{**r, "night": r["night"] + "-copy"} for r in records]
nights = sorted({r["night"] for r in records if not r.get("planted")})
def relabel(n):
    # The first n same-code nights as if run with today'"'"'s profile, every other record with another one.
    return [{**r, "profile_sha256": cur if r["night"] in nights[:n] else "older"} for r in records]
out = {}
for n in (5, 8):
    chosen, kept = cal.regime_of(relabel(n), 7, cur)
    out[n] = [chosen == cur, len({r["night"] for r in kept if not r.get("planted")}), all(r["profile_sha256"] == chosen for r in kept)]
print(json.dumps({"nights": len(nights), "five": out[5], "eight": out[8]}))'
  assert_success
  # 5 of today'"'"'s nights are too few for a history of 7: the older profile, which has more, is judged.
  local nights
  nights=$(jq .nights <<<"$output")
  (( nights - 8 > 8 ))
  jq -e ".five == [false, $((nights - 5)), true] and .eight == [true, 8, true]" <<<"$output"
}

@test "detector --from-history: a team's good nights (history.json, curves from each night's report.json) become same-code records the judge replays as the recorded ones; a good night without curves is counted, not invented" {
  local reg=$BATS_TEST_TMPDIR/regressions
  mkdir -p "$reg"
  # Nine same-code nights of the corpus as a team's history: the first without a report.json (retention pruned it).
  run py "import json, pathlib
reg = pathlib.Path('$reg')
same, _ = cal.nights_of(records)
nights = []
for i, (night, jobs) in enumerate(sorted(same.items())[:9]):
    run = f'nightly-20261201T{i:02d}0000Z'
    nights.append({'run_id': run, 'started_at': '2026-12-01', 'jobs': {n: cal.as_entry(j) for n, j in jobs.items()}})
    for e in nights[-1]['jobs'].values():
        e.pop('curves')
    if i:
        (reg / run).mkdir()
        (reg / run / 'report.json').write_text(json.dumps({'jobs': [{'name': n, 'curves': j['curves']} for n, j in jobs.items()]}))
(reg / 'history.json').write_text(json.dumps(nights))
print(sum(len(n['jobs']) for n in nights))"
  assert_success
  local total=$output
  mkdir "$BATS_TEST_TMPDIR/team"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" "$MVP_REPO/bench/detector/from_history.py" "$reg/history.json" \
    --label team --out "$BATS_TEST_TMPDIR/team/nights.jsonl"
  assert_success
  assert_output --regexp "^[0-9]+ records from 8 good nights in .*; [0-9]+ good job-nights had no curves left"
  # The replay reads them as the judge met them: the same curves and figures as the recorded runs'.
  run py "import json
team = cal.load(__import__('pathlib').Path('$BATS_TEST_TMPDIR/team'))
same, _ = cal.nights_of(records)
first = sorted(same.items())[1][1]
mine = {r['job']: cal.as_job(r) for r in team if r['night'] == 'nightly-20261201T010000Z'}
print(json.dumps({'n': len(team), 'same': all(mine[n]['curves'] == first[n]['curves'] and
      cal.history.figures(mine[n]) == cal.history.figures(first[n]) for n in first)}))"
  assert_success
  jq -e '.same == true and .n > 0' <<<"$output"
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" "$MVP_REPO/bench/detector/from_history.py" "$reg/nothing.json" --out /dev/null
  assert_failure 2
  assert_output --regexp '^ERROR: .*nothing.json does not exist; give <SHARED_ROOT>/regressions/history.json$'
}

@test "trust line: the check regression of a calibrated job quotes its measured false-alarm rate, each kind's detection on that job, and the corpus's date, and resume_fidelity its band's; another job, a GPU night, another judge setting or band or a CPU profile the corpus did not measure says not calibrated" {
  run py 'import json
from types import SimpleNamespace as S
m = cal.read_calibration()
# The calibration as if measured on today'"'"'s profile, and as if on another one.
m, other = ({**m, "regime": {**m["regime"], "profile_sha256": digest}} for digest in (cal.profile_sha256(), "0" * 64))
base = dict(trainer_profile="cpu", nightly_history=m["judge"]["history"], nightly_min_history=m["judge"]["min_history"],
            nightly_band_k=m["judge"]["band_k"], nightly_band_steps=m["judge"]["band_steps"],
            nightly_band_floor=m["judge"]["band_floor"], nightly_tolerance=m["judge"]["tolerance"],
            nightly_rerun=m["judge"]["rerun"])
# A kind planted on two jobs, caught 1 time in 2 on one and always on the other: each line says what that job alone caught, and what its nights caught where that differs.
m["detected"] = {**m["detected"], "two": {"rate": 0.75, "job": "grpo,learn", "by_job": {"grpo": 0.5, "learn": 1.0},
                                           "nights_by_job": {"grpo": 1.0, "learn": 1.0}}}
print(json.dumps({"learn": cal.trust("learn", S(**base), m), "own": cal.trust("ppo_gsm8k", S(**base), m),
                  "grpo": cal.trust("grpo", S(**base), m),
                  "profile": cal.trust("learn", S(**base), other),
                  "gpu": cal.trust("learn", S(**{**base, "trainer_profile": "gpu"}), m),
                  "k": cal.trust("learn", S(**{**base, "nightly_band_k": "9"}), m), "date": m["corpus"]["last"],
                  "resume": cal.resume_trust("ppo2", S(**base, nightly_resume_band={"score": "0.1", "grad_norm": "0.1"}), m),
                  "resume_grpo": cal.resume_trust("grpo", S(**base, nightly_resume_band={"score": "0.1", "grad_norm": "0.1"}), m),
                  "resume_band": cal.resume_trust("ppo2", S(**base, nightly_resume_band={"score": "0.1", "grad_norm": "0.05"}), m)}))'
  assert_success
  # resume_fidelity's own line: its band's nights and fitted tail, for the job and band the corpus measured.
  jq -r .resume <<<"$output" | grep -E "^this check's measured false-alarm rate: [0-9]+ of [0-9]+ same-code nights beyond its band; a half-normal fitted to each figure's differences puts grad_norm [0-9.e-]+ \([0-9.e-]+ at its spread's 95% upper end\), score 0 \(0 at its spread's 95% upper end\) per 100 nights beyond; corpus $(jq -r .date <<<"$output"), "
  jq -r .resume_grpo <<<"$output" | grep -E "^not calibrated \(the corpus measured the resume of ppo2 on GSM8K's files; this night resumed grpo;"
  jq -r .resume_band <<<"$output" | grep -E "^not calibrated \(tonight.s MVP_NIGHTLY_RESUME_BAND differs from the measured one in grad_norm;"
  local date
  date=$(jq -r .date <<<"$output")
  jq -r .learn <<<"$output" | grep -E "^this check's measured false-alarm rate: [0-9.]+ per 100 nights \(all jobs of a night: [0-9.]+, 95% high [0-9.]+\).*; corpus $date, [0-9]+ same-code nights$"
  jq -r .learn <<<"$output" | grep -F ', two 1 on the first bad night'
  jq -r .grpo <<<"$output" | grep -F ', two 0.5 (its nights 1) on the first bad night'
  jq -r .own <<<"$output" | grep -E "^not calibrated \(the corpus has no runs of the job 'ppo_gsm8k'"
  jq -r .gpu <<<"$output" | grep -E '^not calibrated \(the corpus holds cpu-profile runs only, this night ran gpu; docs/first-gpu-night.md'
  jq -r .k <<<"$output" | grep -E '^not calibrated \(tonight.s judge differs from the measured one in MVP_NIGHTLY_BAND_K;'
  jq -r .profile <<<"$output" | grep -E '^not calibrated \(the corpus measured CPU nights of another templates/profiles/cpu.yaml than tonight.s, which has [0-9]+ recorded same-code nights;'
}

@test "trust line: report.md and report.html carry it under each job's checks, the webhook's text beside a failed regression only" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'import json
from mvp.nightly import notify, report
job = lambda name, passed: {"name": name, "submission_id": name + "-1", "status": "SUCCEEDED", "duration_s": 1.0,
    "metrics": {"steps": 1, "mean_step_s": 1.0, "mean_throughput": None, "sps": None},
    "checks": [{"name": "regression", "passed": passed, "evidence": "e", "trust": "TRUST " + name}]}
rep = {"run_id": "nightly-x", "started_at": "s", "finished_at": "f", "log": "l", "passed": False, "summary": "NIGHTLY FAIL",
       "jobs": [job("learn", False), job("grpo", True)]}
print(json.dumps({"md": report.markdown(rep), "html": report.html(rep), "hook": notify.trust_lines(rep)}))'
  assert_success
  jq -r .md <<<"$output" | grep -x -- '- how far to trust regression: TRUST learn'
  jq -r .md <<<"$output" | grep -x -- '- how far to trust regression: TRUST grpo'
  jq -r .html <<<"$output" | grep -F 'how far to trust <b>regression</b>: TRUST learn</li>'
  jq -e '.hook == ["learn regression: TRUST learn"]' <<<"$output"
}

@test "detector: docs/nightly.md's measured table is config/detector.json's (make bench-detector rewrites both)" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'from mvp.nightly import calibration as cal
text = cal.DOC.read_text()
print(text == cal.docs_block(text, cal.read_calibration()))'
  assert_success
  assert_output True
}

@test "detector machines: a night is judged only against same-code nights of its own machine; every record names its machine or its file is in corpus/machines.json" {
  run py 'import json, random
from statistics import mean
s = cal.JudgeSettings()
same, planted = cal.nights_of(records)
rng = random.Random(1)
alone = {n: n for n in same}  # each night on a machine of its own: no history anywhere
named = set(json.load(open(cal.CORPUS / cal.MACHINES)).values())
count = lambda parts: sum(map(len, parts.values()))
print(json.dumps({"alone": count(cal.false_alarms(same, s, rng, 1, 3, machine=alone)),
                  "alone_planted": len(cal.detections(planted, same, s, rng, 1, 3, machine=alone)),
                  "together": count(cal.false_alarms(same, s, rng, 1, 3, machine=cal.machines_of(records))),
                  "unnamed": sorted({r["machine"] for r in records if r["machine"] not in named and not r["machine"].startswith("boot-")})}))'
  assert_success
  jq -e '.alone == 0 and .alone_planted == 0 and .together > 0 and .unnamed == []' <<<"$output"
}

@test "detector parts: a job that failed on its own (ended FAILED, or a check of its night such as resume_fidelity) fails its night against any history and is caught when planted; parts of the suite recorded apart combine as 1 - the product of their pass rates; overlapping parts are refused" {
  run py 'import json, random
s = cal.JudgeSettings()
same, planted = cal.nights_of(records)
quiet = [n for n in sorted(same) if cal.machines_of(records)[n] == "boot-95e626ed"]
refs = [same[n] for n in quiet[1:8]]
good = same[quiet[0]]
failed = {**good, "learn": {**good["learn"], "checks": [{"name": "resume_fidelity", "passed": False}]}}
ended = {**good, "sft": {**good["sft"], "status": "FAILED"}}
blamed = {}
verdicts = [cal.judge_night(n, refs, s, blamed) for n in (good, failed, ended)]
# The same night planted: caught on every draw by its failed check alone.
rec = next(r for r in records if r["night"] == quiet[0] and r["job"] == "learn")
night = {"n1": [{**rec, "planted": "resume", "failed_checks": ["resume_fidelity"]}]}
found = cal.detections(night, {n: same[n] for n in quiet}, s, random.Random(1), 5, 7,
                       machine={**cal.machines_of(records), "n1": "boot-95e626ed"})
try:
    cal.parts_checked(cal.nights_of([{**rec, "night": "x", "job": "learn"}, {**rec, "night": "y", "job": "learn"},
                                     {**rec, "night": "y", "job": "ppo1"}])[0])
    refused = ""
except Exception as e:
    refused = str(e)
print(json.dumps({"verdicts": [any(v.values()) for v in verdicts], "blamed": [k in blamed for k in ("learn: resume_fidelity", "sft: ended FAILED")],
                  "found": found["resume"][0][2], "rate": cal.night_rate({"a": [0, 1], "b": [0, 0, 0, 1], "c": []}),
                  "refused": refused}))'
  assert_success
  jq -e '.verdicts[1:] == [true, true] and .found == 1 and .rate == 0.625' <<<"$output"
  jq -e '.blamed == [true, true]' <<<"$output"
  jq -r .refused <<<"$output" | grep -x "the corpus's same-code nights ran overlapping sets of jobs (learn and learn,ppo1); record the suite's jobs as one set, or as sets that share no job"
}

@test "detector rerun: a night's rerun is its job's run in the nearest later night outside its history on its machine (else the nearest earlier); the host slowed at 06:19 fails against all 20 histories on its first runs and none once rerun; the slow step is still caught on the quiet machine" {
  run py 'import json, os, random
def verdicts(rerun_on, night, hists, same, machine, pool=None):
    os.environ["MVP_NIGHTLY_RERUN"] = rerun_on
    s = cal.JudgeSettings()
    return sum(any(cal.judge_night(night, [same[n] for n in h], s, None,
                                   cal.rerun_from(pool or same, t, set(h), machine)).values()) for h in hists)
machine = cal.machines_of(records)
same, planted = cal.nights_of(records)
t = "nightly-20261130T061859Z"
others = [n for n in sorted(same) if n != t and machine[n] == machine[t] and cal.part_of(same[n]) == cal.part_of(same[t])]
rng = random.Random(1)
hists = [rng.sample(others, 7) for _ in range(20)]
pool = {"a": {"x": 1}, "b": {"x": 2}, "c": {"x": 3}, "d": {"y": 4}, "e": {"x": 5}}
at = {"a": "m", "b": "m", "c": "m", "d": "m", "e": "other"}
picks = [cal.rerun_from(pool, "b", set(), at)("x"), cal.rerun_from(pool, "b", {"c"}, at)("x"),
         cal.rerun_from(pool, "c", set(), at)("x"), cal.rerun_from(pool, "c", {"a", "b"}, at)("x")]
os.environ["MVP_NIGHTLY_RERUN"] = "1"
s = cal.JudgeSettings()
quiet = {n: r for n, r in planted.items() if r[0]["planted"] == "slow" and machine[n] == "boot-95e626ed"}
found = cal.detections(quiet, same, s, random.Random(1), 20, 7, machine=machine)
print(json.dumps({"first": verdicts("0", same[t], hists, same, machine), "rerun": verdicts("1", same[t], hists, same, machine),
                  "picks": picks, "slow": sum(f for *_, f, _ in found["slow"]) / len(found["slow"]), "slow_nights": len(found["slow"])}))'
  assert_success
  jq -e '.first == 20 and .rerun == 0' <<<"$output"
  jq -e '.picks == [3, 1, 2, null]' <<<"$output"
  jq -e '.slow >= 0.95 and .slow_nights == 7' <<<"$output"
}

@test "detector resume: the replay judges resume_fidelity's band again from the resumed job's rows and its reference's: the band the nights ran with (grad_norm 0.05) gives every recorded verdict back, 0.1 passes the one night beyond 0.05, a chain that failed resumed stays failed; the guard fails a tightened band" {
  run py 'import json, os
from types import SimpleNamespace as S
# The band each night ran with: its records keep it (resume_band), those recorded before had the 0.05 of grad_norm.
THEN = {"score": "0.1", "grad_norm": "0.05", "loss": "0.05"}
def judged(band=None):
    out = {}
    nights = {}
    for r in records:
        nights.setdefault(r["night"], []).append(r)
    for night, recs in sorted(nights.items()):
        rec = next((r for r in recs if r["job"] == "ppo2"), None)
        if rec:
            s = S(nightly_resume="ppo2", nightly_resume_band=band or rec.get("resume_band") or THEN)
            job = cal.night_jobs(recs, s)["ppo2"]
            out[night] = [cal.resumed_pair(recs, s) is not None, rec["failed_checks"], sorted(c["name"] for c in job["checks"])]
    return out
then, wider = judged(), judged({"score": "0.1", "grad_norm": "0.1", "loss": "0.05"})
same = {r["night"] for r in records if r["job"] == "ppo2" and not r["planted"]}
print(json.dumps({"nights": len(then), "again": sorted(n for n, (p, *_) in then.items() if p) == sorted(same),
                  "same_then": sum(sorted(rec) == now for _, rec, now in then.values()),
                  "passed_wider": [n for n in then if "resume_fidelity" in then[n][1] and "resume_fidelity" not in wider[n][2]],
                  "chain_kept": all("resume_fidelity" in now for p, rec, now in wider.values() if "resumed" in rec)}))'
  assert_success
  # Every night that ran ppo2 (13 same-code and 6 planted resumes when this was written): the same-code
  # ones judged again; the planted ones, whose chain failed resumed, kept as recorded.
  jq -e '.nights >= 19 and .again and .same_then == .nights and .chain_kept' <<<"$output"
  jq -e '.passed_wider | index("nightly-20261130T101756Z") != null' <<<"$output"
  MVP_NIGHTLY_RESUME_BAND="score=0.1 grad_norm=0.01 loss=0.05" run detector --guard "$MVP_REPO/config/detector.json"
  assert_failure 1
  assert_line --regexp '^WORSE: false alarms [0-9.]+ per 100 nights, above the 95% interval.s high end'
}

@test "detector sources: nights on synthetic data are judged only against synthetic nights and reported apart from GSM8K's; a synthetic night's trust line quotes their rates, or says not calibrated for a job they never ran" {
  run py 'import json, random
from types import SimpleNamespace as S
s = cal.JudgeSettings()
learn = [r for r in records if r["job"] == "learn" and r["machine"] == "boot-95e626ed" and not r.get("planted")][:10]
synthetic = [{**r, "night": r["night"] + "-synthetic", "data_source": "synthetic"} for r in learn]
groups = cal.by_source(records + synthetic)
rates = cal.source_rates(synthetic, s, random.Random(1), 2, 7)
m = cal.read_calibration()
m = {**m, "regime": {**m["regime"], "profile_sha256": cal.profile_sha256()}, "by_source": {"synthetic": rates}}
base = dict(trainer_profile="cpu", nightly_history=m["judge"]["history"], nightly_min_history=m["judge"]["min_history"],
            nightly_band_k=m["judge"]["band_k"], nightly_band_steps=m["judge"]["band_steps"],
            nightly_band_floor=m["judge"]["band_floor"], nightly_tolerance=m["judge"]["tolerance"],
            nightly_rerun=m["judge"]["rerun"])
recorded = sum(1 for r in records if r.get("data_source") == "synthetic")
print(json.dumps({"groups": {k: len(v) for k, v in groups.items()} == {"gsm8k": len(records) - recorded, "synthetic": recorded + 10},
                  "nights": rates["same_code_nights"],
                  "rate": rates["false_alarms_per_100_nights"], "jobs": rates["jobs"],
                  "learn": cal.trust("learn", S(**base, gsm8k_source="synthetic"), m),
                  "grpo": cal.trust("grpo", S(**base, gsm8k_source="synthetic"), m),
                  "hf": cal.trust("learn", S(**base, gsm8k_source="hf"), m)}))'
  assert_success
  jq -e '.groups and .nights == 10 and (.rate | type) == "number" and .jobs == ["learn"]' <<<"$output"
  jq -r .learn <<<"$output" | grep -E "^this check's measured false-alarm rate on synthetic data: [0-9.]+ per 100 nights of learn \(95% high [0-9.]+\); corpus "
  jq -r .grpo <<<"$output" | grep -E "^not calibrated \(the corpus has 10 same-code nights on MVP_GSM8K_SOURCE=synthetic, none of the job 'grpo'; bench/detector/record.sh --source synthetic adds them;"
  # hf serves GSM8K's own rows: its nights are judged as the files' are.
  jq -r .hf <<<"$output" | grep -E "^this check's measured false-alarm rate: [0-9.]+ per 100 nights \(all jobs of a night"
}
