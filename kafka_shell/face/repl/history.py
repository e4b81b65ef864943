"""Command history in the user's data directory, minus any line carrying a secret."""

from __future__ import annotations

import datetime
import os
import re
import sys
from pathlib import Path

from prompt_toolkit.history import FileHistory

from kafka_shell.connection.client_config import SECRET_WORDS
from kafka_shell.base.files import PRIVATE_DIR, append_private
from kafka_shell.declarations.parsing import logical_lines
from kafka_shell.base.paths import data_dir

# A line is kept out of history (file and memory, hence out of auto-suggestions too) when it
# mentions a secret property (the words client_config redacts) or any SASL or SSL key setting.
SECRET = re.compile("|".join(map(re.escape, (*SECRET_WORDS, "passwd", "sasl.", "ssl.key"))), re.I)


def is_secret(text: str) -> bool:
    """Whether the text, as typed or as the logical lines it makes, mentions a secret: a key split
    by `\\` continuations (`ss\\`, `l.keystore.pass\\`, `word=...`) is seen whole, joined as the
    shell joins it and as a POSIX shell would (without the space)."""
    glued = CONTINUATION.sub("", text)
    joined = [line for _, line in logical_lines(text.splitlines())]
    return any(SECRET.search(t) is not None for t in (text, glued, *joined))


CONTINUATION = re.compile(r"\\\r?\n[ \t]*")


def history_path() -> Path:
    return data_dir() / "history"


class SecretFreeHistory(FileHistory):
    """A FileHistory that never keeps a line with a secret. The file is readable by its owner
    only (an existing one is brought to 0600) and never written through a symlink: when it
    cannot be opened so, history stays in memory for this session, with one line saying why."""

    def __init__(self, path: str | os.PathLike[str]):
        path = Path(path)
        self.saving = True
        try:
            path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
            append_private(path, "")
        except OSError as exc:
            self.saving = False
            reason = "it is a symbolic link" if path.is_symlink() else exc.strerror or str(exc)
            sys.stderr.write(f"History is not saved: cannot write {path} ({reason}).\n")
        super().__init__(str(path))

    def load_history_strings(self):
        return super().load_history_strings() if self.saving else []

    def append_string(self, string: str) -> None:
        if not is_secret(string):
            super().append_string(string)

    def store_string(self, string: str) -> None:
        if not self.saving:
            return
        lines = "".join(f"+{line}\n" for line in string.split("\n"))
        try:
            append_private(Path(self.filename), f"\n# {datetime.datetime.now()}\n{lines}")  # type: ignore[arg-type]
        except OSError:
            self.saving = False  # the file went away or became a symlink: keep the rest in memory
