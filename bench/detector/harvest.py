"""One night of the runbook's nightly (60) as corpus records, one JSON line
per job appended to the corpus file: every figure verl logged at every step
(metrics.step_lines), what the judge summed up of the log (metrics.summarize,
the same dict the nightly judges), the job's words and its JobSpec's digest,
the job's fingerprint (without the package list, whose digest stays), the
machine's load while the job ran, and whether the code was planted and how.

Usage (bench/detector/record.sh runs it after each night):
  PYTHONPATH=helpers python3 bench/detector/harvest.py --run-dir DIR --jobs-dir DIR
      --suite FILE --load FILE --out FILE [--planted KIND --plant-commit SHA] [--source LABEL]
"""
import argparse
import hashlib
import json
import os
import socket
from pathlib import Path

from mvp.core import metrics
from mvp.jobs.after_sending import job_fingerprint
from mvp.nightly import calibration, suite
from mvp.worker import fsutil
from mvp.worker.jobdir import JobDir

SCHEMA = 1
REPO = Path(__file__).resolve().parents[2]


def rounded(value):
    """Six significant digits: the corpus stays small, the judge's bands are far wider."""
    return float(f"{value:.6g}") if isinstance(value, float) else value


def load_during(samples: list, start: float, end: float) -> dict:
    """Mean and max of the 1-minute load average sampled while the job ran
    (samples: [epoch seconds, load, and, where sampled, the CPU's steal and
    total ticks from /proc/stat]), and steal_pct: the share of the CPU time
    the hypervisor took from this machine over those samples, the outside
    slowdown the load average cannot show. None without samples in that time."""
    inside = [s for s in samples if start <= s[0] <= end]
    if not inside:
        return {"mean": None, "max": None, "samples": 0}
    loads = [s[1] for s in inside]
    out = {"mean": round(sum(loads) / len(loads), 2), "max": max(loads), "samples": len(inside)}
    ticks = [s for s in inside if len(s) >= 4]
    if len(ticks) >= 2 and ticks[-1][3] > ticks[0][3]:
        out["steal_pct"] = round(100 * (ticks[-1][2] - ticks[0][2]) / (ticks[-1][3] - ticks[0][3]), 2)
    return out


def read_samples(path: Path) -> list:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        parts = line.split()
        if len(parts) >= 2:
            out.append(tuple(float(p) for p in parts[:4]))
    return out


def suite_words(suite_file: Path) -> dict:
    """name -> (the JobSpec it submits, that file's sha256, its overrides)."""
    out = {}
    scripts = {script: name for name, script in suite.TEMPLATE_SCRIPTS.items()}
    for job in suite.load(suite_file, REPO):
        # A template goes through its script (40-42), which names it itself.
        spec = Path(job.spec) if job.spec else REPO / "templates" / "jobspecs" / scripts[job.script] if job.script in scripts else None
        digest = hashlib.sha256(spec.read_bytes()).hexdigest() if spec else ""
        out[job.name] = {"spec": str(spec.relative_to(REPO)) if spec and spec.is_relative_to(REPO) else str(spec or ""),
                         "spec_sha256": digest, "script": job.script, "overrides": job.overrides, "command": job.command}
    return out


def machine() -> str:
    """The machine the night ran on, as the replay groups nights: this boot's
    id (a host name like `vm` names many machines; a boot is one)."""
    boot = Path("/proc/sys/kernel/random/boot_id")
    return "boot-" + boot.read_text().strip()[:8] if boot.is_file() else socket.gethostname()


def records(run_dir: Path, jobs_dir: Path, words: dict, samples: list, planted: str, commit: str, source: str) -> list:
    report = fsutil.read_json(run_dir / "report.json")
    out = []
    for job in report["jobs"]:
        sid = job.get("submission_id")
        if not sid:
            continue
        jd = JobDir.of(jobs_dir, sid)
        log = jd.driver_log_text() or ""
        result = jd.read_result({}) or {}
        fp = fsutil.read_json(jd.fingerprint, {}) or {}
        flat = {k: v for k, v in job_fingerprint.flatten(fp).items() if not k.startswith("package.")} if fp else {}
        rows = [{k: rounded(v) for k, v in row.items() if isinstance(v, float)} for row in metrics.step_lines(log)]
        regression = next((c for c in job["checks"] if c["name"] == "regression"), {})
        out.append({
            "schema": SCHEMA, "record": f"{report['run_id']}/{job['name']}", "night": report["run_id"],
            "recorded_at": report["started_at"], "host": socket.gethostname(), "machine": machine(), "job": job["name"],
            "workload": job.get("workload"), "planted": planted or None, "plant_commit": commit or None,
            "code_id": report.get("code_id"), "data_source": source, "profile": os.environ.get("MVP_TRAINER_PROFILE", ""),
            "profile_sha256": calibration.profile_sha256(os.environ.get("MVP_TRAINER_PROFILE", "")),
            **words.get(job["name"], {}),
            "fingerprint": flat,
            "load": load_during(samples, (result.get("start_time_ms") or 0) / 1000, (result.get("end_time_ms") or 0) / 1000),
            "status": job["status"], "duration_s": job["duration_s"], "summary": job["metrics"],
            "failed_checks": [c["name"] for c in job["checks"] if c["passed"] is False and c["name"] != "regression"],
            # The band the night judged resume_fidelity with (the replay judges it again under today's).
            "resume_band": calibration.JudgeSettings().nightly_resume_band,
            "night_verdict": regression.get("passed"), "rows": rows,
        })
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--jobs-dir", required=True, type=Path)
    p.add_argument("--suite", required=True, type=Path)
    p.add_argument("--load", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--planted", default="")
    p.add_argument("--plant-commit", default="")
    p.add_argument("--source", default="")
    a = p.parse_args()
    found = records(a.run_dir, a.jobs_dir, suite_words(a.suite), read_samples(a.load), a.planted, a.plant_commit, a.source)
    with a.out.open("a", encoding="utf-8") as f:
        for rec in found:
            f.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
    for rec in found:
        print(f"{rec['record']}: {rec['status']}, {len(rec['rows'])} steps, planted {rec['planted'] or '-'}, "
              f"load {rec['load']['mean']}, judged {rec['night_verdict']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
