"""How far same-code runs of one job differ, per figure and step, in each
regime of the corpus (the trainer profile's digest a record carries; records
made before records kept it are grouped by the day they were recorded): the
noise the nightly's bands have to tell apart from a regression. A benchmark
(never in CI): it reads the corpus and prints.

For each job, figure and regime: the runs, and over the steps the median and
the largest spread (the runs' range at a step, max - min), absolute and as a
percentage of the step's median |value|. Then key=value lines,
spread.<regime>.<job>.<figure>=<median spread %>.

Usage: PYTHONPATH=helpers python3 bench/detector/spread.py [--corpus DIR] [--job NAME]
"""
import argparse
from pathlib import Path
from statistics import median

from mvp.nightly import bands, calibration


def regime_label(record: dict) -> str:
    digest = record.get("profile_sha256")
    return digest[:12] if digest else f"unkept-{record['recorded_at'][:10]}"


def step_spreads(runs: list, figure: str) -> list:
    """(step, range, range as % of the median |value|) of each step every run logged."""
    by_step: dict = {}
    for curves in runs:
        curve = curves.get(figure)
        if not curve:
            return []
        for step, value in zip(curve["steps"], curve["values"]):
            by_step.setdefault(step, []).append(value)
    out = []
    for step, values in sorted(by_step.items()):
        if len(values) < len(runs) or any(v is None for v in values):
            continue
        size = median(abs(v) for v in values)
        spread = max(values) - min(values)
        out.append((step, spread, 100 * spread / size if size else (0.0 if spread == 0 else float("inf"))))
    return out


def table(records: list, only: str = "") -> list:
    """[(regime, job, figure, runs, median %, largest %, largest absolute)] of same-code runs."""
    groups: dict = {}
    for r in records:
        if r.get("planted") or r["status"] != "SUCCEEDED" or "rows" not in r or (only and r["job"] != only):
            continue
        # Another data source's runs are another task's (the probe counts letters on synthetic data).
        source = calibration.source_of(r.get("data_source") or "")
        job = r["job"] if source == calibration.MAIN_SOURCE else f"{r['job']}@{source}"
        groups.setdefault((regime_label(r), job), []).append(bands.curves(r["rows"]))
    out = []
    for (regime, job), runs in sorted(groups.items()):
        if len(runs) < 2:
            continue
        for figure in bands.FIGURES:
            steps = step_spreads(runs, figure)
            if steps:
                out.append((regime, job, figure, len(runs), median(s[2] for s in steps),
                            max(s[2] for s in steps), max(s[1] for s in steps)))
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default="", help="the corpus directory (default tests/fixtures/detector/corpus)")
    p.add_argument("--job", default="", help="only this job")
    a = p.parse_args()
    rows = table(calibration.load(Path(a.corpus) if a.corpus else calibration.CORPUS), a.job)
    print(f"{'regime':<22} {'job':<6} {'figure':<11} {'runs':>4} {'median %':>9} {'largest %':>10} {'largest':>10}")
    for regime, job, figure, runs, med, top, top_abs in rows:
        print(f"{regime:<22} {job:<6} {figure:<11} {runs:>4} {med:>9.2f} {top:>10.2f} {top_abs:>10.4g}")
    print()
    for regime, job, figure, _, med, _, _ in rows:
        print(f"spread.{regime}.{job}.{figure}={med:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
