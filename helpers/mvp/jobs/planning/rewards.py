"""Which reward verl will call for each `data_source` of an RL job's parquet,
found before anything is written or submitted: a value no reward serves
otherwise costs a cluster start-up and the trainer's model loading before
every rollout fails in the reward worker.

verl 0.9.1's reward worker calls the job's custom reward function when
`reward.custom_reward_function.path` is set (the top-level
`custom_reward_function` is moved there: experimental/reward_loop/
reward_loop.py:58-60, used at :146-148), and otherwise its reward manager's
`compute_score`, which is `default_compute_score` of
`verl/utils/reward_score/__init__.py` (experimental/reward_loop/
reward_manager/naive.py:29). That function knows the data sources it names
and raises NotImplementedError for any other. Each release names its own, so
they are read from the job's snapshot, with `ast` (never imported): the
`data_source == "..."`, `data_source in [...]` and `data_source.startswith(...)`
tests of the function. A function whose tests cannot be read so (a name
looked up elsewhere, another method, no raise) is not judged: the job is
not refused, and a line says why.

The val files count only when verl scores them (`validates`: before
training, or every `trainer.test_freq` steps). A reward model
(`reward_model.enable`) or the user's own reward manager
(`source: importlib`) scores without `default_compute_score`: not judged
either. The values of each file are kept in the preflight cache by the
file's size and mtime, the snapshot's reading by its file's."""
import hashlib
import json
from pathlib import Path
from typing import Optional

from ...worker import fsutil
from ...worker.errors import MvpError

CACHE_VERSION = 1
SCORE_FILE = "verl/utils/reward_score/__init__.py"
SCORE_FUNCTION = "default_compute_score"
REWARD_FN_KEYS = ("reward.custom_reward_function.path", "custom_reward_function.path")
REWARD_MODEL_KEYS = ("reward.reward_model.enable", "reward_model.enable")
MANAGER_SOURCE_KEYS = ("reward.reward_manager.source", "reward_model.reward_loop_source")
SHOWN_SOURCES = 4
FIX = ("give the job its reward function: --reward-fn FILE[:NAME] with FILE under user/code/ (the JobSpec's "
       "reward_fn_path), e.g. templates/rewards/shaped_gsm8k.py copied there")


class Unreadable(Exception):
    """default_compute_score's data sources cannot be read statically: why."""


# --------------------------------------------------------- the job's values --
def _cached(cache_dir: Optional[Path], kind: str, key: list, make):
    """make(), kept in the preflight cache under `kind` by `key` (stats)."""
    if cache_dir is None:
        return make()
    digest = hashlib.sha256(json.dumps([CACHE_VERSION, kind, key]).encode()).hexdigest()[:32]
    cache = Path(cache_dir) / "rewards" / f"{digest}.json"
    hit = fsutil.read_json(cache, None)
    if isinstance(hit, dict) and "value" in hit:
        return hit["value"]
    value = make()
    fsutil.write_cache(cache, {"value": value})
    return value


def _stat_key(path: Path) -> list:
    st = path.stat()
    return [str(path), st.st_size, st.st_mtime_ns]


def _file_sources(path: Path) -> list:
    import pyarrow.parquet as pq
    values = pq.read_table(path, columns=["data_source"]).column("data_source").to_pylist()
    return sorted({"null" if v is None else str(v) for v in values})


def data_sources(files: list, cache_dir: Optional[Path]) -> dict:
    """files: (field, path) pairs -> {data_source: ["field name", ...]}."""
    out: dict = {}
    for field, path in files:
        for value in _cached(cache_dir, "data", _stat_key(path), lambda: _file_sources(path)):
            out.setdefault(value, []).append(f"{field} {path.name}")
    return out


# ---------------------------------------------------- the snapshot's scorer --
def _mentions(node, name: str) -> bool:
    import ast
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _strings(node) -> Optional[list]:
    """The strings of a literal: one string, or a list/tuple/set of them; else None."""
    import ast
    items = node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [node]
    if all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
        return [i.value for i in items]
    return None


def _test(node, param: str, exact: dict, prefixes: dict) -> None:
    """One comparison or method call on the data source, read into exact/prefixes
    (value -> where it is named, to list them in the file's order)."""
    import ast
    if isinstance(node, ast.Compare):
        plain = (len(node.ops) == 1 and isinstance(node.left, ast.Name) and node.left.id == param
                 and isinstance(node.ops[0], (ast.Eq, ast.In)))
        values = _strings(node.comparators[0]) if plain else None
        if values is None or (isinstance(node.ops[0], ast.Eq) and len(values) != 1):
            raise Unreadable(f"line {node.lineno} tests {param} as `{ast.unparse(node)}`")
        exact.update((v, exact.get(v, (node.lineno, node.col_offset))) for v in values)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_param(node.func.value, param):
        values = _strings(node.args[0]) if node.func.attr == "startswith" and len(node.args) == 1 else None
        if values is None:
            raise Unreadable(f"line {node.lineno} tests {param} as `{ast.unparse(node)}`")
        prefixes.update((v, prefixes.get(v, (node.lineno, node.col_offset))) for v in values)
    elif isinstance(node, ast.Match) and _mentions(node.subject, param):
        raise Unreadable(f"line {node.lineno} matches {param} with `match`")


def _is_param(node, param: str) -> bool:
    import ast
    return isinstance(node, ast.Name) and node.id == param


def _read_scorer(path: Path) -> dict:
    """{"exact": [...], "prefixes": [...], "line": N} of the file's default_compute_score."""
    import ast
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except OSError as exc:
        raise Unreadable(f"cannot be read ({exc.strerror})") from None
    except (SyntaxError, ValueError) as exc:
        raise Unreadable(f"does not parse ({getattr(exc, 'msg', exc)})") from None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == SCORE_FUNCTION), None)
    if fn is None or not fn.args.args:
        raise Unreadable(f"defines no {SCORE_FUNCTION}(data_source, ...)")
    param, exact, prefixes = fn.args.args[0].arg, {}, {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and _mentions(node, param) or isinstance(node, (ast.Call, ast.Match)):
            _test(node, param, exact, prefixes)
    if not any(isinstance(n, ast.Raise) for n in ast.walk(fn)):
        raise Unreadable(f"{SCORE_FUNCTION} raises for no data source")
    if not exact and not prefixes:
        raise Unreadable(f"{SCORE_FUNCTION} names no data source")
    return {"exact": sorted(exact, key=exact.get), "prefixes": sorted(prefixes, key=prefixes.get), "line": fn.lineno}


def scorer(code_path: Path, cache_dir: Optional[Path]) -> dict:
    """The snapshot's default_compute_score, read (cached) or {"unreadable": why}."""
    path = Path(code_path) / SCORE_FILE

    def read() -> dict:
        try:
            return _read_scorer(path)
        except Unreadable as exc:
            return {"unreadable": str(exc)}
    if not path.is_file():
        return {"unreadable": "does not exist"}
    return _cached(cache_dir, "scorer", _stat_key(path), read)


# ----------------------------------------------------------------- the check --
def _set(overrides: dict, keys: tuple) -> Optional[str]:
    """The first of `keys` the overrides set to something (not null), with or without Hydra's +."""
    for key, value in overrides.items():
        if key.lstrip("+") in keys and value is not None and str(value).strip("'\"") not in ("", "null", "None", "~"):
            return f"{key.lstrip('+')}={value}"
    return None


def _other_scorer(overrides: dict) -> str:
    """What scores the job other than default_compute_score, or ""."""
    reward_fn = _set(overrides, REWARD_FN_KEYS)
    if reward_fn:
        return f"the job's reward function ({reward_fn.split('=', 1)[0]})"
    model = _set(overrides, REWARD_MODEL_KEYS)
    if model and model.split("=", 1)[1].strip("'\"").lower() == "true":
        return f"a reward model ({model})"
    manager = _set(overrides, MANAGER_SOURCE_KEYS)
    if manager and manager.split("=", 1)[1].strip("'\"") == "importlib":
        return f"the job's own reward manager ({manager})"
    return ""


def _value(overrides: dict, key: str, default: str) -> str:
    for name, value in overrides.items():
        if name.lstrip("+") == key and value is not None:
            return str(value).strip("'\"").lower()
    return default


def validates(overrides: dict) -> bool:
    """Whether verl scores the val files too: before training (trainer.val_before_train,
    default true: trainer/ppo/v1/trainer_base.py:439), every trainer.test_freq steps
    (:491-492), or only them (trainer.val_only); verl's defaults in trainer/config/ppo_trainer.yaml:199-205."""
    freq = _value(overrides, "trainer.test_freq", "-1")
    return (_value(overrides, "trainer.val_before_train", "true") == "true"
            or _value(overrides, "trainer.val_only", "false") == "true"
            or (freq.isdigit() and int(freq) > 0))


def _served(value: str, found: dict) -> bool:
    return value in found["exact"] or any(value.startswith(p) for p in found["prefixes"])


def _known(found: dict) -> str:
    names = found["exact"] + [f"{p}*" for p in found["prefixes"]]
    more = len(names) - SHOWN_SOURCES
    return ", ".join(names[:SHOWN_SOURCES]) + (f" and {more} more" if more > 0 else "")


def check(files: list, overrides: dict, code_path: Path, label: str, cache_dir: Optional[Path]) -> list:
    """files: the job's (field, path) parquet. Returns the preflight's lines;
    raises MvpError (one line) for a data source no reward serves."""
    sources = data_sources(files, cache_dir)
    other = _other_scorer(overrides)
    if other:
        return [f"reward: data_source {', '.join(sorted(sources))} scored by {other}"]
    found = scorer(code_path, cache_dir)
    where = f"snapshot {label}'s {SCORE_FILE}"
    if "unreadable" in found:
        return [f"reward: data_source {', '.join(sorted(sources))} not checked: {where} {found['unreadable']}, "
                "so the preflight cannot tell which data sources verl's default reward serves"]
    unserved = sorted(v for v in sources if not _served(v, found))
    if unserved:
        named = "; ".join(f"'{v}' ({', '.join(sources[v])})" for v in unserved)
        raise MvpError(f"reward: no reward function serves data_source {named}: the job names none and "
                       f"{where}:{found['line']} {SCORE_FUNCTION} knows only {_known(found)}, raising "
                       f"NotImplementedError for any other in every rollout; {FIX}")
    return [f"reward: data_source {', '.join(sorted(sources))} scored by {where}:{found['line']} {SCORE_FUNCTION}"]
