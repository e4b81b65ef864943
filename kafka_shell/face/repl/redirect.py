"""Where the REPL sends a line's results, as a shell would: `CMD > FILE`, `CMD >> FILE` (appended),
`CMD | COMMAND` (a shell command's input), and pgcli's `\\o FILE`, which appends every result to
FILE until `\\o` alone. Only results (stdout) go there: messages and errors stay on the terminal,
and results never hold secrets (the shell's rule for every output)."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
from collections.abc import Iterator
from typing import IO, Any, TextIO

from kafka_shell.base.errors import UsageError, shown


def target_file(text: str, op: str) -> str:
    """The one file name after `>`, `>>` or `\\o` (quotes and ~ as a shell reads them)."""
    try:
        words = shlex.split(text)
    except ValueError:
        raise UsageError(f"Unbalanced quotes in the file name after {op}: {shown(text)}") from None
    if len(words) != 1:
        raise UsageError(f"{op} takes one file name (quote a name with spaces), e.g. {op} plan.csv")
    return os.path.expanduser(words[0])


def open_file(path: str, append: bool) -> TextIO:
    try:
        return open(path, "a" if append else "w", encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise UsageError(f"Cannot write {shown(path)}: {exc.strerror or exc}") from None


class PipeSink(io.TextIOBase):
    """A command's standard input as the text stream results are written to. When the command
    stops reading (`| head -3`), what follows is dropped and `broken` says so: a streamed result
    (consume) stops there, as Ctrl-C stops it."""

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        self.broken = False
        self.buffer = _BinarySink(self)

    def write(self, text: str) -> int:   # type: ignore[override]
        self.write_bytes(text.encode("utf-8", "surrogateescape"))
        return len(text)

    def write_bytes(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            self._raw.write(data)
        except (BrokenPipeError, ValueError):
            self.broken = True

    def flush(self) -> None:
        if not self.broken:
            try:
                self._raw.flush()
            except (BrokenPipeError, ValueError):
                self.broken = True

    def isatty(self) -> bool:
        return False


class _BinarySink:
    """`PipeSink.buffer`: bytes written as they are (consume --raw, --format)."""

    def __init__(self, sink: PipeSink):
        self._sink = sink

    def write(self, data: bytes) -> int:
        self._sink.write_bytes(data)
        return len(data)

    def flush(self) -> None:
        self._sink.flush()


@contextlib.contextmanager
def redirected(op: str, target: str) -> Iterator[TextIO]:
    """The stream a line's results go to for `op` (`>`, `>>`, `|`) and its target; the file is
    closed, or the command's input closed and the command waited for, at the end."""
    if op in (">", ">>"):
        with open_file(target_file(target, op), append=op == ">>") as out:
            yield out
        return
    if not target:
        raise UsageError("| takes a command to send the result to, e.g. | grep orders")
    proc = subprocess.Popen(target, shell=True, stdin=subprocess.PIPE)   # noqa: S602 - the user's own shell line
    assert proc.stdin is not None
    sink = PipeSink(proc.stdin)
    try:
        yield sink   # type: ignore[misc]
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            proc.stdin.close()
        proc.wait()


def swapped_stdout(session: Any, out: TextIO) -> contextlib.AbstractContextManager[None]:
    """The session's results go to `out` for the duration."""
    @contextlib.contextmanager
    def swap() -> Iterator[None]:
        original = session.stdout
        session.stdout = out
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                out.flush()
            session.stdout = original
    return swap()
