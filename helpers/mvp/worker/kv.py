"""The output contract between scripts and helpers, Python's half
(scripts/lib/kv.sh is bash's): a result a program reads travels on stdout as
key=value lines, made by `emit` and read by `parse`, never by matching what
a person reads. A key is [a-z][a-z0-9_]*; a value is the rest of its line
('=' included, never a newline); a list travels as one value, but a list of
words (an argv) as `words` makes it and `read_words` (bash: mvp::kv::words)
reads it back, whatever the words hold.

Standard library only: image_check.py imports it as a plain file inside an
image that has none of the helper's packages."""
import re
import sys

KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
# A word's escapes: a backslash, a newline and a carriage return (what bash's printf %b reads back).
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "n": "\n", "r": "\r"}


def line(key: str, value) -> str:
    """One key=value line (no newline); ValueError for a bad key or a value of two lines."""
    value = "" if value is None else str(value)
    if not KEY.match(key):
        raise ValueError(f"'{key}' is not a key ([a-z][a-z0-9_]*)")
    if "\n" in value or "\r" in value:
        raise ValueError(f"the value of {key} spans lines; a value is one line")
    return f"{key}={value}"


def emit(*pairs: tuple, file=None) -> None:
    """Writes each (key, value) as one line on stdout (or `file`), flushed:
    the caller may die right after."""
    out = file or sys.stdout
    out.write("".join(line(k, v) + "\n" for k, v in pairs))
    out.flush()


def parse_line(text: str) -> tuple:
    """(key, value) of one key=value line; ValueError for anything else."""
    key, sep, value = text.partition("=")
    if not sep or not KEY.match(key):
        raise ValueError(f"'{text[:80]}' is not a key=value line")
    return key, value


def parse(text: str) -> dict:
    """Every key=value line of `text` (empty lines skipped; a repeated key:
    the last wins); ValueError naming the first line that is anything else."""
    found = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if raw:
            try:
                key, value = parse_line(raw)
            except ValueError as exc:
                raise ValueError(f"line {n}: {exc}") from None
            found[key] = value
    return found


def words(prefix: str, items: list) -> list:
    """The (key, value) pairs that carry a list of words: PREFIXargc=N, then
    PREFIXarg_I=the word for each, its backslashes, newlines and carriage
    returns escaped (\\\\, \\n, \\r), so a word may hold anything, spaces,
    quotes and '=' as they are."""
    return [(prefix + "argc", len(items)),
            *((f"{prefix}arg_{i}", "".join(_ESCAPES.get(c, c) for c in str(w))) for i, w in enumerate(items))]


def read_words(found: dict, prefix: str = "") -> list:
    """The words `words` carried, from parse's dict; ValueError for a missing one or an unknown escape."""
    def unescape(match) -> str:
        if match.group(1) not in _UNESCAPES:
            raise ValueError(f"'\\{match.group(1)}' is not an escape of a word (\\\\, \\n, \\r)")
        return _UNESCAPES[match.group(1)]
    try:
        return [re.sub(r"\\(.?)", unescape, found[f"{prefix}arg_{i}"], flags=re.S)
                for i in range(int(found[prefix + "argc"]))]
    except KeyError as exc:
        raise ValueError(f"no word {exc} of {prefix}argc={found.get(prefix + 'argc')}") from None
