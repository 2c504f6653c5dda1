"""Exits 1 with one line when the Python running it has CUDA's packages
(nvidia-*, triton) installed. The CPU machines the trainer venv is for have no
use for them and they cost gigabytes: their presence means a torch spec other
than torch==2.13.0 (the CPU build on disk) won somewhere.

Usage: <venv>/bin/python helpers/trainer/no_cuda.py   (run by scripts/12_install_py_deps.sh)"""
import sys
from importlib import metadata


def cuda_packages() -> list:
    names = {(dist.metadata["Name"] or "").lower() for dist in metadata.distributions()}
    return sorted(n for n in names if n.startswith("nvidia-") or n == "triton")


def main() -> int:
    found = cuda_packages()
    if found:
        print(f"ERROR: CUDA packages got into {sys.prefix} ({', '.join(found)}): a torch spec other than "
              f"torch==2.13.0 pulled the CUDA build; remove {sys.prefix} and run make setup again", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
