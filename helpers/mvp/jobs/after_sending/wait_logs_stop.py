"""`wait`, `logs` and `stop`: a submitted job's lifecycle after submission."""
import sys
import time
from datetime import datetime, timezone

from . import archive, poll_until_end, node_access
from ..planning import ckpt_keep
from ...cluster import cluster_registry
from ...worker import jobdir, kv
from ...core import log
from ...core.dashboard import TERMINAL, Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...worker.redact import Redactor

FOLLOW_POLL_S = 1.0
# The dashboard serves a running job's log by asking the job agent on the
# driver's node; on a loaded host that call can miss its time and answer
# HTTP 500 while the job runs on: asked again before giving up.
LOG_TRIES, LOG_PAUSE_S = 3, 2.0


def wait_main(args, settings) -> int:
    """`wait ID [--retry-point]`: answers status=STATUS (the output contract)
    and, with --retry-point, for a job that ended FAILED or LOST,
    resume_from=JOB/global_step_N where its chain goes on (retry.resume_point;
    a chain not to go on gets its one ERROR line instead): all that 40-44's
    --retry reads, one helper process an attempt after the submit's. Exit 0
    only if it SUCCEEDED in time."""
    result = wait_for(args.submission_id, args.timeout, settings)
    answer = [("status", result["status"])]
    if args.retry_point:
        from . import retry
        if result["status"] in retry.RETRIED:
            try:
                answer.append(("resume_from", retry.resume_point(settings.jobs_dir, args.submission_id)))
            except MvpError as exc:
                print(f"ERROR: {exc}", file=sys.stderr)
    kv.emit(*answer)
    return 0 if result["status"] == "SUCCEEDED" and not result["timed_out"] else 1


def wait_for(sid: str, timeout, settings) -> dict:
    """Waits for the job to end, archives it, applies the chain's checkpoint
    limit; the job's result (result.json's content)."""
    dash = Dashboard(settings.dashboard_url)
    poll_until_end.now(dash, sid)
    jd = JobDir.of(settings.jobs_dir, sid)
    result = poll_until_end.wait(jd, dash, sid, timeout or settings.job_timeout, settings.lost_after,
                          node_access.from_settings(settings))
    ckpt_keep.enforce(settings.jobs_dir, sid)
    log.step(f"job {sid} ended {result['status']}; driver on {result['driver_node_ip']} "
             f"(head: {result['driver_on_head']}); archived in {jd}")
    return result


def reconcile_main(args, settings) -> int:
    """After a new head: this cluster's jobs that were submitted to a head
    that went away before they ended (no result.json, unknown to this Ray)
    are archived as LOST. Other clusters' jobs on the shared root are theirs."""
    dash = Dashboard(settings.dashboard_url)
    cluster_registry.register(settings, dash)
    own, others = jobdir.unfinished(settings.jobs_dir, settings.cluster_name)
    lost = [sid for sid in own if dash.job(sid) is None]
    for sid in lost:
        archive.finalize_lost(JobDir.of(settings.jobs_dir, sid), sid, {}, "the cluster it ran on went away before it ended; "
                              f"the new head at {dash.url} does not know it (found by 20_start_head.sh)",
                              node_access.UNREACHABLE)
    if others:
        log.info(f"{len(others)} unfinished job(s) of other clusters on this shared root left to them: "
                 + ", ".join(f"{sid} ({name})" for sid, name in others))
    if lost:
        log.warn(f"{len(lost)} job(s) of a cluster that went away archived as LOST: {', '.join(lost)}")
    else:
        log.skip(f"reconciling jobs of cluster {settings.cluster_name} (every submitted job has ended or is known "
                 "to Ray)")
    return 0


def logs_main(args, settings) -> int:
    sid = args.submission_id
    jd = JobDir.of(settings.jobs_dir, sid)
    dash = Dashboard(settings.dashboard_url)
    # Why Ray cannot be asked ("" when it can): the job directory answers then.
    down = dash.ray_unanswered()
    try:
        job = None if down else dash.job(sid)
    except MvpError as exc:
        job, down = None, str(exc)
    listed = job
    if job is not None and job["status"] in TERMINAL:
        # An ended job is archived first: its copy holds the log even when
        # the dashboard cannot serve it (the driver's node died).
        archive.finalize_if_ended(jd, dash, sid, job, settings)
        if not _ray_serves_log(dash, sid, jd):
            job = None
    if job is None:
        return _show_archived(jd, sid, listed, args, down)
    redactor = Redactor.for_job(job)
    if args.steps and not args.follow:
        _show(redactor.text(_served_log(dash, sid)), args)
        archive.finalize_if_ended(jd, dash, sid, job, settings)
        return 0
    emit = _step_rows if args.steps else _log_text
    shown = 0
    while True:
        shown = emit(redactor.text(_served_log(dash, sid)), shown)
        if not args.follow or job["status"] in TERMINAL:
            break
        time.sleep(FOLLOW_POLL_S)
        job = poll_until_end.now(dash, sid)
    if args.follow:
        # One more read: lines printed between the last read and the end.
        emit(redactor.text(_served_log(dash, sid)), shown)
        log.info(f"job {sid} ended {job['status']}")
    archive.finalize_if_ended(jd, dash, sid, job, settings)
    return 0


def _served_log(dash: Dashboard, sid: str) -> str:
    """The job's log as the dashboard serves it, asked up to LOG_TRIES times."""
    for attempt in range(LOG_TRIES):
        try:
            return dash.job_logs(sid)
        except MvpError:
            if attempt + 1 == LOG_TRIES:
                raise
            time.sleep(LOG_PAUSE_S)
    return ""


def _ray_serves_log(dash: Dashboard, sid: str, jd: JobDir) -> bool:
    """Whether Ray serves an ended job's log: not when asking fails, nor when
    it answers empty where the job directory kept one (a Ray started again at
    the driver's address, a Kubernetes pod's container restarted in place,
    answers for a log it never had)."""
    try:
        served = dash.job_logs(sid)
    except MvpError:
        return False
    return served != "" or not any(p.is_file() and p.stat().st_size for p in (jd.driver_log, jd.live_log))


def _show_archived(jd: JobDir, sid: str, listed, args, down: str = "") -> int:
    """The logs kept of a job Ray cannot serve (the archived or kept driver
    log, then each node's kept worker logs); else one line. Tells a job Ray
    lost (its directory is here, Ray does not list it) apart from one that
    never was (no directory, Ray does not know it). With the cluster down
    (`down` says why), one WARN line says so and when the copy was last synced."""
    if listed is None and not jd.path.is_dir():
        where = f"the cluster does not answer ({down})" if down else "Ray does not know it"
        raise MvpError(f"job {sid}: no such job: {where} and there is no job directory {jd}; "
                       "check the id with scripts/50_status.sh")
    if listed is not None:
        why = f"Ray lists it as {listed['status']} but cannot serve its log"
    elif not down:
        why = "Ray lost the job (its directory is here; Ray does not list it: the head restarted since?)"
    else:
        why = f"the cluster does not answer ({down})"
    driver, nodes = jd.kept_driver_log(), jd.node_worker_logs()
    if driver is None and not nodes:
        missing = jd.driver_log_missing
        detail = f": {missing.read_text(encoding='utf-8').strip()}" if missing.is_file() else ""
        raise MvpError(f"job {sid}: {why}, and no copy was archived{detail}")
    _say_shown(sid, why, down, driver, nodes, jd)
    parts = [driver.read_text(encoding="utf-8", errors="replace")] if driver else []
    for p in nodes:
        text = p.read_text(encoding="utf-8", errors="replace")
        parts.append(text if args.steps else f"==> {p.relative_to(jd.path)} <==\n{text}")
    _show("".join(t if t.endswith("\n") or not t else t + "\n" for t in parts), args)
    return 0


def _say_shown(sid: str, why: str, down: str, driver, nodes: list, jd: JobDir) -> None:
    """The one line before the kept logs: why they are shown and which;
    a WARN with the copies' last sync when the cluster does not answer."""
    if driver is None:
        shown = "no driver log was kept"
    elif driver == jd.driver_log:
        shown = "showing the archived driver log"
    else:
        shown = f"showing the copy its node kept while it ran ({driver}, up to its last copy)"
    shown += f", then the {len(nodes)} worker log(s) its nodes kept ({jd.nodes})" if nodes else ""
    if not down:
        log.info(f"job {sid}: {why}; {shown}")
        return
    synced = max(p.stat().st_mtime for p in ([driver] if driver else []) + nodes)
    log.warn(f"job {sid}: {why}; {shown}; last synced "
             f"{datetime.fromtimestamp(synced, timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}")


def _log_text(text: str, shown: int) -> int:
    """Prints the log from character `shown` on; returns how far it printed."""
    sys.stdout.write(text[shown:])
    sys.stdout.flush()
    return len(text)


def _step_rows(text: str, shown: int) -> int:
    """Prints verl's step lines from the `shown`-th on, one line each, as
    they are completed; returns how many are printed."""
    from ..inspection import steptable
    rows = steptable.metrics.step_lines(text[:text.rfind("\n") + 1])
    for row in rows[shown:]:
        sys.stdout.write(steptable.line(row))
    sys.stdout.flush()
    return max(shown, len(rows))


def _show(text: str, args) -> None:
    if args.steps:
        from ..inspection import steptable
        text = steptable.render(text, args.json)
    sys.stdout.write(text)


def stop_main(args, settings) -> int:
    sid = args.submission_id
    dash = Dashboard(settings.dashboard_url)
    job = poll_until_end.now(dash, sid)
    if job["status"] in TERMINAL:
        log.skip(f"stopping {sid} (it already ended {job['status']})")
    else:
        log.step(f"stopping {sid} ({job['status']})")
        job = poll_until_end.stop(dash, sid)
        log.info(f"job {sid} is {job['status']}")
    archive.finalize_if_ended(JobDir.of(settings.jobs_dir, sid), dash, sid, job, settings)
    return 0
