"""What the shell leaves running on a cluster, recorded so that a later session can pick it up:
the balance (or drain) run it executes (its targets, whether to throttle, what to elect after),
which `balance --resume` continues and `balance --cancel` stops; and the brokers it drained (each
one's replica orders before the drain, and its cordon before), which `undrain-broker` restores.

One JSON file each in the user's data dir (see kafka_shell/base/paths.py), keyed by cluster id,
written atomically and readable by its owner only (as throttles.py keeps the throttles).
"""

from __future__ import annotations

from pathlib import Path

from kafka_shell.base.files import read_json_object, update_json_owned
from kafka_shell.base.paths import data_dir

Key = tuple[str, int]
RUNS, DRAINS = "balance-runs.json", "drains.json"


def key_text(key: Key) -> str:
    return f"{key[0]}:{key[1]}"


def key_of(text: str) -> Key:
    topic, _, p = text.rpartition(":")
    return topic, int(p)


def _path(name: str) -> Path:
    return data_dir() / name


def _read(name: str) -> dict:
    return read_json_object(_path(name))


def _write(name: str, cluster: str, record: dict | None) -> None:
    update_json_owned(_path(name), cluster, record)


# -- the run in progress ---------------------------------------------------------------------------


def run_record(targets: dict[Key, list[int]], original: dict[Key, list[int]], sizes: dict[Key, int],
               throttle: int | None, max_moves: int, max_bytes: int | None, what: str) -> dict:
    return {"what": what, "throttle": throttle, "max_moves": max_moves, "max_bytes": max_bytes,
            "targets": {key_text(k): r for k, r in sorted(targets.items())},
            "original": {key_text(k): original[k] for k in sorted(targets)},
            "sizes": {key_text(k): sizes.get(k, 0) for k in sorted(targets)}}


def load_run(cluster: str) -> dict | None:
    record = _read(RUNS).get(cluster)
    return record if isinstance(record, dict) and isinstance(record.get("targets"), dict) else None


def save_run(cluster: str, record: dict | None) -> None:
    _write(RUNS, cluster, record)


def run_targets(record: dict, field: str = "targets") -> dict[Key, list[int]]:
    return {key_of(k): list(v) for k, v in record.get(field, {}).items()}


# -- drained brokers -------------------------------------------------------------------------------


def load_drains(cluster: str) -> dict[int, dict]:
    """broker -> {"orders": {"t:p": replicas before}, "cordon": the cordoned.log.dirs before (a list)}."""
    found = _read(DRAINS).get(cluster) or {}
    return {int(b): r for b, r in found.items() if isinstance(r, dict)}


def save_drain(cluster: str, broker: int, record: dict | None) -> None:
    drains = {str(b): r for b, r in load_drains(cluster).items()}
    if record:
        drains[str(broker)] = record
    else:
        drains.pop(str(broker), None)
    _write(DRAINS, cluster, drains or None)
