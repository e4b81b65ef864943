"""Command history in the user's data directory, minus any line carrying a secret."""

from __future__ import annotations

import os
import re
from pathlib import Path

from prompt_toolkit.history import FileHistory

from kafka_shell.client_config import SECRET_WORDS
from kafka_shell.paths import data_dir

# A line is kept out of history (file and memory, hence out of auto-suggestions too) when it
# mentions a secret property (the words client_config redacts) or any SASL or SSL key setting.
SECRET = re.compile("|".join(map(re.escape, (*SECRET_WORDS, "passwd", "sasl.", "ssl.key"))), re.I)


def is_secret(line: str) -> bool:
    return SECRET.search(line) is not None


def history_path() -> Path:
    return data_dir() / "history"


class SecretFreeHistory(FileHistory):
    """A FileHistory that never keeps a line with a secret; the file is readable by its owner only."""

    def __init__(self, path: str | os.PathLike[str]):
        path = Path(path)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)
        super().__init__(str(path))

    def append_string(self, string: str) -> None:
        if not is_secret(string):
            super().append_string(string)
