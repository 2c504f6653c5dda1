"""regressions/index.html: one row per night (each job's status and the checks
it failed) and, per job, trend charts of its figures across nights, drawn as
inline SVG (no server, no assets): the band each night was judged against
(median of the job's past good nights +- the tolerance), the night's value,
regressed nights in red, the nights' dates on the x axis.
The nights come from regressions/history.json, which retention never prunes."""
from html import escape
from pathlib import Path

from ..worker import fsutil
from ..core.rundir import NIGHT, Regressions, file_name
from . import night_fingerprint
from .judge import failed_checks
from .history import FIGURES, REPLACED, figures, is_good
from .report import attempt_links, page, verdict

W, H, PAD, BOTTOM = 420, 200, 44, 36
CHARTED = ("step_s", "throughput", "final_score", "final_loss", "peak_memory_gb", "duration_s")
LABELS = {"duration_s": "job duration s", **{k: label for k, (_, label) in FIGURES.items()}}


def _entry(job: dict) -> dict:
    regression = next((c for c in job["checks"] if c["name"] == "regression"), {})
    singles = {v["figure"]: {k: v[k] for k in ("median", "low", "high", "regressed") if k in v}
               for v in regression.get("figures", []) if v.get("regressed") is not None}
    return {"status": job["status"], "duration_s": job["duration_s"], "throughput": job["metrics"]["mean_throughput"],
            "failed_checks": [c["name"] for c in failed_checks(job)],
            "submission_id": job.get("submission_id"), "attempts": job.get("attempts") or [],
            "figures": {**figures(job), "duration_s": job["duration_s"]},
            "judged": {**_banded(regression), **singles},
            "curves": job.get("curves") or {}}


def _banded(regression: dict) -> dict:
    """The single figures a band judged instead: their verdict, no band of theirs to draw."""
    return {single: {"regressed": b["regressed"]} for b in regression.get("bands") or []
            if b.get("regressed") is not None for single in REPLACED.get(b["figure"], ())}


def record(history_path: Path, report: dict, keep_curves: int = 0) -> list:
    """Adds (or replaces) this night's compact entry and returns the history;
    keep_curves > 0: only each job's newest that many good nights (and any
    night after them) keep their per-step curves, so the file stays small."""
    history = [n for n in (fsutil.read_json(history_path, []) or []) if n["run_id"] != report["run_id"]]
    history.append({"run_id": report["run_id"], "passed": report["passed"], "started_at": report["started_at"],
                    "jobs": {j["name"]: _entry(j) for j in report["jobs"]}})
    history.sort(key=lambda n: n["run_id"])
    if keep_curves > 0:
        _drop_old_curves(history, keep_curves)
    fsutil.write_json(history_path, history)
    return history


def _drop_old_curves(history: list, keep: int) -> None:
    """The bands need the curves of a job's last `keep` good nights only."""
    good: dict = {}
    for night in reversed(history):
        for name, entry in night["jobs"].items():
            if good.get(name, 0) >= keep:
                entry.pop("curves", None)
            elif is_good(entry) and entry.get("curves"):
                good[name] = good.get(name, 0) + 1


def _date(night: dict) -> str:
    return (night.get("started_at") or night["run_id"].removeprefix(NIGHT))[:10]


def chart(history: list, job: str, key: str) -> str:
    """One figure of one job across the nights; empty when it has no value."""
    nights = [(x, n["jobs"][job]) for x, n in enumerate(history) if job in n["jobs"]]
    values = [(x, e.get("figures", {}).get(key, e.get(key))) for x, e in nights]
    values = [(x, v) for x, v in values if v is not None]
    if not values:
        return ""
    judged = {x: e["judged"][key] for x, e in nights if key in e.get("judged", {})}
    bands = [(x, b) for x, b in judged.items() if "high" in b]  # a band judged by its curve has no single band
    top = max([v for _, v in values] + [b["high"] for _, b in bands]) * 1.1 or 1.0
    step = (W - 2 * PAD) / max(len(history) - 1, 1)

    def xy(x, v):
        return PAD + x * step, H - BOTTOM - (H - BOTTOM - PAD) * max(v, 0) / top

    parts = _frame(job, key, top) + _band(bands, xy) + _points(history, job, values, judged, xy)
    return "".join(parts + _dates(history, step) + ["</svg>"])


def _frame(job: str, key: str, top: float) -> list:
    """The SVG's opening, its title and its two axes with the scale's ends."""
    title = f"{job}: {LABELS[key]}"
    return [f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" role=\"img\" "
            f"aria-label=\"{escape(title)}\" data-job=\"{escape(job)}\" data-metric=\"{key}\">",
            f"<text x=\"{PAD}\" y=\"16\" font-size=\"13\">{escape(title)}</text>",
            f"<line x1=\"{PAD}\" y1=\"{H - BOTTOM}\" x2=\"{W - PAD}\" y2=\"{H - BOTTOM}\" stroke=\"#888\"/>",
            f"<line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{H - BOTTOM}\" stroke=\"#888\"/>",
            f"<text x=\"2\" y=\"{PAD + 4}\" font-size=\"10\">{top:.3g}</text>",
            f"<text x=\"2\" y=\"{H - BOTTOM}\" font-size=\"10\">0</text>"]


def _band(bands: list, xy) -> list:
    """The band each judged night was held to, as one shaded polygon."""
    if not bands:
        return []
    upper = [xy(x, b["high"]) for x, b in bands]
    lower = [xy(x, b["low"]) for x, b in reversed(bands)]
    if len(bands) == 1:  # one judged night: a short bar of its band
        (x0, y0), (_, y1) = upper[0], lower[0]
        upper, lower = [(x0 - 4, y0), (x0 + 4, y0)], [(x0 + 4, y1), (x0 - 4, y1)]
    return ["<polygon class=\"band\" fill=\"#1f77b4\" fill-opacity=\"0.15\" stroke=\"none\" points=\""
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in upper + lower) + "\"/>"]


def _points(history: list, job: str, values: list, judged: dict, xy) -> list:
    """The line through the nights' values and a point per night, red where
    the night regressed."""
    parts = []
    if len(values) > 1:
        parts.append("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\""
                     + " ".join("{:.1f},{:.1f}".format(*xy(x, v)) for x, v in values) + "\"/>")
    for x, v in values:
        cx, cy = xy(x, v)
        regressed = judged.get(x, {}).get("regressed")
        css, fill, r = ("pt regressed", "#d62728", 5) if regressed else ("pt", "#1f77b4", 3)
        parts.append(f"<circle class=\"{css}\" data-job=\"{escape(job)}\" cx=\"{cx:.1f}\" cy=\"{cy:.1f}\" r=\"{r}\" "
                     f"fill=\"{fill}\"><title>{escape(history[x]['run_id'])}: {v:.4g}"
                     f"{' REGRESSED' if regressed else ''}</title></circle>")
    return parts


def _dates(history: list, step: float) -> list:
    """The nights' dates under the x axis, at most about 6 of them."""
    every = max(1, -(-len(history) // 6))
    return [f"<text class=\"date\" x=\"{PAD + x * step:.1f}\" y=\"{H - BOTTOM + 14}\" font-size=\"10\" "
            f"text-anchor=\"middle\">{escape(_date(night))}</text>"
            for x, night in enumerate(history) if x % every == 0 or x == len(history) - 1]


def _cell(entry) -> str:
    if not entry:
        return "<td>-</td>"
    duration = "" if entry["duration_s"] is None else f" {entry['duration_s']:.1f}s"
    failed = entry.get("failed_checks") or []
    checks = f" <span class=\"fail\">{escape(', '.join(failed))}</span>" if failed else ""
    # A retried job: its chain, each attempt linked to its job directory.
    chain = f"<br>{attempt_links(entry, '../jobs')}" if entry.get("attempts") else ""
    return f"<td>{escape(str(entry['status']))}{duration}{checks}{chain}</td>"


def render(history: list, regressions: Path) -> str:
    names = sorted({name for n in history for name in n["jobs"]})
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows, regs = [], Regressions(regressions)
    for night in reversed(history):
        cells = "".join(_cell(night["jobs"].get(name)) for name in names)
        link = (f"<a href=\"{escape(night['run_id'])}/{file_name('report_html')}\">{escape(night['run_id'])}</a>"
                if regs.run(night["run_id"]).report_html.is_file()
                else escape(night["run_id"]) + " (pruned)")
        rows.append(f"<tr class=\"night\"><td>{link}</td><td>{verdict(night['passed'])}</td>{cells}</tr>")
    trends = "".join(f"<h3>{escape(name)}</h3><div>{''.join(chart(history, name, key) for key in CHARTED)}</div>"
                     for name in names)
    body = (f"<h1>Nightly regressions</h1><p>{len(history)} nights, newest first; a job's cell names the checks it "
            f"failed.</p><table><tr><th>night</th><th>result</th>{head}</tr>{''.join(rows)}</table>"
            f"<h2>Trends</h2><p>Shaded: the band each night's figure was judged against (the median of the job's past good "
            f"nights, plus or minus the tolerance); red: a regressed night.</p>{trends}"
            f"{night_fingerprint.index_section(regressions)}")
    return page("Nightly regressions", body)


def write(regressions: Path, report: dict, keep_curves: int = 0) -> Path:
    regs = Regressions(regressions)
    history = record(regs.history, report, keep_curves)
    out = regs.index
    fsutil.write_text(out, render(history, regressions))
    return out
