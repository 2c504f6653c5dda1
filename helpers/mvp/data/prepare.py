"""`prepare`: GSM8K parquet for RL and SFT, and the model, on shared storage.

What is there and valid is skipped. Valid means the MANIFEST.json beside the
files names the same source and every file's sha256 matches, so a truncated
or edited file is rebuilt. Files are written under temp names and renamed, the
manifest last, so an interrupted run leaves nothing under a final name that a
later run would trust."""
import errno
import os
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ..worker import fsutil, redact
from . import gsm8k
from ..core import log
from ..worker.errors import MvpError
from ..core.layout import Layout

# Test-only fault injection: stop before the first rename so a test can kill
# the process mid-write (see tests/integration/data_prepare.bats).
PAUSE_ENV = "MVP_FAULT_PAUSE_BEFORE_RENAME"


def _valid(directory: Path, source: str) -> dict:
    manifest = fsutil.read_json(directory / "MANIFEST.json")
    if not manifest or manifest.get("source") != source:
        return {}
    for name, meta in manifest.get("files", {}).items():
        f = directory / name
        if not f.is_file() or f.stat().st_size != meta["bytes"] or fsutil.sha256_file(f) != meta["sha256"]:
            return {}
    return manifest


def _write_set(directory: Path, tables: dict, source: str, extra: dict) -> dict:
    import pyarrow.parquet as pq
    directory.mkdir(parents=True, exist_ok=True)
    fsutil.remove_stale_temps(directory)
    # Whatever was there is no longer trusted until the new manifest lands.
    (directory / "MANIFEST.json").unlink(missing_ok=True)
    temps = {}
    try:
        for name, table in tables.items():
            tmp = temps[name] = directory / f"{fsutil.TMP_PREFIX}{name}.{os.getpid()}"
            pq.write_table(table, tmp)
    except BaseException:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    if os.environ.get(PAUSE_ENV) == "1":
        print(f"{PAUSE_ENV}: pid {os.getpid()} paused before renaming {sorted(map(str, temps.values()))}",
              file=sys.stderr, flush=True)
        time.sleep(3600)
    files = {}
    for name, tmp in temps.items():
        files[name] = {"rows": tables[name].num_rows, "bytes": tmp.stat().st_size, "sha256": fsutil.sha256_file(tmp)}
        os.replace(tmp, directory / name)
    manifest = {"source": source, "created_at": datetime.now(timezone.utc).isoformat(), "files": files, **extra}
    fsutil.write_json(directory / "MANIFEST.json", manifest)
    return manifest


def _rows_text(manifest: dict) -> str:
    return "+".join(str(m["rows"]) for m in manifest["files"].values())


def prepare_data(shared_root: Path, source_setting: str, force: bool, min_free_mb: int) -> None:
    import pyarrow as pa
    source_key = source_setting if source_setting in ("hf", "synthetic") else f"dir:{Path(source_setting).resolve()}"
    rl_dir, sft_dir = Layout(shared_root).gsm8k, Layout(shared_root).gsm8k_sft
    rl_ok = not force and _valid(rl_dir, source_key)
    sft_ok = not force and _valid(sft_dir, source_key)
    if rl_ok:
        log.skip(f"GSM8K RL parquet ({rl_dir}: manifest and sha256 match, {_rows_text(rl_ok)} rows)")
    if sft_ok:
        log.skip(f"GSM8K SFT parquet ({sft_dir}: manifest and sha256 match, {_rows_text(sft_ok)} rows)")
    if rl_ok and sft_ok:
        return
    fsutil.require_free(shared_root, min_free_mb, "building the GSM8K parquet")
    t0 = time.perf_counter()
    splits, data_source, source = gsm8k.read_source(source_setting)
    if not rl_ok:
        tables, unparsable = {}, {}
        for split in ("train", "test"):
            rows, bad = gsm8k.rl_rows(split, splits[split], data_source)
            if bad:
                log.warn(f"{split}: {len(bad)} answer(s) without a parsable '#### N' left out of the RL "
                    f"parquet, at index {', '.join(map(str, bad))}")
            unparsable[split] = bad
            tables[f"{split}.parquet"] = pa.Table.from_pylist(rows, schema=gsm8k.rl_schema())
        m = _write_set(rl_dir, tables, source, {"data_source": data_source, "unparsable_index": unparsable})
        log.step(f"GSM8K RL parquet: {_rows_text(m)} rows into {rl_dir} ({time.perf_counter() - t0:.2f}s)")
    if not sft_ok:
        tables = {f"{name}.parquet": pa.Table.from_pylist(gsm8k.sft_rows(splits[split]), schema=gsm8k.sft_schema())
                  for name, split in (("train", "train"), ("val", "test"))}
        m = _write_set(sft_dir, tables, source, {"data_source": data_source})
        log.step(f"GSM8K SFT parquet: {_rows_text(m)} rows into {sft_dir} ({time.perf_counter() - t0:.2f}s)")


def _model_valid(target: Path) -> bool:
    manifest = fsutil.read_json(target / "MANIFEST.json")
    if not manifest:
        return False
    return all((target / rel).is_file() and (target / rel).stat().st_size == size
               for rel, size in manifest.get("files", {}).items())


TINY_SOURCE = "tiny"
TINY_PREFIX = "mvp-tiny/"
TINY_SEED = 0


# A Hugging Face id (ORG/NAME or NAME), which is also the model's place under
# common/models: no '..', no absolute path, nothing a shell would re-parse.
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?\Z")


def prepare_model(shared_root: Path, model_id: str, source: str, token: str = "") -> None:
    if not MODEL_ID.match(model_id) or ".." in model_id:
        raise MvpError(f"model id '{model_id}' is not a Hugging Face id (ORG/NAME of A-Z a-z 0-9 . _ -); it names "
                       "the model's directory under common/models")
    if source == TINY_SOURCE and not model_id.startswith(TINY_PREFIX):
        raise MvpError(f"MVP_MODEL_SOURCE=tiny builds a tiny random model, which must not pass for {model_id}; "
                       f"name it MVP_MODEL_ID={TINY_PREFIX}<name>")
    target = Layout(shared_root).model(model_id)
    if _model_valid(target):
        log.skip(f"model {model_id} ({target} is complete per its MANIFEST.json)")
        return
    if target.exists():
        raise MvpError(f"model directory {target} exists but is incomplete (no valid MANIFEST.json); "
                       "move it away and run again")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{fsutil.TMP_PREFIX}{target.name}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        if source == TINY_SOURCE:
            _build_tiny(tmp, Layout(shared_root).gsm8k_sft / "train.parquet")
            origin = f"tiny:seed={TINY_SEED}"
        elif source:
            src = Path(source)
            if not (src / "config.json").is_file():
                raise MvpError(f"MVP_MODEL_SOURCE={source} has no config.json; point it at a model directory")
            shutil.copytree(src, tmp)
            origin = f"dir:{src.resolve()}"
        else:
            _download(model_id, tmp, shared_root, token)
            origin = f"hf:{model_id}"
        files = {str(p.relative_to(tmp)): p.stat().st_size for p in sorted(tmp.rglob("*")) if p.is_file()}
        fsutil.write_json(tmp / "MANIFEST.json", {"model_id": model_id, "source": origin, "files": files,
                                                  "created_at": datetime.now(timezone.utc).isoformat()})
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.step(f"model {model_id}: {len(files)} files into {target}")


def _build_tiny(dest: Path, sft_train: Path) -> None:
    """The tokenizer learns its vocabulary from the GSM8K SFT rows made above
    (questions and worked answers), whatever their source."""
    import pyarrow.parquet as pq
    from . import tiny_model
    messages = pq.read_table(sft_train, columns=["messages"]).column("messages").to_pylist()
    texts = [turn["content"] for row in messages[:tiny_model.TOKENIZER_ROWS] for turn in row]
    dest.mkdir()
    tiny_model.build(dest, texts, seed=TINY_SEED)


def _download(model_id: str, dest: Path, shared_root: Path, token: str) -> None:
    """token: HF_TOKEN (30 sends it on stdin), for gated models; given to the
    hub client as an argument, never written or logged."""
    # huggingface_hub reads its cache location from the environment.
    os.environ.setdefault("HF_HOME", str(Layout(shared_root).hf_home))
    hint = ("put a local copy in MVP_MODEL_SOURCE=<directory>, or set MVP_SKIP_MODEL=1 for runs with the "
            "CPU stand-in")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise MvpError(f"model {model_id}: huggingface_hub is not installed here, so the model cannot be "
                       f"downloaded; {hint}") from None
    try:
        snapshot_download(repo_id=model_id, local_dir=str(dest), token=token or None)
    except Exception as exc:
        why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        why = why.replace(token, redact.MASK) if token else why
        if any(word in why.lower() for word in ("gated repo", "401", "403", "unauthorized")):
            hint = "a gated model needs HF_TOKEN (exported, a token with access to it); or " + hint
        raise MvpError(f"model {model_id}: download from the Hugging Face hub failed ({why}); {hint}") from None


def main(args, settings) -> int:
    root = settings.shared_root
    try:
        prepare_data(root, settings.gsm8k_source, args.force, settings.min_free_mb)
        if settings.skip_model:
            log.skip("model (MVP_SKIP_MODEL=1)")
            return 0
        token = sys.stdin.read().strip() if args.token_stdin else ""
        prepare_model(root, settings.model_id, settings.model_source, token)
    except OSError as exc:
        # pyarrow reports a full disk as OSError with the text, not always the errno.
        if exc.errno != errno.ENOSPC and "No space left" not in str(exc):
            raise
        # Every file is written under a temp name and renamed: nothing
        # half-written is left as final; the next run removes the temps.
        raise MvpError(f"no space left under {root} while preparing data and model; free space "
                       "and run scripts/30_prepare_data_and_model.sh again") from None
    return 0
