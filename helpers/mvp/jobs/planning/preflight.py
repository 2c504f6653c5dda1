"""Preflight: a job's overrides checked against its snapshot's own verl config,
before anything is written or submitted (a typo otherwise costs a cluster
start-up before Hydra fails in the job).

The config is the one the entrypoint declares in `@hydra.main(config_path=...,
config_name=...)`, read from its source with `ast` (never imported), composed
by Hydra from `<code_path>/verl/trainer/...` as verl composes it. Composing
0.9.1's ppo_trainer takes about a second, so what does not change is derived
once per snapshot and kept in a cache file: every key of the composed default
config (Hydra's own `hydra.*` included) with its kind, and the config groups.
An override the cache can answer costs a few milliseconds; anything it cannot
(a config group, a delete, a value outside the plain forms below) gets a full
Hydra compose of the whole override list, whose verdict is final.

Hydra's rules as they apply here: `key=value` needs an existing key;
`+key=value` needs a key that does not exist; `++key=value` sets either way;
a value must parse with Hydra's override grammar."""
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Optional

from ...worker import fsutil
from ...worker.errors import MvpError

CACHE_VERSION = 1
# Plain override values whose grammar is certain (hydra/grammar/OverrideLexer.g4):
# an unquoted primitive made of these characters and ${...} interpolations, a
# quoted string without escapes, or a flat list of those. Anything else is
# left to Hydra's own parser.
_PRIM = r"(?:[A-Za-z0-9_/\\+.%*@?|: \t-]|\$\{[^}]+\}|\$(?!\{))+"
_QUOTED = r"(?:'[^'\\]*'|\"[^\"\\]*\")"
_ITEM = f"(?:{_QUOTED}|{_PRIM})"
PLAIN_VALUE = re.compile(rf"(?:|{_QUOTED}|{_PRIM}|\[[ \t]*(?:{_ITEM}(?:[ \t]*,[ \t]*{_ITEM})*)?[ \t]*\])\Z")
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*\Z")
OVERRIDE = re.compile(r"(\+\+|\+|~)?([^=]*)(?:=(.*))?\Z", re.DOTALL)
REWARD_KEYS = ("reward.custom_reward_function", "custom_reward_function")


# ------------------------------------------------------------ the entrypoint --
def entrypoint_file(code_path: Path, module: str) -> Path:
    return code_path.joinpath(*module.split(".")).with_suffix(".py")


def hydra_main_args(source_file: Path) -> tuple:
    """(config_path, config_name) of the @hydra.main decorator, read with ast."""
    import ast  # only when the cache cannot answer: the submit path is benchmarked
    try:
        tree = ast.parse(source_file.read_text(encoding="utf-8"), filename=str(source_file))
    except OSError as exc:
        raise MvpError(f"preflight: cannot read the entrypoint {source_file}: {exc.strerror}; "
                       "is code_path a verl tree?") from None
    except SyntaxError as exc:
        raise MvpError(f"preflight: {source_file} line {exc.lineno}: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if not isinstance(dec, ast.Call):
                continue
            name = ast.unparse(dec.func)
            if name not in ("hydra.main", "main"):
                continue
            kw = {k.arg: k.value for k in dec.keywords}
            values = {}
            for arg in ("config_path", "config_name"):
                if arg in kw:
                    if not (isinstance(kw[arg], ast.Constant) and isinstance(kw[arg].value, str)):
                        raise MvpError(f"preflight: {source_file}: @hydra.main's {arg} is not a string literal "
                                       "(it is computed); the preflight cannot tell which config it is")
                    values[arg] = kw[arg].value
            if "config_name" in values:
                return values.get("config_path", "."), values["config_name"]
    raise MvpError(f"preflight: {source_file} declares no @hydra.main(config_name=...); is it a verl entrypoint?")


# --------------------------------------------------------------------- cache --
def _fingerprint(config_dir: Path, source_file: Path, module: str) -> str:
    """Sizes and mtimes of the entrypoint and the config files, by relative
    path: the same snapshot seen at another mount point (the head's /private)
    has the same fingerprint; an edited tree has another."""
    h = hashlib.sha256(f"{CACHE_VERSION}\0{module}\0".encode())
    st = source_file.stat()
    h.update(f"{st.st_size}\0{st.st_mtime_ns}\n".encode())
    for dirpath, dirnames, filenames in os.walk(config_dir):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith((".yaml", ".yml")):
                p = os.path.join(dirpath, name)
                st = os.stat(p)
                h.update(f"{os.path.relpath(p, config_dir)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def _groups(config_dir: Path) -> list:
    """Config groups: the directories (relative, '/'-separated) holding YAML files."""
    out = []
    for dirpath, _, filenames in os.walk(config_dir):
        if dirpath != str(config_dir) and any(f.endswith((".yaml", ".yml")) for f in filenames):
            out.append(os.path.relpath(dirpath, config_dir).replace(os.sep, "/"))
    return sorted(out)


def _kind(value) -> str:
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list):
        return "list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return type(value).__name__
    if value == "???":
        return "missing"
    if isinstance(value, str) and "${" in value:
        return "interpolation"
    return "str"


def _flatten(node, prefix: str, out: dict) -> None:
    for k, v in node.items():
        key = f"{prefix}{k}"
        out[key] = _kind(v)
        if isinstance(v, dict):
            _flatten(v, key + ".", out)


def _compose(config_dir: Path, config_name: str, overrides: list, cwd: Optional[Path] = None):
    """Composed in the snapshot's root (cwd), where verl's docs run it: a recipe's
    config finds verl's through hydra.searchpath file://verl/trainer/config."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    GlobalHydra.instance().clear()
    before = os.getcwd()
    os.chdir(cwd or before)  # contextlib.chdir is 3.11's; setup takes 3.10
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name=config_name, overrides=list(overrides), return_hydra_config=True)
    finally:
        os.chdir(before)


def _derive(config_dir: Path, config_name: str, cwd: Path) -> dict:
    from omegaconf import OmegaConf
    cfg = _compose(config_dir, config_name, [], cwd)
    keys: dict = {}
    _flatten(OmegaConf.to_container(cfg, resolve=False), "", keys)
    return {"keys": keys, "groups": _groups(config_dir)}


class SnapshotConfig:
    """What a snapshot's config says, for one entrypoint module; `config`:
    (NAME, DIR) of a command line's --config-name/--config-path, over what
    the module's @hydra.main names."""

    def __init__(self, code_path: Path, module: str, cache_dir: Optional[Path] = None, label: str = "",
                 config: tuple = ("", "")):
        self.code_path = Path(os.path.abspath(code_path))
        self.module = module
        self.label = label or str(self.code_path)
        self.source = entrypoint_file(self.code_path, module)
        if not self.source.is_file():
            raise MvpError(f"preflight: {self.source} does not exist; code_path {self.code_path} "
                           f"is not a verl tree with {module}")
        self.cache_hit = False
        config_dir_guess = Path(os.path.normpath(self.source.parent / (config[1] or "config")))
        # The cache of a module's own config keeps its name; a chosen one is keyed by it too.
        what = module if config == ("", "") else f"{module}\0{config[0]}\0{config[1]}"
        cache_file = None
        if cache_dir is not None and config_dir_guess.is_dir():
            cache_file = Path(cache_dir) / f"{_fingerprint(config_dir_guess, self.source, what)}.json"
        cached = _read_cache(cache_file)
        if cached:
            self.cache_hit = True
            self.config_name, self.config_dir = cached["config_name"], config_dir_guess
            self.keys, self.groups = cached["keys"], set(cached["groups"])
            return
        config_path, config_name = hydra_main_args(self.source)
        self.config_name = _bare_name(config[0]) or config_name
        self.config_dir = Path(os.path.normpath(self.source.parent / (config[1] or config_path)))
        if not (self.config_dir / f"{self.config_name}.yaml").is_file():
            raise MvpError(f"preflight: {self.module} {'is given' if config[0] else 'declares'} config "
                           f"'{self.config_name}' in {self.config_dir}, which has no {self.config_name}.yaml; "
                           f"{'fix --config-name' if config[0] else f'snapshot {self.label} is incomplete'}")
        derived = self._derive_or_explain()
        self.keys, self.groups = derived["keys"], set(derived["groups"])
        if cache_file is not None and self.config_dir == config_dir_guess:
            fsutil.write_cache(cache_file, {"version": CACHE_VERSION, "config_name": self.config_name,
                                           "module": module, "keys": self.keys, "groups": sorted(self.groups)})

    def _derive_or_explain(self) -> dict:
        try:
            return _derive(self.config_dir, self.config_name, self.code_path)
        except ImportError as exc:
            raise MvpError(f"preflight needs hydra-core, the library verl composes its config with: {exc}; "
                           "run scripts/12_install_py_deps.sh") from None
        except Exception as exc:  # Hydra's own failure on the snapshot's config
            raise MvpError(f"preflight: verl's config '{self.config_name}' in snapshot {self.label} does not "
                           f"compose: {_first_line(exc)}") from None

    def reward_key(self) -> Optional[str]:
        """Where this snapshot's verl reads the user's reward function from:
        reward.custom_reward_function (0.9.1), custom_reward_function (older), or None."""
        for key in REWARD_KEYS:
            if self.keys.get(key) == "dict":
                return key
        return None

    def closest(self, key: str, n: int = 3) -> list:
        import difflib
        names = list(self.keys)
        return difflib.get_close_matches(key, names, n=n, cutoff=0.6) or difflib.get_close_matches(key, names, n=n, cutoff=0.0)

    def where(self) -> str:
        return f"snapshot {self.label}, config '{self.config_name}'"


def _bare_name(name: str) -> str:
    """A config name as Hydra finds its file: `dapo_trainer.yaml` is `dapo_trainer`."""
    return name[:-len(".yaml")] if name.endswith(".yaml") else name


def _read_cache(cache_file: Optional[Path]) -> Optional[dict]:
    if cache_file is None:
        return None
    try:
        cached = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cached if isinstance(cached, dict) and cached.get("version") == CACHE_VERSION else None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n")[:1]).strip() or type(exc).__name__
    return text


# ----------------------------------------------------------------- the check --
class Result:
    def __init__(self, snap: SnapshotConfig, seconds: float, composed: bool):
        self.config_name, self.cache_hit, self.seconds, self.composed = snap.config_name, snap.cache_hit, seconds, composed
        self.reward_key = snap.reward_key()

    def summary(self) -> str:
        how = "full Hydra compose" if self.composed else ("cached keys" if self.cache_hit else "keys derived now")
        return f"preflight: config '{self.config_name}' accepts every override ({how}, {self.seconds * 1000:.0f} ms)"


def _needs_compose(snap: SnapshotConfig, overrides: list) -> bool:
    """Checks what the cache can answer (raising on the first problem) and says
    whether anything is left that only Hydra can answer."""
    added: set = set()
    for item in overrides:
        m = OVERRIDE.match(item)
        prefix, key, value = m.group(1) or "", m.group(2), m.group(3)
        if prefix == "~" or value is None or not KEY.match(key) or key in snap.groups or not PLAIN_VALUE.match(value):
            return True
        exists = key in snap.keys or key in added
        if prefix == "":
            if not exists:
                raise MvpError(_unknown(snap, key, value))
            if snap.keys.get(key) == "dict":
                return True
        elif prefix == "+":
            if exists:
                raise MvpError(_already(snap, key))
            if not _parent_is_dict(snap, key, added):
                return True
            added.add(key)
        else:  # ++
            if not exists and not _parent_is_dict(snap, key, added):
                return True
            added.add(key)
    return False


def _parent_is_dict(snap: SnapshotConfig, key: str, added: set) -> bool:
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        if parent in snap.keys:
            return snap.keys[parent] == "dict"
        if parent in added:
            return False
    return True


def _unknown(snap: SnapshotConfig, key: str, value: str) -> str:
    return (f"preflight: '{key}' is not a key of verl's config ({snap.where()}); closest real keys: "
            f"{', '.join(snap.closest(key))}; fix the name, or write +{key}={value} to add a key verl really reads")


def _already(snap: SnapshotConfig, key: str) -> str:
    return (f"preflight: '+{key}' adds a key that verl's config already has ({snap.where()}); closest real keys: "
            f"{key}; drop the '+' to set it")


def _refused(snap: SnapshotConfig, item: str, why: str) -> str:
    key = OVERRIDE.match(item).group(2)
    near = [key] if key in snap.keys else snap.closest(key)
    return (f"preflight: Hydra refuses the override '{item}': {why} ({snap.where()}); closest real keys: "
            f"{', '.join(near)}; quote the value ('...') if it is meant as a string")


def _compose_verdict(snap: SnapshotConfig, overrides: list) -> None:
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from hydra.errors import MissingConfigException, OverrideParseException
    except ImportError as exc:
        raise MvpError(f"preflight needs hydra-core, the library verl composes its config with: {exc}; "
                       "run scripts/12_install_py_deps.sh") from None
    parser = OverridesParser.create()
    for item in overrides:
        try:
            parser.parse_overrides([item])
        except OverrideParseException as exc:
            raise MvpError(_refused(snap, item, _first_line(exc))) from None
    try:
        _compose(snap.config_dir, snap.config_name, overrides, snap.code_path)
    except MissingConfigException as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        options = lines[2:lines.index(next((ln for ln in lines if ln.startswith("Config search path")), lines[-1]))]
        raise MvpError(f"preflight: {lines[0].strip(chr(34))}; options: {', '.join(options) or 'none'} "
                       f"({snap.where()})") from None
    except Exception as exc:
        text = str(exc)
        m = re.match(r"Could not override '([^']+)'", text)
        if m:
            item = next((o for o in overrides if OVERRIDE.match(o).group(2) == m.group(1)), m.group(1) + "=")
            raise MvpError(_unknown(snap, m.group(1), item.split("=", 1)[-1])) from None
        m = re.match(r"Could not append to config\. An item is already at '([^']+)'", text)
        if m:
            raise MvpError(_already(snap, m.group(1))) from None
        m = re.match(r"Ambiguous value for argument '([^']+)'", text)
        if m:
            raise MvpError(_refused(snap, m.group(1), "a comma outside brackets is a sweep")) from None
        raise MvpError(f"preflight: Hydra cannot compose the overrides ({snap.where()}): {_first_line(exc)}") from None


def verify(snap: SnapshotConfig, overrides: list, started: Optional[float] = None) -> Result:
    """Raises MvpError (one line) for the first override verl's Hydra would refuse."""
    t0 = time.perf_counter() if started is None else started
    composed = _needs_compose(snap, list(overrides))
    if composed:
        _compose_verdict(snap, list(overrides))
    return Result(snap, time.perf_counter() - t0, composed)


def check(code_path: Path, module: str, overrides: list, cache_dir: Optional[Path] = None,
          label: str = "") -> Result:
    t0 = time.perf_counter()
    return verify(SnapshotConfig(code_path, module, cache_dir, label), overrides, t0)


def main(argv: Optional[list] = None) -> int:
    """python -m mvp.jobs.planning.preflight CODE_PATH MODULE [--cache-dir DIR] [--reward-key] [OVERRIDE...]"""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="python -m mvp.jobs.planning.preflight", description=__doc__.split("\n")[0])
    p.add_argument("code_path", type=Path)
    p.add_argument("module", help="the entrypoint, e.g. verl.trainer.main_ppo")
    p.add_argument("--cache-dir", type=Path)
    p.add_argument("--label", default="")
    p.add_argument("--reward-key", action="store_true", help="print where the snapshot's verl reads the reward function")
    p.add_argument("overrides", nargs="*")
    args = p.parse_intermixed_args(argv)
    try:
        result = check(args.code_path, args.module, args.overrides, args.cache_dir, args.label)
    except MvpError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return exc.exit_code
    print(result.summary(), file=sys.stderr)
    if args.reward_key:
        print(result.reward_key or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
