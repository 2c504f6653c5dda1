"""Job directories and nights with planted environments, for the unit tests
of the fingerprint (helpers/mvp/jobs/after_sending/job_fingerprint.py) and of the nightly's naming
of what changed (helpers/mvp/nightly/night_fingerprint.py, judge.py, report.py):
each job directory holds the files a real job leaves (config/job_spec.json,
config/fingerprint.json, the submit-time node list, logs/env/*.json) with
the planted values, and its fingerprint.json is assembled by the real code."""
import hashlib
import json
from pathlib import Path

from mvp.jobs.after_sending import job_fingerprint; from mvp.worker import fsutil
from mvp.worker.jobdir import JobDir
from mvp.nightly import night_fingerprint, judge, report

PACKAGES = ["numpy==2.3.0", "ray==2.60.0", "torch==2.13.0", "transformers==4.57.0"]


class Dash:
    """The dashboard's /api/version, the one call archiving makes for the fingerprint."""

    def __init__(self, ray="2.60.0"):
        self.ray = ray

    def get(self, path):
        assert path == "/api/version", path
        return {"ray_version": self.ray}


def snapshot(root: Path, code_id: str, commit=None, verl=None) -> Path:
    path = root / "common/code/verl" / code_id
    manifest = {"code_id": code_id, "content_sha256": f"sha-of-{code_id}", "git_commit": commit or "0" * 40}
    fsutil.write_json(path / "MANIFEST.json", manifest)
    if verl:
        fsutil.write_text(path / "verl/version/version", verl + "\n")
    return path


def job(root: Path, sid: str, code_id="codeA", torch="2.13.0", packages=None, worker_ray="2.60.0", commit=None,
        unrecorded=(), verl=None):
    """A job directory with a planted environment, less the records named in
    `unrecorded` ("driver", a node's ip): a job that ended before its
    launcher's writer or a node's keeper wrote. Returns its fingerprint.json."""
    jd = root / "jobs" / sid
    job_dir = JobDir(jd)
    fsutil.write_json(jd / "config/job_spec.json", {"resolved": {"code_id": code_id,
                                                                  "code_path": str(snapshot(root, code_id, commit, verl))}})
    fsutil.write_json(jd / "config/fingerprint.json", {"runtime": "local", "cluster_name": "local@test",
                                                       "auth_mode": "off", "image": None})
    fsutil.write_json(jd / "debug/20261127T023000.000000Z_submit_nodes.json", [
        {"node_ip": "10.0.0.1", "is_head_node": True, "state": "ALIVE", "resources_total": {}},
        {"node_ip": "10.0.0.2", "is_head_node": False, "state": "ALIVE", "resources_total": {"CPU": 16.0, "worker_node": 100.0}},
        {"node_ip": "10.0.0.3", "is_head_node": False, "state": "ALIVE", "resources_total": {"CPU": 16.0, "worker_node": 100.0}},
        {"node_ip": "10.0.0.9", "is_head_node": False, "state": "DEAD", "resources_total": {"CPU": 16.0}}])
    listed = sorted(packages if packages is not None else PACKAGES)
    listed = [p if not p.startswith("torch==") else f"torch=={torch}" for p in listed]
    fsutil.write_json(jd / "logs/env/driver.json", {
        "python": "3.11.7", "ray": "2.60.0", "torch": torch, "cuda": None, "nccl": None, "gpu_driver": None,
        "packages": {"count": len(listed), "sha256": hashlib.sha256("\n".join(listed).encode()).hexdigest(),
                     "list": listed}})
    for ip, ray in (("10.0.0.2", "2.60.0"), ("10.0.0.3", worker_ray)):
        fsutil.write_json(job_dir.node_env(ip), {"ip": ip, "python": "3.11.7", "ray": ray, "torch": torch,
                                                     "cuda": None, "nccl": None, "gpu_driver": None})
    for gone in unrecorded:
        (jd / "logs/env/driver.json" if gone == "driver" else job_dir.node_env(gone)).unlink()
    job_fingerprint.write_job(job_dir, Dash())
    return json.loads((jd / "fingerprint.json").read_text())


def flat(root: Path, sid: str, **planted) -> dict:
    return job_fingerprint.flatten(job(root, sid, **planted))


def night(root: Path, day: int, passed: bool, failed_check="regression", **planted) -> dict:
    """Night `day`: one job (grpo) with the planted environment, judged
    passed or with `failed_check` failed; its fingerprint compared with the
    last good night's, named by the judge, remembered, and reported."""
    run_id = f"nightly-202611{day:02d}T023000Z"
    sid = f"grpo-{day}"
    job(root, sid, **planted)
    checks = [{"name": "succeeded_in_time", "passed": True, "evidence": "SUCCEEDED"},
              {"name": failed_check, "passed": passed, "evidence": "s/step 14 vs median 10" if not passed else "within"}]
    rep = {"run_id": run_id, "started_at": "2026-11-27T02:30:00Z", "finished_at": "2026-11-27T03:00:00Z",
           "code_id": planted.get("code_id", "codeA"), "log": "nightly.log", "failed_step": None, "passed": passed,
           "jobs": [{"name": "grpo", "submission_id": sid, "status": "SUCCEEDED", "duration_s": 60.0, "checks": checks,
                     "metrics": {"steps": 5, "mean_step_s": 1.0, "mean_throughput": 1.0, "sps": 1.0}}]}
    regressions = root / "regressions"
    night_fingerprint.add(rep, regressions, root / "jobs")  # what nightly/main.py's judge_run does
    rep["summary"] = judge.summary_line(rep)
    fsutil.write_text(regressions / run_id / "report.md", report.markdown(rep))
    fsutil.write_text(regressions / run_id / "report.html", report.html(rep))
    return rep
