"""Immutable verl code snapshots: <shared_root>/common/code/verl/<code_id>/.

A snapshot is built in a temp directory and renamed into place; files that
are unchanged since the newest snapshot are hard-linked to it, so a second
snapshot of the same tree costs almost no disk. Snapshots are read-only and
never replaced: the same content under the same id is a SKIP, other content
under an existing id is refused."""
import hashlib
import os
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from ..worker import fsutil
from ..core import log
from ..worker.errors import MvpError
from ..core.layout import Layout, check_id

EXCLUDED_DIRS = {".git", "__pycache__", "build", "dist", ".eggs", ".pytest_cache", ".mypy_cache", ".tox", ".venv"}
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".so", ".o")
MARKER_FILE = "mvp_marker.py"
MANIFEST = "MANIFEST.json"
MARKER_LINE = re.compile(r'^MARKER = "([^"]+)"$', re.MULTILINE)


def code_root(shared_root: Path) -> Path:
    return Layout(shared_root).snapshots


def marker_of(path: Path) -> Optional[str]:
    try:
        m = MARKER_LINE.search((path / MARKER_FILE).read_text(encoding="utf-8"))
    except OSError:
        return None
    return m.group(1) if m and (path / MANIFEST).is_file() else None


def newest(shared_root: Path) -> Optional[str]:
    root = code_root(shared_root)
    best = None
    if root.is_dir():
        for d in root.iterdir():
            manifest = fsutil.read_json(d / MANIFEST) if not d.name.startswith(".") else None
            if manifest and (best is None or manifest["created_at"] > best[0]):
                best = (manifest["created_at"], d.name)
    return best[1] if best else None


def _files(src: Path) -> dict:
    """relative path -> sha256 of every file the snapshot keeps."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.endswith(EXCLUDED_SUFFIXES):
                continue
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            out[str(p.relative_to(src))] = fsutil.sha256_file(p)
    return out


def _digest(files: dict) -> str:
    h = hashlib.sha256()
    for rel, sha in sorted(files.items()):
        h.update(f"{rel}\0{sha}\n".encode())
    return h.hexdigest()


def _git(src: Path) -> dict:
    """The commit of the git checkout src is part of, when git tracks src's
    files: a tree inside a checkout that ignores it (a download under the
    runbook's own ignored .mvp/cache/) is no commit of that checkout."""
    try:
        tracked = subprocess.run(["git", "-C", str(src), "ls-files", "--", "."], capture_output=True, text=True, check=True).stdout
        if not tracked.strip():
            return {"git_commit": None, "git_dirty": None}
        commit = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "."],
                                    capture_output=True, text=True, check=True).stdout.strip())
        top = subprocess.run(["git", "-C", str(src), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
        return {"git_commit": commit, "git_dirty": dirty, "git_toplevel": top}
    except (OSError, subprocess.CalledProcessError):
        return {"git_commit": None, "git_dirty": None}


def default_id(src: Path, digest: str, git: dict) -> str:
    """From the tree's commit when it is a clean git tree, else its content."""
    if git.get("git_commit") and git.get("git_dirty") is False:
        return f"git-{git['git_commit'][:12]}"
    return f"src-{digest[:12]}"


def create(src: Path, shared_root: Path, code_id: str, commit: Optional[dict] = None) -> Path:
    """The snapshot of src under code_id (default: default_id), or the
    existing one when it holds the same content. commit: src is the tree of
    that git commit (31 --git-repo), as the snapshot command's git_facts gives it."""
    if not (src / "verl" / "__init__.py").is_file():
        if commit:
            raise MvpError(f"commit {commit['git_commit']} of {commit['source_path']} is not a verl source tree "
                           "(no verl/__init__.py); give a commit of a verl checkout")
        raise MvpError(f"MVP_VERL_SRC: {src} is not a verl source tree (no verl/__init__.py); "
                       "git clone https://github.com/volcengine/verl.git there, or point MVP_VERL_SRC at one")
    files = _files(src)
    digest = _digest(files)
    git = dict(commit) if commit else {"source_path": str(src), **_git(src)}
    code_id = check_id(code_id or default_id(src, digest, git), "CODE_ID")
    root = code_root(shared_root)
    target = root / code_id
    if _same_already(target, code_id, digest):
        return target
    root.mkdir(parents=True, exist_ok=True)
    base_id = newest(shared_root)
    tmp = root / f"{fsutil.TMP_PREFIX}{code_id}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        linked, copied, size = _fill(tmp, src, files, root / base_id if base_id else None)
        _seal(tmp, code_id, {"code_id": code_id, **git,
                             "file_count": len(files), "size_bytes": size, "content_sha256": digest,
                             "hard_linked_from": base_id if linked else None, "hard_linked_files": linked,
                             "created_at": datetime.now(timezone.utc).isoformat(), "files": files})
        os.rename(tmp, target)
    except FileExistsError:
        raise MvpError(f"code snapshot {code_id} appeared while this one was built; run again to compare") from None
    except OSError as exc:
        if target.exists() and not tmp.exists():
            raise
        raise MvpError(f"could not build code snapshot {code_id}: {exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.step(f"code snapshot {code_id}: {len(files)} files ({copied} copied, {linked} hard-linked from {base_id}) at {target}")
    return target


def _same_already(target: Path, code_id: str, digest: str) -> bool:
    """True (a SKIP) when target holds this content already; refuses other
    content under the same id: snapshots are immutable."""
    if not target.exists():
        return False
    existing = fsutil.read_json(target / MANIFEST)
    if existing and existing.get("content_sha256") == digest:
        log.skip(f"code snapshot {code_id} ({target} holds the same content)")
        return True
    raise MvpError(f"code snapshot {code_id} already exists at {target} with other content; snapshots are "
                   "immutable, pick a new CODE_ID")


def _fill(tmp: Path, src: Path, files: dict, base: Optional[Path]) -> tuple:
    """Puts every file in tmp: a hard link to the newest snapshot's copy
    when unchanged (costs no disk), else a read-only copy. Returns (linked,
    copied, bytes)."""
    base_files = ((fsutil.read_json(base / MANIFEST) if base else None) or {}).get("files", {})
    linked = copied = size = 0
    for rel, sha in files.items():
        dst = tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if base_files.get(rel) == sha:
            os.link(base / rel, dst)
            linked += 1
        else:
            shutil.copy2(src / rel, dst)
            os.chmod(dst, 0o444)
            copied += 1
        size += dst.stat().st_size
    return linked, copied, size


def _seal(tmp: Path, code_id: str, manifest: dict) -> None:
    """The marker the job's driver reports (which snapshot it imported) and
    the manifest (what the snapshot holds)."""
    (tmp / MARKER_FILE).write_text(f'"""Which code snapshot this is (written by 31_snapshot_verl_code.sh)."""\n'
                                   f'MARKER = "{code_id}"\n')
    fsutil.write_json(tmp / MANIFEST, manifest)
