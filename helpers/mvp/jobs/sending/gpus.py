"""GPUs as Ray sees them: the cluster's total, and what live placement groups
hold, by the Ray job that created them.

verl 0.9.1 checks FREE GPUs when it starts its workers
(ResourcePoolManager._check_resource_available, verl/single_controller/ray/base.py)
and fails ("Total available GPUs X is less than total desired GPUs Y") instead
of queueing behind a job that holds them; it takes its GPUs through placement
groups. admission.py adds the runbook's own claims to this view."""
from ...core.dashboard import Dashboard

HOLDING = ("CREATED", "RESCHEDULING")


def needed(overrides: dict) -> int:
    """nnodes x n_gpus_per_node, as verl's resource pool asks for them."""
    try:
        return int(overrides.get("trainer.nnodes", 1)) * int(overrides.get("trainer.n_gpus_per_node", 8))
    except ValueError:
        return 0  # not a number: the preflight's and verl's business


def total(dash: Dashboard) -> float:
    """GPUs of the alive nodes."""
    return sum(float((n.get("resources_total") or {}).get("GPU", 0)) for n in dash.nodes() if n.get("state") == "ALIVE")


def held_by_ray_job(dash: Dashboard) -> dict:
    """{Ray job id (hex): GPUs} of the live placement groups."""
    pgs = dash.get("/api/v0/placement_groups?limit=10000&detail=true")["data"]["result"]["result"]
    held: dict = {}
    for pg in pgs:
        if pg.get("state") not in HOLDING:
            continue
        gpus = sum(float((b.get("unit_resources") or {}).get("GPU", 0)) for b in pg.get("bundles") or [])
        if gpus:
            held[pg.get("creator_job_id")] = held.get(pg.get("creator_job_id"), 0) + gpus
    return held
