"""Which build of torch a place offers, and how much room the installed one takes.

Usage (run by scripts/12_install_py_deps.sh; standard library only):
  python torch_build.py kind REPORT   reads pip's --dry-run --report of torch and
                                      prints `cpu VERSION` or `cuda VERSION`
  python torch_build.py size          prints the MB that torch and CUDA's packages
                                      (nvidia-*, cuda-*, triton) take in this Python's site-packages

A CPU build is one whose version says +cpu, or whose requirements name none of
CUDA's packages (PyPI's aarch64 wheels of some releases)."""
import json
import re
import sys
import sysconfig
from pathlib import Path

# A requirement (nvidia-cublas==13.1; ...) or a site-packages entry (nvidia/, cuda_bindings-13.5.dist-info).
CUDA = re.compile(r"^(nvidia|cuda|triton)([-_.=<>;~! ]|$)", re.I)


def kind(report: str) -> int:
    items = [i for i in json.loads(Path(report).read_text())["install"]
             if i["metadata"]["name"].lower() == "torch"]
    if not items:
        print("ERROR: pip's report names no torch", file=sys.stderr)
        return 1
    meta = items[0]["metadata"]
    cuda = any(CUDA.match(dep) for dep in meta.get("requires_dist") or [])
    build = "cpu" if meta["version"].endswith("+cpu") or not cuda else "cuda"
    print(build, meta["version"])
    return 0


def size() -> int:
    site = Path(sysconfig.get_paths()["purelib"])
    total = 0
    for top in site.iterdir():
        if top.name == "torch" or CUDA.match(top.name):
            total += sum(f.stat().st_size for f in top.rglob("*") if f.is_file() and not f.is_symlink())
    print(total // 2**20)
    return 0


def main() -> int:
    if sys.argv[1:2] == ["kind"] and len(sys.argv) == 3:
        return kind(sys.argv[2])
    if sys.argv[1:] == ["size"]:
        return size()
    print("ERROR: usage: torch_build.py kind REPORT | size", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
