"""`status`: the cluster's shape, recent jobs and the shared root, as a table or JSON.
One process, plain HTTP; works with the cluster down (then from the archive only)."""
import json
import os
import sys
from datetime import datetime, timezone

from . import cluster, jobdir
from .dashboard import Dashboard
from .settings import Settings

RECENT_JOBS = 20


def _fmt_ms(ms) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def collect(settings: Settings, dash: Dashboard) -> dict:
    up = dash.alive()
    report = {"cluster": {"up": up, "dashboard": dash.url, "ok": False,
                          "problems": [] if up else ["the dashboard does not answer: the cluster is down"],
                          "head": None, "workers": []}}
    live = {}
    if up:
        nodes = dash.nodes()
        report["cluster"].update(cluster.shape(nodes, settings))
        ips = {n["node_id"]: n["node_ip"] for n in nodes}
        head_ids = {n["node_id"] for n in nodes if n.get("is_head_node")}
        for job in dash.jobs():
            sid = job.get("submission_id")
            if sid:
                live[sid] = jobdir.summary_from_ray(job, ips, head_ids)
                jobdir.finalize_if_ended(settings.jobs_dir / sid, dash, sid, job)
    report["jobs"] = jobdir.recent_jobs(settings, live, RECENT_JOBS)
    root = settings.shared_root
    usage = {"path": str(root)}
    try:
        st = os.statvfs(root)
        usage.update(total_bytes=st.f_blocks * st.f_frsize, free_bytes=st.f_bavail * st.f_frsize,
                     used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize)
    except OSError as exc:
        usage["error"] = str(exc)
    usage["job_dirs"] = sum(1 for _ in jobdir.job_dirs(settings))
    report["shared_root"] = usage
    return report


def render(report: dict) -> str:
    c = report["cluster"]
    lines = [f"cluster  {'UP' if c['up'] else 'DOWN'}  {'shape OK' if c['ok'] else 'shape WRONG'}  dashboard {c['dashboard']}"]
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
        lines.append(f"  {j['submission_id']:<44} {j.get('status') or '-':<10} {j.get('workload') or '-':<8} "
                     f"{j.get('driver_node_ip') or '-':<15} {on_head:<7} {_fmt_ms(j.get('start_time'))}")
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


def main(args, settings: Settings, log=None) -> int:
    dash = Dashboard(settings.dashboard_url, timeout=5)
    report = collect(settings, dash)
    if args.json:
        json.dump(report, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(render(report))
    return 0 if report["cluster"]["ok"] else 1
