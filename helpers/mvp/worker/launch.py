"""The entrypoint of every runbook job (standard library only; runs on the
worker that holds the driver).

Usage: python3 launch.py <job dir>

Sets the job's private variables (helpers/jobenv/mvp_private_env.py), starts
the keeper of the driver log's copy in the job directory and, through Ray, the
keepers of each node's worker logs of the job (log_keeper.py), the writer of
the versions and packages it runs with (runenv.py) and, when the nightly
asks, the watcher that interrupts the job at a step (stopper.py), prints
where `verl` is imported from and which code snapshot PYTHONPATH selected,
then replaces itself with the trainer, whose arguments it reads from
<job dir>/config/job_spec.json (JobDir.spec). The arguments never pass through a shell, so
overrides with spaces, quotes, $(...) or ; arrive byte for byte."""
import importlib.util
import os
import re
import sys

import log_keeper  # beside this file, which is sys.path[0] until main() drops it
import runenv
import stopper
from jobdir import JobDir


def precheck() -> None:
    # find_spec resolves the import exactly as `import verl` would, without
    # running verl's (heavy) package initialisation in this short-lived process.
    spec = importlib.util.find_spec("verl")
    print(f"MVP_PRECHECK_VERL_FILE={spec.origin if spec else 'NOT FOUND'}", flush=True)
    marker_spec = importlib.util.find_spec("mvp_marker")
    marker = "NOT FOUND"
    if marker_spec and marker_spec.origin:
        with open(marker_spec.origin, encoding="utf-8") as f:
            m = re.search(r'^MARKER = "([^"]+)"$', f.read(), re.MULTILINE)
        marker = m.group(1) if m else "UNREADABLE"
    print(f"MVP_PRECHECK_MARKER={marker}", flush=True)


def private_env() -> None:
    """The driver's copy of the job's private variables: from Ray's GCS store,
    before the trainer exists (its Ray workers get theirs from the setup hook)."""
    if not os.environ.get("MVP_PRIVATE_ENV"):
        return
    import mvp_private_env  # on the job's PYTHONPATH when it has private variables
    try:
        count = mvp_private_env.load_in_driver()
    except mvp_private_env.MissingPrivateEnv as exc:
        print(f"ERROR: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    print(f"MVP_PRIVATE_ENV: {count} private variable(s) set from Ray's GCS store", flush=True)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    jd = JobDir(sys.argv[1])
    resolved = jd.load_spec()["resolved"]
    # The launcher's own directory must not shadow anything the trainer imports.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)
    private_env()
    # After private_env: the keeper masks the private values it inherits.
    log_keeper.start(jd, float(resolved["log_sync_s"]))
    stopper.start(jd, resolved.get("stop_at_step"))
    runenv.start(jd)
    precheck()
    # ~KEY (a delete) has no value.
    overrides = [key if value is None else f"{key}={value}" for key, value in resolved["trainer_overrides"].items()]
    argv = [sys.executable, "-m", resolved["trainer_module"], *resolved.get("trainer_args", []), *overrides]
    print(f"MVP_TRAINER={resolved['trainer_module']} ({len(resolved['trainer_overrides'])} overrides)", flush=True)
    if resolved.get("workdir"):
        # A recipe runs from the snapshot's root, as verl's docs run it (plan._workdir).
        os.chdir(resolved["workdir"])
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    sys.exit(main())
