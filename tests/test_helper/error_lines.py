"""Every one-line ERROR the runbook can print, read from its code: each
`mvp::log::die "..."` of scripts/ (bash) and each `MvpError(...)` of helpers/
(Python, read with ast), a value in the message written as `…`. docs/troubleshooting.md
carries them as a generated table between its two markers (make docs/troubleshooting);
tests/unit/troubleshooting.bats fails when the table is not what the code prints.
Standard library only.

Usage: error_lines.py REPO_DIR             the table, as Markdown
       error_lines.py REPO_DIR --write     the table into REPO_DIR/docs/troubleshooting.md
       error_lines.py REPO_DIR --check     one line per ERROR without a row and per row no code
                                           prints; exit 1 when there is one"""
import ast
import re
import sys
from pathlib import Path

BEGIN = "<!-- the ERROR lines: generated from the code by make docs/troubleshooting; do not edit -->"
END = "<!-- end of the generated ERROR lines -->"
VALUE = "…"
DIE = 'mvp::log::die "'
BASH_VALUE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9#@*?]")


def bash_string(text: str, start: int) -> str:
    """The double-quoted string that opens before text[start], a $(...) in it
    (quotes and all) as one value."""
    out, i, depth = [], start, 0
    while i < len(text):
        c = text[i]
        if depth:
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
            if not depth:
                out.append(VALUE)
            continue
        if c == "\\":
            out.append(text[i + 1])
            i += 2
            continue
        if c == '"':
            break
        if text.startswith("$(", i):
            depth, i = 1, i + 2
            continue
        out.append(c)
        i += 1
    return BASH_VALUE.sub(VALUE, "".join(out))


def bash_lines(repo: Path) -> list:
    """(message, file) for each mvp::log::die with a literal message."""
    out = []
    for path in sorted((repo / "scripts").rglob("*.sh")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(re.escape(DIE), text):
            out.append((bash_string(text, match.end()), str(path.relative_to(repo))))
    return out


def _text(node) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else VALUE for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return VALUE


def python_lines(repo: Path) -> list:
    """(message, file) for each MvpError(...) raised in helpers/."""
    out = []
    for path in sorted((repo / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "MvpError" and node.args:
                text = _text(node.args[0])
                if text.strip(VALUE + " "):
                    out.append((text, str(path.relative_to(repo))))
    return out


def rows(repo: Path) -> dict:
    """message -> the files that print it, in order."""
    out: dict = {}
    for text, where in bash_lines(repo) + python_lines(repo):
        text = re.sub(r"\s+", " ", text).strip()
        out.setdefault(text, [])
        if where not in out[text]:
            out[text].append(where)
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


def what_to_do(text: str) -> str:
    """What follows the message's first '; ' outside parentheses (the house
    style: what is wrong; what to do), or "" when it has none."""
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth <= 0 and text.startswith("; ", i):
            return text[i + 2:]
    return ""


def cell(text: str) -> str:
    text = text.replace("|", "\\|")
    return f"``{text}``" if "`" in text else f"`{text}`"


def table(repo: Path) -> str:
    lines = [BEGIN, "", "| `ERROR:` … | printed by | what to do |", "|---|---|---|"]
    for text, where in rows(repo).items():
        fix = what_to_do(text)
        lines.append(f"| {cell(text)} | {', '.join(f'`{w}`' for w in where)} | "
                     f"{fix.replace('|', chr(92) + '|') if fix else 'what the line names: fix it and run the script again'} |")
    return "\n".join(lines + ["", END])


def page_rows(page: str) -> set:
    body = page.split(BEGIN, 1)[1].split(END, 1)[0] if BEGIN in page and END in page else ""
    return {m.group(1) or m.group(2) for m in re.finditer(r"^\| (?:``(.*?)``|`(.*?)`) \| `", body, re.M)}


def main() -> int:
    repo = Path(sys.argv[1]).resolve()
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    page_path = repo / "docs" / "troubleshooting.md"
    if mode == "--write":
        page = page_path.read_text(encoding="utf-8")
        head, tail = page.split(BEGIN, 1)[0], page.split(END, 1)[1]
        page_path.write_text(head + table(repo) + tail, encoding="utf-8")
        return 0
    if mode == "--check":
        page = page_path.read_text(encoding="utf-8")
        have = page_rows(page)
        want = {cell(t).strip("`") for t in rows(repo)}
        problems = [f"docs/troubleshooting.md: no row for ERROR: {t} (make docs/troubleshooting)" for t in sorted(want - have)]
        problems += [f"docs/troubleshooting.md: a row for ERROR: {t}, which no code prints" for t in sorted(have - want)]
        print("\n".join(problems), end="\n" if problems else "")
        return 1 if problems else 0
    print(table(repo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
