"""One admission (helpers/mvp/jobs/sending/admission.py) against a fake cluster kept in a
JSON file, for the unit tier: no Ray. The state file holds {"total": GPUs,
"jobs": [{submission_id, job_id, status}], "pgs": {job_id: GPUs}}; the
admitted body "submits" by adding the job to it as PENDING (under the
admission lock, so writers never overlap).

Usage: admission_driver.py STATE SHARED_ROOT SID NEED [--queue] [--timeout S]
       [--claim-max S] [--hold S] [--crash]
Prints "admitted SID" or "ERROR: ..." and exits with admit's exit code;
"on_queued" on stderr each time admit calls its on_queued hook."""
import argparse
import json
import sys
import time
from pathlib import Path

from mvp.jobs.sending import admission
from mvp.worker.errors import MvpError


class FakeDash:
    def __init__(self, state: Path):
        self.state = state

    def _read(self) -> dict:
        return json.loads(self.state.read_text())

    def nodes(self) -> list:
        return [{"state": "ALIVE", "resources_total": {"GPU": self._read()["total"]}}]

    def get(self, path: str):
        pgs = [{"state": "CREATED", "creator_job_id": job_id, "bundles": [{"unit_resources": {"GPU": 1}}] * gpus}
               for job_id, gpus in self._read()["pgs"].items()]
        return {"data": {"result": {"result": pgs}}}

    def jobs(self) -> list:
        return self._read()["jobs"]

    def job(self, sid: str):
        return next((j for j in self.jobs() if j["submission_id"] == sid), None)


def main() -> int:
    p = argparse.ArgumentParser()
    for name in ("state", "shared_root", "sid"):
        p.add_argument(name)
    p.add_argument("need", type=int)
    p.add_argument("--queue", action="store_true")
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--claim-max", type=float, default=600)
    p.add_argument("--hold", type=float, default=0, help="seconds the body takes, as the Ray CLI would")
    p.add_argument("--crash", action="store_true", help="the body fails before Ray has the job")
    args = p.parse_args()
    state = Path(args.state)
    dash = FakeDash(state)
    root = Path(args.shared_root)
    admission.POLL_S = 0.1
    try:
        with admission.admit(dash, root, "at http://127.0.0.9:8265", args.sid, root / "jobs" / args.sid, args.need,
                             args.queue, args.timeout, args.claim_max,
                             on_queued=lambda: print("on_queued", file=sys.stderr, flush=True)):
            (root / "jobs" / args.sid).mkdir(parents=True)
            time.sleep(args.hold)
            if args.crash:
                raise MvpError("ray job submit failed (exit 1): refused")
            data = json.loads(state.read_text())
            data["jobs"].append({"submission_id": args.sid, "job_id": None, "status": "PENDING"})
            state.write_text(json.dumps(data))
    except MvpError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"admitted {args.sid}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
