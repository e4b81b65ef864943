"""Static knowledge of Kafka config keys and their allowed values, for completion.

The tables live with the sandbox (it needs the same keys, types and defaults to answer
DescribeConfigs); this module only exposes them by entity type. It imports no UI library, so the
one-shot path may use it too.
"""

from __future__ import annotations

from kafka_shell.sandbox.configs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigDef

TOPIC = "topics"
BROKER = "brokers"

_TABLES: dict[str, dict[str, ConfigDef]] = {TOPIC: TOPIC_CONFIGS, BROKER: BROKER_CONFIGS}
_KEYS: dict[str, tuple[str, ...]] = {entity: tuple(sorted(t)) for entity, t in _TABLES.items()}

# Spellings users give to --entity-type, mapped to the table they select.
_ENTITY_ALIASES = {"topic": TOPIC, "topics": TOPIC, "broker": BROKER, "brokers": BROKER,
                   "broker-loggers": BROKER}


def entity_type(name: str | None) -> str | None:
    """The config table for an `--entity-type` value, or None when we know no keys for it."""
    return _ENTITY_ALIASES.get((name or "").lower())


def keys(entity: str) -> tuple[str, ...]:
    """The config keys of an entity type, sorted."""
    return _KEYS.get(entity, ())


def values(entity: str, key: str) -> tuple[str, ...]:
    """The values a key accepts when they form a closed set (choices, booleans), else ()."""
    d = _TABLES.get(entity, {}).get(key)
    if d is None:
        return ()
    if d.choices:
        return d.choices
    return ("true", "false") if d.type == "boolean" else ()


def describe(entity: str, key: str) -> str:
    """A one-line summary shown next to a completion: type and default."""
    d = _TABLES.get(entity, {}).get(key)
    if d is None:
        return ""
    return d.type if d.default in (None, "") else f"{d.type}, default {d.default}"
