"""Prints FILE:LINE: 'NAME' for each job-directory name spelled outside the
one object that owns them, helpers/mvp/worker/jobdir.py (FILES, JobDir), and
nothing when there is none. The names are read from that
file's FILES table (by its text: the tree checked may be a copy):
- a file name with a dot (result.json, job_spec.json, driver.log, submit.log,
  .archiving, ...) in any string of the Python code under helpers/ (an
  f-string's text too), or on a line of code (not a comment) of scripts/,
  templates/ or the Makefile: bash asks the helper (`wait` answers status=,
  `50_status.sh ID --porcelain`) instead of reading the file;
- a directory or a file without a dot (logs, config, checkpoints, nodes,
  ray_job_id, ...) where Python builds a path of it: `x / "logs"`,
  os.path.join(x, "logs"), Path("logs"), x.joinpath("logs").
Docstrings and comments may name them: they are the docs. tests/ and bench/
build job directories of their own and are not checked.
Standard library only. Usage: jobdir_names.py REPO_DIR"""
import ast
import re
import sys
from pathlib import Path

OWNER = Path("helpers/mvp/worker/jobdir.py")
SKIPPED_DIRS = {"__pycache__", ".venv", ".mvp", ".git"}


def names(repo: Path) -> tuple:
    """(file names with a dot, other names): every path part of FILES."""
    tree = ast.parse((repo / OWNER).read_text(encoding="utf-8"))
    table = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "FILES" for t in n.targets))
    parts = {part for _, rel, _ in table for part in rel.split("/") if "<" not in part}
    return sorted(p for p in parts if "." in p), sorted(p for p in parts if "." not in p)


def dotted_pattern(dotted: list):
    return re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in dotted) + r")(?![\w-])")


def docstrings(tree) -> set:
    """The ids of the string constants that are docstrings."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def path_parts(node) -> list:
    """The string constants a node makes a path of: `x / "c"`, join(x, "c"), Path("c")."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [node.right]
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("join", "joinpath", "Path", "PurePath"):
            return list(node.args)
    return []


def python_hits(path: Path, dotted, plain: list) -> list:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            hits += [(node.lineno, m.group(1)) for m in dotted.finditer(node.value)]
        for part in path_parts(node):
            if isinstance(part, ast.Constant) and part.value in plain:
                hits.append((part.lineno, part.value))
    return sorted(set(hits))


def shell_hits(path: Path, dotted) -> list:
    hits = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.lstrip().startswith("#"):
            hits += [(n, m.group(1)) for m in dotted.finditer(line)]
    return hits


def files(repo: Path, top: str, suffixes: tuple) -> list:
    base = repo / top
    if base.is_file():
        return [base]
    return sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in suffixes
                  and not SKIPPED_DIRS & set(p.relative_to(repo).parts))


def main() -> int:
    repo = Path(sys.argv[1])
    dotted, plain = names(repo)
    pattern = dotted_pattern(dotted)
    hits = []
    for path in files(repo, "helpers", (".py",)):
        if path.relative_to(repo) != OWNER:
            hits += [(path, line, name) for line, name in python_hits(path, pattern, plain)]
    for top in ("scripts", "templates", "Makefile"):
        for path in files(repo, top, (".sh", ".yaml", ".yml", ".py", "")):
            hits += [(path, line, name) for line, name in shell_hits(path, pattern)]
    print("\n".join(f"{p.relative_to(repo)}:{line}: '{name}'" for p, line, name in hits))
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
