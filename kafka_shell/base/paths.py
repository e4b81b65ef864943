"""Where the shell keeps the user's files, and the one way it writes them.

Config (clusters.json, state.json) lives in `$KAFKA_SHELL_CONFIG_DIR`, else
`$XDG_CONFIG_HOME/kafka-shell`; data (history, the throttle record) in `$KAFKA_SHELL_DATA_DIR`,
else `$XDG_DATA_HOME/kafka-shell`. Kept free of heavy imports: the one-shot path uses it.
"""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    explicit = os.environ.get("KAFKA_SHELL_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "kafka-shell"


def data_dir() -> Path:
    explicit = os.environ.get("KAFKA_SHELL_DATA_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "kafka-shell"

