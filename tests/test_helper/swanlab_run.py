"""A job's swanlab tracking without a cluster (tests/unit/tracking.bats).

  swanlab_run.py run CODE_PATH JOB_DIR runbook|bare [BACKENDS]
      runs the snapshot's own verl/utils/tracking.py `Tracking` with
      trainer.logger BACKENDS (comma-separated; console,swanlab when not
      given; console imports torch, ~2.5 s), logs steps 1-3 of `score` (0.1 x
      step) and finishes. `runbook`: the environment helpers/mvp/jobs/planning/tracking.py
      `apply` computes for the job is set first; `bare`: none of it.
      verl's package __init__ files (they import torch, ~10 s) are skipped:
      verl and verl.utils are bound to the snapshot's directories, so
      tracking.py and verl.utils.logger are the snapshot's files.
  swanlab_run.py read RUN_FILE
      prints `step key value` for each scalar record of a swanlab run file
      (run-*.swanlab), read with swanlab's own reader, then `finished` when
      the run has its finish record."""
import os
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "helpers"))


def run(code_path: Path, job_dir: Path, how: str, names: list) -> None:
    if how == "runbook":
        from mvp.jobs.planning import tracking
        from mvp.worker.jobdir import JobDir
        env = {}
        tracking.apply({"trainer.logger": "[" + ",".join(names) + "]"}, env, JobDir(job_dir), job_dir.name, code_path,
                       "the test")
        os.environ.update(env)
    for name, path in (("verl", code_path / "verl"), ("verl.utils", code_path / "verl" / "utils")):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package
    from verl.utils.tracking import Tracking
    tracker = Tracking(project_name="unit", experiment_name=job_dir.name, default_backend=names,
                       config={"trainer": {"total_training_steps": 3}})
    for step in (1, 2, 3):
        tracker.log({"score": 0.1 * step}, step=step)
    tracker.finish()


def read(run_file: Path) -> None:
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record
    from swanlab.sdk.internal.core_python.store import DataStoreReader
    reader = DataStoreReader()
    reader.open(run_file)
    for blob in reader:
        record = Record()
        record.ParseFromString(blob)
        if record.HasField("scalar"):
            print(record.scalar.step, record.scalar.key, round(record.scalar.value.number, 6))
        elif record.HasField("finish"):
            print("finished")
    reader.close()


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], (sys.argv[5:] or ["console,swanlab"])[0].split(","))
    else:
        read(Path(sys.argv[2]))
