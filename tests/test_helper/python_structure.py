"""Reads the helper package's Python as farm-studio does (imports and
definitions, nothing run) and prints one line per breach of issue 22's
structure rules: an import circle between modules, or a function longer
than --max-lines in the files named by --short-functions.

Usage: python_structure.py PACKAGE_DIR [--max-lines N] [--short-functions FILE...]"""
import argparse
import ast
import sys
from pathlib import Path


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
            found.add(node.module)
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("package", type=Path)
    ap.add_argument("--max-lines", type=int, default=40)
    ap.add_argument("--short-functions", nargs="*", type=Path, default=[])
    args = ap.parse_args()
    breaches = [f"import circle: {' -> '.join(c)}" for c in circles(args.package)]
    for path in args.short_functions:
        breaches += [f"{path}:{line}: {name} is {n} lines (at most {args.max_lines})"
                     for name, line, n in long_functions(path, args.max_lines)]
    print("\n".join(breaches))
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
