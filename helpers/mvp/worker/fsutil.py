"""Atomic writes: a reader sees the old file or the new one, never half of one."""
import hashlib
import itertools
import json
import os
from pathlib import Path
from typing import Any

TMP_PREFIX = ".tmp-"
_serial = itertools.count()


# Group-readable, nothing for others: job directories hold redacted
# configuration, but nothing on shared storage is for every user of the host.
FILE_MODE = 0o640


def write_text(path: Path, text: str, mode: int = FILE_MODE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique per process and call; O_EXCL never reuses another writer's file.
    tmp = str(path.parent / f"{TMP_PREFIX}{path.name}.{os.getpid()}.{next(_serial)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def require_free(path: Path, min_mb: int, before: str) -> None:
    """Refuses, in one line, to start writing where less than min_mb is free."""
    from .errors import MvpError
    while not path.exists() and path != path.parent:  # the file system it will be made on
        path = path.parent
    st = os.statvfs(path)
    free_mb = st.f_bavail * st.f_frsize // (1 << 20)
    if free_mb < min_mb:
        raise MvpError(f"only {free_mb} MB free under {path}, less than MVP_MIN_FREE_MB={min_mb}, before {before}; "
                       "free some space (or lower MVP_MIN_FREE_MB)")


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_cache(path: Path, data: Any) -> None:
    """write_json for a cache entry: one that cannot be written only costs time."""
    try:
        write_json(path, data)
    except OSError:
        pass


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def read_json_lines(path: Path) -> list:
    """The JSON objects of a JSON-lines file; a missing file or a torn last
    line (a writer killed mid-line) reads as what was complete."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def remove_stale_temps(directory: Path) -> None:
    """Temp files of a run that was killed before its rename."""
    if directory.is_dir():
        for p in directory.glob(TMP_PREFIX + "*"):
            if p.is_file():
                _remove(str(p))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
