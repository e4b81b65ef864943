"""The controller changes this shell has seen, per cluster, in the user's data dir
(`controller-history/<cluster id>.json`): each time a command learns the active controller, a
change from the last one recorded (another node, or in KRaft mode a new epoch) is appended with
its time. Changes between two runs of the shell are seen at the next run, timed then."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from kafka_shell.base.errors import ShellError
from kafka_shell.base.files import locked, read_owned, write_json_owned
from kafka_shell.connection.metadata import ControllerInfo
from kafka_shell.base.paths import data_dir

MAX_ENTRIES = 1000
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def path(cluster_id: str) -> Path:
    return data_dir() / "controller-history" / f"{_UNSAFE.sub('_', cluster_id)}.json"


def load(cluster_id: str) -> list[dict]:
    try:
        data = json.loads(read_owned(path(cluster_id)) or "[]")
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def observe(cluster_id: str | None, controller: ControllerInfo) -> None:
    """Record `controller` if it differs from the last one seen for this cluster."""
    if not cluster_id or controller.id < 0:
        return
    if _seen(load(cluster_id), controller):   # the common case: no lock taken
        return
    try:
        with locked(path(cluster_id)):
            entries = load(cluster_id)   # another shell may have written since
            if _seen(entries, controller):
                return
            last = entries[-1] if entries else None
            entries.append({"time": time.time(), "from": last.get("to") if last else None, "to": controller.id,
                            "epoch": controller.epoch, "mode": controller.mode})
            write_json_owned(path(cluster_id), entries[-MAX_ENTRIES:])
    except (OSError, ShellError):
        pass  # a read-only data dir loses the record, never the command


def _seen(entries: list[dict], controller: ControllerInfo) -> bool:
    """`controller` is the last one recorded."""
    return bool(entries) and entries[-1].get("to") == controller.id and entries[-1].get("epoch") == controller.epoch
