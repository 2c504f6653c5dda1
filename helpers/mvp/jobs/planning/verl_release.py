"""The verl releases the runbook is tested with (docs/versions.md says how),
a snapshot's own release, and whether the CPU layer (helpers/verl_cpu) can
serve that snapshot's verl.

The CPU layer registers itself in verl's own registries (the platform's, the
rollout replicas', the rollouts'), importing their names from verl; a verl
that renamed one would kill a CPU job inside the layer, minutes after its
submission. So before submission, for a job whose profile puts the layer on
its PYTHONPATH, every name the layer imports from verl (read from the
layer's own files with `ast`) must be defined at the top level of the
snapshot's module (read the same way, never imported); one missing is one
ERROR line naming it and the releases the layer serves. A GPU job, which
never loads the layer, is not refused for its release: one newer than the
tested ones gets a warning, and the preflight's other checks (its config,
its entry point, its data) still refuse what verl itself would refuse."""
import re
from pathlib import Path

from ...worker.errors import MvpError

# The releases the tiers train (docs/versions.md: how each is tested).
TESTED = ("0.9.0", "0.9.1")
VERSION_FILE = "verl/version/version"
CPU_LAYER = Path(__file__).resolve().parents[3] / "verl_cpu" / "mvp_verl_cpu"
# sysexits' EX_UNAVAILABLE: the exit code of the refusal below (40-44 pass it
# on), by which 61 skips the commit, as one the runbook cannot test.
UNSERVED_EXIT = 69


def layer_marker(layer: Path = CPU_LAYER) -> str:
    """The line prefix the CPU layer prints when the verl it runs in lacks a
    name it imports (its LAYER_FAILED, read from its __init__.py with ast)."""
    import ast
    tree = ast.parse((layer / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LAYER_FAILED" for t in node.targets):
            return node.value.value
    raise MvpError(f"{layer}/__init__.py defines no LAYER_FAILED")


def died_in_layer(driver_log: str) -> str:
    """The CPU layer's marker line in a job's driver log ("" when none)."""
    marker = layer_marker()
    return next((line.strip() for line in driver_log.splitlines() if marker in line), "")


def release(code_path: Path) -> str:
    """The snapshot's verl release, as its `verl.__version__` reads it; "" when it has none."""
    try:
        return (Path(code_path) / VERSION_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _numbers(version: str) -> tuple:
    m = re.match(r"v?([0-9]+(?:\.[0-9]+)*)", version)
    return tuple(int(n) for n in m.group(1).split(".")) if m else ()


def newer_than_tested(version: str) -> bool:
    """0.10.0.dev is newer than 0.9.1; an unreadable release is not judged."""
    numbers = _numbers(version)
    return bool(numbers) and numbers > max(_numbers(t) for t in TESTED)


def layer_imports(layer: Path = CPU_LAYER) -> list:
    """(module, name, "file:line") of every `from verl... import NAME` of the layer."""
    import ast
    out = []
    for path in sorted(layer.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "verl" and not node.level:
                out += [(node.module, a.name, f"{path.parent.name}/{path.name}:{node.lineno}") for a in node.names]
    return out


def _top_level_names(body: list) -> set:
    """Names a module defines at its top level (inside if/try blocks too)."""
    import ast
    names: set = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody"):
                names |= _top_level_names(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                names |= _top_level_names(handler.body)
    return names


def _module_file(code_path: Path, module: str):
    base = Path(code_path).joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def missing(code_path: Path, imports: list) -> list:
    """What of `imports` the snapshot lacks: "NAME from MODULE (FILE:LINE), which ..." lines."""
    import ast
    out, defined = [], {}
    for module, name, where in imports:
        if module not in defined:
            path = _module_file(code_path, module)
            try:
                defined[module] = _top_level_names(ast.parse(path.read_text(encoding="utf-8")).body) if path else None
            except (OSError, SyntaxError, ValueError):
                defined[module] = None
        names = defined[module]
        if names is None:
            out.append(f"{name} from {module} ({where}), a module that snapshot has not (or cannot parse)")
        elif name not in names:
            out.append(f"{name} from {module} ({where}), which that snapshot's module does not define")
    return out


def check(profile: str, loads_layer: bool, code_path: Path, label: str) -> tuple:
    """(info lines, warning lines) about the snapshot's release; raises MvpError
    when the CPU layer the profile loads cannot serve the snapshot's verl."""
    version = release(code_path)
    shown = f"verl {version}" if version else f"a verl without {VERSION_FILE}"
    warnings = []
    if newer_than_tested(version):
        warnings.append(f"snapshot {label} holds verl {version}, newer than the releases the runbook is tested with "
                        f"({', '.join(TESTED)}; docs/versions.md); the preflight checked its config and data")
    if not loads_layer:
        return [f"verl: snapshot {label} holds {shown}"], warnings
    lacking = missing(code_path, layer_imports())
    if lacking:
        raise MvpError(f"MVP_TRAINER_PROFILE={profile}: the CPU layer (helpers/verl_cpu) cannot serve snapshot {label}'s "
                       f"{shown}: it imports {lacking[0]}{f' (and {len(lacking) - 1} more)' if len(lacking) > 1 else ''}; "
                       f"the CPU layer serves verl {', '.join(TESTED)} (docs/versions.md): snapshot one of those, "
                       "or train on GPUs (MVP_TRAINER_PROFILE=gpu)", UNSERVED_EXIT)
    return [f"verl: snapshot {label} holds {shown}; the CPU layer finds every name it imports from it"], warnings
