"""verl's console metric lines, as they really reach a Ray job's driver log.

verl prints `step:N - key:value - ...` (verl/utils/logger/aggregate_logger.py),
but not at the start of a line:
- PPO/GRPO print it inside the TaskRunner(V1) Ray actor, so Ray prefixes it,
  in colour: `\\x1b[36m(TaskRunnerV1 pid=113, ip=127.0.0.4)\\x1b[0m step:1 - ...`;
- SFT prints it in the driver while tqdm writes its bar to stderr, which the
  job log merges: `\\rEpoch 1/1:   0%|...| 0/3 [00:00<?, ?it/s]step:1 - ...`
  (Ray's log API turns the carriage return into a line break; the raw file
  keeps it). SFT's lines carry no timing_s/*: its step time is tqdm's rate
  (`2.01s/it` or `24.60it/s`)."""
import re
from statistics import mean
from typing import Optional

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# `step:` opening a line, or after a Ray prefix `(Name pid=..)`, a tqdm bar `...]` or a space.
STEP = re.compile(r"(?:^|(?<=[\s\])]))step:(-?\d+)((?: - \S+)*)")
# verl prints some values as numpy reprs: `acc/mean@1:np.float64(0.25)`.
NUMPY_REPR = re.compile(r"np\.[a-z]+[0-9]*\((.*)\)")
TQDM = re.compile(r"(\d+)/(\d+) \[(\d+:)?(\d+):(\d+)<[^,\]]*, *(?:(\d+(?:\.\d+)?)(s/it|it/s)|\?it/s)")


def _segments(log_text: str):
    for line in ANSI.sub("", log_text).splitlines():
        yield from line.split("\r")


def parse_line(segment: str) -> Optional[dict]:
    """The metrics of the step line in `segment` (one line, or one part of a
    line between carriage returns), or None."""
    m = STEP.search(ANSI.sub("", segment))
    if not m:
        return None
    values: dict = {"step": float(m.group(1))}
    for part in m.group(2).split(" - ")[1:]:
        key, sep, raw = part.rpartition(":")
        if not sep or not key:
            continue
        try:
            values[key] = float(NUMPY_REPR.fullmatch(raw).group(1) if raw.startswith("np.") else raw)
        except (ValueError, AttributeError):
            values[key] = raw
    return values


def step_lines(log_text: str) -> list:
    """Training steps only: step 0 is a validation before training. A step
    logged twice (SFT logs val/loss as a second line of the same step) is merged."""
    merged: dict = {}
    for m in map(parse_line, _segments(log_text)):
        if m and m["step"] >= 1:
            merged.setdefault(m["step"], {}).update(m)
    return [merged[s] for s in sorted(merged)]


def tqdm_step_seconds(log_text: str) -> list:
    """Seconds per iteration from each tqdm bar that shows a rate."""
    out = []
    for seg in _segments(log_text):
        for m in TQDM.finditer(seg):
            if m.group(6) is None:
                continue
            rate = float(m.group(6))
            if rate > 0:
                out.append(rate if m.group(7) == "s/it" else 1.0 / rate)
    return out


def raw_step_mentions(log_text: str) -> int:
    """Places where a step line seems to start, parsed or not: a parse failure
    shows as mentions without parsed steps."""
    return len(re.findall(r"(?<![\w/])step:-?\d+ - ", ANSI.sub("", log_text)))


def _mean(rows: list, key: str) -> Optional[float]:
    vals = [r[key] for r in rows if isinstance(r.get(key), float)]
    return round(mean(vals), 6) if vals else None


def summarize(log_text: str, samples_per_step: Optional[float], gpus: Optional[int] = None) -> dict:
    """Steps, mean step time and throughput, and SPS as the v1.1 runbook spec
    (docs/spec.md, point 12) defines it: samples in the step / (rollout time + update time). SFT has no
    rollout and prints no timings: its step time is tqdm's, and its throughput
    (tokens/s per GPU, as perf/throughput) is train/global_tokens over it."""
    rows = step_lines(log_text)
    step_s = _mean(rows, "timing_s/step")
    step_source = "timing_s/step" if step_s is not None else None
    if step_s is None and rows:
        bars = tqdm_step_seconds(log_text)
        if bars:
            step_s, step_source = round(mean(bars), 6), "tqdm s/it"
    sps_values = []
    for r in rows:
        busy = sum(r.get(k, 0.0) for k in ("timing_s/gen", "timing_s/update_actor", "timing_s/update_critic")
                   if isinstance(r.get(k), float))
        if samples_per_step and busy:
            sps_values.append(samples_per_step / busy)
    if not sps_values and samples_per_step and step_s:
        sps_values.append(samples_per_step / step_s)
    throughput = _mean(rows, "perf/throughput")
    tokens = _mean(rows, "train/global_tokens")
    if throughput is None and tokens and step_s and gpus:
        throughput = round(tokens / step_s / gpus, 3)
    return {
        "steps": int(max((r["step"] for r in rows), default=0)),
        "mean_step_s": step_s,
        "step_time_from": step_source,
        "mean_throughput": throughput,
        "sps": round(mean(sps_values), 3) if sps_values else None,
        "step_mentions": raw_step_mentions(log_text),
        **outcome(rows),
    }


def _series(rows: list, key: str) -> list:
    return [r[key] for r in rows if isinstance(r.get(key), float)]


def outcome(rows: list) -> dict:
    """What training reached, for the judgment against history: the reward
    (verl's critic/score/mean, PPO and GRPO) at the last step and at its best,
    the loss at the last step (train/loss, SFT; the RL losses hover around 0
    and say little), and the peak memory: GPU memory where verl measures it,
    else (a CPU run, where verl reports 0 GPU bytes) verl's
    perf/cpu_memory_used_gb: psutil's used memory of the whole machine at the
    actor's step (verl/workers/engine_workers.py:221), not the job's own."""
    scores, losses = _series(rows, "critic/score/mean"), _series(rows, "train/loss")
    gpu = [v for v in _series(rows, "actor/perf/max_memory_allocated_gb") if v > 0]
    memory = gpu or _series(rows, "actor/perf/cpu_memory_used_gb")
    return {
        "final_score": scores[-1] if scores else None,
        "best_score": max(scores) if scores else None,
        "final_loss": losses[-1] if losses else None,
        "peak_memory_gb": round(max(memory), 3) if memory else None,
    }
