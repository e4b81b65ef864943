"""Kafka's reassignment JSON file, as kafka-reassign-partitions reads and writes it; reassign-partitions
takes it (--reassignment-json-file) and balance saves and runs its plans in it (--save-plan, --plan).

    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}

Each problem of a file is one line that says what to fix (a UsageError: nothing is sent).
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka_shell.admin.log_dirs import ReplicaKey
from kafka_shell.base.errors import UsageError
from kafka_shell.base.files import is_id, read_json, write_new

Key = tuple[str, int]
ANY_LOG_DIR = "any"


def read_plan(path: str) -> tuple[dict[Key, list[int]], dict[ReplicaKey, str]]:
    """Kafka's reassignment file, checked as Kafka's tool checks it (each problem is one line):
    the replicas of each partition, and the log dir of each replica its `log_dirs` names (those
    "any" leaves where the broker puts them)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise UsageError(f'{path}: expected an object like {{"version":1,"partitions":[...]}}')
    if data.get("version", 1) != 1:
        raise UsageError(f"{path}: unsupported version {data['version']!r}: only version 1 is supported")
    entries = data.get("partitions")
    if not isinstance(entries, list):
        raise UsageError(f'{path}: no "partitions" list: give '
                         '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}')
    if not entries:
        raise UsageError(f"{path}: the partition list is empty: list at least one partition to move")
    out: dict[Key, list[int]] = {}
    log_dirs: dict[ReplicaKey, str] = {}
    for e in entries:
        if not (isinstance(e, dict) and isinstance(e.get("topic"), str) and is_id(e.get("partition"))
                and isinstance(e.get("replicas"), list) and all(is_id(b) for b in e["replicas"])):
            raise UsageError(f'{path}: bad entry {json.dumps(e)}: each needs "topic" (text), '
                             '"partition" (integer) and "replicas" (list of broker ids)')
        key = (e["topic"], e["partition"])
        name = f"{key[0]}-{key[1]}"
        replicas = e["replicas"]
        if not replicas:
            raise UsageError(f"{path}: the replica list of {name} is empty: give at least one broker")
        if key in out:
            raise UsageError(f"{path}: partition {name} is listed twice: list each partition once")
        if len(set(replicas)) != len(replicas):
            raise UsageError(f"{path}: the replicas of {name} ({','.join(map(str, replicas))}) name a broker twice: "
                             "list each broker once")
        dirs = e.get("log_dirs")
        if dirs is not None:
            if not isinstance(dirs, list) or len(dirs) != len(replicas):
                count = len(dirs) if isinstance(dirs, list) else "not a list"
                raise UsageError(f"{path}: log_dirs of {name} ({count}) must match its {len(replicas)} "
                                 'replicas: give one directory (or "any") per replica')
            if not all(isinstance(d, str) and d for d in dirs):
                raise UsageError(f'{path}: log_dirs of {name} must be directory paths (or "any"), one per replica')
            log_dirs.update({(key[0], key[1], b): d for b, d in zip(replicas, dirs) if d != ANY_LOG_DIR})
        out[key] = list(replicas)
    return out, log_dirs


def as_json(assignment: dict[Key, list[int]], dirs: dict[ReplicaKey, str] | None = None) -> str:
    """Kafka's file format, sorted by topic then partition; each replica's log dir from `dirs`
    (else "any": where its broker puts it)."""
    dirs = dirs or {}
    parts = [{"topic": t, "partition": p, "replicas": r, "log_dirs": [dirs.get((t, p, b), ANY_LOG_DIR) for b in r]}
             for (t, p), r in sorted(assignment.items())]
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":"))


def write_file(path: Path, text: str) -> None:
    """A new file (an existing file or a symlink there is refused, with one line)."""
    write_new(path, text + "\n")
