"""Checks what README.md and docs/**/*.md claim about the code against the
code, and prints one line per false claim (FILE:LINE: what), nothing when all
is true (issue 32 point 6, "docs that cannot lie"):
- a `--flag` written in one command with a numbered script (a code span or a
  fenced line: `41_submit_grpo_epoch1.sh --retry 1`, `51 ID --steps`), or in
  a code span right after a script's number in prose (41 `--retry 1`, 40-44's
  `--retry`: each of them), is one that script's --help shows (its flag
  spec, mvp::flags::spec, or a common flag);
- docs/scripts.md's table has a row for every numbered script, and a page
  that counts them ("all twenty-one numbered scripts") counts right;
- a default written after a setting (`MVP_LOG_SYNC_SECONDS` (30; ...)) is the
  contract's plain default;
- every MVP_* name is declared in config/settings.contract (a setting, an env
  or an internal name; MVP_K8S_* stands for a family and must match one), or
  is on NOT_SETTINGS below;
- an exit code other than 0 and 1 that a line gives a numbered script ("exits
  75", "exit 2") is one the code can give it: a literal exit/return or a
  NAME=N constant in the script, in a scripts/lib function it calls (through
  the call graph) or, when it calls the Python helper, in helpers/mvp;
- `python -m mvp COMMAND` names a command of the helper;
- a repository path a page names (`helpers/mvp/jobs/ray_nodes.py`, `config/nightly.yaml`)
  exists, but for patterns, make targets and NOT_IN_REPO;
- "the v1.1 runbook spec, point N" (in a page or the code) is a point of docs/spec.md;
- docs/settings.md has each setting once; docs/testing.md's table names each
  tier's bats files with their number of tests;
- docs/ARCHITECTURE.md's tables name every module of helpers/mvp/ (by its path
  there: `jobs/plan.py`) and every file of scripts/lib/, and nothing that is
  not there.
Numbered script names themselves are check_docs.py's (docs_links.bats).
Standard library only. Usage: check_claims.py REPO_DIR"""
import re
import subprocess
import sys
from pathlib import Path

# MVP_* names a page may use that are not settings: the tests' and the
# benchmarks' own knobs, which scripts/ and helpers/ never read, so the
# contract does not declare them. Each must still be used where it says
# (a name gone from there is a stale entry, reported).
NOT_SETTINGS = {
    "MVP_BENCH_TABLE": "bench/lib.sh",  # make bench: the file the benchmarks' table rows go to
    "MVP_TEST_REPEAT": "tests/integration/admission.bats",  # a race test's rounds in a row
    "MVP_TIER_WATCH_SECONDS": "tests/run",  # how often tests/run prints its busy line
}

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCRIPT_WORD = re.compile(r"(?<![\w/.-])(?:scripts/)?(\d\d)(_[A-Za-z0-9_]+\.sh)?(?![\w.-])")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Prose that gives a script (or a range of them) a flag: 41 `--retry 1`,
# 40-44's `--retry`, `50_status.sh` `--json`.
PROSE_FLAG = re.compile(r"(?<![\w./-])`?(?:scripts/)?(\d\d)(?:-(\d\d))?(_[A-Za-z0-9_]+\.sh)?`?(?:'s)? `(--[a-z][a-z0-9-]*)")
COMMAND_END = re.compile(r"\|\||&&|[|;)]|\$\(")
MVP_NAME = re.compile(r"\bMVP_[A-Z0-9_]*[A-Z0-9](?:_?\*)?")
EXIT_CLAIM = re.compile(r"\bexit(?:s|ing)?(?: (?:code|status|with))? (\d+)\b", re.I)
CODE_LITERAL = re.compile(r"\b(?:exit|return)\s+(\d+)\b|\b[A-Z_]*EXIT\s*=\s*(\d+)\b|sys\.exit\((\d+)\)")


def pages(repo: Path) -> list:
    return [repo / "README.md"] + sorted((repo / "docs").rglob("*.md"))


def lines_of(page: Path):
    """(number, line, fenced) for each line, fence markers left out."""
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        yield number, line, fenced


def script_flags(repo: Path) -> dict:
    """NN -> (script name, the flags its --help shows)."""
    out = {}
    for script in sorted((repo / "scripts").glob("[0-9][0-9]_*.sh")):
        text = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True).stdout
        synopsis = text.split("\n\n")[0]
        out[script.name[:2]] = (script.name, set(FLAG.findall(synopsis)))
    return out


def commands(line: str, fenced: bool):
    """The pieces of a line that can be a command: the whole line in a fence,
    else each code span; each cut at a shell separator."""
    texts = [line] if fenced else [m.group(2) for m in CODE_SPAN.finditer(line)]
    for text in texts:
        yield from COMMAND_END.split(text)


def check_flags(repo: Path, page: Path, flags: dict, problems: list) -> None:
    name = page.relative_to(repo)
    for number, line, fenced in lines_of(page):
        for command in commands(line, fenced):
            match = SCRIPT_WORD.search(command)
            # A bare NN names a script only at the command's start (`51 ID --steps`).
            if not match or match.group(1) not in flags or (not match.group(2) and command[: match.start()].strip()):
                continue
            script, known = flags[match.group(1)]
            for flag in FLAG.findall(command[match.end():]):
                if flag not in known:
                    problems.append(f"{name}:{number}: gives {script} {flag}, which its --help does not show")
        for first, last, _, flag in [] if fenced else PROSE_FLAG.findall(line):
            for nn in (f"{n:02d}" for n in range(int(first), int(last or first) + 1)):
                if nn in flags and flag not in flags[nn][1]:
                    problems.append(f"{name}:{number}: gives {flags[nn][0]} {flag}, which its --help does not show")


def scripts_table(repo: Path, flags: dict, problems: list) -> None:
    """docs/scripts.md's table has a row for every numbered script."""
    text = (repo / "docs" / "scripts.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| \[?`(\d\d_[A-Za-z0-9_]+\.sh)`", text, re.M))
    for script, _ in flags.values():
        if script not in rows:
            problems.append(f"docs/scripts.md: its table has no row for {script}")


UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen \
sixteen seventeen eighteen nineteen".split()
TENS = {"twenty": 20, "thirty": 30, "forty": 40}
COUNT_CLAIM = re.compile(r"\b(\d+|(?:twenty|thirty|forty)(?:-[a-z]+)?|[a-z]+teen|[a-z]+) numbered scripts\b", re.I)


def number(words: str):
    """20, "twenty-one" or "eleven" as an int; None for a word that is no number."""
    if words.isdigit():
        return int(words)
    tens, _, unit = words.lower().partition("-")
    if tens in TENS and (not unit or unit in UNITS[1:10]):
        return TENS[tens] + (UNITS.index(unit) if unit else 0)
    return UNITS.index(tens) if tens in UNITS and not unit else None


def check_count(repo: Path, page: Path, count: int, problems: list) -> None:
    """"All twenty-one numbered scripts" is the number of scripts/NN_*.sh."""
    name = page.relative_to(repo)
    for number_, line, _ in lines_of(page):
        for claim in COUNT_CLAIM.finditer(line):
            said = number(claim.group(1))
            if said is not None and said != count:
                problems.append(f"{name}:{number_}: says {claim.group(1)} numbered scripts; scripts/ has {count}")


HELPER_CALL = re.compile(r"\bpython3? -m mvp ([a-z][a-z-]*)")


def helper_commands(repo: Path) -> set:
    return set(re.findall(r'add_parser\("([a-z-]+)"', (repo / "helpers" / "mvp" / "__main__.py").read_text(encoding="utf-8")))


def check_helper(repo: Path, page: Path, commands_: set, problems: list) -> None:
    """`python -m mvp WORD` names a command of the helper."""
    name = page.relative_to(repo)
    for number_, line, _ in lines_of(page):
        for command in HELPER_CALL.findall(line):
            if command not in commands_:
                problems.append(f"{name}:{number_}: names python -m mvp {command}, which is no command of helpers/mvp/__main__.py")


DEFAULT_CLAIM = re.compile(r"`(MVP_[A-Z0-9_]+)` \((?:default:? )?(\d+(?:\.\d+)?)[;,)]")


def contract_defaults(repo: Path) -> dict:
    """NAME -> its plain `default` (not per runtime or profile), where it has one."""
    out, name = {}, None
    for line in (repo / "config" / "settings.contract").read_text(encoding="utf-8").splitlines():
        entry = re.match(r"^([A-Z][A-Z0-9_*]*)\s*$", line)
        default = re.match(r"^\s+default\s+(\S.*)$", line)
        if entry:
            name = entry.group(1)
        elif default and name:
            out[name] = default.group(1).strip()
    return out


def check_defaults(repo: Path, page: Path, defaults: dict, problems: list) -> None:
    """`MVP_X` (30; ...) states the contract's default."""
    name = page.relative_to(repo)
    for number_, line, _ in lines_of(page):
        for setting, said in DEFAULT_CLAIM.findall(line):
            real = defaults.get(setting)
            if real is not None and real != said:
                problems.append(f"{name}:{number_}: says {setting} defaults to {said}; config/settings.contract says {real}")


def check_tier_table(repo: Path, problems: list) -> None:
    """testing.md's table: each tier's row names every bats file of the tier
    with its number of tests, and no other file."""
    text = (repo / "docs" / "testing.md").read_text(encoding="utf-8")
    for tier, cell in re.findall(r"^\| `tests/([\w-]+)/` \| (.*?) \|", text, re.M):
        said = {n: int(c) for n, c in re.findall(r"`([\w-]+)` \((\d+)", cell)}
        real = {f.stem: len(re.findall(r"^@test ", f.read_text(encoding="utf-8"), re.M))
                for f in (repo / "tests" / tier).glob("*.bats")}
        for file in sorted(set(said) | set(real)):
            row = f"docs/testing.md: its tests/{tier}/ row"
            if file not in said:
                problems.append(f"{row} lacks {file} ({real[file]} tests)")
            elif file not in real:
                problems.append(f"{row} names {file}, which tests/{tier}/ does not have")
            elif said[file] != real[file]:
                problems.append(f"{row} gives {file} {said[file]} tests; it has {real[file]}")


REPO_PATH = re.compile(r"(?<![\w/.<$-])((?:scripts|helpers|templates|config|tests|bench|docs|\.ci)/[\w./*{},<>-]*[\w*}>/])")
# Paths a page may name that are not in the checkout, each with why.
NOT_IN_REPO = {
    "config/local.env": "the user's own config file, made by the user",
    "config/job_spec.json": "a job directory's file (<job dir>/config/), not the repo's",
    "config/runtime_env.json": "a job directory's file",
    "config/submit_cmd.txt": "a job directory's file",
    "config/fingerprint.json": "a job directory's file (what the submitter knew)",
    "tests/artifacts": "made by tests/integration/nightly.bats (gitignored)",
}


def check_paths(repo: Path, page: Path, problems: list) -> None:
    """A repo path a page names (scripts/..., helpers/..., config/...) exists;
    a pattern (*, {a,b}, <name>, NN_) or `make docs/...` target is not a path."""
    name = page.relative_to(repo)
    for number_, line, _ in lines_of(page):
        for match in REPO_PATH.finditer(line):
            path = match.group(1).rstrip("/.")
            if any(c in path for c in "*{}<>") or "NN_" in path or line[: match.start()].endswith("make "):
                continue
            if path not in NOT_IN_REPO and not (repo / path).exists():
                problems.append(f"{name}:{number_}: names {path}, which is not in the repository")


SPEC_CITE = re.compile(r"spec(?:\.md)?,? points? (\d+)(?: and (\d+))?")
SEED_CITE = re.compile(r"\bseed 0\d\d\b")


def check_spec_citations(repo: Path, problems: list) -> None:
    """"the v1.1 runbook spec, point N" anywhere in the code or the pages names a
    numbered point of docs/spec.md, and nothing cites the seed specifications
    ("seed 004"), which are not in the repository."""
    points = set(re.findall(r"^## (\d+)\. ", (repo / "docs" / "spec.md").read_text(encoding="utf-8"), re.M))
    roots = ["README.md", "shared-layout.txt", "docs", "scripts", "helpers", "templates", "config"]
    files = [f for root in roots for f in ([repo / root] if (repo / root).is_file() else (repo / root).rglob("*"))
             if f.is_file() and f.suffix in ("", ".md", ".py", ".sh", ".yaml", ".txt", ".contract")]
    for file in files:
        for number_, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for cited in (n for m in SPEC_CITE.findall(line) for n in m if n):
                if cited not in points:
                    problems.append(f"{file.relative_to(repo)}:{number_}: cites the spec's point {cited}; docs/spec.md has none")
            if SEED_CITE.search(line):
                problems.append(f"{file.relative_to(repo)}:{number_}: cites a seed specification the reader cannot find; "
                                f"cite docs/spec.md's points")


def contract_names(repo: Path) -> set:
    text = (repo / "config" / "settings.contract").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Z][A-Z0-9_*]*)\s*$", text, re.M))


def declared(name: str, names: set) -> bool:
    if name in names or name in NOT_SETTINGS:
        return True
    if name.endswith("*"):  # a family a page names: some declared name must be in it
        prefix = name.rstrip("*")
        return any(n.startswith(prefix) for n in names)
    return any(n.endswith("*") and name.startswith(n.rstrip("*")) for n in names)


def stale_allowed(repo: Path, problems: list) -> None:
    for name, where in NOT_SETTINGS.items():
        if not (repo / where).is_file() or name not in (repo / where).read_text(encoding="utf-8"):
            problems.append(f"check_claims.py: NOT_SETTINGS names {name} as used in {where}, which does not use it")


def check_settings(repo: Path, page: Path, names: set, problems: list) -> None:
    name = page.relative_to(repo)
    for number, line, _ in lines_of(page):
        for setting in dict.fromkeys(MVP_NAME.findall(line)):
            if not declared(setting, names):
                problems.append(f"{name}:{number}: names {setting}, which config/settings.contract does not declare")


def settings_rows(repo: Path, problems: list) -> None:
    seen: dict = {}
    for number, line, _ in lines_of(repo / "docs" / "settings.md"):
        row = re.match(r"\| `([A-Z][A-Z0-9_*]*)` \|", line)
        if row and row.group(1) in seen:
            problems.append(f"docs/settings.md:{number}: {row.group(1)} again (first at line {seen[row.group(1)]})")
        elif row:
            seen[row.group(1)] = number


def bash_functions(repo: Path) -> dict:
    """Every scripts/lib function -> its body."""
    out = {}
    for lib in sorted((repo / "scripts" / "lib").glob("*.sh")):
        for match in re.finditer(r"^(mvp::[\w:]+)\(\)\s*\{\n(.*?)^\}", lib.read_text(encoding="utf-8"), re.M | re.S):
            out[match.group(1)] = match.group(2)
    return out


def literal_codes(text: str, constants: dict) -> set:
    codes = {int(next(g for g in m.groups() if g)) for m in CODE_LITERAL.finditer(text)}
    return codes | {code for var, code in constants.items() if var in text}


def script_codes(repo: Path) -> dict:
    """NN -> (script name, the exit codes its code can give)."""
    functions = bash_functions(repo)
    libs = "\n".join(p.read_text(encoding="utf-8") for p in (repo / "scripts" / "lib").glob("*.sh"))
    constants = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*([A-Z_]*EXIT)=(\d+)\b", libs, re.M)}
    helper = set()
    for module in (repo / "helpers" / "mvp").rglob("*.py"):
        helper |= literal_codes(module.read_text(encoding="utf-8"), {})
    out = {}
    for script in sorted((repo / "scripts").glob("[0-9][0-9]_*.sh")):
        text = script.read_text(encoding="utf-8")
        reached, todo = set(), [text]
        while todo:
            body = todo.pop()
            for called in set(re.findall(r"mvp::[\w:]+", body)) - reached:
                if called in functions:
                    reached.add(called)
                    todo.append(functions[called])
        codes = {0, 1} | literal_codes(text, constants)
        for function in reached:
            codes |= literal_codes(functions[function], constants)
        if "mvp::helper::run" in reached:
            codes |= helper
        out[script.name[:2]] = (script.name, codes)
    return out


def check_exits(repo: Path, page: Path, codes: dict, problems: list) -> None:
    name = page.relative_to(repo)
    for number, line, _ in lines_of(page):
        for claim in EXIT_CLAIM.finditer(line):
            named = [m for m in SCRIPT_WORD.finditer(line[: claim.start()]) if m.group(2) and m.group(1) in codes]
            if not named:
                continue
            script, known = codes[named[-1].group(1)]
            if int(claim.group(1)) not in known:
                problems.append(f"{name}:{number}: says {script} exits {claim.group(1)}, a code its code never gives")


def table_names(text: str, header: str) -> set:
    """The `names` of the first cells of the table under a `| HEADER |` line."""
    out: set = set()
    body = text.split(f"| {header} |", 1)[1].split("\n\n", 1)[0]
    for row in body.splitlines()[2:]:
        out |= set(re.findall(r"`([^`]+)`", row.split("|")[1]))
    return out


def check_architecture(repo: Path, problems: list) -> None:
    text = (repo / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    helpers = repo / "helpers" / "mvp"
    real = {str(p.relative_to(helpers)) for p in helpers.rglob("*.py") if p.name != "__init__.py"}
    shown = {n for n in table_names(text, "module") if not n.startswith("../")}
    for kind, have, listed in (("helpers/mvp", real, shown),
                               ("scripts/lib", {p.name for p in (repo / "scripts" / "lib").glob("*.sh")},
                                {n.replace("<name>", r) for n in table_names(text, "file")
                                 for r in (["compose", "kuberay", "local", "slurm", "ssh"] if "<name>" in n else [""])})):
        for missing in sorted(have - listed):
            problems.append(f"docs/ARCHITECTURE.md: its {kind} table lacks {missing}")
        for extra in sorted(listed - have):
            problems.append(f"docs/ARCHITECTURE.md: its {kind} table names {extra}, which is not in {kind}/")


def main() -> int:
    repo = Path(sys.argv[1]).resolve()
    problems: list = []
    flags, names, codes = script_flags(repo), contract_names(repo), script_codes(repo)
    helper, defaults = helper_commands(repo), contract_defaults(repo)
    for page in pages(repo):
        check_flags(repo, page, flags, problems)
        check_settings(repo, page, names, problems)
        check_exits(repo, page, codes, problems)
        check_count(repo, page, len(flags), problems)
        check_helper(repo, page, helper, problems)
        check_defaults(repo, page, defaults, problems)
        check_paths(repo, page, problems)
    scripts_table(repo, flags, problems)
    settings_rows(repo, problems)
    stale_allowed(repo, problems)
    check_architecture(repo, problems)
    check_tier_table(repo, problems)
    check_spec_citations(repo, problems)
    print("\n".join(problems), end="\n" if problems else "")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
