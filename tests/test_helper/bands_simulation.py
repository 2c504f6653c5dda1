"""The simulation behind the bands' defaults (docs/nightly.md, curve bands):
how often bands.judge_runs flags a clean run (every figure Gaussian noise
around 10, 20 steps, 8 figures) and how often it finds a shift of 4 standard
deviations in one figure, by the number of reference runs, k and N; then per-step MADs
alone, for comparison. Not a test (about 40 s): run it when changing bands.py.

Usage: PYTHONPATH=helpers .venv/bin/python tests/test_helper/bands_simulation.py"""
import random
from statistics import median

from mvp.nightly import bands

RNG = random.Random(1)
TRIALS = 300


def run(shift: float = 0.0, steps: int = 20) -> list:
    """One run's rows; `shift` moves one figure (the score) down at every step."""
    rows = [{"step": float(s), **{keys[0]: 10 + RNG.gauss(0, 1) for keys, _ in bands.FIGURES.values()}}
            for s in range(1, steps + 1)]
    for row in rows:
        row["critic/score/mean"] -= shift
    return rows


def rate(n: int, rule: bands.Rule, shift: float = 0.0) -> float:
    return sum(bands.judge_runs(run(shift), [run() for _ in range(n)], rule)["regressed"] for _ in range(TRIALS)) / TRIALS


def per_step_mad_only(references: list, rule: bands.Rule) -> dict:
    at: dict = {}
    for curve in references:
        for step, value in zip(curve["steps"], curve["values"]):
            at.setdefault(step, []).append(value)
    out = {}
    for step, values in at.items():
        mid = median(values)
        half = rule.k * median(abs(v - mid) for v in values)
        out[step] = (mid - half, mid, mid + half)
    return out


def main() -> None:
    for n in (2, 3, 5, 7):
        for k, steps in ((5, 2), (5, 3), (6, 2)):
            rule = bands.Rule(k=k, steps=steps, min_refs=min(n, 3), floor=0.0)
            print(f"{n} references, k={k}, N={steps}: clean runs flagged {rate(n, rule):.3f}, "
                  f"4-sigma shift found {rate(n, rule, 4.0):.3f}")
    bands.bands = per_step_mad_only
    rule = bands.Rule(k=5, steps=2, min_refs=3, floor=0.0)
    print(f"per-step MADs alone, k=5, N=2: clean runs flagged {rate(3, rule):.3f} (3 references), {rate(7, rule):.3f} (7)")


if __name__ == "__main__":
    main()
