"""Parses recorded `ray` argument lists with Ray's own `ray start` command line
parser (ray.scripts.scripts.start, a click command), without starting Ray.

Usage: ray_start_args.py ARGV_FILE...
Each ARGV_FILE holds one `ray` invocation's arguments, NUL-terminated, as the
`ray` stub of tests/unit/kuberay.bats records them (the first is "start").
Prints one JSON line per file: {"argv": [...], "params": the parsed options,
"resources": --resources as Ray's parse_resources_json reads it} or, when
Ray refuses them, {"argv": [...], "error": Ray's message}."""
import contextlib
import json
import sys
from pathlib import Path

import click
from ray._private.utils import parse_resources_json
from ray.autoscaler._private.cli_logger import cf, cli_logger
from ray.scripts.scripts import start


def parse(argv: list) -> dict:
    if argv[:1] != ["start"]:
        return {"argv": argv, "error": "not a `ray start` invocation"}
    try:
        ctx = start.make_context("ray start", argv[1:])
    except click.ClickException as exc:
        return {"argv": argv, "error": exc.format_message()}
    try:  # Ray's own reading of --resources; its complaint goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            resources = parse_resources_json(ctx.params["resources"], cli_logger, cf)
    except (SystemExit, Exception) as exc:  # cli_logger.abort raises
        return {"argv": argv, "error": f"--resources: {type(exc).__name__}: {exc}"}
    return {"argv": argv, "params": ctx.params, "resources": resources}


def main(paths: list) -> int:
    if not paths:
        print("usage: ray_start_args.py ARGV_FILE...", file=sys.stderr)
        return 2
    for path in paths:
        data = Path(path).read_bytes()
        argv = [a.decode() for a in data.split(b"\0")[:-1]]
        print(json.dumps(parse(argv), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
