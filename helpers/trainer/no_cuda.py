"""Exits 1 with one line when the Python running it has CUDA's packages
(nvidia-* but nvidia-ml-py, cuda-*, triton) installed. CI's rule alone (MVP_TORCH_CPU_ONLY=1, set by
.ci/run): CI's machines keep torch's CPU build, and CUDA's packages there
would mean a torch spec other than requirements.in's won somewhere, at
gigabytes of disk. A user's setup takes any build (docs/setup.md).

Usage: <venv>/bin/python helpers/trainer/no_cuda.py   (run by scripts/12_install_py_deps.sh
when MVP_TORCH_CPU_ONLY=1)"""
import re
import sys
from importlib import metadata

# What only torch's CUDA build brings: nvidia-* (but nvidia-ml-py, NVML's
# Python bindings, which swanlab requires and which hold no CUDA library),
# cuda-* and triton. lock.py leaves the same names out of the lock.
CUDA_ONLY = re.compile(r"^(nvidia-(?!ml-py$)|cuda-|triton$)")


def cuda_packages() -> list:
    names = {(dist.metadata["Name"] or "").lower() for dist in metadata.distributions()}
    return sorted(n for n in names if CUDA_ONLY.match(n))


def main() -> int:
    found = cuda_packages()
    if found:
        print(f"ERROR: CUDA packages got into {sys.prefix} ({', '.join(found)}), and MVP_TORCH_CPU_ONLY=1 (CI's rule) "
              f"refuses them: put a place with torch's CPU build first in MVP_TORCH_SOURCES, remove {sys.prefix} "
              f"and run make setup again", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
