"""python -m mvp COMMAND ...: the helper's commands, one module each."""
import argparse
import sys

from . import settings as settings_mod
from .errors import MvpError


def _stderr(marker: str, message: str) -> None:
    from datetime import datetime, timezone
    print(f"{datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')} {marker} {message}", file=sys.stderr, flush=True)


def log(message: str) -> None:
    """A step being taken (as mvp::log in bash), or a "SKIP: ..." line (as mvp::skip)."""
    if message.startswith("SKIP: "):
        _stderr("SKIP:", message[len("SKIP: "):])
    else:
        _stderr("----->", message)


def info(message: str) -> None:
    """A fact found (as mvp::info in bash)."""
    _stderr("      ", message)


def cmd_cluster_wait(args, s):
    from . import cluster
    from .dashboard import Dashboard
    result = cluster.wait(s, Dashboard(s.dashboard_url, timeout=5), head_only=args.head,
                          replaced=args.replaced.split(","), timeout=args.timeout)
    what = "head" if args.head else f"head + {len(result['workers'])} workers"
    info(f"cluster: {what} registered")
    return 0


def cmd_node_ids(args, s):
    from . import cluster
    from .dashboard import Dashboard
    print(",".join(cluster.node_ids_at(Dashboard(s.dashboard_url, timeout=5), args.ips)))
    return 0


def module_command(module: str, function: str):
    """A command implemented as MODULE.FUNCTION(args, settings, log), imported
    only when it runs: the submit path must not pay for the others' imports."""
    def run(args, s):
        import importlib
        return getattr(importlib.import_module(f"mvp.{module}"), function)(args, s, log)
    return run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mvp", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("status", help="cluster shape, recent jobs, shared root")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=module_command("status", "main"))

    c = sub.add_parser("cluster-wait", help="wait until the head (or all nodes) registered")
    c.add_argument("--head", action="store_true", help="only the head")
    c.add_argument("--replaced", default="", help="comma list of node ids that must be gone")
    c.add_argument("--timeout", type=float)
    c.set_defaults(func=cmd_cluster_wait)

    c = sub.add_parser("node-ids", help="alive node ids at these addresses")
    c.add_argument("ips", nargs="*")
    c.set_defaults(func=cmd_node_ids)

    c = sub.add_parser("submit", help="validate a JobSpec, create its job directory, submit it")
    c.add_argument("--via", choices=("cli", "sdk"), required=True)
    c.add_argument("--jobspec-text", required=True)
    c.add_argument("--jobspec-name", default="<stdin>")
    c.add_argument("--ray-config-text")
    c.add_argument("--ray-config-name", default="templates/configs/dev.yaml")
    c.add_argument("--configured-model", action="store_true", help="MVP_MODEL_ID's model instead of the JobSpec's")
    c.add_argument("--override", action="append", default=[], help="extra trainer override key=value")
    c.add_argument("--submission-id", default="")
    c.add_argument("--wait", action="store_true")
    c.add_argument("--timeout", type=float)
    c.add_argument("--check-only", action="store_true", help="validate and print the plan, submit nothing")
    c.set_defaults(func=module_command("submit", "main"))

    c = sub.add_parser("wait", help="wait for a job to end and archive it")
    c.add_argument("submission_id")
    c.add_argument("--timeout", type=float)
    c.set_defaults(func=module_command("jobctl", "wait_main"))

    c = sub.add_parser("logs", help="a job's driver log")
    c.add_argument("submission_id")
    c.add_argument("--follow", action="store_true")
    c.set_defaults(func=module_command("jobctl", "logs_main"))

    c = sub.add_parser("stop", help="stop a job and archive it")
    c.add_argument("submission_id")
    c.set_defaults(func=module_command("jobctl", "stop_main"))

    c = sub.add_parser("prepare", help="GSM8K parquet (RL + SFT) and the model on shared storage")
    c.add_argument("--force", action="store_true")
    c.set_defaults(func=module_command("prepare", "main"))

    c = sub.add_parser("snapshot", help="an immutable verl code snapshot of MVP_VERL_SRC as CODE_ID")
    c.set_defaults(func=module_command("snapshot", "main"))

    c = sub.add_parser("layout", help="the shared root's directories (the text of shared-layout.txt)")
    c.set_defaults(func=module_command("layout", "main"))

    c = sub.add_parser("nightly", help="nightly regression steps")
    c.add_argument("step", choices=("judge", "retention"))
    c.add_argument("--run-dir", required=True)
    c.add_argument("--keep", type=int, default=14)
    c.set_defaults(func=module_command("nightly.main", "main"))
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args, settings_mod.load())
    except MvpError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
