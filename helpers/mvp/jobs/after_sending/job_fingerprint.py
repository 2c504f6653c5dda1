"""The environment a job ran in, as one file, and what changed between two.

<job dir>/fingerprint.json is written when the job is archived (jobdir), from
what the job directory already holds, with one HTTP call (the head's Ray
version, a few ms) and no Ray CLI call:
- the code snapshot: its id, its git commit (the manifest's `git_commit`),
  the sha256 over its files (`content_sha256`) and its verl release
  (verl/version/version; absent from a tree without one);
- the versions the driver's Python ran with and its package list
  (logs/env/driver.json, runenv.py), each node's Ray version as that node's
  own Python reports it (logs/env/node-<ip>.json, written by its log keeper;
  the head's from the dashboard, which is the head's Ray);
- the cluster's shape from the node list taken at submission (debug/*_submit_nodes.json),
  and what the submitter knew (config/fingerprint.json): runtime, auth mode, image.

flatten() makes it a flat {key: value}; diff() compares two of those; the
nightly keeps each night's in regressions/fingerprints.json and names what
changed since the last good night."""
import json
import os
from pathlib import Path
from typing import Optional

from ...worker import fsutil
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ..planning.verl_release import release

# The keys a person reads first; the rest (each package) after them.
FIRST = ("snapshot.id", "snapshot.verl", "snapshot.commit", "snapshot.files_sha256", "torch", "cuda", "nccl", "gpu_driver", "python",
         "ray", "image", "runtime", "auth_mode", "cluster.nodes", "cluster.workers", "cluster.worker_cpus",
         "cluster.worker_gpus", "packages.sha256")
HEX = frozenset("0123456789abcdef")
# Versions that have a key of their own: not repeated as a package.
OWN_KEYS = ("torch", "ray")


def submitted(settings) -> str:
    """config/fingerprint.json: what the submitter knows (no call made). The
    auth mode is the one its Ray clients use (RAY_AUTH_MODE, which the
    runbook sets for MVP_RAY_AUTH=token and KubeRay's pods for MVP_K8S_AUTH=1)."""
    image = {"compose": settings.image, "kuberay": settings.k8s_image}.get(settings.runtime)
    auth = "token" if os.environ.get("RAY_AUTH_MODE") == "token" else "off"
    return json.dumps({"runtime": settings.runtime, "cluster_name": settings.cluster_name,
                       "auth_mode": auth, "image": image}, indent=2, sort_keys=True) + "\n"


def snapshot(code_path: str, code_id: Optional[str]) -> dict:
    manifest = fsutil.read_json(Path(code_path) / "MANIFEST.json", {}) if code_path else {}
    manifest = manifest or {}
    verl = release(Path(code_path)) if code_path else ""
    return {"id": code_id, "commit": manifest.get("git_commit"),
            "files_sha256": manifest.get("content_sha256"), **({"verl": verl} if verl else {})}


def _submit_nodes(jd: JobDir) -> list:
    debug = jd.debug
    found = sorted(debug.glob("*_submit_nodes.json")) or sorted(debug.glob("*_final_nodes.json"))
    return (fsutil.read_json(found[0], []) or []) if found else []


def _nodes(jd: JobDir, head_ray: Optional[str]) -> list:
    """Every alive node of the submit-time node list, with its Ray version."""
    out = []
    for n in _submit_nodes(jd):
        if n.get("state") != "ALIVE":
            continue
        res = n.get("resources_total") or {}
        own = fsutil.read_json(jd.node_env(str(n.get("node_ip"))), {}) or {}
        head = bool(n.get("is_head_node"))
        ray, source = (head_ray, "the dashboard (the head's Ray)") if head else (own.get("ray"), "the node's log keeper")
        out.append({"ip": n.get("node_ip"), "head": head, "cpus": res.get("CPU", 0), "gpus": res.get("GPU", 0),
                    "ray": ray, "ray_from": source if ray else "not recorded", "gpu_driver": own.get("gpu_driver")})
    return sorted(out, key=lambda n: (not n["head"], str(n["ip"])))


def assemble(jd: JobDir, head_ray: Optional[str]) -> dict:
    resolved = jd.resolved()
    host = fsutil.read_json(jd.fingerprint_submitted, {}) or {}
    driver = fsutil.read_json(jd.env_driver, {}) or {}
    nodes = _nodes(jd, head_ray)
    workers = [n for n in nodes if not n["head"]]
    return {
        "snapshot": snapshot(resolved.get("code_path", ""), resolved.get("code_id")),
        "driver": {k: driver.get(k) for k in ("python", "ray", "torch", "cuda", "nccl", "gpu_driver")},
        "driver_recorded": bool(driver),
        "packages": driver.get("packages") or {"count": None, "sha256": None, "list": []},
        "cluster": {"runtime": host.get("runtime"), "cluster_name": host.get("cluster_name"),
                    "auth_mode": host.get("auth_mode"), "image": host.get("image"), "nodes": len(nodes),
                    "workers": len(workers), "worker_cpus": [w["cpus"] for w in workers],
                    "worker_gpus": [w["gpus"] for w in workers]},
        "nodes": nodes,
    }


def head_ray_version(dash) -> Optional[str]:
    try:
        return (dash.get("/api/version") or {}).get("ray_version") if dash is not None else None
    except MvpError:
        return None


def write_job(jd: JobDir, dash) -> None:
    """<job dir>/fingerprint.json, when the job is archived; never fails the archiving."""
    try:
        fsutil.write_json(jd.fingerprint, assemble(jd, head_ray_version(dash)))
    except OSError:
        pass


def _same_or_each(values: dict) -> Optional[str]:
    """One value when every node has it, else 'ip value' per node."""
    seen = set(values.values())
    if len(seen) <= 1:
        return next(iter(seen), None)
    return ", ".join(f"{ip} {v}" for ip, v in sorted(values.items()))


def flatten(fp: dict) -> dict:
    """{key: value (a string or None)} of a job's fingerprint, for diff().
    What the job did not record (no driver record, a node without a keeper)
    has no key: not recording is no change."""
    snap, driver, cluster = fp.get("snapshot") or {}, fp.get("driver") or {}, fp.get("cluster") or {}
    flat = {f"snapshot.{k}": snap.get(k) for k in ("id", "commit", "files_sha256")}
    flat.update({"snapshot.verl": snap["verl"]} if snap.get("verl") else {})
    recorded = fp.get("driver_recorded", True)
    if recorded:
        flat.update({k: driver.get(k) for k in ("python", "torch", "cuda", "nccl", "gpu_driver")})
    rays = {n["ip"]: n["ray"] for n in fp.get("nodes") or [] if n.get("ray")}
    ray = _same_or_each(rays) if rays else driver.get("ray")
    if ray:
        flat["ray"] = ray
    flat.update({k: cluster.get(k) for k in ("runtime", "auth_mode", "image")})
    flat.update({f"cluster.{k}": _text(cluster.get(k)) for k in ("nodes", "workers", "worker_cpus", "worker_gpus")})
    if recorded:
        flat.update(_packages(fp.get("packages") or {}))
    return flat


def _packages(packages: dict) -> dict:
    flat = {"packages.sha256": packages.get("sha256")}
    for line in packages.get("list") or []:
        name, _, version = line.partition("==")
        if name not in OWN_KEYS:
            flat[f"package.{name}"] = version
    return flat


def _text(value) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def diff(old: dict, new: dict) -> dict:
    """{added: {key: value}, removed: {key: value}, changed: {key: [old, new]}}
    of two flat fingerprints; every part empty when they are equal."""
    return {"added": {k: new[k] for k in sorted(new.keys() - old.keys())},
            "removed": {k: old[k] for k in sorted(old.keys() - new.keys())},
            "changed": {k: [old[k], new[k]] for k in sorted(old.keys() & new.keys()) if old[k] != new[k]}}


def _order(key: str) -> tuple:
    return (FIRST.index(key) if key in FIRST else len(FIRST), key)


def _short(value):
    """A sha256 or a git commit as its first 12 hex digits (report.json keeps them whole)."""
    return value[:12] if isinstance(value, str) and len(value) in (40, 64) and all(c in HEX for c in value) else value


def changes(d: dict) -> list:
    """Each difference as a phrase, the keys a person reads first first:
    'torch 2.13.0 -> 2.14.0', 'x added (1.0)', 'y removed (2.0)' (x, y packages)."""
    out = [(k, f"{k.removeprefix('package.')} {_short(old)} -> {_short(new)}") for k, (old, new) in d.get("changed", {}).items()]
    out += [(k, f"{k.removeprefix('package.')} added ({v})") for k, v in d.get("added", {}).items()]
    out += [(k, f"{k.removeprefix('package.')} removed ({v})") for k, v in d.get("removed", {}).items()]
    return [phrase for _, phrase in sorted(out, key=lambda kp: _order(kp[0]))]
