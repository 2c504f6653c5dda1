"""A job's private environment variables (names holding TOKEN, SECRET,
PASSWORD or KEY) reach its processes without travelling in Ray's runtime_env.

Why: Ray starts every worker process of a job with the serialized
runtime_env, env_vars included, on its command line (setup_worker.py, then
default_worker.py), and its runtime_env agent writes that runtime_env into
runtime_env_agent.log. So the submitter keeps the private values in Ray's
GCS key-value store (the head's memory: never a file, never an argv) and the
job's runtime_env carries only where they are: MVP_PRIVATE_ENV=<key>, and
this module as its worker_process_setup_hook.

- load_in_worker: the hook. Ray runs it in every worker process of the job
  (tasks and actors) before any task code, with the worker connected.
- load_in_driver: launch.py calls it before it becomes the trainer.
- Store: the submitter's side (put, delete, sweep of ended jobs).

This file is on the job's PYTHONPATH: standard library, plus Ray inside the
functions (the job's nodes have it)."""
import json
import os

NAMESPACE = b"mvp"
KEY_PREFIX = "private_env/"
REF_VAR = "MVP_PRIVATE_ENV"
HOOK = "mvp_private_env.load_in_worker"
ENDED = ("SUCCEEDED", "FAILED", "STOPPED")


def key_of(submission_id: str) -> str:
    return KEY_PREFIX + submission_id


class MissingPrivateEnv(RuntimeError):
    pass


def _apply(blob, key: str) -> int:
    if blob is None:
        raise MissingPrivateEnv(
            f"{REF_VAR}={key}: this job's private environment variables are not in the cluster's store "
            "(the head restarted since the job was submitted?); submit the job again")
    values = json.loads(blob)
    os.environ.update(values)
    return len(values)


def load_in_worker() -> None:
    key = os.environ.get(REF_VAR)
    if not key:
        return
    from ray.experimental import internal_kv
    _apply(internal_kv._internal_kv_get(key.encode(), namespace=NAMESPACE), key)


def load_in_driver() -> int:
    """The driver's own copy (RAY_ADDRESS is the GCS address: Ray's job
    supervisor sets it for every driver). Returns how many were set."""
    key = os.environ.get(REF_VAR)
    if not key:
        return 0
    return _apply(Store(os.environ["RAY_ADDRESS"]).client.internal_kv_get(key.encode(), NAMESPACE), key)


class Store:
    """The submitter's side. Creating it imports Ray's GCS client (~0.5 s),
    so the runbook does so only for a job that has private variables."""

    def __init__(self, gcs_address: str):
        from ray._raylet import GcsClient
        self.client = GcsClient(address=gcs_address)

    def put(self, submission_id: str, values: dict) -> str:
        key = key_of(submission_id)
        self.client.internal_kv_put(key.encode(), json.dumps(values).encode(), True, NAMESPACE)
        return key

    def delete(self, submission_id: str) -> None:
        self.client.internal_kv_del(key_of(submission_id).encode(), False, NAMESPACE)

    def submission_ids(self) -> list:
        keys = self.client.internal_kv_keys(KEY_PREFIX.encode(), NAMESPACE) or []
        return sorted(k.decode()[len(KEY_PREFIX):] for k in keys)

    def sweep(self, status_of) -> list:
        """Deletes the values of jobs that have ended; status_of(id) is the
        job's status in Ray, or None when Ray does not know it (yet: another
        submitter may be between put and submit, so those stay)."""
        gone = [sid for sid in self.submission_ids() if status_of(sid) in ENDED]
        for sid in gone:
            self.delete(sid)
        return gone
