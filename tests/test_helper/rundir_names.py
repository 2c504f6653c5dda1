"""Prints FILE:LINE: 'NAME' for each name of the nightly's run directories
spelled outside the one object that owns them, helpers/mvp/core/rundir.py
(FILES, Regressions, RunDir), and nothing when there is none. The names are
read from that file's FILES table (by its text: the tree checked may be a
copy); where they count is jobdir_names.py's rule: any string of the Python
code under helpers/mvp/ (an f-string's text too; docstrings and comments may
name them; helpers/offline/ and helpers/trainer/ read pip's report.json and
Ray's index.html, not ours), and code lines of scripts/, templates/ and the Makefile (bash reads them
with mvp::config::run_file). Standard library only. Usage: rundir_names.py REPO_DIR"""
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jobdir_names as check  # noqa: E402  (beside this file)

OWNER = Path("helpers/mvp/core/rundir.py")


def names(repo: Path) -> list:
    """Every file name of FILES (each has a dot)."""
    tree = ast.parse((repo / OWNER).read_text(encoding="utf-8"))
    table = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "FILES" for t in n.targets))
    return sorted({rel.rsplit("/", 1)[-1] for _, rel, _ in table})


def main() -> int:
    repo = Path(sys.argv[1])
    pattern = check.dotted_pattern(names(repo))
    hits = []
    for path in check.files(repo, "helpers/mvp", (".py",)):
        if path.relative_to(repo) != OWNER:
            hits += [(path, line, name) for line, name in check.python_hits(path, pattern, [])]
    for top in ("scripts", "templates", "Makefile"):
        for path in check.files(repo, top, (".sh", ".yaml", ".yml", ".py", "")):
            hits += [(path, line, name) for line, name in check.shell_hits(path, pattern)]
    print("\n".join(f"{p.relative_to(repo)}:{line}: '{name}'" for p, line, name in hits))
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
