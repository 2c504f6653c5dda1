"""Each band of a night's `regression` check (bands.py) drawn with the night's
curve: as inline SVG for report.html (no server, no assets) and as a line of
marks per figure for report.md (a mail shows no pictures)."""
from html import escape

from .bands import BAD

W, H, PAD = 380, 190, 40
MARK = {"": ".", "above": "^", "below": "v", "nan": "!"}
MAX_MARKS = 80


def _drawn(job: dict) -> list:
    """The band verdicts of a job's regression check that have a band."""
    check = next((c for c in job.get("checks", []) if c["name"] == "regression"), {})
    return [b for b in check.get("bands") or [] if b.get("steps")]


def strip(fig: dict) -> str:
    """One mark per judged step (per few steps, when there are many: the
    first mark that is not `.`): . inside, ^ above, v below, ! not a number."""
    marks = [MARK[s] for s in fig["sides"]]
    every = -(-len(marks) // MAX_MARKS)
    return "".join(next((m for m in marks[i:i + every] if m != "."), ".") for i in range(0, len(marks), every))


def markdown(job: dict) -> list:
    """report.md's lines for a job's bands (none when no figure had one)."""
    figs = _drawn(job)
    if not figs:
        return []
    lines = ["", "Bands, step by step from the first judged step (`.` inside, `^` above, `v` below, `!` not a number):"]
    for fig in figs:
        verdict = (f"REGRESSED at steps {', '.join(f'{a}-{b}' for a, b in fig['stretches'])}" if fig["regressed"]
                   else "within (its worse side: " + {"lower": "below", "higher": "above", "both": "either"}[fig["worse"]] + ")")
        lines.append(f"- {fig['figure']} (`{fig['key']}`), steps {fig['steps'][0]}-{fig['steps'][-1]}: "
                     f"`{strip(fig)}` {verdict}")
    return lines


def _scale(fig: dict):
    """The chart's x(step) and y(value) for one figure's band and curve."""
    values = [v for v in fig["values"] if v is not None]
    lo, hi = min(fig["low"] + values), max(fig["high"] + values)
    hi, (first, last) = (hi if hi > lo else lo + 1.0), (fig["steps"][0], fig["steps"][-1])

    def x(step):
        return PAD + (step - first) / max(last - first, 1) * (W - 2 * PAD)

    def y(value):
        return H - PAD - (value - lo) / (hi - lo) * (H - 2 * PAD)
    return x, y, lo, hi


def _points(pairs) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in pairs)


def chart(job_name: str, fig: dict) -> str:
    """One figure: the band (shaded), its median (dashed), tonight's curve,
    the steps outside on the worse side (red points) and each regressed
    stretch (a red bar along the x axis)."""
    x, y, lo, hi = _scale(fig)
    steps = fig["steps"]
    title = f"{job_name}: {fig['figure']} ({fig['key']})" + (" REGRESSED" if fig["regressed"] else "")
    parts = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bandchart\" width=\"{W}\" height=\"{H}\" role=\"img\" "
             f"aria-label=\"{escape(title)}\" data-job=\"{escape(job_name)}\" data-figure=\"{fig['figure']}\">",
             f"<text x=\"{PAD}\" y=\"16\" font-size=\"12\">{escape(title)}</text>",
             "<polygon class=\"band\" fill=\"#1f77b4\" fill-opacity=\"0.18\" stroke=\"none\" points=\""
             + _points([(x(s), y(v)) for s, v in zip(steps, fig["high"])]
                       + [(x(s), y(v)) for s, v in reversed(list(zip(steps, fig["low"])))]) + "\"/>",
             "<polyline class=\"median\" fill=\"none\" stroke=\"#1f77b4\" stroke-dasharray=\"4 3\" points=\""
             + _points((x(s), y(v)) for s, v in zip(steps, fig["mid"])) + "\"/>"]
    parts += [f"<rect class=\"stretch\" x=\"{x(a) - 3:.1f}\" y=\"{H - PAD + 2}\" width=\"{x(b) - x(a) + 6:.1f}\" "
              f"height=\"5\" fill=\"#d62728\"><title>steps {a}-{b} outside</title></rect>" for a, b in fig["stretches"]]
    parts.append("<polyline class=\"tonight\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\" points=\""
                 + _points((x(s), y(v)) for s, v in zip(steps, fig["values"]) if v is not None) + "\"/>")
    parts += [f"<circle class=\"out\" cx=\"{x(s):.1f}\" cy=\"{y(hi if v is None else v):.1f}\" r=\"3\" fill=\"#d62728\">"
              f"<title>step {s}: {'nan' if v is None else f'{v:.4g}'} ({side})</title></circle>"
              for s, v, side in zip(steps, fig["values"], fig["sides"]) if side in BAD[fig["worse"]]]
    parts += [f"<text x=\"2\" y=\"{PAD + 4}\" font-size=\"10\">{hi:.3g}</text>",
              f"<text x=\"2\" y=\"{H - PAD}\" font-size=\"10\">{lo:.3g}</text>",
              f"<text x=\"{PAD}\" y=\"{H - 12}\" font-size=\"10\">step {steps[0]}</text>",
              f"<text x=\"{W - PAD}\" y=\"{H - 12}\" font-size=\"10\" text-anchor=\"end\">step {steps[-1]}</text>", "</svg>"]
    return "".join(parts)


def html(job: dict) -> str:
    """report.html's band charts of one job (empty when it has none)."""
    figs = _drawn(job)
    if not figs:
        return ""
    return ("<p>Bands from the good nights (shaded: median &plusmn; k MAD, dashed: the median), tonight's curve in "
            "black, red: outside on the worse side.</p><div class=\"bands\">"
            + "".join(chart(job["name"], fig) for fig in figs) + "</div>")
