"""verl issue 7401: SFT resumed from a checkpoint saved at an epoch's end
trains nothing of the next epoch and exits 0.

verl 0.9.1's sft_trainer_ray.py: fit starts at
`start_epoch = global_step // self.steps_per_epoch` (steps_per_epoch is
`len(self.train_dataloader)`, a StatefulDataLoader with drop_last=True over
the train rows in batches of data.train_batch_size), and the checkpoint
handler (verl/utils/checkpoint/checkpoint_handler.py load_checkpoint) restores
the saved dataloader state, which at an epoch's end is exhausted: the first
epoch iterated yields no batch. So a checkpoint is at the boundary when its
global_step is a multiple of steps_per_epoch. The runbook refuses such a
resume in one line rather than let a job end SUCCEEDED having trained
nothing. A snapshot with the fix (verl PR 7974 passes steps_per_epoch to the
checkpoint handler) is not refused."""
import re
from pathlib import Path
from typing import Optional

from ...worker.jobdir import JobDir
from ...worker.errors import MvpError

ISSUE = "https://github.com/verl-project/verl/issues/7401"
# SFT's tqdm bar over the dataloader: `Epoch 1/2:  50%|...| 2/4 [` (total: steps per epoch).
BAR = re.compile(r"Epoch \d+/\d+:[^|\n]*\|[^|\n]*\|\s*\d+/(\d+) \[")
HANDLER = Path("verl/utils/checkpoint/checkpoint_handler.py")


def steps_per_epoch(jd: JobDir) -> Optional[int]:
    """verl's own number, from the job's tqdm bar; else the train rows // batch
    (the parquet's metadata), None when neither can be read."""
    for path in (jd.driver_log, jd.live_log):
        if path.is_file():
            totals = BAR.findall(path.read_text(encoding="utf-8", errors="replace"))
            if totals:
                return int(totals[-1])
    overrides = jd.resolved().get("trainer_overrides") or {}
    try:
        import pyarrow.parquet as pq
        files = str(overrides["data.train_files"]).strip("[]'\" ").split(",")
        rows = sum(pq.read_metadata(f.strip("'\" ")).num_rows for f in files)
        return rows // int(overrides["data.train_batch_size"])
    except (KeyError, ValueError, OSError, ImportError):
        return None


def fixed_in(code_path: Path) -> bool:
    try:
        return "steps_per_epoch" in (code_path / HANDLER).read_text(encoding="utf-8")
    except OSError:
        return False


def check(old: JobDir, step: int, resumed_from: str, code_path: Path) -> None:
    """Refuses, in one line, an SFT resume from an epoch-boundary checkpoint."""
    per_epoch = steps_per_epoch(old)
    if not per_epoch or step % per_epoch or fixed_in(code_path):
        return
    raise MvpError(f"--resume-from {resumed_from}: step {step} ends epoch {step // per_epoch} ({per_epoch} steps per "
                   f"epoch); verl resumes SFT from an epoch-boundary checkpoint by skipping the next epoch and "
                   f"exiting 0 having trained nothing (verl #7401, {ISSUE}): resume from a mid-epoch checkpoint "
                   "(a save_freq that is not a multiple of the steps per epoch) or start a new job")
