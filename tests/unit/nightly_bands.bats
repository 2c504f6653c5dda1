#!/usr/bin/env bats
# Per-step bands (helpers/mvp/nightly/bands.py): a run's curves judged
# against good runs' curves, as the nightly's check `regression` and a
# bisection ask it. Runs are simulated as metrics.step_lines() rows (10
# steps of GRPO's score, grad_norm, entropy, s/step, each good run with its
# own noise of +-1%; tests/test_helper/nightly_sim.py), with planted values.

setup() {
  load ../test_helper/common
  REG=$BATS_TEST_TMPDIR/regressions
  mkdir -p "$REG"
}

# sim EXPR: EXPR evaluated with REG (a Path) defined; prints JSON.
sim() {
  mvp_eval REG "$REG" 'from nightly_sim import *
from mvp.nightly.bands import Rule
from mvp.nightly import bandview; from mvp.core import metrics' "$1"
}

@test "bands: the figures are read from verl 0.9.1's keys as real GRPO and SFT step lines carry them; GRPO's policy loss (about 0 by construction) and 0 GPU bytes (a CPU run) are no curve" {
  # Keys and values as real verl 0.9.1 logged them on CPUs (GRPO behind the TaskRunnerV1 prefix; SFT after tqdm).
  run sim 'bands.curves(metrics.step_lines("\x1b[36m(TaskRunnerV1 pid=2622)\x1b[0m step:1 - actor/entropy:7.59375 - actor/pg_loss:-0.011 - actor/kl_loss:0.0 - actor/loss:-0.011 - actor/grad_norm:0.29 - actor/perf/max_memory_allocated_gb:0.0 - actor/perf/cpu_memory_used_gb:21.2 - critic/score/mean:0.405 - timing_s/step:15.67 - perf/throughput:103.1\n"))'
  assert_success
  jq -e 'map_values(.key) == {score: "critic/score/mean", grad_norm: "actor/grad_norm", entropy: "actor/entropy",
                              kl: "actor/kl_loss", step_s: "timing_s/step", throughput: "perf/throughput"}' <<<"$output"
  jq -e '.entropy == {key: "actor/entropy", steps: [1], values: [7.59375]}' <<<"$output"
  run sim 'bands.curves(metrics.step_lines("\rEpoch 1/1:   0%|   | 0/3 [00:00<?, ?it/s]step:1 - perf/max_memory_allocated_gb:0.0 - perf/cpu_memory_used_gb:1.05 - train/loss:7.625 - train/grad_norm:1.10 - train/lr:0.001\nstep:2 - perf/max_memory_allocated_gb:2.5 - train/loss:7.5 - train/grad_norm:nan\n"))'
  jq -e '. == {loss: {key: "train/loss", steps: [1, 2], values: [7.625, 7.5]}, grad_norm: {key: "train/grad_norm", steps: [1, 2], values: [1.1, null]},
               memory_gb: {key: "perf/max_memory_allocated_gb", steps: [1, 2], values: [0, 2.5]}}' <<<"$output"
}

@test "bands: a curve outside its band for N steps in a row is red, naming the figure, the step range and the band" {
  run sim 'verdict({"actor/grad_norm": {4: 0.4, 5: 0.4}})'
  assert_success
  jq -e '.regressed == true and (.reasons | length) == 1' <<<"$output"
  jq -r '.reasons[0]' <<<"$output" | grep -E '^grad_norm \(actor/grad_norm\) above its band at steps 4-5 \(2 in a row, 2 make a regression\): 0.4 vs band \[0\.2[0-9]*, 0\.2[0-9]*\] \(median 0\.2[0-9]* \+- 5 MAD of 5 runs\) at step 4$'
  # Every other figure is judged and within.
  jq -e '[.figures[] | select(.figure != "grad_norm") | .regressed] == [false, false, false]' <<<"$output"
  # MVP_NIGHTLY_BAND_STEPS=3: three steps in a row.
  run sim 'verdict({"actor/grad_norm": {4: 0.4, 5: 0.4, 6: 0.4}}, rule=Rule(steps=3))["reasons"]'
  assert_output --partial '"grad_norm (actor/grad_norm) above its band at steps 4-6 (3 in a row, 3 make a regression)'
}

@test "bands: outside for N-1 steps is not red, nor N steps that are not consecutive; the evidence counts the steps inside" {
  run sim 'verdict({"actor/grad_norm": {4: 0.4}})'
  assert_success
  jq -e '.regressed == false and .reasons == []' <<<"$output"
  jq -r '.figures[] | select(.figure == "grad_norm") | .evidence' <<<"$output" | grep -F 'within its band at 9/10 steps (median +- 5 MAD of 5 runs; at most 1 step(s) in a row outside its worse side, 2 make a regression)'
  run sim '[verdict({"actor/grad_norm": {4: 0.4, 6: 0.4, 8: 0.4}})["regressed"], verdict({"actor/grad_norm": {4: 0.4, 5: 0.4}}, rule=Rule(steps=3))["regressed"]]'
  assert_output '[false, false]'
}

@test "bands: the nightly's rule asks more of two figures: grad_norm a third of its steps in a row (3 of 10 pass where 2 of entropy fail, 4 fail; 2 of a 3-step run fail), the score 8 MADs; MVP_NIGHTLY_BAND_STEPS=4 raises both figures' steps" {
  run sim 'history.band_rule(settings()).at_least'
  assert_output '[["grad_norm", "share", 0.3333333333333333], ["score", "k", 8.0], ["step_s", "share", 0.3333333333333333], ["throughput", "share", 0.3333333333333333], ["cpu_memory_added_gb", "share", 0.3333333333333333]]'
  run sim '[verdict(p, rule=history.band_rule(settings()))["regressed"] for p in ({"actor/grad_norm": {4: 0.4, 5: 0.4, 6: 0.4}}, {"actor/entropy": {4: 0.1, 5: 0.1}}, {"actor/grad_norm": {4: 0.4, 5: 0.4, 6: 0.4, 7: 0.4}})]'
  assert_output '[false, true, true]'
  run sim 'verdict({"actor/grad_norm": {4: 0.4, 5: 0.4, 6: 0.4, 7: 0.4}}, rule=history.band_rule(settings()))["reasons"]'
  assert_output --partial '"grad_norm (actor/grad_norm) above its band at steps 4-7 (4 in a row, 4 make a regression)'
  # GRPO's 3-step job: no gradient at step 1 by construction; grad_norm 0 at steps 2-3 (the KL term dropped) fails.
  run sim 'bands.steps_needed(bands.for_figure(history.band_rule(settings()), "grad_norm"), 3)'
  assert_output 2
  run sim '[verdict(p, rule=history.band_rule(settings(nightly_band_steps=4)))["regressed"] for p in ({"actor/grad_norm": {4: 0.4, 5: 0.4, 6: 0.4}}, {"actor/entropy": {4: 0.1, 5: 0.1, 6: 0.1, 7: 0.1}})]'
  assert_output '[false, true]'
  # The score's band is 8 MADs wide, entropy's 5; MVP_NIGHTLY_BAND_K=10 widens both to 10.
  run sim '[[(f["figure"], f["evidence"].split("+- ")[1].split(" MAD")[0]) for f in verdict({"critic/score/mean": {4: 0.0, 5: 0.0}, "actor/entropy": {4: 0.1, 5: 0.1}}, rule=history.band_rule(settings(nightly_band_k=k)))["figures"] if f["regressed"]] for k in ("5", "10")]'
  assert_output '[[["score", "8"], ["entropy", "5"]], [["score", "10"], ["entropy", "10"]]]'
}

@test "bands: the nightly's s/step and throughput stay out for a third of the judged steps: 3 of 10 steps pass, 4 fail (2 of entropy fail), 2 of a 3-step run fail" {
  run sim '[verdict({"timing_s/step": {s: 20.0 for s in range(5, 5 + n)}}, rule=history.band_rule(settings()))["regressed"] for n in (3, 4)]'
  assert_output '[false, true]'
  run sim 'verdict({"timing_s/step": {s: 20.0 for s in range(5, 9)}}, rule=history.band_rule(settings()))["reasons"]'
  assert_output --partial 'above its band at steps 5-8 (4 in a row, 4 make a regression)'
  run sim '[verdict({"timing_s/step": {4: 20.0, 5: 20.0}}, rule=history.band_rule(settings()))["regressed"], verdict({"actor/entropy": {4: 0.1, 5: 0.1}}, rule=history.band_rule(settings()))["regressed"]]'
  assert_output '[false, true]'
  run sim '[bands.steps_needed(bands.for_figure(history.band_rule(settings()), f), n) for f, n in (("step_s", 10), ("step_s", 3), ("step_s", 2), ("throughput", 9), ("entropy", 10))]'
  assert_output '[4, 2, 2, 3, 2]'
}

@test "bands: a two-sided figure too low is red (advantages zeroed: grad_norm 0 from step 3), and so is a step that is not a number" {
  run sim 'verdict({"actor/grad_norm": {s: 0.0 for s in range(3, 11)}})["reasons"]'
  assert_success
  assert_output --partial '"grad_norm (actor/grad_norm) below its band at steps 3-10 (8 in a row, 2 make a regression): 0 vs band ['
  run sim 'verdict({"actor/entropy": {7: float("nan"), 8: float("nan")}})["reasons"]'
  assert_output --partial '"entropy (actor/entropy) not a number, its band at steps 7-8 (2 in a row, 2 make a regression): nan vs band ['
}

@test "bands: a one-sided figure better than its band is not red (score up, s/step down), worse is (score down, s/step up)" {
  run sim '[verdict({"critic/score/mean": {s: 0.9 for s in range(1, 11)}, "timing_s/step": {s: 5.0 for s in range(1, 11)}})[k] for k in ("regressed", "reasons")]'
  assert_success
  assert_output '[false, []]'
  run sim '[verdict({"critic/score/mean": {s: 0.9 for s in range(1, 11)}})["figures"][0][k] for k in ("sides", "longest")]'
  assert_output '[["above", "above", "above", "above", "above", "above", "above", "above", "above", "above"], 0]'
  run sim 'verdict({"critic/score/mean": {9: 0.1, 10: 0.1}, "timing_s/step": {2: 20.0, 3: 20.0}})["reasons"]'
  assert_output --partial '"score (critic/score/mean) below its band at steps 9-10'
  assert_output --partial '"step_s (timing_s/step) above its band at steps 2-3'
}

@test "bands: a phase's share of its step: a machine twice as slow leaves every share in its band while s/step leaves its own; the advantage's phase 3 s longer leaves its share's band; a share of 1% may move by 10% of the step, not 10% of itself" {
  # GRPO's timed phases as verl 0.9.1 logs them (timing_s/<phase> beside timing_s/step), on a 10 s step.
  local phases='{**BASE, "timing_s/gen": [4.0] * 10, "timing_s/update_actor": [4.8] * 10, "timing_s/adv": [0.1] * 10}'
  run sim "sorted((k, v[\"key\"]) for k, v in bands.curves(rows(base=$phases)).items() if k.endswith(\"_share\"))"
  assert_success
  assert_output '[["adv_share", "timing_s/adv / timing_s/step"], ["gen_share", "timing_s/gen / timing_s/step"], ["update_actor_share", "timing_s/update_actor / timing_s/step"]]'
  # The machine: every phase and the step twice as long.
  run sim "[f[\"figure\"] for f in bands.judge_runs(rows(base={k: [2 * x for x in v] if k.startswith(\"timing_s/\") else v for k, v in $phases.items()}, seed=1), refs(5, base=$phases))[\"figures\"] if f[\"regressed\"]]"
  assert_output '["step_s"]'
  # The code: adv 3 s longer at every step (a sleep in the advantage's computation).
  run sim "bands.judge_runs(rows(base={**$phases, \"timing_s/adv\": [3.1] * 10, \"timing_s/step\": [13.0] * 10}, seed=1), refs(5, base=$phases))[\"reasons\"]"
  assert_output --partial '"adv_share (timing_s/adv / timing_s/step) above its band at steps 1-10 (10 in a row, 2 make a regression): 0.24'
  # adv at 1% of the step moved to 9% (a host stalling a small phase for a moment): inside; to 12%: outside.
  run sim "[bands.judge_runs(rows(base={**$phases, \"timing_s/adv\": [a] * 10}, seed=1, noise=0.0), [rows(base=$phases, noise=0.0)] * 5)[\"regressed\"] for a in (0.9, 1.2)]"
  assert_output '[false, true]'
}

@test "bands: host memory is judged by what each step adds: a host holding 1.8 GB more all run, or taking 1.5 GB at one step (a process started beside the job), stays in its band; a leak of 0.25 GB a step leaves it" {
  # The whole machine's used memory, as verl 0.9.1 logs it on CPUs (actor/perf/cpu_memory_used_gb), 0.01 GB more each step.
  local mem='{**BASE, "actor/perf/cpu_memory_used_gb": [5.7 + 0.01 * s for s in range(10)]}'
  run sim "bands.curves(rows(base=$mem, noise=0.0))[\"cpu_memory_added_gb\"]"
  assert_success
  jq -e '.key == "actor/perf/cpu_memory_used_gb - the step before'"'"'s" and .steps == [2, 3, 4, 5, 6, 7, 8, 9, 10] and (.values | map(. * 1000 | round) | unique) == [10]' <<<"$output"
  run sim "[[f[\"figure\"] for f in bands.judge_runs(rows(base={**$mem, \"actor/perf/cpu_memory_used_gb\": m}, seed=1, noise=0.002), refs(5, base=$mem, noise=0.002), history.band_rule(settings()))[\"figures\"] if f[\"regressed\"]] for m in ([7.5 + 0.01 * s for s in range(10)], [5.7 + 0.01 * s + (1.5 if s >= 4 else 0) for s in range(10)], [5.7 + 0.26 * s for s in range(10)])]"
  assert_output '[[], [], ["cpu_memory_added_gb"]]'
  run sim "bands.judge_runs(rows(base={**$mem, \"actor/perf/cpu_memory_used_gb\": [5.7 + 0.26 * s for s in range(10)]}, seed=1, noise=0.002), refs(5, base=$mem, noise=0.002), history.band_rule(settings()))[\"reasons\"]"
  assert_output --partial "cpu_memory_added_gb (actor/perf/cpu_memory_used_gb - the step before's) above its band at steps 2-10 (9 in a row, 3 make a regression): 0.2"
}

@test "bands: a curve whose s/step drifts 3% slower every night is never out of the band its last 7 good nights make (as a single figure's MADs: docs/nightly.md), while a night 30% slower at once is" {
  run sim '[any(f["regressed"] for f in bands.judge_runs(n[t], n[max(0, t - 7):t], history.band_rule(settings()))["figures"] if f["figure"] == "step_s") for n in [[rows(base={**BASE, "timing_s/step": [10 * 1.03 ** t] * 10}, seed=t) for t in range(20)]] for t in range(3, 20)]'
  assert_success
  assert_output "[$(printf 'false, %.0s' {1..16})false]"
  run sim 'verdict({"timing_s/step": {s: 13.0 for s in range(1, 11)}}, rule=history.band_rule(settings()))["regressed"]'
  assert_output true
}

@test "bands: a history without spread still allows 10% (the MAD's floor), the spread pooled over steps keeps 3 runs from flagging noise" {
  # Five identical good runs: MAD 0 at every step; +-5% of noise tonight is inside, +20% is not.
  run sim '[bands.judge_runs(rows(seed=s, noise=0.05), [rows(noise=0.0)] * 5)["regressed"] for s in range(5)] + [verdict({"timing_s/step": {s: 12.0 for s in range(1, 11)}}, noise=0.0)["regressed"]]'
  assert_success
  assert_output '[false, false, false, false, false, true]'
  # Three noisy good runs, forty clean nights of the same noise: no false alarm.
  run sim '[bands.judge_runs(rows(seed=s, noise=0.05), refs(3, noise=0.05))["regressed"] for s in range(40)].count(True)'
  assert_output 0
}

@test "bands: too few good runs at a step is no band (regressed null), never a verdict; a reference logging another key does not count" {
  run sim 'verdict({"actor/grad_norm": {4: 0.4, 5: 0.4}}, n=2)'
  assert_success
  jq -e '.regressed == null and .reasons == [] and ([.figures[].evidence | test("no band: 2 reference run\\(s\\) log it, 3 needed at a step")] | all)' <<<"$output"
  # A caller with two probes of a good commit asks for 2 at a step.
  run sim 'verdict({"actor/grad_norm": {4: 0.4, 5: 0.4}}, n=2, rule=Rule(min_refs=2))["regressed"]'
  assert_output true
  run sim 'bands.judge_runs(rows(), refs(3, base={**{k: v for k, v in BASE.items() if k != "actor/grad_norm"}, "train/grad_norm": [0.25] * 10}))["figures"]'
  jq -e '[.[] | select(.figure == "grad_norm")] == [{figure: "grad_norm", key: "actor/grad_norm", worse: "both", references: 0, regressed: null,
          evidence: "grad_norm (actor/grad_norm): no band: 0 reference run(s) log it, 3 needed at a step"}]' <<<"$output"
  jq -e '[.[] | select(.figure != "grad_norm") | .regressed] == [false, false, false]' <<<"$output"
}

@test "regression check: with too few good nights with curves it falls back to the single figure and says so; with enough the band judges instead" {
  # Two nights without curves (an older runbook), two with, then tonight 30% slower on average.
  run sim '[night(REG, d, [job(curves=curves(seed=d) if d > 1 else None)], settings()) and None for d in range(4)] and regression(night(REG, 4, [job(step_s=13.0, curves=curves(seed=4))], settings()))'
  assert_success
  jq -e '.passed == false and (.evidence | test("^s/step 13 vs median 10 of 4 nights: \\+30% \\(worse than 10%\\)$"))' <<<"$output"
  jq -r '.bands[] | select(.figure == "step_s") | .evidence' <<<"$output" | grep -Fx 'step_s (timing_s/step): no band: 2 reference run(s) log it, 3 needed at a step; judged by its single figure (step_s) instead'
  # Three good nights with curves: the bands judge s/step and the score, their single figures do not; GRPO has
  # no loss curve, so final_loss stays a single figure (here not in the log).
  rm -rf "$REG" && mkdir "$REG"
  run sim '[night(REG, d, [job(curves=curves(seed=d))], settings()) and None for d in range(3)] and regression(night(REG, 3, [job(step_s=13.0, final_score=0.1, curves=curves(seed=3))], settings()))'
  jq -e '.passed == true and ([.figures[].figure] == ["throughput", "final_loss", "peak_memory_gb"]) and ([.bands[].regressed] == [false, false, false, false])' <<<"$output"
}

@test "regression check: one noisy last step is not a red night, though the single figure (final score -75%) would have been" {
  run sim '[night(REG, d, [job(final_score=0.49, curves=curves(seed=d))], settings())["passed"] for d in range(3)] + [regression(night(REG, 3, [job(final_score=0.12, curves=curves({"critic/score/mean": {10: 0.12}}, seed=3))], settings()))]'
  assert_success
  jq -e '.[:3] == [true, true, true] and .[3].passed == true' <<<"$output"
  jq -r '.[3].bands[0].evidence' <<<"$output" | grep -F 'score (critic/score/mean) within its band at 9/10 steps'
  run sim 'regression(night(REG, 4, [job(curves=curves({"critic/score/mean": {9: 0.12, 10: 0.12}}, seed=4))], settings()))'
  jq -e '.passed == false and (.evidence | test("^score \\(critic/score/mean\\) below its band at steps 9-10 "))' <<<"$output"
}

@test "history.json keeps the per-step curves of each job's newest MVP_NIGHTLY_HISTORY good nights only" {
  run sim '[night(REG, d, [job(curves=curves(seed=d))], settings(nightly_history=3)) and None for d in range(5)]'
  assert_success
  run jq -c 'map(.jobs.grpo.curves | length > 0)' "$REG/history.json"
  assert_output '[false,false,true,true,true]'
}

@test "report.md draws each band as a line of marks; report.html as SVG (band, median, tonight, red steps), which Chromium renders" {
  run sim '[night(REG, d, [job(curves=curves(seed=d))], settings()) and None for d in range(3)] and pages(REG, night(REG, 3, [job(curves=curves({"actor/grad_norm": {s: 0.0 for s in range(6, 11)}}, seed=3))], settings()))'
  assert_success
  local night=$REG/nightly-20260104T023000Z
  grep -Fx -- '- grad_norm (`actor/grad_norm`), steps 1-10: `.....vvvvv` REGRESSED at steps 6-10' "$night/report.md"
  grep -Fx -- '- score (`critic/score/mean`), steps 1-10: `..........` within (its worse side: below)' "$night/report.md"
  # 200 steps: one mark per 3 steps (at most 80), a lone step outside still shows.
  run sim 'bandview.strip({"sides": [""] * 149 + ["below"] + [""] * 50})'
  assert_output "\"$(printf '.%.0s' {1..49})v$(printf '.%.0s' {1..17})\""
  local chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync "--user-data-dir=$BATS_TEST_TMPDIR/chrome")
  run --separate-stderr timeout 60 "${chrome[@]}" --dump-dom "file://$night/report.html"
  assert_success
  [[ $stderr != *"CONSOLE"* && $stderr != *"Uncaught"* ]]
  local svg
  svg=$(sed 's|</svg>|</svg>\n|g' <<<"$output" | grep 'class="bandchart"')
  [[ $(wc -l <<<"$svg") == 4 ]]
  [[ $(grep -c 'class="band"' <<<"$svg") == 4 && $(grep -c 'class="median"' <<<"$svg") == 4 && $(grep -c 'class="tonight"' <<<"$svg") == 4 ]]
  svg=$(grep 'data-figure="grad_norm"' <<<"$svg")
  [[ $(grep -o 'class="out"' <<<"$svg" | wc -l) == 5 && $(grep -o 'class="stretch"' <<<"$svg" | wc -l) == 1 ]]
  grep -q 'grpo: grad_norm (actor/grad_norm) REGRESSED</text>' <<<"$svg"
}

@test "index.html: a night whose s/step left its band is red in the s/step trend, with no single-figure band drawn for it" {
  run sim '[night(REG, d, [job(curves=curves(seed=d))], settings()) and None for d in range(3)] and regression(night(REG, 3, [job(curves=curves({"timing_s/step": {s: 20.0 for s in range(5, 9)}}, seed=3))], settings()))["passed"]'
  assert_success
  assert_output false
  local svg
  svg=$(sed 's|</svg>|</svg>\n|g' "$REG/index.html" | grep 'data-job="grpo" data-metric="step_s"')
  [[ $(grep -o 'class="pt regressed"' <<<"$svg" | wc -l) == 1 && $(grep -o 'class="pt"' <<<"$svg" | wc -l) == 3 ]]
  [[ $(grep -c 'class="band"' <<<"$svg") == 0 ]]
  # throughput had no curve: its single figure was judged, and its band is drawn.
  sed 's|</svg>|</svg>\n|g' "$REG/index.html" | grep 'data-job="grpo" data-metric="throughput"' | grep -q 'class="band"'
}
