"""regressions/index.html: one row per night and trend charts of job duration
and throughput across nights, drawn as inline SVG (no server, no assets).
The nights come from regressions/history.json, which retention never prunes."""
from html import escape
from pathlib import Path

from .. import fsutil
from .report import page, verdict

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
W, H, PAD = 560, 240, 40


def record(history_path: Path, report: dict) -> list:
    """Adds (or replaces) this night's compact entry and returns the history."""
    history = [n for n in (fsutil.read_json(history_path, []) or []) if n["run_id"] != report["run_id"]]
    history.append({
        "run_id": report["run_id"], "passed": report["passed"], "started_at": report["started_at"],
        "jobs": {j["name"]: {"status": j["status"], "duration_s": j["duration_s"],
                             "throughput": j["metrics"]["mean_throughput"]} for j in report["jobs"]},
    })
    history.sort(key=lambda n: n["run_id"])
    fsutil.write_json(history_path, history)
    return history


def chart(history: list, key: str, title: str, unit: str) -> str:
    names = sorted({name for n in history for name in n["jobs"]})
    values = [n["jobs"][name][key] for n in history for name in n["jobs"] if n["jobs"][name].get(key) is not None]
    top = max(values, default=1.0) * 1.1 or 1.0
    step = (W - 2 * PAD) / max(len(history) - 1, 1)
    parts = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" role=\"img\" "
             f"aria-label=\"{escape(title)}\" data-metric=\"{key}\">",
             f"<text x=\"{PAD}\" y=\"18\" font-size=\"14\">{escape(title)} ({escape(unit)})</text>",
             f"<line x1=\"{PAD}\" y1=\"{H - PAD}\" x2=\"{W - PAD}\" y2=\"{H - PAD}\" stroke=\"#888\"/>",
             f"<line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{H - PAD}\" stroke=\"#888\"/>",
             f"<text x=\"4\" y=\"{PAD + 4}\" font-size=\"10\">{top:.3g}</text>",
             f"<text x=\"4\" y=\"{H - PAD}\" font-size=\"10\">0</text>"]
    for i, name in enumerate(names):
        color = COLORS[i % len(COLORS)]
        points = []
        for x, night in enumerate(history):
            v = night["jobs"].get(name, {}).get(key)
            if v is not None:
                points.append((PAD + x * step, H - PAD - (H - 2 * PAD) * v / top, v, night["run_id"]))
        if len(points) > 1:
            parts.append(f"<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\""
                         + " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points) + "\"/>")
        for x, y, v, run in points:
            parts.append(f"<circle class=\"pt\" data-job=\"{escape(name)}\" cx=\"{x:.1f}\" cy=\"{y:.1f}\" r=\"3\" "
                         f"fill=\"{color}\"><title>{escape(name)} {escape(run)}: {v:.4g}</title></circle>")
        parts.append(f"<text x=\"{W - PAD - 60}\" y=\"{PAD + 14 * i}\" font-size=\"11\" fill=\"{color}\">{escape(name)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def render(history: list, regressions: Path) -> str:
    names = sorted({name for n in history for name in n["jobs"]})
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = []
    for night in reversed(history):
        cells = []
        for name in names:
            j = night["jobs"].get(name)
            duration = "" if not j or j["duration_s"] is None else f"{j['duration_s']:.1f}s"
            cells.append(f"<td>{escape(str(j['status']))} {duration}</td>" if j else "<td>-</td>")
        link = (f"<a href=\"{escape(night['run_id'])}/report.html\">{escape(night['run_id'])}</a>"
                if (regressions / night["run_id"] / "report.html").is_file() else escape(night["run_id"]) + " (pruned)")
        rows.append(f"<tr class=\"night\"><td>{link}</td><td>{verdict(night['passed'])}</td>{''.join(cells)}</tr>")
    body = (f"<h1>Nightly regressions</h1><p>{len(history)} nights, newest first.</p>"
            f"<table><tr><th>night</th><th>result</th>{head}</tr>{''.join(rows)}</table>"
            f"<h2>Trends</h2>{chart(history, 'duration_s', 'Job duration', 's')}"
            f"{chart(history, 'throughput', 'Mean throughput', 'perf/throughput')}")
    return page("Nightly regressions", body)


def write(regressions: Path, report: dict) -> Path:
    history = record(regressions / "history.json", report)
    out = regressions / "index.html"
    fsutil.write_text(out, render(history, regressions))
    return out
