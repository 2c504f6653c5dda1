"""`notify --run-dir DIR`: tells people how a night went, once per night;
`notify --check`: refuses, in one line and before the night starts, nightly
settings that would only fail at its end.

Channels: mail (report.md through the local sendmail, to MVP_NIGHTLY_MAIL_TO)
and a JSON webhook (POST; "text" is what Slack and Mattermost show). The
webhook's URL usually embeds a token, so it lives in a file only its owner can
read; it never reaches argv, the environment, a log or notified.json. Each
channel is tried MVP_NIGHTLY_NOTIFY_TRIES times, MVP_NIGHTLY_NOTIFY_PAUSE_S
apart; a channel that still fails is a warning in the night's log, not a
change of the night's verdict. notified.json in the run directory records
what was sent: a second call for the same night sends nothing."""
import json
import os
import re
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from email import policy
from email.message import EmailMessage
from pathlib import Path

from ..worker import fsutil
from ..worker.errors import MvpError
from ..core.rundir import NIGHT_ID, RunDir
from .history import FIGURES, band_rule
from .judge import failed_checks

TIMEOUT_S = 10
RUN_ID = re.compile(f"^{NIGHT_ID}$")


def _history_settings(settings) -> None:
    if settings.nightly_history < 1 or not 1 <= settings.nightly_min_history <= settings.nightly_history:
        raise MvpError(f"MVP_NIGHTLY_MIN_HISTORY={settings.nightly_min_history} must be from 1 to "
                       f"MVP_NIGHTLY_HISTORY={settings.nightly_history}")
    for figure, percent in settings.nightly_tolerance.items():
        if figure not in FIGURES or not re.fullmatch(r"\d+(\.\d+)?", percent):
            raise MvpError(f"MVP_NIGHTLY_TOLERANCE: '{figure}={percent}' is not FIGURE=PERCENT with FIGURE one of "
                           f"{', '.join(FIGURES)}")
    band_rule(settings)
    since = settings.nightly_history_since
    if since and not RUN_ID.match(since):
        raise MvpError(f"MVP_NIGHTLY_HISTORY_SINCE='{since}' is not a nightly run id (nightly-YYYYmmddTHHMMSSZ)")


def webhook_url(path: str) -> str:
    """The URL in the file `path`, which must be its owner's alone."""
    try:
        st = os.stat(path)
        url = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise MvpError(f"MVP_NIGHTLY_WEBHOOK_URL_FILE={path}: cannot read it ({exc.strerror}); "
                       "write the webhook's URL into it, chmod 600") from None
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise MvpError(f"MVP_NIGHTLY_WEBHOOK_URL_FILE={path} may be read by others (mode "
                       f"{stat.S_IMODE(st.st_mode):o}); the URL is a secret: chmod 600 {path}")
    if not re.fullmatch(r"https?://\S+", url):
        raise MvpError(f"MVP_NIGHTLY_WEBHOOK_URL_FILE={path} does not hold one http(s):// URL")
    return url


def check_settings(settings) -> None:
    """What the settings' contract types cannot say (MVP_NIGHTLY_NOTIFY_ON's
    one-of and MVP_NIGHTLY_NOTIFY_TRIES' int 1.. are checked by config.sh)."""
    _history_settings(settings)
    sendmail = settings.nightly_sendmail
    if settings.nightly_mail_to and not (os.path.isfile(sendmail) and os.access(sendmail, os.X_OK)):
        raise MvpError(f"MVP_NIGHTLY_MAIL_TO is set but MVP_NIGHTLY_SENDMAIL={sendmail} is not an executable; "
                       "install a mail transfer agent (e.g. apt-get install msmtp-mta) or set the path")
    if settings.nightly_webhook_url_file:
        webhook_url(settings.nightly_webhook_url_file)
    from .bisection import is_checkout
    if settings.nightly_bisect_repo and not is_checkout(settings.nightly_bisect_repo):
        raise MvpError(f"MVP_NIGHTLY_BISECT_REPO={settings.nightly_bisect_repo} is not a git checkout; point it at a "
                       "git clone of verl (your fork) on this host, or leave it empty (no bisection)")


def _failed(report: dict) -> list:
    return [{"job": j["name"], "checks": [c["name"] for c in failed_checks(j)]}
            for j in report["jobs"] if failed_checks(j)]


def bisection_line(run_dir: Path) -> str:
    """What the night's bisection found (bisection.json, 60 with
    MVP_NIGHTLY_BISECT_REPO), as one line; "" when none ran."""
    found = fsutil.read_json(RunDir(run_dir).bisection)
    return f"Bisection: {found['line']} ({found['report']})" if found else ""


def send_mail(settings, report: dict, run_dir: Path) -> None:
    msg = EmailMessage()
    msg["To"] = ", ".join(settings.nightly_mail_to)
    msg["Subject"] = report["summary"]
    bisected, run_dir = bisection_line(run_dir), RunDir(run_dir)
    msg.set_content((f"{bisected}\n\n" if bisected else "") + run_dir.report_md.read_text(encoding="utf-8")
                    + f"\nReport: {run_dir.report_html}\n")
    # One header line for the verdict (folding it would split it for a grep or a filter rule).
    text = msg.as_bytes(policy=policy.default.clone(max_line_length=998))
    done = subprocess.run([settings.nightly_sendmail, "-t", "-oi"], input=text, capture_output=True,
                          timeout=60, check=False)
    if done.returncode:
        raise OSError(f"sendmail exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[:200]}")


def trust_lines(report: dict) -> list:
    """Beside a failed check that says how far to trust it (the regression
    check's measured error rates): "JOB: LINE"."""
    return [f"{j['name']} {c['name']}: {c['trust']}" for j in report["jobs"] for c in failed_checks(j)
            if c.get("trust")]


def post_webhook(url: str, report: dict, run_dir: Path) -> None:
    bisected, page = bisection_line(run_dir), str(RunDir(run_dir).report_html)
    text = "\n".join(line for line in (report["summary"], *trust_lines(report), bisected, page) if line)
    payload = {"text": text, "run_id": report["run_id"], "bisection": bisected or None,
               "passed": report["passed"], "summary": report["summary"], "failed": _failed(report),
               "report": page}
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise OSError(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, ValueError, OSError) as exc:
        # Whatever urllib says must not carry the secret URL into the log.
        raise OSError(str(getattr(exc, "reason", exc)).replace(url, "<the webhook URL>")) from None


def _try(send, tries: int, pause_s: float) -> dict:
    error = ""
    for attempt in range(1, tries + 1):
        try:
            send()
            return {"ok": True, "tries": attempt}
        except (OSError, subprocess.SubprocessError) as exc:
            error = str(exc)
            if attempt < tries:
                time.sleep(pause_s)
    return {"ok": False, "tries": tries, "error": error}


def notify(run_dir: Path, settings) -> dict:
    report = RunDir(run_dir).read_report()
    if report is None:
        raise MvpError(f"{RunDir(run_dir).report} does not exist: the night was not judged, so there is nothing to tell")
    channels = {}
    if settings.nightly_mail_to:
        channels["mail"] = lambda: send_mail(settings, report, run_dir)
    if settings.nightly_webhook_url_file:
        url = webhook_url(settings.nightly_webhook_url_file)
        channels["webhook"] = lambda: post_webhook(url, report, run_dir)
    if report["passed"] and settings.nightly_notify_on == "failure":
        return {"sent": {}, "why": "the night passed and MVP_NIGHTLY_NOTIFY_ON=failure"}
    return {"sent": {name: _try(send, settings.nightly_notify_tries, settings.nightly_notify_pause_s)
                     for name, send in channels.items()},
            "why": "" if channels else "no channel set (MVP_NIGHTLY_MAIL_TO, MVP_NIGHTLY_WEBHOOK_URL_FILE)"}


def _tries(result: dict) -> str:
    return f"{result['tries']} {'try' if result['tries'] == 1 else 'tries'}"


def main(args, settings) -> int:
    if args.check:
        check_settings(settings)
        return 0
    run_dir = settings.layout.named(args.run_dir)
    record = RunDir(run_dir).notified
    if record.exists():
        print(f"SKIP: this night was told already ({record})", file=sys.stderr)
        return 0
    outcome = notify(run_dir, settings)
    fsutil.write_json(record, outcome)
    for name, result in outcome["sent"].items():
        if result["ok"]:
            print(f"notified by {name} ({_tries(result)})", file=sys.stderr)
        else:
            print(f"WARNING: {name} notification failed after {_tries(result)}: {result['error']}", file=sys.stderr)
    if outcome["why"]:
        print(f"SKIP: no notification: {outcome['why']}", file=sys.stderr)
    return 0
