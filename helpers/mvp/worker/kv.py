"""The output contract between scripts and helpers, Python's half
(scripts/lib/kv.sh is bash's): a result a program reads travels on stdout as
key=value lines, made by `emit` and read by `parse`, never by matching what
a person reads. A key is [a-z][a-z0-9_]*; a value is the rest of its line
('=' included, never a newline); a list travels as one value.

Standard library only: image_check.py imports it as a plain file inside an
image that has none of the helper's packages."""
import re
import sys

KEY = re.compile(r"[a-z][a-z0-9_]*\Z")


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
