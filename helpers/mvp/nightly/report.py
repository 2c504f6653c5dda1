"""report.md (for a terminal or a mail) and report.html (one static page)."""
from html import escape

from ..core.rundir import file_name
from . import bandview, night_fingerprint
from .judge import failed_checks


def _fmt(value, digits=2) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _failed(job: dict) -> list:
    return [c["name"] for c in failed_checks(job)]


def shown_id(job: dict) -> str:
    """The submission id, or a retried job's chain: `<first> -> -r1 -> -r2`."""
    ids = [a["submission_id"] for a in job.get("attempts") or []]
    if not ids:
        return job["submission_id"] or "-"
    return " -> ".join([ids[0], *(i[len(ids[0]):] for i in ids[1:])])


def attempt_links(job: dict, to_jobs: str) -> str:
    """HTML: the submission id, or each attempt of a chain linked to its job
    directory (to_jobs: the jobs directory relative to the page)."""
    chain = job.get("attempts") or []
    if not chain:
        return f"<code>{escape(job['submission_id'] or '-')}</code>"
    first = chain[0]["submission_id"]
    return " &rarr; ".join(
        f"<a href=\"{escape(to_jobs)}/{escape(a['submission_id'])}/\" title=\"{escape(str(a['status']))}"
        f"{escape(', resumed from ' + a['resumed_from'] if a.get('resumed_from') else '')}\">"
        f"<code>{escape(a['submission_id'] if i == 0 else a['submission_id'][len(first):])}</code></a>"
        f" {escape(str(a['status']))}" for i, a in enumerate(chain))


def fingerprint_beside(job: dict) -> list:
    """The judge's line on a changed fingerprint, once per job with a failed
    check (judge.name_changed_fingerprint put it beside each)."""
    return sorted({c["fingerprint_changed"] for c in job["checks"] if c.get("fingerprint_changed")})


def word(passed) -> str:
    """A check's verdict: passed is True, False, or None (not judged yet)."""
    return "NOT JUDGED" if passed is None else "PASS" if passed else "FAIL"


def control_rows(report: dict) -> list:
    """The same-night control's pair (report.json `control`), one row per probe:
    role, snapshot, job, status, s/step, final score."""
    pair = report.get("control") or {}
    return [(role, str(p["code_id"] or "-"), str(p["submission_id"] or "-"), str(p["status"]),
             _fmt(p["figures"].get("step_s"), 3), _fmt(p["figures"].get("final_score"), 3))
            for role, p in ((r, pair[r]) for r in ("control", "candidate") if r in pair)]


def title(pair: dict) -> str:
    return f" ({pair['job']}, {pair['steps']} steps; control: the last good night {pair['run_id']})" if pair["run_id"] else ""


CONTROL_HEAD = ("probe", "snapshot", "job", "status", "step s", "final score")


def control_markdown(report: dict) -> list:
    pair = report.get("control")
    if not pair:
        return []
    rows = control_rows(report)
    table = ["| " + " | ".join(CONTROL_HEAD) + " |", "|" + "---|" * len(CONTROL_HEAD)] if rows else []
    return [f"## Control{title(pair)}", "", f"**{pair['verdict']}**: {pair['line']}", "", *table,
            *("| " + " | ".join(row) + " |" for row in rows), ""]


def control_html(report: dict) -> str:
    pair = report.get("control")
    if not pair:
        return ""
    rows = "".join(f"<tr>{''.join(f'<td>{escape(c)}</td>' for c in row)}</tr>" for row in control_rows(report))
    table = f"<table><tr>{''.join(f'<th>{h}</th>' for h in CONTROL_HEAD)}</tr>{rows}</table>" if rows else ""
    return (f"<h2 class=\"control\">Control{escape(title(pair))}</h2><p><b>{escape(pair['verdict'])}</b>: "
            f"{escape(pair['line'])}</p>{table}")


def markdown(report: dict) -> str:
    lines = [f"# Nightly regression {report['run_id']}: {'PASS' if report['passed'] else 'FAIL'}", "",
             f"- started {report['started_at']}, finished {report['finished_at']}",
             f"- code snapshot: {report.get('code_id') or '-'}; log: {report['log']}", ""]
    if report.get("failed_step"):
        lines += [f"**Step {report['failed_step']} failed; no job was judged.**", ""]
    lines += night_fingerprint.markdown(report)
    lines += control_markdown(report)
    lines += ["| job | submission id | status | duration s | steps | step s | throughput | SPS | failed checks |",
              "|---|---|---|---|---|---|---|---|---|"]
    for j in report["jobs"]:
        m = j["metrics"]
        lines.append(f"| {j['name']} | {shown_id(j)} | {j['status']} | {_fmt(j['duration_s'], 1)} | "
                     f"{m['steps']} | {_fmt(m['mean_step_s'], 3)} | {_fmt(m['mean_throughput'], 1)} | "
                     f"{_fmt(m['sps'], 1)} | {', '.join(_failed(j)) or 'none'} |")
    for j in report["jobs"]:
        lines += ["", f"## {j['name']} ({j['submission_id'] or 'not submitted'})", ""]
        for a in j.get("attempts") or []:
            lines.append(f"- attempt {a['submission_id']}: {a['status']}"
                         + (f", resumed from {a['resumed_from']}" if a.get("resumed_from") else "")
                         + (f", resumed by {a['resumed_by']}" if a.get("resumed_by") else ""))
        for c in j["checks"]:
            lines.append(f"- {word(c['passed'])} {c['name']}: {c['evidence']}")
        lines += [f"- {line}" for line in fingerprint_beside(j)]
        lines += [f"- how far to trust {c['name']}: {c['trust']}" for c in j["checks"] if c.get("trust")]
        lines += bandview.markdown(j)
    lines += ["", report["summary"], ""]
    return "\n".join(lines)


STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
.pass{color:#17702a;font-weight:600}.unjudged{color:#777;font-weight:600}.fail{color:#b00020;font-weight:600}
code{font-size:12px}svg{border:1px solid #ddd;margin:0 1em 1em 0;background:#fff}"""


def page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def verdict(passed) -> str:
    css = "unjudged" if passed is None else "pass" if passed else "fail"
    return f"<span class=\"{css}\">{word(passed)}</span>"


def html(report: dict) -> str:
    rows = "".join(
        f"<tr><td>{escape(j['name'])}</td><td>{attempt_links(j, '../../jobs')}</td>"
        f"<td>{escape(str(j['status']))}</td><td>{_fmt(j['duration_s'], 1)}</td><td>{j['metrics']['steps']}</td>"
        f"<td>{_fmt(j['metrics']['mean_step_s'], 3)}</td><td>{_fmt(j['metrics']['mean_throughput'], 1)}</td>"
        f"<td>{_fmt(j['metrics']['sps'], 1)}</td><td>{verdict(not _failed(j))} {escape(', '.join(_failed(j)))}</td></tr>"
        for j in report["jobs"])
    details = "".join(
        f"<h2>{escape(j['name'])} <code>{escape(j['submission_id'] or '')}</code></h2><ul>"
        + "".join(f"<li>{verdict(c['passed'])} <b>{escape(c['name'])}</b>: {escape(c['evidence'])}</li>" for c in j["checks"])
        + "".join(f"<li class=\"fingerprint\">{escape(line)}</li>" for line in fingerprint_beside(j))
        + "".join(f"<li class=\"trust\">how far to trust <b>{escape(c['name'])}</b>: {escape(c['trust'])}</li>"
                  for c in j["checks"] if c.get("trust"))
        + "</ul>" + bandview.html(j) for j in report["jobs"])
    failed_step = (f"<p class=\"fail\">Step {escape(report['failed_step'])} failed; no job was judged.</p>"
                   if report.get("failed_step") else "")
    body = (f"<h1>Nightly regression {escape(report['run_id'])}: {verdict(report['passed'])}</h1>"
            f"<p>Started {escape(report['started_at'])}, finished {escape(report['finished_at'])}; "
            f"code snapshot <code>{escape(report.get('code_id') or '-')}</code>. <a href=\"../{file_name('index')}\">All nights</a></p>"
            f"{failed_step}{night_fingerprint.html(report)}{control_html(report)}<table><tr><th>job</th><th>submission id</th><th>status</th><th>duration s</th><th>steps</th>"
            f"<th>step s</th><th>throughput</th><th>SPS</th><th>checks</th></tr>{rows}</table>{details}"
            f"<p><code>{escape(report['summary'])}</code></p>")
    return page(f"Nightly {report['run_id']}", body)
