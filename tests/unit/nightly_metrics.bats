#!/usr/bin/env bats
# The nightly's reading of driver logs (helpers/mvp/core/metrics.py) and the
# checks that depend on it (judge.py): one test per shape a verl 0.9.1 metric
# line really has in a Ray job log, with the bytes seen on Ray 2.60.

setup() {
  load ../test_helper/common
}

# py CODE: runs CODE with the helper importable; LOG (in the environment) is the log text.
py() {
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c "
import json, os
from mvp.core import metrics; from mvp.nightly import judge
log = os.environ.get('LOG', '')
$1"
}

@test "metrics: a PPO line behind Ray's coloured actor prefix (TaskRunner pid=..., ip=...) is parsed" {
  LOG=$'\e[36m(TaskRunner pid=113, ip=127.0.0.4)\e[0m step:1 - actor/pg_loss:0.1 - timing_s/gen:0.6 - timing_s/update_actor:0.4 - timing_s/step:1.0 - perf/throughput:100.0\n\e[36m(TaskRunnerV1 pid=113, ip=127.0.0.4)\e[0m step:2 - actor/pg_loss:0.2 - timing_s/gen:0.6 - timing_s/update_actor:0.4 - timing_s/step:1.5 - perf/throughput:120.0\n' \
    run py 'print(json.dumps(metrics.summarize(log, 10), sort_keys=True))'
  assert_success
  jq -e '.steps == 2 and .mean_step_s == 1.25 and .mean_throughput == 110 and .sps == 10 and .step_time_from == "timing_s/step"' <<<"$output"
}

@test "metrics: an SFT line glued to tqdm's bar after a carriage return (raw driver log) is parsed; step time is tqdm's s/it" {
  LOG=$'\rEpoch 1/1:   0%|          | 0/3 [00:00<?, ?it/s]step:1 - train/loss:1.0 - train/grad_norm:1.5 - train/lr:1e-05\n\rEpoch 1/1:  33%|\u2588\u2588\u2588\u258e      | 1/3 [00:02<00:04,  2.00s/it]step:2 - train/loss:0.9\n\rEpoch 1/1:  67%|\u2588\u2588\u2588\u2588\u2588\u2588\u258b   | 2/3 [00:04<00:02,  2.00s/it]step:3 - train/loss:0.8\nstep:3 - val/loss:0.5\n' \
    run py 'print(json.dumps(metrics.summarize(log, 64), sort_keys=True)); print(json.dumps(metrics.step_lines(log)[-1]))'
  assert_success
  jq -e '.steps == 3 and .mean_step_s == 2 and .step_time_from == "tqdm s/it" and .sps == 32 and .mean_throughput == null' <<<"${lines[0]}"
  jq -e '.["train/loss"] == 0.8 and .["val/loss"] == 0.5' <<<"${lines[1]}"
}

@test "metrics: the same SFT log as Ray's log API returns it (carriage returns become line breaks); it/s rates are inverted" {
  LOG=$'\nEpoch 1/1:   0%|          | 0/46 [00:00<?, ?it/s]step:1 - train/loss:2.0084 - train/global_tokens:12800 - train/total_tokens(B):1.28e-05\nstep:2 - train/loss:1.0 - train/global_tokens:12800\n\nEpoch 1/1:   7%|\u258b         | 3/46 [00:00<00:01, 25.00it/s]step:4 - train/loss:0.5\n' \
    run py 'print(json.dumps(metrics.summarize(log, 64, 8), sort_keys=True))'
  assert_success
  # Throughput as perf/throughput means it, tokens/s per GPU: 12800 tokens / 0.04 s / 8 GPUs.
  jq -e '.steps == 4 and .mean_step_s == 0.04 and .sps == 1600 and .mean_throughput == 40000' <<<"$output"
}

@test "metrics: step 0 (validation before training) is not a training step; other words ending in step: are not step lines" {
  LOG=$'\e[36m(TaskRunnerV1 pid=1, ip=127.0.0.3)\e[0m step:0 - val-core/openai/gsm8k/reward/mean@1:0.2\nlocal_global_step:3 - nothing\nstep:1 - training/global_step:1 - timing_s/step:2.0\n' \
    run py 'print(json.dumps(metrics.summarize(log, None), sort_keys=True))'
  assert_success
  jq -e '.steps == 1 and .mean_step_s == 2 and .step_mentions == 2' <<<"$output"
}

@test "metrics_parsed: a log whose step lines do not parse is named as a parse failure, not a checkpoint one" {
  # What the old parser saw: step lines it could not read (steps 0) beside mentions of them.
  run py '
summary = {"steps": 0, "mean_step_s": None, "step_mentions": 5}
print(json.dumps(judge.check_metrics_parsed(summary, "SUCCEEDED")))
ok = metrics.summarize("\x1b[36m(TaskRunnerV1 pid=9, ip=1.2.3.4)\x1b[0m step:1 - timing_s/step:1.0\n", None)
print(json.dumps(judge.check_metrics_parsed(ok, "SUCCEEDED")))
print(json.dumps(judge.check_metrics_parsed(metrics.summarize("Traceback: boom\n", None), "FAILED")))'
  assert_success
  jq -e '.name == "metrics_parsed" and .passed == false and (.evidence | test("5 step lines but none parsed"))' <<<"${lines[0]}"
  jq -e '.passed == true' <<<"${lines[1]}"
  jq -e '.passed == true and (.evidence | test("ended FAILED"))' <<<"${lines[2]}"
}

@test "inputs_persisted: a rebuild after the source changed says so and passes; a rebuild of unchanged inputs fails" {
  run py '
changed = {"gsm8k": {"before": {"sha256": "a", "source": "synthetic"}, "after": {"sha256": "b", "source": "/data/gsm8k"}}}
same = {"gsm8k": {"before": {"sha256": "a", "source": "synthetic"}, "after": {"sha256": "b", "source": "synthetic"}}}
kept = {"gsm8k": {"before": {"sha256": "a", "source": "synthetic"}, "after": {"sha256": "a", "source": "synthetic"}}}
for p in (changed, same, kept):
    print(json.dumps(judge.check_inputs_persisted(p, {}, "/r")))'
  assert_success
  jq -e '.passed == true and .evidence == "gsm8k: rebuilt: source changed from synthetic to /data/gsm8k"' <<<"${lines[0]}"
  jq -e '.passed == false and (.evidence | test("REBUILT although a valid copy existed"))' <<<"${lines[1]}"
  jq -e '.passed == true and .evidence == "gsm8k: SKIP (manifest unchanged)"' <<<"${lines[2]}"
}

@test "inputs_persisted: every file of a list of train files (a Hydra list) is checked to be on shared storage" {
  run py '
kept = {"gsm8k": {"before": {"sha256": "a", "source": "s"}, "after": {"sha256": "a", "source": "s"}}}
for files in ("['"'"'/r/d/a.parquet'"'"','"'"'/r/d/b,c.parquet'"'"']", "['"'"'/r/d/a.parquet'"'"','"'"'/tmp/b.parquet'"'"']"):
    print(json.dumps(judge.check_inputs_persisted(kept, {"data.train_files": files}, "/r")))'
  assert_success
  jq -e '.passed == true' <<<"${lines[0]}"
  jq -e '.passed == false and (.evidence | test("not on shared storage: \\[.?/tmp/b.parquet.?\\]"))' <<<"${lines[1]}"
}

@test "metrics: verl's numpy reprs (np.float64(0.25), np.int64(3)) are numbers; a NaN is null in --steps --json" {
  LOG=$'\e[36m(TaskRunnerV1 pid=7, ip=127.0.0.3)\e[0m step:1 - critic/score/mean:np.float64(0.25) - val-core/acc:np.int64(3) - actor/grad_norm:nan - actor/pg_loss:0.5\n' \
    run py 'from mvp.jobs.inspection import steptable
print(json.dumps(metrics.step_lines(log)[0], sort_keys=True)); print(steptable.render(log, True), end=""); print(steptable.render(log), end="")'
  assert_success
  jq -e '."critic/score/mean" == 0.25 and ."val-core/acc" == 3' <<<"${lines[0]}"
  jq -e '.[0] | .step == 1 and ."actor/grad_norm" == null' <<<"${lines[1]}"
  assert_equal "${lines[2]}" "step  critic/score/mean  actor/pg_loss  actor/grad_norm"
  assert_equal "${lines[3]}" "   1               0.25            0.5              nan"
}
