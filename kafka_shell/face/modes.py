"""The non-interactive modes, each a function returning the exit code (0 ok, 1 failed, 2 usage).
The REPL lives in `kafka_shell.face.repl` and is imported only when it runs.
"""

from __future__ import annotations

import collections
import os
import select
import sys
from typing import TextIO
from collections.abc import Iterable, Iterator

from kafka_shell.base.errors import ShellError, UsageError, printable
from kafka_shell.base.files import MAX_INPUT_BYTES, decode, read_text
from kafka_shell.declarations.parsing import each_logical_line, logical_lines, split_commands
from kafka_shell.face.runner import check as check_line
from kafka_shell.face.runner import run_each, run_line
from kafka_shell.connection.session import Session


def oneshot(session: Session, line: str) -> int:
    """`kafka-shell --command LINE` (or KIP-4's `kafka-shell --create-topic ...`)."""
    return run_line(session, line)


def replay(session: Session, path: str, quiet: bool = False, continue_on_error: bool = False,
           check_first: bool = True) -> int:
    """`kafka-shell --file script.ksh` (`-` reads standard input): one command a line, each run
    as it comes (standard input is read as it arrives: a stream of any length runs in bounded
    memory). A file is checked whole first (`check_first`): one that does not parse runs nothing."""
    name = "stdin" if path == "-" else path
    stream = _StdinLines() if path == "-" else None
    text = read_text(path, "script") if stream is None else ""
    if stream is None and check_first:
        errors, _ = check_lines(session, name, _text_lines(text))
        if errors:   # one line for one error, as for any bad input
            if len(errors) == 1:
                _report(session, [], errors[0] + " (nothing was run)")
            else:
                _report(session, errors, f"{name}: {len(errors)} errors; nothing was run.")
            return 2
    raw = stream if stream is not None else _text_lines(text)
    items = ((f"{name}:{number}: ", line) for number, line in each_logical_line(raw, MAX_INPUT_BYTES, f"{name}:"))

    def echo(where: str, line: str) -> None:
        number = where.rsplit(":", 2)[-2]
        session.stderr.write(f"{number}> {printable(line.strip())}\n")
        session.stderr.flush()

    failed = False
    for code in run_each(session, items, echo=None if quiet else echo, stop_on_error=not continue_on_error,
                         ready=stream.ready if stream is not None else None):
        failed = failed or code != 0
    return 1 if failed else 0


def check(session: Session, path: str) -> int:
    """`kafka-shell --check script.ksh` (`-`: standard input): every line parsed as replay would
    run it (context lines followed), every error named with its line number; nothing is sent."""
    name = "stdin" if path == "-" else path
    errors, count = check_lines(session, name, _StdinLines() if path == "-" else _text_lines(read_text(path, "script")))
    if errors:
        _report(session, errors, f"{name}: {count} command(s) checked, {len(errors)} error(s).")
        return 2
    _report(session, [], f"{name}: {count} command(s) checked, no errors.")
    return 0


def check_lines(session: Session, name: str, raw: Iterable[str]) -> tuple[list[str], int]:
    """Each command of the script checked as the runner checks a line before running it
    (runner.check), in order: a context line (`topic t`, `output csv`, `use-cluster`) changes
    what the lines after it are checked against, as it will when they run. The errors
    ("name:N: ...") and how many commands there were."""
    shadow = Session(topic=session.topic, output=session.output, yes=session.yes)
    errors: list[str] = []
    count = 0
    try:
        for number, line in each_logical_line(raw, MAX_INPUT_BYTES, f"{name}:"):
            for part in split_commands(line):
                count += 1
                try:
                    parsed = check_line(shadow, part)
                except ShellError as exc:
                    errors.append(printable(f"{name}:{number}: {exc}"))
                    continue
                if parsed is not None and not parsed.help:
                    _follow_context(shadow, parsed.command.name, parsed.args)
    except UsageError as exc:   # a line too long to read: the rest cannot be checked
        errors.append(printable(str(exc)))
    return errors, count


def _follow_context(shadow: Session, command: str, args: dict) -> None:
    if command == "topic":
        shadow.topic = args.get("name") or None
    elif command == "output":
        shadow.output = args.get("format") or shadow.output
    elif command == "use-cluster":
        shadow.topic = None


def _report(session: Session, errors: list[str], summary: str) -> None:
    for line in [*errors, summary]:
        session.stderr.write(line + "\n")
    session.stderr.flush()


class _StdinLines:
    """Standard input's lines as they arrive, each at most MAX_INPUT_BYTES (the limit of a file:
    a longer one is a UsageError with its number, before more of it is read). `ready()` tells
    whether a line can be had without waiting (a batch of create-topic lines takes only those)."""

    CHUNK = 1 << 16

    def __init__(self) -> None:
        self.fd = _fileno(sys.stdin)  # None: a test's StringIO, text already
        self.lines: collections.deque[bytes] = collections.deque()
        self.partial: list[bytes] = []   # the pieces of a line still arriving
        self.size = 0
        self.number = 0
        self.eof = False

    def ready(self) -> bool:
        return bool(self.lines) or self.eof or self.fd is None or bool(select.select([self.fd], [], [], 0)[0])

    def __iter__(self) -> Iterator[str]:
        if self.fd is None:
            yield from (line.removesuffix("\n").removesuffix("\r") for line in sys.stdin)
            return
        while True:
            while not self.lines and not self.eof:
                self._read()
            if not self.lines:
                return
            self.number += 1
            line = self.lines.popleft()
            yield decode(line, f"standard input line {self.number}").removesuffix("\r")

    def _read(self) -> None:
        chunk = os.read(self.fd, self.CHUNK)  # type: ignore[arg-type]
        if not chunk:
            self.eof = True
            if self.partial:
                self._line(b"")
            return
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._line(chunk[start:end])
            start = end + 1
        if start < len(chunk):
            self.partial.append(chunk[start:])
            self.size += len(chunk) - start
            if self.size > MAX_INPUT_BYTES:
                self._too_long()

    def _line(self, last: bytes) -> None:
        line = b"".join([*self.partial, last])
        self.partial, self.size = [], 0
        if len(line) > MAX_INPUT_BYTES:
            self._too_long()
        self.lines.append(line)

    def _too_long(self) -> None:
        raise UsageError(f"stdin:{self.number + len(self.lines) + 1}: a line longer than "
                         f"{MAX_INPUT_BYTES // 2**20} MiB (the limit of a script file): give one command a line")


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


def _text_lines(text: str) -> Iterator[str]:
    """The lines of a script file read whole, one at a time (no list of them all)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end].removesuffix("\r")
        start = end + 1


def script_lines(raw: Iterable[str]) -> list[tuple[int, str]]:
    """(first line number, logical line) pairs: `\\` at the end of a line, or a quote left
    open, continues it on the next; blank lines and `#` comment lines are dropped."""
    return logical_lines(raw)


def stdin_is_piped(stream: TextIO = sys.stdin) -> bool:
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False
