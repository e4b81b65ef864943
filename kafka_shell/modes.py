"""The non-interactive modes, each a function returning the exit code (0 ok, 1 failed, 2 usage).
The REPL lives in `kafka_shell.repl` and is imported only when it runs.
"""

from __future__ import annotations

import sys
from typing import TextIO
from collections.abc import Iterable

from kafka_shell.errors import printable
from kafka_shell.files import decode, read_text
from kafka_shell.parsing import logical_lines
from kafka_shell.runner import run_line, run_lines
from kafka_shell.session import Session


def oneshot(session: Session, line: str) -> int:
    """`kafka-shell --command LINE` (or KIP-4's `kafka-shell --create-topic ...`)."""
    return run_line(session, line)


def replay(session: Session, path: str, quiet: bool = False, continue_on_error: bool = False) -> int:
    """`kafka-shell --file script.ksh` (`-` reads standard input): one command a line."""
    name = "stdin" if path == "-" else path
    items = [(f"{name}:{number}: ", text) for number, text in script_lines(_read(path))]

    def echo(where: str, line: str) -> None:
        number = where.rsplit(":", 2)[-2]
        session.stderr.write(f"{number}> {printable(line.strip())}\n")
        session.stderr.flush()

    codes = run_lines(session, items, echo=None if quiet else echo, stop_on_error=not continue_on_error)
    return 1 if any(codes) else 0


def _read(path: str) -> list[str]:
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)  # a test's StringIO stdin has no bytes to decode
        return (decode(raw.read(), "standard input") if raw else sys.stdin.read()).splitlines()
    return read_text(path, "script").splitlines()


def script_lines(raw: Iterable[str]) -> list[tuple[int, str]]:
    """(first line number, logical line) pairs: `\\` at the end of a line, or a quote left
    open, continues it on the next; blank lines and `#` comment lines are dropped."""
    return logical_lines(raw)


def stdin_is_piped(stream: TextIO = sys.stdin) -> bool:
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False
