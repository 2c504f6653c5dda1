"""The cluster's shape as Ray reports it, and waiting for it."""
import time
from typing import Iterable, Optional

from ..worker import kv
from ..core.dashboard import Dashboard
from ..worker.errors import MvpError
from ..core.settings import Settings

WORKER_NODE_UNITS = 100


def _resource(node: dict, name: str) -> float:
    return float((node.get("resources_total") or {}).get(name, 0))


def describe(node: dict) -> dict:
    return {
        "node_id": node["node_id"],
        "ip": node["node_ip"],
        "is_head": bool(node.get("is_head_node")),
        "state": node["state"],
        "cpu": _resource(node, "CPU"),
        "gpu": _resource(node, "GPU"),
        "worker_node": _resource(node, "worker_node"),
    }


def shape(nodes: list, settings: Settings) -> dict:
    """Head and workers from Ray's node list, with every way it differs from
    the configured topology: a control-plane-only head and one worker per
    configured address, each with its GPUs and the worker_node resource."""
    alive = [describe(n) for n in nodes if n["state"] == "ALIVE"]
    problems = []
    heads = [n for n in alive if n["is_head"]]
    head = heads[0] if heads else None
    if head is None:
        problems.append("no head node is alive")
    elif head["cpu"] != 0 or head["gpu"] != 0:
        problems.append(f"head {head['ip']} has CPU {head['cpu']:g} and GPU {head['gpu']:g}; it must have 0 and 0")
    workers = []
    for ip in settings.worker_ips:
        at_ip = [n for n in alive if n["ip"] == ip and not n["is_head"]]
        if not at_ip:
            problems.append(f"worker {ip} is not registered")
            continue
        if len(at_ip) > 1:
            problems.append(f"worker {ip} is registered {len(at_ip)} times")
        w = at_ip[-1]
        workers.append(w)
        if w["gpu"] != settings.gpus_per_worker:
            problems.append(f"worker {ip} has {w['gpu']:g} GPUs, expected {settings.gpus_per_worker}")
        if w["worker_node"] != WORKER_NODE_UNITS:
            problems.append(f"worker {ip} has worker_node {w['worker_node']:g}, expected {WORKER_NODE_UNITS}")
    known = set(settings.worker_ips) | ({head["ip"]} if head else set())
    for n in alive:
        if n["ip"] not in known:
            problems.append(f"unexpected node {n['ip']} ({n['node_id'][:8]})")
    return {"ok": not problems, "head": head, "workers": workers, "problems": problems}


def wait(settings: Settings, dash: Dashboard, head_only: bool, replaced: Iterable[str] = (),
         timeout: Optional[float] = None) -> dict:
    """Waits until the dashboard answers and the head (or the whole cluster)
    is registered. `replaced` are node ids that must be gone from the alive
    set: a restarted worker keeps its address but gets a new node id."""
    timeout = settings.nodes_timeout if timeout is None else timeout
    deadline = time.monotonic() + timeout
    replaced = set(replaced)
    last = "the dashboard does not answer"
    while True:
        if dash.alive():
            nodes = dash.nodes()
            result = shape(nodes, settings)
            stale = [n["node_id"][:8] for n in nodes if n["state"] == "ALIVE" and n["node_id"] in replaced]
            if head_only:
                if result["head"] is not None:
                    return result
                last = "the head is not registered"
            elif result["ok"] and not stale:
                return result
            else:
                last = "; ".join(result["problems"] + [f"old node {s} still alive" for s in stale])
        if time.monotonic() > deadline:
            raise MvpError(f"the cluster did not come up within {timeout:g}s: {last}")
        time.sleep(0.2)


def node_ids_at(dash: Dashboard, ips: Iterable[str]) -> list:
    ips = set(ips)
    if not dash.alive():
        return []
    return [n["node_id"] for n in dash.nodes() if n["state"] == "ALIVE" and n["node_ip"] in ips]


def wait_main(args, settings: Settings) -> int:
    """`cluster-wait`: until the head (or every node) registered."""
    from ..core import log
    result = wait(settings, Dashboard(settings.dashboard_url, timeout=5), head_only=args.head,
                  replaced=args.replaced.split(","), timeout=args.timeout)
    what = "head" if args.head else f"head + {len(result['workers'])} workers"
    log.info(f"cluster: {what} registered")
    return 0


def node_ids_main(args, settings: Settings) -> int:
    """`node-ids`: node_ids=the alive node ids at these addresses, comma separated."""
    kv.emit(("node_ids", ",".join(node_ids_at(Dashboard(settings.dashboard_url, timeout=5), args.ips))))
    return 0
