"""Reads the helper package's Python as text (imports and definitions,
nothing run) and prints one line per breach of its structure rules: an import circle between modules (a lazy import inside a
function counts), a function longer than --max-lines, or (--dead-code REPO)
a definition whose name appears nowhere else in the repository; with
--layers, an import against the groups' order (each group a sub-package,
lowest first; a group imports only lower ones, never a peer or a higher one);
with --shadow, a module named as a standard-library module.

Usage: python_structure.py PACKAGE_DIR [--max-lines N] [--short-functions FILE... | --all-functions]
                           [--allow FILE:FUNCTION...] [--dead-code REPO_DIR]
                           [--layers GROUP[,PEER]...] [--shadow]"""
import argparse
import ast
import os
import re
import sys
from pathlib import Path

# Not part of the repository's own text: environments, caches, VCS data.
SKIPPED_DIRS = {".git", ".venv", ".mvp", "__pycache__", "node_modules", ".pytest_cache"}
MAX_TEXT_BYTES = 1 << 20


def module_name(package: Path, path: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(package: Path, path: Path) -> set:
    """The package's own modules this file imports, at any depth (a lazy
    import inside a function ties the files as much as one at the top)."""
    here = module_name(package, path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            found.update([f"{base}.{a.name}" for a in node.names] + [base])
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from mvp import plan` names a module as much as `from . import plan`.
            found.update([f"{node.module}.{a.name}" for a in node.names] + [node.module])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def circles(package: Path) -> list:
    files = {module_name(package, p): p for p in package.rglob("*.py")}
    graph = {m: {i for i in imports_of(package, p) if i in files and i != m and not files[i].name == "__init__.py"}
             for m, p in files.items()}
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def long_functions(path: Path, max_lines: int) -> list:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(n.name, n.lineno, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > max_lines]


def definitions(path: Path) -> list:
    """(name, line) of what a module offers: its functions, classes and
    assigned names, and its classes' own methods (dunders aside: Python
    calls those)."""
    out = []
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.name, node.lineno))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [(t.id, node.lineno) for t in targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.ClassDef):
            out += [(m.name, m.lineno) for m in node.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and not m.name.startswith("__")]
    return out


def repo_texts(repo: Path) -> list:
    """Every text file of the repository (scripts, tests, docs, bench...):
    a name used by a bats test or a shell script's python -c is used."""
    texts = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
        for name in filenames:
            p = os.path.join(dirpath, name)
            try:
                if os.path.getsize(p) <= MAX_TEXT_BYTES:
                    with open(p, encoding="utf-8") as f:
                        texts.append(f.read())
            except (OSError, UnicodeDecodeError):
                continue  # binary or unreadable: no Python name lives there
    return texts


def dead_code(package: Path, repo: Path) -> list:
    """Definitions whose name, as a whole word, occurs once in the whole
    repository: at the definition itself. (A name that occurs elsewhere by
    coincidence passes: the check can miss dead code, never invent it.)"""
    counts: dict = {}
    word = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    for text in repo_texts(repo):
        for w in word.findall(text):
            counts[w] = counts.get(w, 0) + 1
    return [(path, name, line) for path in sorted(package.rglob("*.py"))
            for name, line in definitions(path) if counts.get(name, 0) <= 1]


def group_of(package: Path, path: Path) -> str:
    """A file's group: its sub-package, or __main__ for the package's own top-level files."""
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else "__main__"


def layer_breaches(package: Path, layers: list) -> list:
    """Imports that run up or sideways: GROUP imports only lower layers' groups and itself."""
    rank = {g: i for i, layer in enumerate(layers) for g in layer.split(",")}
    files = {module_name(package, p): p for p in package.rglob("*.py")}
    out = [f"group {group_of(package, p)} ({p}) is in no layer" for p in sorted(files.values())
           if group_of(package, p) not in rank and p.name != "__init__.py"]
    for m, p in sorted(files.items()):
        g = group_of(package, p)
        for i in sorted(imports_of(package, p)):
            h = group_of(package, files[i]) if i in files else None
            if h and h != g and g in rank and h in rank and rank[h] >= rank[g]:
                out.append(f"import against the layers: {m} ({g}) imports {i} ({h})")
    return out


def shadowing(package: Path) -> list:
    """Modules named as the standard library's: on a worker's sys.path they would replace it."""
    return [f"{p}: shadows the standard library's {p.stem}" for p in sorted(package.rglob("*.py"))
            if p.stem in sys.stdlib_module_names or p.parent.name in sys.stdlib_module_names]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("package", type=Path)
    ap.add_argument("--max-lines", type=int, default=40)
    ap.add_argument("--short-functions", nargs="*", type=Path, default=[])
    ap.add_argument("--all-functions", action="store_true", help="every .py file of the package")
    ap.add_argument("--allow", nargs="*", default=[], help="FILE:FUNCTION (FILE relative to the package) let through")
    ap.add_argument("--dead-code", type=Path, metavar="REPO_DIR")
    ap.add_argument("--layers", nargs="*", default=[], help="the groups, lowest first; peers joined by commas")
    ap.add_argument("--shadow", action="store_true")
    args = ap.parse_args()
    breaches = [f"import circle: {' -> '.join(c)}" for c in circles(args.package)]
    short = sorted(args.package.rglob("*.py")) if args.all_functions else args.short_functions
    for path in short:
        breaches += [f"{path}:{line}: {name} is {n} lines (at most {args.max_lines})"
                     for name, line, n in long_functions(path, args.max_lines)
                     if f"{path.resolve().relative_to(args.package.resolve())}:{name}" not in args.allow]
    if args.dead_code:
        breaches += [f"{path}:{line}: {name} is defined and never used" for path, name, line
                     in dead_code(args.package, args.dead_code)]
    breaches += layer_breaches(args.package, args.layers) if args.layers else []
    breaches += shadowing(args.package) if args.shadow else []
    print("\n".join(breaches))
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
