"""Asks the package registry for each pin of a lock view (helpers/trainer/lock.py
--for) on one platform: among the files the registry lists for the pinned
release, one whose sha256 is one of the pin's must be a wheel pip installs on
that Python and platform (pip's own tag list for them). One request a pin (the
project's index page, PEP 691 JSON), in parallel; no wheel is downloaded: the
registry's sha256 of a file is that of its bytes, which pip checks at install.

Usage: registry_finds.py PYTHON ARCH VIEW   (PYTHON like 3.13, ARCH like aarch64)
Prints one line per pin the registry has no such file for and exits 1 if any."""
import functools
import json
import re
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from pip._internal.utils.compatibility_tags import get_supported
from pip._vendor.packaging.utils import canonicalize_name, canonicalize_version, parse_wheel_filename

REGISTRY = "https://pypi.org/simple"


@functools.lru_cache(maxsize=None)
def version_of(field: str) -> str:
    return canonicalize_version(field)


def release_files(name: str, version: str) -> list:
    """The registry's files of NAME's release VERSION: {filename, hashes}."""
    request = urllib.request.Request(f"{REGISTRY}/{canonicalize_name(name)}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    for attempt in range(3):
        try:
            with urllib.request.urlopen(request, timeout=60) as resp:
                files = json.load(resp)["files"]
            break
        except urllib.error.HTTPError as e:
            if e.code == 404 or attempt == 2:
                return []
        except OSError:
            if attempt == 2:
                raise
        time.sleep(2 * (attempt + 1))
    wanted = canonicalize_version(version)
    # A wheel's name is NAME-VERSION-...: its second field, before any parse.
    return [f for f in files if f["filename"].endswith(".whl")
            and version_of(f["filename"].split("-")[1]) == wanted]


def problem(supported: set, line: str):
    m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
    hashes = set(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
    if not m or not hashes:
        return f"{line}: not NAME==VERSION --hash=sha256:..."
    pin = f"{m.group(1)}=={m.group(2)}"
    files = release_files(m.group(1), m.group(2))
    fits = [f for f in files if supported & set(parse_wheel_filename(f["filename"])[3])]
    if not fits:
        return f"{pin}: no wheel of it on {REGISTRY} fits this Python and platform"
    if not any(f["hashes"].get("sha256") in hashes for f in fits):
        return f"{pin}: none of its wheels for this Python and platform on {REGISTRY} has one of the pin's hashes"
    return None


def main(python: str, arch: str, view: str) -> int:
    platforms = [f"manylinux_2_{m}_{arch}" for m in range(28, 16, -1)] + [f"manylinux2014_{arch}"]
    nodot = python.replace(".", "")
    supported = set(get_supported(version=nodot, platforms=platforms, impl="cp", abis=[f"cp{nodot}"]))
    lines = [l for l in open(view, encoding="utf-8").read().splitlines() if l.strip()]
    with ThreadPoolExecutor(16) as pool:
        problems = [p for p in pool.map(lambda l: problem(supported, l), lines) if p]
    for p in problems:
        print(p)
    return 1 if problems or not lines else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
