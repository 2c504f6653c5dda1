"""The offline bundle's pins: helpers/trainer/requirements.lock's name==version
lines whose environment marker holds on the GPU host (CPython X.Y, Linux,
x86_64), minus the names helpers/offline/leaves-out.txt and --host-has give.

The lock covers CPython 3.10-3.13 on x86_64 and aarch64, so a name may be
pinned once per Python with a marker (`cachetools==7.3.3 ; python_version ==
"3.10"`): without the marker, the bundle would ask for every one of them.

Usage: python3 pins.py LOCK LEAVES_OUT PYTHON_VERSION [HOST_HAS]
Standard library, plus `packaging` (from the venv, else pip's own copy)."""
import re
import sys

try:
    from packaging.markers import Marker
except ImportError:  # a bare python3: pip carries the same module
    from pip._vendor.packaging.markers import Marker

PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;]+)\s*(?:;(.*?))?(?:\s--hash=.*)?$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: str, leaves_out: str, version: str, host_has: str = "") -> list:
    env = {"python_version": version, "python_full_version": f"{version}.0", "platform_machine": "x86_64",
           "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    out = {norm(line.split()[0]) for line in open(leaves_out) if line.strip() and not line.startswith("#")}
    out |= {norm(n) for n in host_has.split(",") if n.strip()}
    chosen = []
    for line in open(lock):
        m = PIN.match(line.strip())
        if m and norm(m[1]) not in out and (not m[3] or Marker(m[3].strip()).evaluate(env)):
            chosen.append(f"{m[1]}=={m[2]}")
    return chosen


if __name__ == "__main__":
    print("\n".join(pins(*sys.argv[1:5])))
