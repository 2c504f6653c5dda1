"""The runbook's settings as the helper receives them: the bash side
(scripts/lib/helper.sh, mvp::helper::env) passes every one the contract marks
`helper` as a variable, with its defaults already applied. The helper keeps no
defaults of its own: a missing setting is an error that names it.

Each setting is declared once, in config/settings.contract (see its header):
this module reads it for the helper's settings (attribute, variable, type),
and renders docs/settings.md from it (python -m mvp settings --markdown)."""
import os
from pathlib import Path

from ..worker.errors import MvpError
from .layout import Layout

CONTRACT = Path(__file__).resolve().parents[3] / "config" / "settings.contract"


def _words(value: str) -> tuple:
    return tuple(value.split())


def _flag(value: str) -> bool:
    return value == "1"


def _pairs(value: str) -> dict:
    return dict(word.split("=", 1) for word in value.split())


# The contract's types, as the helper reads them. Their check is bash's
# (scripts/lib/config.sh, mvp::config::check_types, before any helper runs):
# each converts every value that check lets through (settings_contract.bats).
CONVERT = {"text": str, "word": str, "one-of": str, "ipv4": str, "file": str, "path": Path,
           "abspath": Path, "name": str, "dns": str, "size": str,
           "int": int, "seconds": float, "flag": _flag, "words": _words, "pairs": _pairs,
           "url": lambda v: v.rstrip("/")}
KINDS = ("setting", "env", "internal")
KEYS = ("type", "default", "helper", "kind", "secret", "doc")


class Entry:
    """One NAME of the contract and its KEY VALUE lines."""
    __slots__ = ("name", "section", "type", "default", "derived", "helper", "source", "kind", "secret", "doc")

    def __init__(self, name: str, section: str):
        self.name, self.section = name, section
        self.type, self.default, self.helper, self.source, self.kind, self.secret = "text", None, "", name, "setting", ""
        self.derived, self.doc = [], []


def read_contract(path: Path = CONTRACT) -> list:
    """The contract's entries, in order. A line it does not know is an error
    with its line number (config.sh refuses the same lines)."""
    entries, section, entry, fresh = [], "", None, False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        if line.startswith("== "):
            section = line[3:].strip()
        elif not line.startswith(" "):
            entry, fresh = Entry(line.strip(), section), True
            entries.append(entry)
        else:
            key, _, value = line.strip().partition(" ")
            value = value.strip()
            base = key.split(".", 1)[0]
            if entry is None or base not in KEYS:
                raise MvpError(f"{path}:{n}: '{line.strip()}' is not a KEY VALUE line of the contract")
            fresh, first = False, fresh
            if key.startswith("default."):
                entry.derived.append((key[len("default."):], value))
            elif key == "default":
                entry.default = value
            elif key == "doc":
                entry.doc.append(value)
            elif key == "helper":
                attr, *rest = value.split()
                entry.helper = attr
                if rest:
                    entry.source = rest[-1]
            elif key == "kind":
                if value not in KINDS or not first:
                    raise MvpError(f"{path}:{n}: kind '{value}' is not one of {', '.join(KINDS)} on the entry's first "
                                   "line (config.sh places each line by the kind read before it)")
                entry.kind = value
            else:
                setattr(entry, key, value)
    return entries


_fields = None
_types = {}


def fields() -> dict:
    """attribute: (variable, conversion) of every setting the helper gets.
    Read once, when a command first reads a setting (not at import)."""
    global _fields
    if _fields is None:
        # A plain scan, not read_contract(): this runs in every helper command
        # (the submit path is benchmarked); settings_contract.bats checks
        # both read the same.
        attrs, name = {}, ""
        for line in CONTRACT.read_text(encoding="utf-8").splitlines():
            if line[:1].isalpha():
                name = line
            elif line.startswith("  type"):
                _types[name] = tuple(line.split()[1:])
            elif line.startswith("  helper"):
                attrs[line.split()[1]] = name
        _fields = {attr: (name, CONVERT[_types.get(name, ("text",))[0]]) for attr, name in attrs.items()}
    return _fields


def choices(variable: str) -> tuple:
    """The values of a `one-of` setting, as the contract lists them (the one list)."""
    fields()
    kind, *words = _types[variable]
    if kind != "one-of":
        raise ValueError(f"{variable} is not a one-of setting of {CONTRACT}")
    return tuple(words)


class Settings:
    """settings.NAME for each helper ATTR of the contract, plus the layout of
    the shared root. (A plain class: dataclasses' imports cost 8 ms on the
    submit path, which is benchmarked against the bare Ray CLI.)"""

    def __getattr__(self, name: str):
        try:
            variable, convert = fields()[name]
        except KeyError:
            raise AttributeError(name) from None
        try:
            value = os.environ[variable]
        except KeyError:
            raise MvpError(f"setting {variable} was not passed to the helper; run it through the scripts "
                           "(scripts/lib/helper.sh passes every setting)") from None
        try:
            return convert(value)
        except ValueError:
            raise MvpError(f"{variable}='{value}' is not valid here; fix it in your config") from None

    def text(self, variable: str) -> str:
        """The setting VARIABLE as it was passed, unconverted (what a rendered
        pod's environment gets): one the contract marks `helper`."""
        if variable not in self.variables():
            raise MvpError(f"{variable} is not a setting the helper gets; mark it `helper` in config/settings.contract")
        try:
            return os.environ[variable]
        except KeyError:
            raise MvpError(f"setting {variable} was not passed to the helper; run it through the scripts "
                           "(scripts/lib/helper.sh passes every setting)") from None

    @staticmethod
    def variables() -> list:
        """The variables of every setting the helper gets, sorted."""
        return sorted(variable for variable, _ in fields().values())

    @property
    def layout(self) -> Layout:
        return Layout(self.shared_root)

    @property
    def jobs_dir(self) -> Path:
        return self.layout.jobs

    @property
    def job_env(self) -> dict:
        """The config's variables every job's runtime_env gets (NCCL_*, GLOO_*...)."""
        return {name: os.environ.get(name, "") for name in self.job_env_names}


def load() -> Settings:
    return Settings()


def _code(value: str) -> str:
    return f"`{value}`" if value else "empty"


def _default(e: Entry) -> str:
    """The default column: the base default, then what an empty value becomes."""
    if [when for when, _ in e.derived] == ["*"]:
        derived = _code(e.derived[0][1])
    else:
        derived = "; ".join(f"{'otherwise' if when == '*' else when}: {_code(value)}" for when, value in e.derived)
    if e.default:
        return _code(e.default) + (f"; when empty, {derived}" if derived else "")
    if derived:
        return f"empty, then {derived}"
    return "empty" if e.default is not None else "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _internal_doc(e: Entry) -> str:
    """An internal name's line: its doc, then its value per runtime where
    the contract gives one (what the runtime does not compute itself)."""
    doc = " ".join(e.doc)
    if not e.derived:
        return doc
    values = "; ".join(f"{'otherwise' if when == '*' else when}: {_code(value)}" for when, value in e.derived)
    return f"{doc} Per runtime: {values}."


def markdown(entries: list) -> str:
    """docs/settings.md: one table per section of the contract."""
    out = ["# Settings", "",
           "<!-- Generated from config/settings.contract by `make docs/settings`; do not edit. -->", "",
           "Every setting of the runbook, declared once in `config/settings.contract`.",
           "Precedence, lowest first: the default, `config/local.env` (or the file of `MVP_CONFIG` / `--config`),",
           "the environment, the flags (`--runtime`, `--shared-root`, `--config`, `--dry-run`). A value still empty",
           "after that gets the default for its runtime (or `MVP_TRAINER_PROFILE`), else the one marked",
           "\"otherwise\"; `{NAME}` in a default is NAME's value (`{MVP_REPO}`: this repo's directory).",
           "A secret is never printed, logged or put on a command line; *secret file*: the file it names holds one.",
           "Every script checks each value against its type (the contract's header says what each type takes) before",
           "it does anything: a wrong one is one `ERROR:` line naming the setting and what it must be."]
    section = None
    for e in entries:
        if e.kind == "internal":
            continue
        if e.section != section:
            section = e.section
            out += ["", f"## {section}", "", "| Setting | Type | Default | What it does |", "|---|---|---|---|"]
        name = f"`{e.name}`" + (" (environment or flag)" if e.kind == "env" else "")
        doc = " ".join(e.doc) + (f" *Secret {e.secret}.*" if e.secret else "")
        out.append(f"| {name} | {_cell(e.type)} | {_cell(_default(e))} | {_cell(doc)} |")
    out += ["", "## Names that are not settings", "",
            "Variables the scripts and helpers set for themselves; a value you give them is not honoured.",
            "They are declared so that the contract test can refuse any other `MVP_*` name.", "",
            "| Name | What it is |", "|---|---|"]
    out += [f"| `{e.name}` | {_cell(_internal_doc(e))} |" for e in entries if e.kind == "internal"]
    return "\n".join(out) + "\n"


def main(args, _settings) -> int:
    print(markdown(read_contract()), end="")
    return 0
