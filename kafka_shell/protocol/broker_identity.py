"""KIP-426's procedure for a broker that starts without an id, as one pure function that the
`broker-ids suggest` command (over the wire) and the sandbox's `replace-broker` (on its own
state) both apply. The first two steps, an id in the broker's config and one in its
meta.properties, are the starting broker's own business; this decides the rest."""

from __future__ import annotations

import json
from dataclasses import dataclass

MAPPING_TOPIC = "__broker_hosts"
MAPPING_VERSION = 0


@dataclass(frozen=True)
class Choice:
    broker_id: int | None          # None: a human must decide among `candidates`
    reason: str                    # "mapping", "only missing id", "new id", "several missing ids"
    candidates: tuple[int, ...] = ()
    garbage_of: int | None = None  # the mapping's id for the host, when a live broker holds it


def choose_id(host: str, mapping: dict[str, int], live: set[int], missing: set[int],
              known: set[int]) -> Choice:
    """The mapping's id for `host` unless a live broker holds it (then that entry is garbage);
    else the one missing id; several missing ids: a human decision; none: max known id + 1."""
    mapped = mapping.get(host)
    if mapped is not None and mapped not in live:
        return Choice(mapped, "mapping")
    garbage_of = mapped
    if len(missing) == 1:
        return Choice(next(iter(missing)), "only missing id", garbage_of=garbage_of)
    if missing:
        return Choice(None, "several missing ids", tuple(sorted(missing)), garbage_of)
    return Choice(max(known | live | set(mapping.values()), default=0) + 1, "new id", garbage_of=garbage_of)


def mapping_value(broker_id: int) -> bytes:
    return json.dumps({"version": MAPPING_VERSION, "broker.id": broker_id}).encode()


def parse_mapping_value(value: bytes) -> int | None:
    """The broker id of a mapping value, None when it is not one this version understands."""
    try:
        data = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != MAPPING_VERSION:
        return None
    broker_id = data.get("broker.id")
    ok = isinstance(broker_id, int) and not isinstance(broker_id, bool) and broker_id >= 0
    return broker_id if ok else None


def apply_record(mapping: dict[str, int], key: bytes | None, value: bytes | None) -> None:
    """One record of the mapping topic, in offset order: a tombstone or an unreadable value
    removes the host."""
    if key is None:
        return
    host = key.decode(errors="replace")
    broker_id = parse_mapping_value(value) if value is not None else None
    if broker_id is None:
        mapping.pop(host, None)
    else:
        mapping[host] = broker_id
