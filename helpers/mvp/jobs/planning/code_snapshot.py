"""The `snapshot` command (31): an immutable verl code snapshot made
(cluster/snapshot.py), then the preflight's facts of its config derived from
it once, for the submissions that read them."""
from pathlib import Path
from typing import Optional

from ...cluster import snapshot
from ...core import log
from ...worker import kv
from ...worker.errors import MvpError
from . import preflight, workloads


def derive_preflight_facts(target: Path, settings) -> None:
    """What the preflight needs from the snapshot's config (a Hydra compose,
    about a second each) is derived now, once: submissions then read it."""
    for module in workloads.trainer_modules():
        try:
            snap = preflight.SnapshotConfig(target, module, settings.layout.preflight, label=target.name)
        except MvpError as exc:
            log.warn(f"{exc} (jobs of {module} will be refused by the preflight)")
            continue
        where = snap.reward_key()
        log.info(f"preflight facts of {target.name} {module}: config '{snap.config_name}', {len(snap.keys)} keys"
                 + (f", reward function read from {where}" if where else ""))


def git_facts(args) -> Optional[dict]:
    """What 31 --git-repo found (the commit's full sha and subject, the rev
    asked for), for the manifest; None for a plain tree."""
    if not args.git_commit:
        return None
    return {"source_path": args.git_repo, "git_commit": args.git_commit, "git_dirty": False,
            "git_subject": args.git_subject, "git_rev": args.git_rev, "git_toplevel": args.git_repo}


def main(args, settings) -> int:
    target = snapshot.create(settings.verl_src, settings.shared_root, settings.code_id, git_facts(args))
    derive_preflight_facts(target, settings)
    kv.emit(("code_id", target.name))
    return 0
