"""Checks what README.md and docs/**/*.md claim about the code against the
code, and prints one line per false claim (FILE:LINE: what), nothing when all
is true:
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
- a repository path a page names (`helpers/mvp/cluster/ray_nodes.py`, `config/nightly.yaml`)
  exists, but for patterns, make targets and NOT_IN_REPO;
- "the v1.1 runbook spec, point N" (in a page or the code) is a point of docs/spec.md;
- docs/settings.md has each setting once; docs/testing.md's table names each
  tier's bats files with their number of tests;
- docs/ARCHITECTURE.md's tables name every module of helpers/mvp/ (by its path
  there: `jobs/planning/plan.py`) and every file of scripts/lib/, and nothing that is
  not there;
- a script that passes words through (70's SCRIPT [ARGS...]) is written with
  its flags before those words, in a page and in its --help's usage line;
- a flag a page gives the reader is a numbered script's, not the helper's own
  (`--check-only`) unless the helper is named;
- a key a page names of a file (the manifest's `git_commit`) is one the code
  writing that file writes;
- which night is the first judged is said in docs/nightly.md alone, and is
  the one after MVP_NIGHTLY_MIN_HISTORY good nights;
- a make target said to run "after `make X`" depends on X; a VAR= given to a
  target is one its recipe reads; a flag of the program behind a target,
  named beside it, is one the recipe can pass;
- a number stated twice agrees: a count of measured runs with the page's
  table of runs, a bundle's MiB with docs/first-gpu-night.md's table of
  bundles, testing.md's "N passed, none failed" with its tier table's sum;
- nothing cites the project's own tracker ("issue N") or a workplace tool.
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


SYNOPSIS_ENTRY = re.compile(r"^  (\S+(?: \S+)?)  ", re.M)


def script_flags(repo: Path) -> dict:
    """NN -> (script name, the flags its --help shows)."""
    return {nn: (name, flags) for nn, (name, flags, *_) in script_help(repo).items()}


def script_help(repo: Path) -> dict:
    """NN -> (script name, the flags its --help shows, its usage line, the
    name of the words it passes through (NAME... of its spec; "" for none))."""
    out = {}
    for script in sorted((repo / "scripts").glob("[0-9][0-9]_*.sh")):
        text = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True).stdout
        synopsis = text.split("\n\n")[0]
        forms = SYNOPSIS_ENTRY.findall(synopsis)
        rest = next((f for f in forms if not f.startswith("-") and "..." in f), "")
        first = next((f for f in forms if not f.startswith("-")), "") if rest else ""
        takes = {f.split()[0]: " " in f for f in forms if f.startswith("--")}
        out[script.name[:2]] = (script.name, set(FLAG.findall(synopsis)), synopsis.splitlines()[0], first, takes)
    return out


SCRIPT_NAME = re.compile(r"(?<![\w/.-])(?:scripts/)?(\d\d)_[A-Za-z0-9_]+\.sh(?![\w.-])")


def check_pass_through(repo: Path, page: Path, helps: dict, problems: list) -> None:
    """A script that passes words through (70: SCRIPT [ARGS...]) takes its own
    flags only before its first positional word: a usage a page writes for it
    (SCRIPT [ARGS...] [FLAGS]) or a command that gives one of its flags after
    that word is an order that does not work."""
    name = page.relative_to(repo)
    for number_, line, fenced in lines_of(page):
        for command in commands(line, fenced):
            for usage in SCRIPT_NAME.finditer(command):
                nn = usage.group(1)
                if nn not in helps or not helps[nn][3]:
                    continue
                script, _, _, first, takes = helps[nn]
                words, positional, i = command[usage.end():].split(), None, 0
                while i < len(words) and positional is None:
                    bare = words[i].strip("[]")
                    if words[i] == "[FLAGS]" or bare.startswith("-"):
                        i += 2 if takes.get(bare) and not words[i].endswith("]") else 1
                    else:
                        positional = i
                if positional is None:
                    continue
                late = [w.strip("[]") for w in words[positional + 1:] if w == "[FLAGS]" or w.strip("[]") in takes]
                if late:
                    problems.append(f"{name}:{number_}: writes {script} with {late[0]} after {first}, "
                                    f"where every word is {first}'s own; its flags go before {first}")


def check_usage_lines(helps: dict, problems: list) -> None:
    """--help's usage line of a script that passes words through puts [FLAGS] first."""
    for script, _, usage, first, _ in helps.values():
        if first and usage.find("[FLAGS]") > usage.find(f" {first}"):
            problems.append(f"{script} --help: its usage line puts [FLAGS] after {first}, where every word is {first}'s own")


COMMON_FLAGS = {"--help", "--dry-run", "--config", "--runtime", "--shared-root"}


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
    a pattern (*, {a,b}, <name>, NN_, a path that goes on in a value: runtime_…) or
    `make docs/...` target is not a path."""
    name = page.relative_to(repo)
    for number_, line, _ in lines_of(page):
        for match in REPO_PATH.finditer(line):
            path = match.group(1).rstrip("/.")
            if any(c in path for c in "*{}<>") or "NN_" in path or line[: match.start()].endswith("make ") \
                    or line[match.end():].startswith("…"):
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


HISTORY_WORDS = re.compile(r"\b[Ii]ssue \d{1,3}\b|\bfarm-(?:studio|bench)\b")


def check_history_words(repo: Path, problems: list) -> None:
    """No page, code, test or benchmark cites the project's own tracker
    ("issue" and a number) or a tool of the workplace: a reader can open neither.
    Public trackers are cited by their project (verl #7401, podman #11446)."""
    roots = ["README.md", "Makefile", "docs", "scripts", "helpers", "templates", "config", "tests", "bench"]
    files = [f for root in roots for f in ([repo / root] if (repo / root).is_file() else (repo / root).rglob("*"))
             if f.is_file() and f.suffix in ("", ".md", ".py", ".sh", ".bats", ".bash", ".yaml", ".txt", ".contract")]
    for file in files:
        for number_, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            found = HISTORY_WORDS.search(line)
            if found:
                problems.append(f"{file.relative_to(repo)}:{number_}: cites '{found.group(0)}', which a reader cannot "
                                f"open; say what the code or test proves")


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


def paragraphs_marked(page: Path):
    """As paragraphs, but the text keeps a NUL where a line ended, so that an
    offset finds its line (line_of)."""
    numbers, texts = [], []
    for number_, line, fenced in list(lines_of(page)) + [(0, "", False)]:
        if fenced or not line.strip() or line.lstrip().startswith("|"):
            if texts:
                yield numbers, "\0".join(texts)
            numbers, texts = [], []
            continue
        numbers.append(number_)
        texts.append(line.strip())


def paragraphs_after_fence(page: Path):
    """As paragraphs_marked, with the text of the fenced block right before
    the paragraph ("" when prose comes before it)."""
    numbers, texts, fence, last = [], [], [], ""
    for number_, line, fenced in list(lines_of(page)) + [(0, "", False)]:
        if fenced:
            fence.append(line)
            continue
        if fence:
            last, fence = "\n".join(fence), []
        if not line.strip() or line.lstrip().startswith("|"):
            if texts:
                yield numbers, "\0".join(texts), last
                last = ""
            numbers, texts = [], []
            continue
        numbers.append(number_)
        texts.append(line.strip())


def line_of(numbers: list, text: str, offset: int) -> int:
    return numbers[text[:offset].count("\0")]


SENTENCE = re.compile(r"(?:[^.!?]|[.!?](?![\s\0]|$))+[.!?]?")


def sentences(text: str):
    """(offset, sentence) for each sentence of a paragraph's text: ends at
    a full stop followed by a space or a line's end (3.12 and x.sbatch do not end one)."""
    for match in SENTENCE.finditer(text):
        yield match.start(), match.group(0)


HELPER_FLAG = re.compile(r'add_argument\(\s*"(--[a-z][a-z0-9-]*)"')


def helper_flags(repo: Path, flags: dict) -> dict:
    """The helper's own flags (python -m mvp COMMAND --flag) that no numbered
    script takes -> the helper command that has it."""
    text = (repo / "helpers" / "mvp" / "__main__.py").read_text(encoding="utf-8")
    scripts = set().union(*(known for _, known in flags.values())) | COMMON_FLAGS
    out: dict = {}
    for block in re.split(r'(?=add_parser\(")', text):
        command = re.match(r'add_parser\("([a-z-]+)"', block)
        for flag in HELPER_FLAG.findall(block):
            if flag not in scripts:
                out.setdefault(flag, command.group(1) if command else "")
    return out


def check_internal_flags(repo: Path, page: Path, internal: dict, problems: list) -> None:
    """A flag a page tells a reader to use is one a numbered script takes: the
    helper's own flags (`--check-only`) are named only beside the helper
    (`python -m mvp`, "the helper")."""
    name = page.relative_to(repo)
    for numbers, text in paragraphs_marked(page):
        flat = text.replace("\0", " ")
        for span in CODE_SPAN.finditer(flat):
            flag = span.group(2).split()[0]
            command = internal.get(flag)
            if command is None or re.search(rf"\b{re.escape(command)}\b|python3? -m mvp", flat[: span.start()]):
                continue
            problems.append(f"{name}:{line_of(numbers, text, span.start())}: gives {flag}, a flag of the helper's "
                            f"{command} that no numbered script takes")


# A file's key a page names ("the manifest's `git_commit`"), and the code that writes that file.
FILE_KEY = re.compile(r"\b(manifest|MANIFEST\.json|fingerprint\.json|result\.json)(?:'s)? `([a-z_][a-z0-9_]*)`")
FILE_WRITERS = {
    "manifest": ("helpers/mvp/cluster/snapshot.py", "helpers/mvp/data/prepare.py"),
    "MANIFEST.json": ("helpers/mvp/cluster/snapshot.py", "helpers/mvp/data/prepare.py"),
    "fingerprint.json": ("helpers/mvp/jobs/after_sending/job_fingerprint.py",),
    "result.json": ("helpers/mvp/jobs/after_sending/archive.py", "helpers/mvp/worker/jobdir.py"),
}


def check_file_keys(repo: Path, page: Path, problems: list) -> None:
    """Every key of a file a page names is one the code that writes it writes
    (a string literal there)."""
    name = page.relative_to(repo)
    for number_, line, _ in lines_of(page):
        for file, key in FILE_KEY.findall(line):
            writers = FILE_WRITERS[file]
            code = "\n".join((repo / w).read_text(encoding="utf-8") for w in writers if (repo / w).is_file())
            if not re.search(rf"""["']{key}["']""", code):
                problems.append(f"{name}:{number_}: names the {file} key {key}, which {' or '.join(writers)} never writes")


ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth".split()
JUDGED_FROM = re.compile(r"\bfrom the (" + "|".join(ORDINALS) + r")(?: good)? nights? on\b|\b(?:the )?(" + "|".join(ORDINALS)
                         + r")(?: good)? night (?:is|will be) (?:the first )?judged\b", re.I)
JUDGED_OWNER = "docs/nightly.md"


def check_judged_from(repo: Path, page: Path, defaults: dict, problems: list) -> None:
    """When the check `regression` starts judging is said once, in
    docs/nightly.md, and is the night after MVP_NIGHTLY_MIN_HISTORY good ones."""
    name = page.relative_to(repo)
    need = int(defaults.get("MVP_NIGHTLY_MIN_HISTORY", "3"))
    for numbers, text in paragraphs_marked(page):
        flat = text.replace("\0", " ")
        if "judg" not in flat:
            continue
        for claim in JUDGED_FROM.finditer(text.replace("\0", " ")):
            said = ORDINALS.index((claim.group(1) or claim.group(2)).lower()) + 1
            where = f"{name}:{line_of(numbers, text, claim.start())}"
            if said != need + 1:
                problems.append(f"{where}: says the {ORDINALS[said - 1]} night is the first judged; with "
                                f"MVP_NIGHTLY_MIN_HISTORY {need} good nights before it, it is the {ORDINALS[need]}")
            elif str(name) != JUDGED_OWNER:
                problems.append(f"{where}: says when nights are first judged, which {JUDGED_OWNER} says; link it instead")


def makefile_targets(repo: Path) -> dict:
    """make target -> (its prerequisites, transitively; the flags its recipe
    passes; the make variables it reads)."""
    text = (repo / "Makefile").read_text(encoding="utf-8")
    rules: dict = {}
    for target, prereqs, recipe in re.findall(r"^([a-z][\w/-]*):([^=\n]*)\n((?:\t.*\n?)*)", text, re.M):
        rules[target] = (prereqs.split(), recipe)
    out = {}
    for target, (prereqs, recipe) in rules.items():
        seen, todo = set(), list(prereqs)
        while todo:
            t = todo.pop()
            if t not in seen:
                seen.add(t)
                todo += rules.get(t, ((), ""))[0]
        out[target] = (seen, set(FLAG.findall(recipe)), set(re.findall(r"\$\(([A-Z][A-Z0-9_]*)\)", recipe)), recipe)
    return out


MAKE_AFTER = re.compile(r"\(?after `make ([a-z][\w-]*)`")
MAKE_CALL = re.compile(r"`make ([a-z][\w/-]*)((?: [A-Z][A-Z0-9_]*=\S*)*)`")


def check_make_claims(repo: Path, page: Path, targets: dict, problems: list) -> None:
    """What a page says of a make target is what the Makefile has: a target
    said to run "after `make X`" has X among its prerequisites; a VAR=
    given to it is one its recipe reads; a flag of the program its recipe runs
    named beside it (`make gpu-bundle` ... `--part-mib 20`) is one the recipe
    passes (make cannot pass any other)."""
    name = page.relative_to(repo)
    for numbers, text in paragraphs_marked(page):
        flat = text.replace("\0", " ")
        named = [t for t in re.findall(r"`make ([a-z][\w/-]*)", flat) if t in targets]
        named += [t for t in re.findall(r"`(test-[\w-]+)`", flat) if t in targets]
        for after in MAKE_AFTER.finditer(flat):
            for target in dict.fromkeys(named):
                if target.startswith("test") and after.group(1) not in targets[target][0]:
                    problems.append(f"{name}:{line_of(numbers, text, after.start())}: says make {target} runs after "
                                    f"make {after.group(1)}; it runs after {', '.join(sorted(targets[target][0])) or 'nothing'}")
        for call in MAKE_CALL.finditer(flat):
            target = call.group(1)
            if target not in targets:
                continue
            for var in re.findall(r"([A-Z][A-Z0-9_]*)=", call.group(2)):
                if var not in targets[target][2]:
                    problems.append(f"{name}:{line_of(numbers, text, call.start())}: gives make {target} {var}=, "
                                    f"which its recipe does not read")
    # A flag of the program behind a make target, in a paragraph that names
    # the target (or right after a fence that does), is one the target
    # passes, unless the paragraph names the program itself.
    page_text = page.read_text(encoding="utf-8")
    programs = {}
    for target in dict.fromkeys(re.findall(r"\bmake ([a-z][\w/-]*)", page_text)):
        program = re.search(r"scripts/libexec/\w+\.sh", targets[target][3]) if target in targets else None
        spec = program and re.search(r"^mvp::flags::spec (.*)$", (repo / program.group(0)).read_text(encoding="utf-8"), re.M)
        if spec:
            programs[target] = (program.group(0), set(FLAG.findall(spec.group(1))))
    for numbers, text, fence in paragraphs_after_fence(page):
        flat = text.replace("\0", " ")
        for target, (program, takes) in programs.items():
            if program in flat or f"make {target}" not in flat + " " + fence:
                continue
            for span in CODE_SPAN.finditer(flat):
                if SCRIPT_WORD.search(span.group(2)) and re.search(r"\d\d_\w+\.sh|^\d\d\b", span.group(2)):
                    continue
                for flag in FLAG.findall(span.group(2)):
                    if flag in takes and flag not in targets[target][1]:
                        problems.append(f"{name}:{line_of(numbers, text, span.start())}: gives {flag} for make {target}, "
                                        f"which its recipe cannot pass (a make variable it reads, or {program} {flag})")


COUNT_WORDS = {"once": 1, "twice": 2, "thrice": 3}
RUN_COUNT = re.compile(r"\b(once|twice|thrice|(\d+|" + "|".join(UNITS[2:]) + r") (?:runs|times))\b", re.I)


def measured_runs(repo: Path) -> dict:
    """page -> the rows of its table of measured runs (the table under a
    `| run |` header)."""
    out = {}
    for page in pages(repo):
        text = page.read_text(encoding="utf-8")
        if "\n| run |" in text:
            body = text.split("\n| run |", 1)[1].split("\n\n", 1)[0]
            out[page] = len([r for r in body.splitlines()[2:] if r.startswith("|")])
    return out


def bundle_sizes(repo: Path) -> dict:
    """The measured bundles (docs/first-gpu-night.md's table under `| bundle |`):
    its first cell (`HOST_HAS=...` or default) -> the MiB figures of its row."""
    text = (repo / "docs" / "first-gpu-night.md").read_text(encoding="utf-8")
    out: dict = {}
    if "\n| bundle |" in text:
        body = text.split("\n| bundle |", 1)[1].split("\n\n", 1)[0]
        for row in body.splitlines()[2:]:
            cells = row.split("|")
            key = re.search(r"HOST_HAS=([\w,]+)", cells[1])
            out[key.group(1) if key else "default"] = set(re.findall(r"(\d+\.\d) MiB", row))
    return out


def check_stated_twice(repo: Path, page: Path, runs: dict, sizes: dict, problems: list) -> None:
    """A number stated twice agrees: a count of measured runs ("twice", "five
    runs") beside "measured" is the rows of the page's table of runs; a
    bundle's size in MiB beside its `HOST_HAS=` is one of that bundle's
    figures in docs/first-gpu-night.md's table."""
    name = page.relative_to(repo)
    for numbers, text in paragraphs_marked(page):
        for start, said in sentences(text):
            said = said.replace("\0", " ")
            if page in runs and "measured" in said:
                for count in RUN_COUNT.finditer(said):
                    word = (count.group(2) or count.group(1)).lower()
                    n = COUNT_WORDS.get(word) or (int(word) if word.isdigit() else UNITS.index(word))
                    if n != runs[page]:
                        problems.append(f"{name}:{line_of(numbers, text, start + count.start())}: says "
                                        f"{count.group(1)}; its table of measured runs has {runs[page]}")
            for bundle in re.finditer(r"HOST_HAS=([\w,]+)", said):
                known = sizes.get(bundle.group(1))
                for size in re.finditer(r"(\d+\.\d) MiB", said[bundle.end():]):
                    if known is not None and size.group(1) not in known:
                        problems.append(f"{name}:{line_of(numbers, text, start + bundle.end() + size.start())}: "
                                        f"says the bundle of HOST_HAS={bundle.group(1)} is {size.group(1)} MiB; "
                                        f"docs/first-gpu-night.md's table gives {' and '.join(sorted(known))}")


def check_passed_total(repo: Path, problems: list) -> None:
    """A count of passed tests docs/testing.md gives is its table's sum."""
    text = (repo / "docs" / "testing.md").read_text(encoding="utf-8")
    total = sum(int(n) for row in re.findall(r"^\| `tests/[\w-]+/` \| (.*?) \|", text, re.M)
                for n in re.findall(r"`[\w-]+` \((\d+)", row))
    for number_, line, _ in lines_of(repo / "docs" / "testing.md"):
        for said in re.findall(r"\b(\d+) passed, none failed\b", CODE_SPAN.sub("", line)):
            if int(said) != total:
                problems.append(f"docs/testing.md:{number_}: says {said} passed; its table counts {total} tests")


def main() -> int:
    repo = Path(sys.argv[1]).resolve()
    problems: list = []
    helps = script_help(repo)
    flags = {nn: (name, known) for nn, (name, known, *_) in helps.items()}
    names, codes = contract_names(repo), script_codes(repo)
    internal, make_targets = helper_flags(repo, flags), makefile_targets(repo)
    run_table, sizes = measured_runs(repo), bundle_sizes(repo)
    helper, defaults = helper_commands(repo), contract_defaults(repo)
    for page in pages(repo):
        check_flags(repo, page, flags, problems)
        check_settings(repo, page, names, problems)
        check_exits(repo, page, codes, problems)
        check_count(repo, page, len(flags), problems)
        check_helper(repo, page, helper, problems)
        check_defaults(repo, page, defaults, problems)
        check_paths(repo, page, problems)
        check_pass_through(repo, page, helps, problems)
        check_internal_flags(repo, page, internal, problems)
        check_file_keys(repo, page, problems)
        check_judged_from(repo, page, defaults, problems)
        check_make_claims(repo, page, make_targets, problems)
        check_stated_twice(repo, page, run_table, sizes, problems)
    check_passed_total(repo, problems)
    check_usage_lines(helps, problems)
    scripts_table(repo, flags, problems)
    settings_rows(repo, problems)
    stale_allowed(repo, problems)
    check_architecture(repo, problems)
    check_tier_table(repo, problems)
    check_spec_citations(repo, problems)
    check_history_words(repo, problems)
    print("\n".join(problems), end="\n" if problems else "")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
