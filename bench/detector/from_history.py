"""A team's own nights as corpus records (record.sh --from-history): each job
of each night in their regressions/history.json that passed every check
becomes a same-code record, with its per-step curves taken from the night's
report.json when retention kept the run directory (history.json keeps the
curves of the newest good nights only) and its single figures from the
history. The replay (python -m mvp detector --corpus DIR) then measures how
often their judge would have cried wolf on their own machines.

Usage: PYTHONPATH=helpers python3 bench/detector/from_history.py HISTORY_JSON --label NAME --out FILE
"""
import argparse
import json
import socket
import sys
from pathlib import Path

from mvp.nightly import history as judged_history
from mvp.worker import fsutil

# history.json's single figures -> the metrics summary's keys the judge reads.
SUMMARY_KEYS = {"step_s": "mean_step_s", "throughput": "mean_throughput", "final_score": "final_score",
                "best_score": "best_score", "final_loss": "final_loss", "peak_memory_gb": "peak_memory_gb"}


def records(history_path: Path, label: str) -> tuple:
    nights = fsutil.read_json(history_path, []) or []
    out, without = [], 0
    for night in nights:
        report = fsutil.read_json(history_path.parent / night["run_id"] / "report.json", {}) or {}
        kept = {j["name"]: j.get("curves") for j in report.get("jobs", [])}
        for name, entry in sorted(night.get("jobs", {}).items()):
            if not judged_history.is_good(entry):
                continue
            curves = kept.get(name) or entry.get("curves")
            if not curves:
                without += 1
                continue
            out.append({"schema": 1, "record": f"{night['run_id']}/{name}", "night": night["run_id"],
                        "recorded_at": night.get("started_at") or night["run_id"], "host": socket.gethostname(),
                        "job": name, "planted": None, "source": label, "status": entry["status"],
                        "duration_s": entry.get("duration_s"), "curves": curves,
                        "summary": {SUMMARY_KEYS[k]: v for k, v in entry["figures"].items() if k in SUMMARY_KEYS}})
    return out, without


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("history", type=Path)
    p.add_argument("--label", default="history")
    p.add_argument("--out", required=True, type=Path)
    a = p.parse_args()
    if not a.history.is_file():
        print(f"ERROR: {a.history} does not exist; give <SHARED_ROOT>/regressions/history.json", file=sys.stderr)
        return 2
    found, without = records(a.history, a.label)
    if not found:
        print(f"ERROR: {a.history} has no good night with per-step curves ({without} without); run more nights first",
              file=sys.stderr)
        return 1
    with a.out.open("a", encoding="utf-8") as f:
        for rec in found:
            f.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{len(found)} records from {len({r['night'] for r in found})} good nights in {a.out}"
          + (f"; {without} good job-nights had no curves left (retention pruned their run directory)" if without else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
