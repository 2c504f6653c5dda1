"""Free GPUs before a submission, and which jobs hold the others.

verl 0.9.1 checks FREE GPUs when it starts its workers
(ResourcePoolManager._check_resource_available, verl/single_controller/ray/base.py)
and fails ("Total available GPUs X is less than total desired GPUs Y") instead
of queueing behind a job that holds them. So 40-44 look first, where a refusal
costs nothing: GPUs held = the GPU bundles of live placement groups (verl
takes its GPUs through placement groups), named by the Ray job that created
them. `--queue` waits for them instead, at most MVP_JOB_TIMEOUT seconds."""
import time
from typing import Callable

from .dashboard import Dashboard
from .errors import MvpError

HOLDING = ("CREATED", "RESCHEDULING")
# Placement groups of a job that just ended are removed a moment later.
SETTLE_CHECKS, SETTLE_S, POLL_S = 3, 1.0, 2.0


def needed(overrides: dict) -> int:
    """nnodes x n_gpus_per_node, as verl's resource pool asks for them."""
    try:
        return int(overrides.get("trainer.nnodes", 1)) * int(overrides.get("trainer.n_gpus_per_node", 8))
    except ValueError:
        return 0  # not a number: the preflight's and verl's business


def cluster_gpus(dash: Dashboard) -> tuple:
    """(total GPUs of alive nodes, {holder: GPUs} of live placement groups)."""
    total = sum(float((n.get("resources_total") or {}).get("GPU", 0)) for n in dash.nodes() if n.get("state") == "ALIVE")
    pgs = dash.get("/api/v0/placement_groups?limit=10000&detail=true")["data"]["result"]["result"]
    held: dict = {}
    for pg in pgs:
        if pg.get("state") not in HOLDING:
            continue
        gpus = sum(float((b.get("unit_resources") or {}).get("GPU", 0)) for b in pg.get("bundles") or [])
        if gpus:
            held[pg.get("creator_job_id")] = held.get(pg.get("creator_job_id"), 0) + gpus
    if held:
        names = {j.get("job_id"): j.get("submission_id") or f"Ray job {j.get('job_id')}" for j in dash.jobs()}
        held = {names.get(job_id, f"Ray job {job_id}"): gpus for job_id, gpus in held.items()}
    return total, held


def _refusal(need: int, total: float, held: dict, waited: float) -> str:
    free = total - sum(held.values())
    if need > total:
        return (f"the job needs {need} GPUs (trainer.nnodes x trainer.n_gpus_per_node) but the cluster has {total:g}; "
                "lower trainer.nnodes or trainer.n_gpus_per_node, or add workers")
    holders = ", ".join(f"{name} ({gpus:g})" for name, gpus in sorted(held.items())) or "no job Ray names"
    when = f"after waiting {waited:.0f}s " if waited else ""
    return (f"the job needs {need} GPUs but {free:g} of {total:g} are free {when}(held by {holders}); verl checks free "
            "GPUs and fails rather than queue: wait for those jobs, stop them (52_stop.sh), or submit with --queue")


def ensure_free(dash: Dashboard, need: int, queue: bool, timeout: float, log: Callable[[str], None]) -> None:
    """Returns when `need` GPUs are free; raises MvpError (one line) otherwise."""
    if need <= 0:
        return
    start = time.monotonic()
    checks = 0
    while True:
        total, held = cluster_gpus(dash)
        free = total - sum(held.values())
        if free >= need:
            return
        checks += 1
        waited = time.monotonic() - start
        if need > total or (not queue and checks >= SETTLE_CHECKS) or (queue and waited >= timeout):
            raise MvpError(_refusal(need, total, held, waited if queue else 0))
        if queue and checks == 1:
            log(f"queued: {need} GPUs needed, {free:g} free; waiting for {', '.join(sorted(held))} "
                f"(at most {timeout:g}s)")
        time.sleep(POLL_S if queue else SETTLE_S)
