"""<SHARED_ROOT>/clusters/<MVP_CLUSTER_NAME>.json: the head that last started
under a cluster name. Clusters sharing a root tell their jobs apart by that
name (JobDir.cluster), so two live clusters must never share one: a head
that starts under the name of another cluster that still answers is refused
before it reconciles anything of that name."""
import os
from datetime import datetime, timezone

from ..worker import fsutil
from ..core.dashboard import Dashboard, HTTPError
from ..worker.errors import MvpError
from ..core.layout import Layout

# The other cluster's dashboard is asked once, at head start.
PROBE_TIMEOUT_S = 3.0


def _head_id(nodes: list):
    return next((n.get("node_id") for n in nodes if n.get("is_head_node")), None)


def _other_head_answers(record: dict) -> bool:
    """Whether the head recorded under the name still runs: its dashboard
    answers with that head among its nodes. One that answers but will not
    show its nodes (another token) may be alive: counted as alive."""
    try:
        return record.get("head_node_id") == _head_id(Dashboard(record["dashboard"], PROBE_TIMEOUT_S).nodes())
    except MvpError as exc:
        return isinstance(exc.__cause__, HTTPError)


def register(settings, dash: Dashboard) -> dict:
    """Records this cluster's head under its name; refuses (one line) when
    another cluster that still runs holds the name."""
    name = settings.cluster_name
    path = Layout(settings.shared_root).clusters / f"{name}.json"
    mine = {"name": name, "dashboard": dash.url, "head_node_id": _head_id(dash.nodes()),
            "host": os.uname().nodename, "started_at": datetime.now(timezone.utc).isoformat()}
    before = fsutil.read_json(path, {}) or {}
    # The same address is this cluster, whatever ran there before.
    if (before.get("dashboard") not in (None, dash.url) and before.get("head_node_id") != mine["head_node_id"]
            and _other_head_answers(before)):
        raise MvpError(f"MVP_CLUSTER_NAME={name} belongs to another running cluster on this shared root (dashboard "
                       f"{before['dashboard']}, head started {before.get('started_at')} from host "
                       f"{before.get('host')}); give this cluster a name of its own and run 20_start_head.sh again: "
                       "nothing of that name was reconciled")
    fsutil.write_json(path, mine)
    return mine
