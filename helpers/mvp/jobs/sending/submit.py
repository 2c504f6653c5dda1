"""`submit`: JobSpec (+ Ray base config) -> job directory -> Ray job.

Two paths, one result: `--via cli` runs `ray job submit` (43_submit_jobspec.sh),
`--via sdk` calls JobSubmissionClient in this process (44_submit_sdk.sh). Both
write the same config files; only logs/submit.log says which path was taken."""
import json
import os
import re
import shlex
import shutil
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

from jobenv import mvp_private_env

from . import admission, gpus
from ..after_sending import bundle, job_fingerprint
from ..planning import jobspec, trainer_profile
from ...worker import fsutil, jobdir, kv, redact
from ...core import log
from ..planning import plan as plan_mod
from ...core.dashboard import Dashboard
from ...worker.errors import MvpError
from ...worker.jobdir import JobDir
from ...core.layout import Layout
from ...worker.redact import Redactor

SUBMIT_TIMEOUT_S = 120


def _submit_cli(plan, cli, redactor: Redactor, before_submit=None) -> str:
    """`ray job submit` through the CLI started at the beginning (ray_cli);
    before_submit() runs first.

    The runtime_env (secrets included) reaches the CLI through a pipe it opens
    as /dev/fd/N: never on its argv, and nothing on disk when this process is
    killed mid-submit (a /tmp file was). The CLI gets its words and that pipe
    only once before_submit() has returned: so the private-variable store
    (~0.5 s of Ray's GCS client) overlaps the CLI's start-up, and still no job
    can start before its private variables are stored. If before_submit()
    raises, the CLI is killed before it has read a word."""
    if before_submit:
        before_submit()
    words = plan.ray_cli_argv(["--runtime-env", cli.ready()])[1:]
    rc, output = cli.run(words, json.dumps(plan.runtime_env).encode(), SUBMIT_TIMEOUT_S)
    output = redactor.text(output)
    if rc != 0:
        raise MvpError(f"ray job submit failed (exit {rc}): {cli_error(output)}")
    return output


# A Python exception's own line in a traceback: "RuntimeError: Request failed ...".
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception): .+")


def cli_error(output: str) -> str:
    """What a failed CLI said that matters: the last exception line of its
    traceback (its message may go on over lines: an HTML error page), else
    its last non-empty line; at most 300 characters."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if EXCEPTION_LINE.match(line)]
    said = (errors or lines or ["(no output)"])[-1]
    return said if len(said) <= 300 else said[:297] + "..."


def _submit_sdk(plan) -> str:
    from ray.job_submission import JobSubmissionClient
    kwargs = {}
    if plan.entrypoint_num_gpus:
        kwargs["entrypoint_num_gpus"] = plan.entrypoint_num_gpus
    try:
        JobSubmissionClient(plan.address).submit_job(
            entrypoint=shlex.join(plan.entrypoint), submission_id=plan.submission_id,
            runtime_env=plan.runtime_env, entrypoint_num_cpus=plan.entrypoint_num_cpus,
            entrypoint_resources=plan.entrypoint_resources, **kwargs)
    except Exception as exc:  # the SDK raises plain RuntimeError/ConnectionError
        raise MvpError(f"JobSubmissionClient.submit_job failed: {str(exc).splitlines()[0]}") from None
    return f"JobSubmissionClient({plan.address!r}).submit_job(submission_id={plan.submission_id!r}) accepted\n"


def _config_files(plan, spec: dict, spec_name: str, ray_cfg: dict, ray_cfg_name: str) -> dict:
    spec_shown = dict(spec, env_vars=redact.env(spec.get("env_vars") or {}))
    cfg_shown = json.loads(json.dumps(ray_cfg))
    env = cfg_shown.get("runtime_env", {}).get("env_vars") or {}
    cfg_shown.setdefault("runtime_env", {})["env_vars"] = redact.env(env)
    # Keyed by their JobDir names: written to config/ when the directory is claimed.
    return {
        "spec": json.dumps({"input": spec_shown, "input_name": spec_name, "ray_config": cfg_shown,
                            "ray_config_name": ray_cfg_name, "resolved": plan.resolved()},
                           indent=2, sort_keys=True) + "\n",
        "runtime_env": json.dumps(plan.runtime_env, indent=2, sort_keys=True) + "\n",
        "submit_cmd": shlex.join(plan.ray_cli_argv(["--runtime-env-json", json.dumps(plan.runtime_env)])) + "\n",
    }


def _read_inputs(data: bytes, spec_name: str, cfg_name: str) -> tuple:
    """The JobSpec and the Ray config arrive on stdin, NUL between them: never
    on argv, where secrets would show in ps and size is limited."""
    parts = data.split(b"\0")
    if len(parts) != 2:
        raise MvpError(f"{spec_name}: expected the JobSpec and the Ray config on stdin, separated by one NUL byte; "
                       "a NUL inside either file is not valid YAML")
    return jobspec.decode_input(parts[0], spec_name), jobspec.decode_input(parts[1], cfg_name)


def main(args, settings, cli=None) -> int:
    """cli: the Ray CLI started before this module was imported (`--via cli`,
    ray_cli.start); ended here if the job never reached it."""
    try:
        return _submit(args, settings, cli)
    finally:
        if cli:
            cli.discard()


def _submit(args, settings, cli) -> int:
    jobspec.check_retries(args.retry, "--retry")
    spec, ray_cfg = _spec_and_config(args, settings)
    extra = tuple(jobspec.parse_override_arg(item) for item in args.override)
    plan = plan_mod.build(spec, ray_cfg, settings, extra, args.submission_id, args.resume_from)
    redactor = Redactor(redact.secret_values(plan.env_vars))
    files = _config_files(plan, spec, args.jobspec_name, ray_cfg, args.ray_config_name)
    log.info(f"{plan.preflight.summary()}; snapshot {plan.code_id}")
    for line in plan.data_lines:
        log.info(f"preflight: {line}")
    for line in plan.warnings:
        log.warn(f"preflight: {line}")
    if args.check_only:
        return _show_check(args, plan, files)
    files["fingerprint_submitted"] = job_fingerprint.submitted(settings)
    dash = Dashboard(plan.address)
    _check_cluster(dash, plan, settings)
    # The check and the submit are one step for this cluster: admission's
    # lock is held until Ray has the job (or refused it).
    with admission.admit(dash, plan.shared_root, plan.cluster, plan.submission_id, plan.job_dir,
                         gpus.needed(plan.trainer_overrides), args.queue, settings.job_timeout,
                         settings.admission_claim_s, on_queued=cli.release if cli else None):
        submitted = _claim_and_submit(args, plan, files, dash, redactor, settings, cli)
    # Ray runs the job from here on: whatever fails now, its id is printed.
    # submission_id last: the line a reader of the submitter pod's log looks for.
    kv.emit(("retries", spec.get("retries") or 0), ("submission_id", plan.submission_id))
    _record_submission(args, plan, files, dash, *submitted)
    if args.wait:
        # submission_id stays the last line: what a reader of the submitter pod's log looks for.
        from ..after_sending import wait_logs_stop
        result = wait_logs_stop.wait_for(plan.submission_id, None, settings)
        return 0 if result["status"] == "SUCCEEDED" and not result["timed_out"] else 1
    return 0


def _spec_and_config(args, settings) -> tuple:
    """The JobSpec (with what 40-44's flags put in it) and the Ray config."""
    spec_text, ray_cfg_text = _read_inputs(sys.stdin.buffer.read(), args.jobspec_name, args.ray_config_name)
    spec = jobspec.parse_jobspec(spec_text, args.jobspec_name, args.command_word)
    ray_cfg = jobspec.parse_ray_config(ray_cfg_text, args.ray_config_name)
    if args.configured_model:
        spec["model"] = str(Layout(settings.shared_root).model(settings.model_id))
    if args.reward_fn:
        path, _, name = args.reward_fn.partition(":")
        spec.update(reward_fn_path=path, reward_fn_name=name or spec.get("reward_fn_name"))
    return spec, ray_cfg


def _show_check(args, plan, files: dict) -> int:
    """--check-only: the resolved JobSpec on stdout, the command on stderr."""
    sys.stdout.write(files["spec"])
    log.step(f"checked {args.jobspec_name}: would submit {plan.submission_id} via {args.via}:")
    print(files["submit_cmd"], end="", file=sys.stderr)
    return 0


def _check_cluster(dash: Dashboard, plan, settings) -> None:
    """What would make the submission fail at Ray or minutes into the job:
    a reused id, a profile that does not fit the nodes, a full disk."""
    if dash.job(plan.submission_id) is not None:
        raise MvpError(f"submission id {plan.submission_id} already exists in Ray; ids are never reused, "
                       "leave submission_id empty to get a new one")
    if not plan.standin:
        trainer_profile.check_cluster(plan.profile, dash.nodes())
    fsutil.require_free(plan.job_dir.path.parent, settings.min_free_mb, f"claiming job directory {plan.job_dir}")


def _record_submission(args, plan, files: dict, dash: Dashboard, output: str, submitted_at: str, kinds: list,
                       bundle_errors: list, store) -> None:
    """logs/submit.log, the sweep of ended jobs' private variables, the line
    saying what was submitted."""
    jd = plan.job_dir
    event = {"event": "submitted", "at": submitted_at, "host": os.uname().nodename, "via": args.via,
             "command": files["submit_cmd"].rstrip("\n"), "output": output}
    if bundle_errors:
        event["debug_bundle_error"] = bundle_errors[0]
    try:
        jd.write_submit_event(event)
    except OSError as exc:
        raise MvpError(f"job {plan.submission_id} was accepted by Ray and runs, but {jd.submit_log} "
                       f"could not be written ({exc.strerror or exc}); free space under {plan.shared_root}") from None
    if store:
        _sweep_ended(store, dash)
    log.step(f"submitted {plan.submission_id} ({plan.workload}, code {plan.code_id}) via {args.via}; "
             f"job directory {jd}; debug bundle: {', '.join(kinds) or 'none (' + '; '.join(bundle_errors) + ')'}")


class _BundleTaker:
    """The submit-time debug bundle, taken in a thread while Ray takes the
    job: its HTTP calls overlap the Ray CLI's (or SDK's) second of Python
    start-up."""

    def __init__(self, dash: Dashboard, debug_dir: Path, redactor: Redactor):
        self.kinds, self.errors = [], []
        self.thread = threading.Thread(target=self._take, args=(dash, debug_dir, redactor))

    def _take(self, dash: Dashboard, debug_dir: Path, redactor: Redactor) -> None:
        try:
            self.kinds.extend(bundle.collect(dash, debug_dir, "submit", redactor))
        except OSError as exc:  # a full disk must not kill the submission half-way
            self.errors.append(f"{exc.strerror or exc}")


def _claim_and_submit(args, plan, files: dict, dash: Dashboard, redactor: Redactor, settings, cli) -> tuple:
    """Job directory, config files, private variables, then Ray: (output,
    submitted_at, debug bundle kinds, bundle errors, private-variable store)."""
    jd = jobdir.claim(plan.job_dir)
    taker = _BundleTaker(dash, jd.debug, redactor)
    stores = []

    def store_private_env() -> None:
        if plan.private_env:
            stores.append(_store_private_env(plan, settings))

    try:
        for name, text in files.items():
            fsutil.write_text(getattr(jd, name), text)
        submitted_at = datetime.now(timezone.utc).isoformat()
        taker.thread.start()
        if args.via == "cli":
            output = _submit_cli(plan, cli, redactor, before_submit=store_private_env)
        else:
            store_private_env()
            output = _submit_sdk(plan)
        taker.thread.join()
    except BaseException as exc:
        if taker.thread.is_alive():
            taker.thread.join()
        _undo_unless_submitted(dash, plan, jd, stores, exc)
        raise
    return output, submitted_at, taker.kinds, taker.errors, (stores[0] if stores else None)


def _undo_unless_submitted(dash: Dashboard, plan, jd: JobDir, stores: list, exc: BaseException) -> None:
    """Nothing half-made stays behind, unless Ray took the job after all; a
    write error becomes one line saying nothing was submitted."""
    if _ray_knows(dash, plan.submission_id):
        return
    for store in stores:
        _quietly(store.delete, plan.submission_id)
    shutil.rmtree(jd, ignore_errors=True)
    if isinstance(exc, OSError):
        raise MvpError(f"could not write {jd} ({exc.strerror or exc}); nothing was submitted") from None


def _store_private_env(plan, settings) -> "mvp_private_env.Store":
    """Puts the job's private variables where only its own processes fetch
    them (helpers/jobenv/mvp_private_env.py): the head's GCS store."""
    address = f"{settings.head_ip}:{settings.gcs_port}"
    try:
        store = mvp_private_env.Store(address)
        store.put(plan.submission_id, plan.private_env)
    except Exception as exc:  # Ray's GCS client raises its own exception types
        raise MvpError(f"could not store the job's private variables in Ray's GCS at {address} "
                       f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); nothing was submitted") from None
    log.info(f"private variables {', '.join(sorted(plan.private_env))}: kept in Ray's GCS store, "
             "not in the runtime_env")
    return store


def _sweep_ended(store, dash: Dashboard) -> None:
    """Private variables of jobs that have ended leave the GCS store; done
    by the next submission that has some (Ray's memory, never a file)."""
    try:
        status = {job.get("submission_id"): job.get("status") for job in dash.jobs()}
        gone = store.sweep(status.get)
    except Exception as exc:  # never fails a submission Ray has taken
        log.warn(f"could not sweep ended jobs' private variables from Ray's GCS store: {exc}")
        return
    if gone:
        log.info(f"removed the private variables of {len(gone)} ended job(s) from Ray's GCS store")


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:  # cleanup of a failed submission: the failure is what gets reported
        pass


def _ray_knows(dash: Dashboard, submission_id: str) -> bool:
    try:
        return dash.job(submission_id) is not None
    except MvpError:
        return False
