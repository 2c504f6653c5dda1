"""verl's console metric lines: `step:3 - timing_s/step:12.3 - perf/throughput:1520.4 - ...`."""
from statistics import mean
from typing import Optional


def parse_line(line: str) -> Optional[dict]:
    if not line.startswith("step:"):
        return None
    values = {}
    for part in line.strip().split(" - "):
        key, sep, raw = part.partition(":")
        if not sep:
            continue
        try:
            values[key] = float(raw)
        except ValueError:
            values[key] = raw
    return values if isinstance(values.get("step"), float) else None


def step_lines(log_text: str) -> list:
    """Training steps only: step 0 is a validation before training."""
    return [m for m in map(parse_line, log_text.splitlines()) if m and m["step"] >= 1]


def _mean(rows: list, key: str) -> Optional[float]:
    vals = [r[key] for r in rows if isinstance(r.get(key), float)]
    return round(mean(vals), 6) if vals else None


def summarize(log_text: str, samples_per_step: Optional[float]) -> dict:
    """Steps, mean step time and throughput, and SPS as seed 000 section 6
    defines it: samples in the step / (rollout time + update time). For SFT,
    which has no rollout, the update is the whole step."""
    rows = step_lines(log_text)
    sps_values = []
    for r in rows:
        busy = sum(r.get(k, 0.0) for k in ("timing_s/gen", "timing_s/update_actor", "timing_s/update_critic")
                   if isinstance(r.get(k), float))
        busy = busy or (r.get("timing_s/step") if isinstance(r.get("timing_s/step"), float) else 0.0)
        if samples_per_step and busy:
            sps_values.append(samples_per_step / busy)
    return {
        "steps": int(max((r["step"] for r in rows), default=0)),
        "mean_step_s": _mean(rows, "timing_s/step"),
        "mean_throughput": _mean(rows, "perf/throughput"),
        "sps": round(mean(sps_values), 3) if sps_values else None,
    }
