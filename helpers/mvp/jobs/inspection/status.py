"""`status`: the cluster's shape, recent jobs and the shared root, as a table or JSON.
One process, plain HTTP; works with the cluster down (then from the archive only)."""
import json
import os
import sys
from datetime import datetime, timezone

from pathlib import Path

from ..after_sending import archive
from . import progress
from ...cluster import ray_nodes
from ...worker import jobdir
from ..after_sending.chain import chain_of, chain_text, resumed_from
from ...core.dashboard import Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...core.settings import Settings

RECENT_JOBS = 20


def _fmt_ms(ms) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def _row_from_ray(job: dict, node_ips: dict, head_ids: set) -> dict:
    row = {"submission_id": job.get("submission_id"), "status": job.get("status"),
           "start_time": job.get("start_time"), "end_time": job.get("end_time"), "source": "ray"}
    row.update(archive.driver_location(job, node_ips, head_ids))
    return row


def recent_jobs(jobs: Path, archived: list, live: dict, limit: int) -> list:
    """The newest `limit` jobs: Ray's merged with the archive, so history
    survives a cluster restart. Only the archived jobs the listing can show
    are read (jobdir.newest), however many directories there are."""
    rows = dict(live)
    for submitted_ms, sid in archived:
        jd = JobDir.of(jobs, sid)
        resolved, result = jd.resolved(), jd.read_result()
        row = rows.setdefault(sid, {"submission_id": sid, "source": "archive"})
        row["workload"] = resolved.get("workload")
        row["cluster"] = resolved.get("cluster")
        if result:
            for key in ("status", "driver_node_ip", "driver_node_id", "driver_on_head"):
                row.setdefault(key, result.get(key))
            row.setdefault("start_time", result.get("start_time_ms"))
            if row.get("status") is None:
                row["status"] = result.get("status")
        row.setdefault("start_time", submitted_ms)
        if row.get("status") is None:
            row["last_known"] = last_known(jd)
    ordered = sorted(rows.values(), key=lambda r: r.get("start_time") or 0, reverse=True)
    return ordered[:limit]


def last_known(jd: JobDir) -> dict:
    """What the job directory says of a job without result.json that Ray
    does not list (its cluster is down, or went away): RUNNING as of the
    newest copy its nodes kept while it ran, else SUBMITTED as of its
    submission log's last line."""
    kept = [p for p in [jd.live_log] + list(jd.nodes.glob("*/worker-*")) if p.is_file()]
    if kept:
        return {"status": "RUNNING", "as_of": int(max(p.stat().st_mtime for p in kept) * 1000),
                "from": "the newest log copy its nodes kept"}
    if jd.submit_log.is_file():
        return {"status": "SUBMITTED", "as_of": int(jd.submit_log.stat().st_mtime * 1000),
                "from": "its submission log"}
    return {"status": None, "as_of": None, "from": "nothing kept"}


def fold_chains(jobs: Path, rows: list) -> list:
    """One row per retry chain, where its newest attempt stands, with that
    attempt's status (the chain's final one) and every attempt linked both
    ways: resumed_from as each retry recorded it, resumed_by from the names."""
    out, done = [], set()
    by_id = {r["submission_id"]: r for r in rows}
    for row in rows:
        sid = row["submission_id"]
        if sid in done:
            continue
        ids = chain_of(jobs, sid)
        done.update(ids)
        if len(ids) == 1:
            out.append(row)
            continue
        attempts = []
        for i, a in enumerate(ids):
            status = (by_id.get(a) or {}).get("status") or JobDir.of(jobs, a).status()
            attempts.append({"submission_id": a, "status": status, "resumed_from": resumed_from(jobs, a) or None,
                             "resumed_by": ids[i + 1] if i + 1 < len(ids) else None})
        last = by_id.get(ids[-1]) or dict(row, submission_id=ids[-1], status=attempts[-1]["status"])
        first = by_id.get(ids[0]) or {}
        out.append(dict(last, chain=attempts, start_time=first.get("start_time") or last.get("start_time")))
    return out


def _live(settings: Settings, dash: Dashboard, cluster_report: dict) -> dict:
    """Ray's jobs (submissions only: the log keepers' own Ray connections,
    DRIVER jobs without a submission id, are no one's submission), each
    archived on the way if it ended; the cluster's shape into cluster_report."""
    nodes = dash.nodes()
    cluster_report.update(ray_nodes.shape(nodes, settings))
    ips = {n["node_id"]: n["node_ip"] for n in nodes}
    head_ids = {n["node_id"] for n in nodes if n.get("is_head_node")}
    live = {}
    for job in dash.jobs():
        sid = job.get("submission_id")
        if sid:
            live[sid] = _row_from_ray(job, ips, head_ids)
            archive.finalize_if_ended(JobDir.of(settings.jobs_dir, sid), dash, sid, job, settings)
    return live


def collect(settings: Settings, dash: Dashboard) -> dict:
    down = dash.ray_unanswered()
    report = {"cluster": {"name": settings.cluster_name, "up": not down, "dashboard": dash.url, "ok": False,
                          "problems": [f"{down}: the cluster is down"] if down else [],
                          "head": None, "workers": []}}
    live = {}
    if not down:
        try:
            live = _live(settings, dash, report["cluster"])
        except MvpError as exc:
            # Ray stopped answering half-way: the shared root still answers.
            report["cluster"].update(up=False, ok=False, problems=[f"{exc}: the cluster is down"])
    job_dirs, archived = jobdir.newest(settings.jobs_dir, RECENT_JOBS)
    report["jobs"] = fold_chains(settings.jobs_dir, recent_jobs(settings.jobs_dir, archived, live, RECENT_JOBS))
    for j in report["jobs"]:
        if (j.get("status") or (j.get("last_known") or {}).get("status")) == "RUNNING":
            # From the log its node keeps in the job directory: no Ray call.
            j["progress"] = progress.of_job(JobDir.of(settings.jobs_dir, j["submission_id"]))
    root = settings.shared_root
    usage = {"path": str(root)}
    try:
        st = os.statvfs(root)
        usage.update(total_bytes=st.f_blocks * st.f_frsize, free_bytes=st.f_bavail * st.f_frsize,
                     used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize)
    except OSError as exc:
        usage["error"] = str(exc)
    usage["job_dirs"] = job_dirs
    report["shared_root"] = usage
    return report


def render(report: dict) -> str:
    c = report["cluster"]
    lines = [f"cluster  {'UP' if c['up'] else 'DOWN'}  {'shape OK' if c['ok'] else 'shape WRONG'}  "
             f"dashboard {c['dashboard']}  name {c['name']}"]
    lines.append(f"  {'role':<8} {'ip':<15} {'CPU':>4} {'GPU':>4} {'worker_node':>11}  node id")
    rows = ([("head", c["head"])] if c.get("head") else []) + [("worker", w) for w in c.get("workers", [])]
    for role, n in rows:
        lines.append(f"  {role:<8} {n['ip']:<15} {n['cpu']:>4g} {n['gpu']:>4g} {n['worker_node']:>11g}  {n['node_id'][:12]}")
    for p in c["problems"]:
        lines.append(f"  ! {p}")
    lines.append("")
    lines.append(f"jobs (newest {RECENT_JOBS})")
    lines.append(f"  {'submission id':<44} {'status':<10} {'workload':<8} {'driver ip':<15} {'on head':<7} started")
    for j in report["jobs"]:
        on_head = "-" if j.get("driver_on_head") is None else ("YES" if j["driver_on_head"] else "no")
        # Jobs of the other clusters that share the root say whose they are.
        other = j.get("cluster") not in (None, c["name"])
        shown = chain_text([a["submission_id"] for a in j["chain"]]) if j.get("chain") else j["submission_id"]
        known = j.get("last_known") or {}
        state = j.get("status") or (f"{known['status']}?" if known.get("status") else "-")
        lines.append(f"  {shown:<44} {state:<10} {j.get('workload') or '-':<8} "
                     f"{j.get('driver_node_ip') or '-':<15} {on_head:<7} {_fmt_ms(j.get('start_time'))}"
                     + (f"  (cluster {j['cluster']})" if other else "")
                     + (f"  [{progress.text(j['progress'])}]" if j.get("progress") else "")
                     + (f"  (last known: {known['from']}, {_fmt_ms(known['as_of'])})" if known.get("status") else "")
                     + (f"  (attempts {' -> '.join(a['status'] or '-' for a in j['chain'])})" if j.get("chain") else ""))
    if not report["jobs"]:
        lines.append("  (none)")
    u = report["shared_root"]
    lines.append("")
    if "total_bytes" in u:
        gib = 1 << 30
        lines.append(f"shared root {u['path']}: {u['used_bytes'] / gib:.1f} GiB used, "
                     f"{u['free_bytes'] / gib:.1f} GiB free, {u['job_dirs']} job directories")
    else:
        lines.append(f"shared root {u['path']}: {u.get('error')}")
    return "\n".join(lines)


def main(args, settings: Settings) -> int:
    dash = Dashboard(settings.dashboard_url, timeout=5)
    report = collect(settings, dash)
    if args.json:
        json.dump(report, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(render(report))
    return 0 if report["cluster"]["ok"] else 1
