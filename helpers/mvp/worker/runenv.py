"""What a job's Python really runs with, recorded where it runs (standard
library only: the launcher loads it on the worker that holds the driver, the
log keepers on every node that can hold the job's work).

The versions are read from the interpreter that runs the trainer, without
importing torch (seconds) or Ray: package versions from their installed
metadata, the CUDA version torch was built for from torch/version.py (a
plain file of strings, loaded alone), NCCL from the nvidia-nccl wheel torch
loads, the GPU driver from /proc/driver/nvidia/version. What is not there is
null (a CPU node has no CUDA, NCCL or driver), never a guess.

Files (named by jobdir.JobDir): <job dir>/logs/env/driver.json (the
driver's node: versions, the package list and its sha256), written by a
process forked off the launcher, so the trainer does not wait for it; and
logs/env/node-<ip>.json (each node's versions), written by its log keeper."""
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import re
from pathlib import Path

try:
    from . import fsutil
    from .jobdir import JobDir
except ImportError:  # loaded by launch.py as a top-level module
    import fsutil
    from jobdir import JobDir

NCCL_PACKAGES = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
DRIVER_VERSION_FILE = "/proc/driver/nvidia/version"
DRIVER_VERSION = re.compile(r"Kernel Module(?: for [^ ]+)?\s+([0-9][0-9.]*)")


def _version(package: str):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def torch_cuda():
    """The CUDA version torch was built for (None for a CPU build, or no torch)."""
    spec = importlib.util.find_spec("torch")
    if not spec or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    m = re.search(r"^cuda(?:: [^=]+)? = '([^']+)'", _read(path), re.MULTILINE)
    return m.group(1) if m else None


def gpu_driver(path: str = DRIVER_VERSION_FILE):
    """The NVIDIA kernel driver's version, or None where there is none."""
    m = DRIVER_VERSION.search(_read(path))
    return m.group(1) if m else None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def versions() -> dict:
    nccl = next((v for v in map(_version, NCCL_PACKAGES) if v), None)
    return {"python": platform.python_version(), "ray": _version("ray"), "torch": _version("torch"),
            "cuda": torch_cuda(), "nccl": nccl, "gpu_driver": gpu_driver()}


def packages() -> dict:
    """Every installed distribution as name==version, sorted, and the sha256
    of that list (one line each): equal lists, equal digests."""
    found = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name:
            found[name] = dist.version
    lines = sorted(f"{name}=={version}" for name, version in found.items())
    return {"count": len(lines), "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest(), "list": lines}


def _env_dir(path: Path) -> Path:
    """path, with its directory (logs/env/) made as the job directory's are:
    nothing in a job directory is for others (makedirs' default gave 0755)."""
    os.makedirs(path.parent.parent, mode=0o750, exist_ok=True)  # logs/, where it is not there yet
    os.makedirs(path.parent, mode=0o750, exist_ok=True)
    return path


def write_driver(jd: JobDir) -> None:
    fsutil.write_json(_env_dir(jd.env_driver), {**versions(), "packages": packages()})


def write_node(jd: JobDir, ip: str) -> None:
    """This node's versions (a log keeper calls it; a failure costs the job nothing)."""
    try:
        fsutil.write_json(_env_dir(jd.node_env(ip)), {"ip": ip, **versions()})
    except OSError:
        pass


def start(jd: JobDir) -> None:
    """Writes logs/env/driver.json from a grandchild of this process: the
    caller goes on at once (and execs the trainer, the same interpreter and
    path); the grandchild is nobody's zombie."""
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        return
    try:
        if os.fork() == 0:
            write_driver(jd)
    finally:
        os._exit(0)
