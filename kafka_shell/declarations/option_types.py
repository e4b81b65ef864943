"""Option value types shared by several commands. Each takes the text the user typed and
returns the value, or raises ValueError whose text says what was expected (the parser turns it
into `Invalid value "x" for --opt of cmd: expected <text>`). Integers are checked against the
Kafka field they are sent in (int32 counts and ids, int16 replication factors)."""

from __future__ import annotations

from collections.abc import Callable

import datetime
import re

from kafka_shell.base.limits import INT16_MAX, INT32_MAX, INT64_MAX, MAX_STRING_BYTES
from kafka_shell.base.names import TopicPartitions
from kafka_shell.declarations.registry import int_range

positive_int = int_range(1, INT32_MAX, "a positive integer")
replication_factor = int_range(1, INT16_MAX, "a replication factor")
broker_id = int_range(0, INT32_MAX, "a broker id")
rate = int_range(1, INT64_MAX, "a rate in bytes per second")   # throttle rates are Kafka long configs
CONFIG_NAME = re.compile(r"[A-Za-z0-9._$-]{1,255}")   # Kafka's config names are far shorter; loggers have $


def config_name(text: str) -> str:
    """A config name as Kafka spells them (letters, digits, '.', '_', '-')."""
    if not CONFIG_NAME.fullmatch(text.strip()):
        raise ValueError("a config name (letters, digits, '.', '_' or '-')")
    return text.strip()


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not CONFIG_NAME.fullmatch(key.strip()):
        raise ValueError("key=value (the key a config name: letters, digits, '.', '_' or '-')")
    return key.strip(), value


def broker_ids(text: str) -> list[int]:
    """Distinct broker ids separated by commas (1,2,3), in the order given."""
    expected = f"broker ids separated by commas, like 1,2,3 (each once, from 0 to {INT32_MAX})"
    try:
        ids = [broker_id(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(expected) from None
    if not ids or len(set(ids)) != len(ids):
        raise ValueError(expected)
    return ids


def topic_partitions(text: str) -> TopicPartitions:
    """Kafka's `topic` (every partition) or `topic:0,2` (those partitions, each once); the topic's
    name is checked where it is read (a pattern may be one)."""
    name, colon, parts = text.partition(":")
    if not colon:
        return TopicPartitions(name)
    numbers = [p.strip() for p in parts.split(",")]
    if not name or not all(n.isdigit() and int(n) <= INT32_MAX for n in numbers):
        raise ValueError("topic:partition,partition (e.g. orders:0,2)")
    return TopicPartitions(name, tuple(dict.fromkeys(int(n) for n in numbers)))


def replica_assignment(text: str) -> list[list[int]]:
    """Kafka's format: partitions separated by commas, replicas by colons: `1:2,2:3,3:1`."""
    try:
        parts = [[broker_id(b) for b in p.split(":")] for p in text.split(",")]
    except ValueError:
        raise ValueError(f"broker ids from 0 to {INT32_MAX} like 1:2,2:3 "
                         "(replicas of a partition joined by ':')") from None
    for i, replicas in enumerate(parts):
        if len(set(replicas)) != len(replicas):
            raise ValueError(f"distinct brokers per partition (partition {i} repeats one)")
    if len({len(p) for p in parts}) != 1:
        raise ValueError("the same number of replicas for every partition")
    return parts


def kafka_string(what: str) -> Callable[[str], str]:
    """An option type: any text Kafka can carry as `what` (not empty, UTF-8, up to 32767 bytes)."""
    def convert(text: str) -> str:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError(f"{what} in UTF-8 text") from None
        if not 0 < size <= MAX_STRING_BYTES:
            raise ValueError(f"{what} of 1 to {MAX_STRING_BYTES} bytes")
        return text
    return convert


group_id = kafka_string("a group id")                   # a consumer group id
transactional_id = kafka_string("a transactional id")


def iso_epoch_ms(text: str, expected: str) -> int:
    """An ISO 8601 date and time as epoch milliseconds, UTC unless it gives a zone (Kafka's
    --to-datetime rule); `expected` says what to give when it is not one."""
    try:
        moment = datetime.datetime.fromisoformat(text.strip().upper())
    except ValueError:
        raise ValueError(expected) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def choice_list(choices: tuple[str, ...], what: str) -> Callable[[str], list[str]]:
    """An option type: names of `choices` separated by commas, any case, as Kafka spells them
    (e.g. --state Stable,Empty)."""
    by_lower = {c.lower(): c for c in choices}

    def convert(text: str) -> list[str]:
        wanted = [part.strip().lower() for part in text.split(",")]
        if not all(w in by_lower for w in wanted):
            raise ValueError(f"{what} separated by commas, of {', '.join(choices)}")
        return [by_lower[w] for w in wanted]
    return convert


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def duration(text: str) -> float:
    """An interval like 60s, 5m, 1h or 500ms (a bare number is seconds), at least 1 ms."""
    match = _DURATION.fullmatch(text.strip())
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)] if match else 0
    if not 0.001 <= seconds <= 7 * 86400:
        raise ValueError("an interval like 60s, 5m, 1h or 500ms (up to a week)")
    return seconds


def directory_id(text: str) -> str:
    """A log directory id (KIP-853) as Kafka's tools print it (22 characters of URL-safe
    base64), or as a UUID; returned in Kafka's form."""
    import base64
    import uuid
    text = text.strip()
    try:
        raw = uuid.UUID(text).bytes if len(text) in (32, 36) else base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raw = b""
    if len(raw) != 16 or raw == bytes(16):
        raise ValueError("a directory id as describe-quorum shows it (like ZLgh-CD8QfGsKlZG39bUrQ) or a UUID")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def controller_endpoint(text: str) -> tuple[str, str, int]:
    """`NAME@HOST:PORT` (or `NAME://HOST:PORT`): a controller listener, as kafka-metadata-quorum
    names one."""
    name, sep, where = text.partition("@") if "@" in text else text.partition("://")
    host, colon, port = where.rpartition(":")
    if not (sep and name and host and colon and port.isdigit() and 0 < int(port) < 65536):
        raise ValueError("a listener as NAME@HOST:PORT, like CONTROLLER@localhost:9093")
    return name, host.strip("[]"), int(port)


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?i?b?)", re.IGNORECASE)
_SIZE_UNIT = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
              "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40,
              "p": 10**15, "pb": 10**15, "pib": 2**50}


def byte_size(text: str) -> int:
    """A size like 500MB, 10GB, 1GiB or 1048576 (bytes), at least 1 byte."""
    match = _SIZE.fullmatch(text.strip())
    unit = _SIZE_UNIT.get(match.group(2).lower()) if match else None
    size = int(float(match.group(1)) * unit) if match and unit is not None else 0
    if not 1 <= size <= 2**63 - 1:
        raise ValueError("a size like 500MB, 10GB or 1GiB (or a number of bytes)")
    return size


_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?)%?")


def percent(text: str) -> float:
    """A percentage like 10 or 10% (from 0 to 1000, in ASCII digits), as a fraction."""
    match = _PERCENT.fullmatch(text.strip())
    number = float(match.group(1)) if match and len(text) <= 20 else -1.0
    if not 0 <= number <= 1000:
        raise ValueError("a percentage like 10 or 10%")
    return number / 100


def principal(text: str) -> tuple[str, str]:
    """A Kafka principal, TYPE:NAME -> (type, name): User:alice is ("User", "alice")."""
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise ValueError("a principal as TYPE:NAME, like User:alice")
    return kind, name
