"""python -m mvp COMMAND ...: the helper's commands, one module each."""
import argparse
import sys

from .core import settings as settings_mod
from .worker.errors import MvpError


# Exit codes: 0 done, 1 refused or a negative answer (one ERROR line, or the
# command's own verdict), CRASH_EXIT a bug (traceback).
CRASH_EXIT = 70

# Where a command runs, declared beside its add_parser (set_defaults place=):
# HOST, the host the scripts run on (HTTP to the dashboard, the shared root,
# this host's files; it works while the head is down); HEAD, the head node
# (jobs are submitted from the head); DATA, this host when the nodes see its
# files and venv (MVP_HOST_SEES_NODE_FILES=1), else the head. The table made
# of them, helpers/mvp/places.txt (make helpers/mvp/places), is what
# scripts/lib/helper.sh reads: learning a place starts no Python.
HOST, HEAD, DATA = "host", "head", "data"


class StepParser(argparse.ArgumentParser):
    """A step's parser (nightly STEP, bisect STEP): a flag the step does not
    take is refused with this step's own usage, not python -m mvp's."""

    def parse_known_args(self, args=None, namespace=None):
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


def module_command(module: str, function: str):
    """A command implemented as MODULE.FUNCTION(args, settings), imported only
    when it runs: the submit path must not pay for the others' imports."""
    def run(args, s):
        import importlib
        return getattr(importlib.import_module(f"mvp.{module}"), function)(args, s)
    return run


def _status(args, s):
    """`status`, or with an id `status ID` (job_status: one HTTP call)."""
    return module_command("jobs.inspection.job_status" if args.submission_id else "jobs.inspection.status", "main")(args, s)


def _submit(args, s):
    """`submit`: with --via cli, Ray's CLI starts before the submit module
    is even imported; its ~1.4 s of imports overlap everything the runbook
    checks (ray_cli)."""
    from .jobs.sending import ray_cli
    cli = ray_cli.start() if args.via == "cli" and not args.check_only else None
    import importlib
    return importlib.import_module("mvp.jobs.sending.submit").main(args, s, cli)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mvp", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    # In this order in --help: the cluster, submitting, a job after it, the
    # shared root's contents, the nightly's steps, its suite and notices, its
    # bisection, the judge's calibration.
    for add in (_cluster_commands, _submit_commands, _job_commands, _shared_root_commands, _nightly_commands,
                _suite_and_notify_commands, _bisect_commands, _detector_command):
        add(sub)
    return p


def _cluster_commands(sub) -> None:
    c = sub.add_parser("status", help="cluster shape, recent jobs, shared root; with an id, that job's status")
    c.add_argument("submission_id", nargs="?", help="one job's status only, as `ray job status ID`")
    c.add_argument("--json", action="store_true")
    c.add_argument("--porcelain", action="store_true", help="with an id: key=value lines")
    c.set_defaults(func=_status, place=HOST)

    c = sub.add_parser("cluster-wait", help="wait until the head (or all nodes) registered")
    c.add_argument("--head", action="store_true", help="only the head")
    c.add_argument("--replaced", default="", help="comma list of node ids that must be gone")
    c.add_argument("--timeout", type=float)
    c.set_defaults(func=module_command("cluster.ray_nodes", "wait_main"), place=HOST)

    c = sub.add_parser("node-ids", help="alive node ids at these addresses")
    c.add_argument("ips", nargs="*")
    c.set_defaults(func=module_command("cluster.ray_nodes", "node_ids_main"), place=HOST)


def _submit_commands(sub) -> None:
    c = sub.add_parser("submit", help="validate a JobSpec, create its job directory, submit it; "
                       "stdin: the JobSpec, a NUL byte, the Ray config")
    c.add_argument("--via", choices=("cli", "sdk"), required=True)
    c.add_argument("--jobspec-name", required=True)
    c.add_argument("--ray-config-name", required=True)
    c.add_argument("--configured-model", action="store_true", help="MVP_MODEL_ID's model instead of the JobSpec's")
    c.add_argument("--override", action="append", default=[], help="extra trainer override key=value")
    c.add_argument("--submission-id", default="")
    c.add_argument("--reward-fn", default="", help="PATH[:NAME]: the JobSpec's reward_fn_path (and reward_fn_name)")
    c.add_argument("--resume-from", default="", help="JOB_ID or JOB_ID/global_step_N: start from that job's "
                   "(latest) checkpoint, in a new job directory")
    c.add_argument("--queue", action="store_true", help="wait (at most MVP_JOB_TIMEOUT) for the GPUs other jobs hold")
    c.add_argument("--retry", type=int, help="40-44's --retry N, which they act on: checked here, as a JobSpec's "
                   "retries")
    c.add_argument("--command-word", action="append", default=[], help="one word of a verl command line "
                   "(python3 -m MODULE ... KEY=VALUE), in order; give it as --command-word=WORD")
    c.add_argument("--check-only", action="store_true", help="validate and print the plan, submit nothing")
    c.add_argument("--wait", action="store_true", help="then wait here and archive the job (KubeRay's submitter "
                   "pod; the scripts wait on their own host instead, which outlives the head)")
    c.set_defaults(func=_submit, place=HEAD)

    c = sub.add_parser("render-kuberay", help="KubeRay resources: RayCluster, RayJob, the nightly's CronJob")
    c.add_argument("what", choices=("cluster", "job", "nightly"))
    c.add_argument("--jobspec-name", default="<stdin>", help="job: the JobSpec's name; its text is read on stdin")
    c.add_argument("--ray-config-text", required=True)
    c.add_argument("--override", action="append", default=[], help="extra trainer override key=value")
    c.set_defaults(func=module_command("render.render_kuberay", "main"), place=HOST)


def _job_commands(sub) -> None:
    c = sub.add_parser("retry-from", help="where a failed job's chain goes on from (--retry): JOB/global_step_N")
    c.add_argument("submission_id")
    c.set_defaults(func=module_command("jobs.after_sending.retry", "main"), place=HEAD)

    c = sub.add_parser("resumed", help="the check `resumed` of a resumed job (first step, data position), as JSON")
    c.add_argument("submission_id")
    c.set_defaults(func=module_command("jobs.after_sending.resumed_check", "main"), place=HEAD)

    c = sub.add_parser("wait", help="wait for a job to end and archive it")
    c.add_argument("submission_id")
    c.add_argument("--timeout", type=float)
    c.add_argument("--retry-point", action="store_true",
                   help="a job that ended FAILED or LOST: also answer resume_from= (where --retry goes on)")
    c.set_defaults(func=module_command("jobs.after_sending.wait_logs_stop", "wait_main"), place=HOST)

    c = sub.add_parser("reconcile", help="archive as LOST the jobs of a cluster that went away")
    c.set_defaults(func=module_command("jobs.after_sending.wait_logs_stop", "reconcile_main"), place=HOST)

    c = sub.add_parser("logs", help="a job's driver log")
    c.add_argument("submission_id")
    c.add_argument("--follow", action="store_true")
    c.add_argument("--steps", action="store_true", help="verl's step metrics as a table, not the log")
    c.add_argument("--json", action="store_true", help="with --steps: every metric of every step, as JSON")
    c.set_defaults(func=module_command("jobs.after_sending.wait_logs_stop", "logs_main"), place=HOST)

    c = sub.add_parser("stop", help="stop a job and archive it")
    c.add_argument("submission_id")
    c.set_defaults(func=module_command("jobs.after_sending.wait_logs_stop", "stop_main"), place=HOST)


def _shared_root_commands(sub) -> None:
    c = sub.add_parser("prepare", help="GSM8K parquet (RL + SFT) and the model on shared storage")
    c.add_argument("--force", action="store_true")
    c.add_argument("--token-stdin", action="store_true", help="HF_TOKEN on stdin (never on argv)")
    c.set_defaults(func=module_command("data.prepare", "main"), place=DATA)

    c = sub.add_parser("snapshot", help="an immutable verl code snapshot of MVP_VERL_SRC as CODE_ID")
    c.add_argument("--git-commit", default="", help="MVP_VERL_SRC is this commit's tree (31 --git-repo): its full sha")
    c.add_argument("--git-subject", default="", help="with --git-commit: the commit's subject")
    c.add_argument("--git-rev", default="", help="with --git-commit: the rev it was asked as")
    c.add_argument("--git-repo", default="", help="with --git-commit: the checkout it is from")
    c.set_defaults(func=module_command("jobs.planning.code_snapshot", "main"), place=DATA)

    c = sub.add_parser("layout", help="the shared root's directories (the text of shared-layout.txt)")
    c.set_defaults(func=module_command("core.layout", "main"), place=HEAD)

    c = sub.add_parser("settings", help="the settings contract (config/settings.contract) as docs/settings.md")
    c.add_argument("--markdown", action="store_true", required=True)
    c.set_defaults(func=module_command("core.settings", "main"), place=HEAD)


def _nightly_commands(sub) -> None:
    c = sub.add_parser("nightly", help="60_nightly_regression.sh's steps, each with its own flags")
    c.set_defaults(place=DATA)
    _nightly_steps(c.add_subparsers(dest="step", required=True, parser_class=StepParser))


def _step(steps, name: str, help_: str, module: str, function: str) -> argparse.ArgumentParser:
    """One step of a command with steps: MODULE.FUNCTION(args, settings) runs it."""
    c = steps.add_parser(name, help=help_, description=help_)
    c.set_defaults(func=module_command(module, function))
    return c


def _nightly_step(steps, name: str, help_: str, module: str, function: str) -> argparse.ArgumentParser:
    """A step of `nightly`: each takes the night's run directory."""
    c = _step(steps, name, help_, module, function)
    c.add_argument("--run-dir", required=True, help="the night's run directory, relative to the shared root")
    return c


def _nightly_steps(steps) -> None:
    c = _nightly_step(steps, "inputs", "the input manifests' hashes, before and after step 30", "nightly.main",
                      "inputs_main")
    c.add_argument("--phase", choices=("before", "after"), help="before or after step 30")
    _nightly_step(steps, "retention", "what the nightly keeps of old runs and jobs", "nightly.main", "retention_main")
    _judge_flags(_nightly_step(steps, "judge", "the night's plan from what it did, the jobs judged, the reports",
                               "nightly.main", "judge_main"))
    c = _nightly_step(steps, "stop-step", "the step the interrupted job stops after, drawn at random",
                      "nightly.main", "stop_step_main")
    c.add_argument("--reference", default="", help="the uninterrupted run's submission id")
    c = _nightly_step(steps, "control", "the same-night control: its plan, or a probe recorded", "nightly.control",
                      "main")
    c.add_argument("--role", choices=("plan", "control", "candidate"), default="plan",
                   help="plan the same-night control, or record its control's or candidate's probe")
    c.add_argument("--code-id", default="", help="the probe's snapshot")
    c.add_argument("--submission-id", default="", help="the probe's job (empty: not submitted)")


def _judge_flags(c) -> None:
    c.add_argument("--started", default="", help="when the night started")
    c.add_argument("--code-id", default="", help="the code snapshot the jobs ran")
    c.add_argument("--failed-step", default="", help="the step that failed before the jobs ran")
    c.add_argument("--head-host", default="", help="the head's host name (default: MVP_HEAD_NODE)")
    c.add_argument("--job", action="append", default=[], help="NAME=SUBMISSION_ID (empty id: not submitted)")
    c.add_argument("--checks", action="append", default=[], help="NAME=CHECK,CHECK...: only these of the "
                   "job's checks count (the suite's `checks:`)")
    c.add_argument("--rises", action="append", default=[], help="NAME, a job whose score must rise "
                   "(the suite's `rises: true`): check `signal`")
    c.add_argument("--resume", default="", help="JOB=REFERENCE:STEP, the job interrupted after STEP and the "
                   "job it is compared with")
    c.add_argument("--rerun", action="append", default=[], help="NAME=SUBMISSION_ID, a job's rerun, asked for "
                   "by this step's answer rerun= (empty id: not submitted): its check regression fails only "
                   "when the rerun's fails too")


def _suite_and_notify_commands(sub) -> None:
    c = sub.add_parser("nightly-suite", help="the nightly's suite file (MVP_NIGHTLY_SUITE), checked, as the night's plan")
    c.add_argument("--only", default="", help="a comma list of the suite's job names (60's --only)")
    c.add_argument("--count", action="store_true", help="only how many jobs the night runs")
    c.set_defaults(func=module_command("nightly.suite", "main"), place=HOST)

    c = sub.add_parser("notify", help="tell people how a night went (mail, webhook), once per night")
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--run-dir", help="the night's run directory (holds report.json)")
    what.add_argument("--check", action="store_true", help="only check the nightly's settings")
    c.set_defaults(func=module_command("nightly.notify", "main"), place=HOST)


def _detector_command(sub) -> None:
    c = sub.add_parser("detector", help="the nightly judge's error rates, replayed on the corpus of real runs "
                       "(make bench-detector)")
    c.add_argument("--corpus", default="", help="the corpus directory (default tests/fixtures/detector/corpus)")
    c.add_argument("--write", default="", help="also write the figures as JSON to this file (config/detector.json)")
    c.add_argument("--draws", type=int, default=20, help="random histories per night and per planted run")
    c.add_argument("--boot", type=int, default=100, help="bootstrap resamples of the nights for the 95%% interval")
    c.add_argument("--docs", default="", help="also rewrite the measured block of this page (docs/nightly.md)")
    c.add_argument("--guard", default="", help="only check the judge against this calibration (config/detector.json): "
                   "exit 1 naming each figure worse than its 95%% interval")
    c.set_defaults(func=module_command("nightly.calibration", "main"), place=HEAD)


def _bisect_commands(sub) -> None:
    c = sub.add_parser("bisect", help="61_bisect_regression.sh's steps: the first commit that makes a job worse")
    c.set_defaults(place=HOST)
    steps = c.add_subparsers(dest="step", required=True, parser_class=StepParser)
    c = _step(steps, "start", "check the input and make the bisection's directory", "nightly.bisection", "start")
    c.add_argument("--repo", default="", help="the git checkout of verl")
    c.add_argument("--good", default="", help="a good commit")
    c.add_argument("--bad", default="", help="a later bad commit")
    c.add_argument("--job", default="", help="the nightly suite's job to probe with (default grpo)")
    c.add_argument("--spec", default="", help="a JobSpec to probe with instead")
    c.add_argument("--steps", default="2", help="training steps per probe")
    c.add_argument("--dry-run", action="store_true", help="list the commits, make nothing")
    _bisect_dir(_step(steps, "next", "the next commit to probe, and the job's words", "nightly.bisection",
                      "next_main"))
    c = _bisect_dir(_step(steps, "record", "a probe's job judged and added to the report", "nightly.bisection",
                          "record"))
    c.add_argument("--commit", default="", help="the probed commit")
    c.add_argument("--code-id", default="", help="its snapshot")
    c.add_argument("--submission-id", default="", help="its job (empty: not submitted)")
    c.add_argument("--submit-rc", default="", help="the submit script's exit code, when it gave no job")
    _bisect_dir(_step(steps, "finish", "first_bad=SHA, or exit 1 saying why none was found", "nightly.bisection",
                      "finish"))
    _bisect_run_dir(_step(steps, "night", "what the nightly bisects after a failed night", "nightly.bisection",
                          "night"))
    _bisect_dir(_bisect_run_dir(_step(steps, "told", "the bisection's outcome beside the night's report",
                                     "nightly.bisection", "told")))


def _bisect_dir(c: argparse.ArgumentParser) -> argparse.ArgumentParser:
    c.add_argument("--dir", default="", help="the bisection's directory")
    return c


def _bisect_run_dir(c: argparse.ArgumentParser) -> argparse.ArgumentParser:
    c.add_argument("--run-dir", default="", help="the nightly run whose failure is bisected")
    return c


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args, settings_mod.load())
    except MvpError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception:  # a bug, not a refusal: the traceback, and an exit code bash tells apart
        import traceback
        traceback.print_exc()
        return CRASH_EXIT


if __name__ == "__main__":
    sys.exit(main())
