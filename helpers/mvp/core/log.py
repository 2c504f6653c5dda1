"""Log lines on stderr in the bash library's shapes (scripts/lib/log.sh):
step "----->", info, warn " !", skip "SKIP:", each behind a UTC timestamp.
stdout is kept for data (ids, JSON)."""
import sys
import time


def _emit(marker: str, message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {marker} {message}", file=sys.stderr, flush=True)


def step(message: str) -> None:
    """A step being taken."""
    _emit("----->", message)


def info(message: str) -> None:
    """A fact found."""
    _emit("      ", message)


def warn(message: str) -> None:
    """Something to look at."""
    _emit(" !    ", message)


def skip(message: str) -> None:
    """Nothing to do, and why: 'what (why)'."""
    _emit("SKIP:", message)
