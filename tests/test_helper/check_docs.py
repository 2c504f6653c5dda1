"""Checks that the docs a newcomer reads still point at real things, and prints
one line per problem (FILE:LINE: what), nothing when all is well:
- every relative Markdown link in README.md and docs/**/*.md names a file or
  directory that exists, and its #anchor (if any) a heading of that page, as
  GitHub makes anchors from headings;
- every numbered script they name (NN_name.sh, with or without scripts/)
  exists in scripts/;
- README.md has at most --max-readme-lines lines and names `make demo` and
  `make test`, the two commands of a fresh machine.
Standard library only, so it runs before any venv exists.

Usage: check_docs.py REPO_DIR [--max-readme-lines N]"""
import argparse
import re
import sys
from pathlib import Path

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCRIPT = re.compile(r"(?<![\w/.-])(?:scripts/)?(\d\d_[A-Za-z0-9_]+\.sh)\b")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, ...


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks, and whether in a fence."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        yield number, line, fenced


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lower case,
    punctuation other than - and _ removed, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    seen: dict = {}
    out = set()
    for _, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
        match = None if fenced else HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def check_links(repo: Path, page: Path, problems: list) -> None:
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(repo)
    for number, line, fenced in prose_lines(text):
        if fenced:
            continue
        # Code spans are examples, not links; blanked so a `[x](y)` in one is skipped.
        bare = CODE_SPAN.sub(lambda m: m.group(1) + "x" * len(m.group(2)) + m.group(1), line)
        for target in LINK.findall(bare):
            if EXTERNAL.match(target):
                continue
            where, _, anchor = target.partition("#")
            dest = (page.parent / where).resolve() if where else page
            if not dest.exists():
                problems.append(f"{name}:{number}: link to {target}: {where} does not exist")
            elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{name}:{number}: link to {target}: {dest.relative_to(repo)} has no heading #{anchor}")


def check_scripts(repo: Path, page: Path, problems: list) -> None:
    name = page.relative_to(repo)
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for script in SCRIPT.findall(line):
            if not (repo / "scripts" / script).is_file():
                problems.append(f"{name}:{number}: names scripts/{script}, which does not exist")


def check_readme(readme: Path, max_lines: int, problems: list) -> None:
    text = readme.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    if lines > max_lines:
        problems.append(f"README.md: {lines} lines, more than {max_lines}; move the detail to a docs/ page")
    for command in ("make demo", "make test"):
        if command not in text:
            problems.append(f"README.md: does not name `{command}`")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--max-readme-lines", type=int, default=200)
    args = parser.parse_args()
    repo = args.repo.resolve()
    readme = repo / "README.md"
    if not readme.is_file():
        print(f"{readme}: no README.md here", file=sys.stderr)
        return 2
    problems: list = []
    pages = [readme] + sorted((repo / "docs").rglob("*.md"))
    for page in pages:
        check_links(repo, page, problems)
        check_scripts(repo, page, problems)
    check_readme(readme, args.max_readme_lines, problems)
    print("\n".join(problems), end="\n" if problems else "")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
