"""Option value types shared by several commands. Each takes the text the user typed and
returns the value, or raises ValueError whose text says what was expected (the parser turns it
into `Invalid value "x" for --opt of cmd: expected <text>`)."""

from __future__ import annotations

INT32_MAX = 2**31 - 1


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("a positive integer") from None
    if value < 1 or value > INT32_MAX:
        raise ValueError("a positive integer")
    return value


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError("key=value")
    return key.strip(), value


def replica_assignment(text: str) -> list[list[int]]:
    """Kafka's format: partitions separated by commas, replicas by colons: `1:2,2:3,3:1`."""
    try:
        parts = [[int(b) for b in p.split(":")] for p in text.split(",")]
    except ValueError:
        raise ValueError("broker ids like 1:2,2:3 (replicas of a partition joined by ':')") from None
    for i, replicas in enumerate(parts):
        if len(set(replicas)) != len(replicas):
            raise ValueError(f"distinct brokers per partition (partition {i} repeats one)")
    if len({len(p) for p in parts}) != 1:
        raise ValueError("the same number of replicas for every partition")
    return parts
