"""What a job needs inside the compose runtime's image, checked inside it.

Run by 00_prereq_check.sh as a file (stdlib only: it must run in an image that
lacks every package it looks for):
  python3 image_check.py --requirements helpers/requirements.txt --verl-src DIR --image NAME
Prints one `problem_N=...` line per problem (N = 1, 2, ...), each saying
what to install or which image to use, and exits 1; else one `summary=...`
line and exits 0 (key=value lines of helpers/mvp/worker/kv.py, which the host
reads back with mvp::kv::read).
"""
import argparse
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys

try:  # run as a file (in the image): kv.py sits beside it
    from . import kv
except ImportError:
    import kv

# Distribution names whose module is named otherwise.
MODULES = {"pyyaml": "yaml", "hydra-core": "hydra"}


def marker_holds(marker: str) -> bool:
    """A requirement's `python_version OP "X.Y"` marker, on this Python (the
    only kind helpers/requirements.txt uses); no marker holds."""
    m = re.fullmatch(r'python_version\s*(>=|<|==)\s*"(\d+)\.(\d+)"', marker.strip())
    if not m:
        return not marker.strip()
    have, want = sys.version_info[:2], (int(m.group(2)), int(m.group(3)))
    return {">=": have >= want, "<": have < want, "==": have == want}[m.group(1)]


def pins(requirements: str) -> dict[str, str]:
    """{distribution name (lower case): pinned version or ""} of a requirements file,
    for the lines whose marker holds on this Python."""
    found = {}
    with open(requirements, encoding="utf-8") as fh:
        for line in fh:
            line, _, marker = line.split("#", 1)[0].strip().partition(";")
            m = re.match(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(==\s*([^\s;]+))?", line)
            if m and marker_holds(marker):
                found[m.group(1).lower()] = m.group(4) or ""
    return found


def check_ray(want: str, image: str) -> list[str]:
    try:
        have = importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        return [f"ray is not installed in {image}; pip install 'ray[default]=={want}' in the image, or use a verl image with Ray {want}"]
    problems = []
    if want and have != want:
        problems.append(f"ray {have} in {image}, but the host client is ray {want} (helpers/requirements.txt); "
                        f"use an image with Ray {want}, or pin ray[default]=={have} in helpers/requirements.txt and run make setup")
    if shutil.which("ray") is None:
        problems.append(f"the ray CLI is not on PATH in {image}; reinstall 'ray[default]=={want or have}' there")
    return problems


def check_module(dist: str, want: str, image: str) -> list[str]:
    module = MODULES.get(dist, dist.replace("-", "_"))
    if importlib.util.find_spec(module) is None:
        spec = f"{dist}=={want}" if want else dist
        return [f"{dist} (module {module}) is missing in {image}; pip install '{spec}' in the image "
                f"(scripts/12_install_py_deps.sh does it in running containers)"]
    return []


def check_verl(src: str, image: str) -> tuple[list[str], str]:
    if not src:
        return [], ""
    env = dict(os.environ, PYTHONPATH=src)
    proc = subprocess.run([sys.executable, "-c", "import verl; print(verl.__file__)"], cwd="/",
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no error output"])[-1]
        return [f"verl does not import from {src} in {image} ({last}); use a verl image tag from verl's "
                f"docker/README.md, or install the missing package in the image"], ""
    where = proc.stdout.strip()
    if not os.path.realpath(where).startswith(os.path.realpath(src) + os.sep):
        return [f"verl imports from {where}, not from {src}, in {image}; the image's verl shadows PYTHONPATH: "
                f"uninstall it there (pip uninstall verl) so jobs run their code snapshot"], ""
    return [], where


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requirements", required=True)
    ap.add_argument("--verl-src", default="")
    ap.add_argument("--image", default="the image")
    args = ap.parse_args()
    want = pins(args.requirements)
    problems = check_ray(want.get("ray", ""), args.image)
    for dist, version in want.items():
        if dist != "ray":
            problems += check_module(dist, version, args.image)
    verl_problems, verl_file = check_verl(args.verl_src, args.image)
    problems += verl_problems
    if problems:
        kv.emit(*((f"problem_{n}", problem) for n, problem in enumerate(problems, 1)))
        return 1
    names = ", ".join(sorted(want))
    kv.emit(("summary", f"ray {importlib.metadata.version('ray')} and {names} import"
             + (f"; verl imports from {verl_file}" if verl_file else "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
