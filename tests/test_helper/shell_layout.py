"""Reads the shell library as text (nothing sourced or run) and prints one
line per breach of the layout rules for scripts/lib:
- a function defined in scripts/lib/X.sh is named mvp::X::... (the runtimes,
  runtime_<name>.sh, share the runtime interface's prefix mvp::rt::);
- every mvp::... function named in the scanned files is defined in scripts/lib;
- scripts/lib holds only files sourced from common.sh (directly or through a
  file it sources): no executable (mode +x, a #! line, or sourced by nobody);
- no file of scripts/lib calls a function of a file that sources it (directly
  or through others), read from the `source` lines.

Usage: shell_layout.py REPO [SCANNED_DIR_OR_FILE...]
  (default scanned: scripts tests bench, relative to REPO)"""
import os
import re
import sys
from glob import glob
from pathlib import Path

FUNC_DEF = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_:]*)\s*\(\)")
NAME = re.compile(r"mvp::[A-Za-z_][A-Za-z0-9_:]*[A-Za-z0-9_]")
SOURCE = re.compile(r"(?:^|[;&|{]|\bdo|\bthen)\s*(?:source|\.)\s+([^\s;]+)")
FOR_LOOP = re.compile(r"^\s*for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+([^;]*);")
COMMENT = re.compile(r"(^|\s)#.*$")


def prefix_of(path: Path) -> str:
    stem = path.stem
    return "mvp::rt::" if stem.startswith("runtime_") else f"mvp::{stem}::"


def strip_comments(text: str) -> str:
    return "\n".join(COMMENT.sub("", line) for line in text.splitlines())


def sourced_by(repo: Path, path: Path, text: str) -> set:
    """The files path's `source` lines name: a loop variable stands for each
    of its words, $MVP_REPO for the repo, $(dirname "${BASH_SOURCE[0]}") for
    path's directory, and any other variable for whatever matches (a glob)."""
    loops = {}
    for line in text.splitlines():
        m = FOR_LOOP.match(line)
        if m:
            loops[m.group(1)] = m.group(2).split()
    found = set()
    for line in text.splitlines():
        line = COMMENT.sub("", line).replace('$(dirname "${BASH_SOURCE[0]}")', str(path.parent))
        for arg in SOURCE.findall(line):
            arg = re.sub(r"\$\{?MVP_REPO\}?", str(repo), arg.replace('"', "").replace("'", ""))
            words = [arg]
            for var, values in loops.items():
                pat = re.compile(r"\$\{?" + var + r"\}?(?![A-Za-z0-9_])")
                if any(pat.search(w) for w in words):
                    words = [pat.sub(v, w) for w in words for v in values]
            for word in words:
                word = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", "*", word)
                found.update(Path(p).resolve() for p in glob(word))
    return found


def scanned_files(repo: Path, targets: list) -> list:
    files = []
    for t in targets:
        p = (repo / t) if not os.path.isabs(t) else Path(t)
        if p.is_file():
            files.append(p)
            continue
        for f in sorted(p.rglob("*")):
            if f.is_file() and (f.suffix in (".sh", ".bash", ".bats") or f.parent.name == "stubs"):
                files.append(f)
    return files


def main(argv: list) -> int:
    repo = Path(argv[1]).resolve()
    targets = argv[2:] or ["scripts", "tests", "bench"]
    lib = repo / "scripts" / "lib"
    problems = []
    texts = {f.resolve(): f.read_text(encoding="utf-8") for f in sorted(lib.iterdir()) if f.is_file()}

    defined = {}  # function name -> the files that define it (each runtime its mvp::rt::)
    for f, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            m = FUNC_DEF.match(line)
            if not m:
                continue
            name, rel = m.group(1), f.relative_to(repo)
            if not name.startswith(prefix_of(f)):
                problems.append(f"{rel}:{n}: {name} is not named {prefix_of(f)}... (the file it is in)")
            if name in defined and not name.startswith("mvp::rt::"):
                problems.append(f"{rel}:{n}: {name} is defined twice (also in {defined[name][0].relative_to(repo)})")
            defined.setdefault(name, []).append(f)

    # Who sources whom, and from there every file's sourcing ancestors.
    sources = {f: sourced_by(repo, f, text) - {f} for f, text in texts.items()}
    common = (lib / "common.sh").resolve()
    reached, todo = {common}, [common]
    while todo:
        for g in sources.get(todo.pop(), ()):
            if g not in reached and g in texts:
                reached.add(g)
                todo.append(g)
    for f, text in texts.items():
        rel = f.relative_to(repo)
        if os.access(f, os.X_OK) or text.startswith("#!"):
            problems.append(f"{rel}: an executable in scripts/lib; move it to scripts/libexec")
        elif f not in reached:
            problems.append(f"{rel}: sourced by nothing common.sh loads; an executable belongs in scripts/libexec")

    def ancestors(f: Path) -> set:
        seen, todo = set(), [f]
        while todo:
            g = todo.pop()
            for h, srcs in sources.items():
                if g in srcs and h not in seen:
                    seen.add(h)
                    todo.append(h)
        return seen - {f}

    for f, text in texts.items():
        ups = ancestors(f)
        code = strip_comments(text)
        for n, line in enumerate(code.splitlines(), 1):
            for name in NAME.findall(line):
                for owner in defined.get(name, ()):
                    if owner in ups:
                        problems.append(f"{f.relative_to(repo)}:{n}: calls {name} of {owner.relative_to(repo)}, "
                                        f"which sources it; move the function down to the file of its concern")

    for f in scanned_files(repo, targets):
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in NAME.finditer(line):
                name = m.group(0)
                if line[m.end():m.end() + 2] == "::":  # a prefix named in prose (mvp::rt::*)
                    continue
                if name not in defined:
                    problems.append(f"{f.relative_to(repo)}:{n}: {name} is defined nowhere in scripts/lib")
    for p in dict.fromkeys(problems):
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
