"""Static knowledge of Kafka config keys and their allowed values, for completion.

The tables are Kafka's own definitions (kafka_shell.protocol.definitions, shared with the sandbox): the
keys of every release the definitions cover, the newest release's definition first. Internal
keys are left out, as Kafka leaves them out of DescribeConfigs. Nothing is read until a table is
first asked for, and nothing here imports a UI library, so the one-shot path may use it too.
"""

from __future__ import annotations

from functools import cache

from kafka_shell.protocol import definitions
from kafka_shell.protocol.definitions import releases
from kafka_shell.protocol.definitions.releases import ConfigDef

TOPIC = "topics"
BROKER = "brokers"
GROUP = "groups"
LOGGERS = "broker-loggers"   # keys: a node's logger names, read from it when completing (none static)
ENTITIES = (TOPIC, BROKER, GROUP)
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")   # log4j's, as Kafka takes them

# Spellings users give to --entity-type, mapped to the table they select.
_ENTITY_ALIASES = {"topic": TOPIC, "topics": TOPIC, "broker": BROKER, "brokers": BROKER,
                   "broker-loggers": LOGGERS, "group": GROUP, "groups": GROUP}
# DescribeConfigs' config type codes, as ConfigDef names them.
_TYPE_NAMES = {1: "boolean", 2: "string", 3: "int", 4: "short", 5: "long", 6: "double", 7: "list", 8: "class",
               9: "password"}
# The closed value sets of group configs (Kafka's GroupConfig validators; share.auto.offset.reset
# also takes by_duration:<ISO 8601 duration>).
_GROUP_CHOICES = {"share.auto.offset.reset": ("earliest", "latest", "by_duration:"),
                  "share.isolation.level": ("read_committed", "read_uncommitted")}


@cache
def _table(entity: str) -> dict[str, ConfigDef]:
    if entity == GROUP:
        return {name: ConfigDef(name, _TYPE_NAMES.get(d["type"], "string"), d["default"], d["doc"])
                for name, d in definitions.group_configs().items()}
    return releases.configs_of(entity)


def entity_type(name: str | None) -> str | None:
    """The config table for an `--entity-type` value, or None when we know no keys for it."""
    return _ENTITY_ALIASES.get((name or "").lower())


def keys(entity: str) -> tuple[str, ...]:
    """The config keys of an entity type, sorted."""
    return tuple(sorted(_table(entity))) if entity in ENTITIES else ()


def values(entity: str, key: str) -> tuple[str, ...]:
    """The values a key accepts when they form a closed set (choices, booleans), else ()."""
    if entity == LOGGERS:
        return LOG_LEVELS
    d = _table(entity).get(key) if entity in ENTITIES else None
    if d is None:
        return ()
    if entity == GROUP and key in _GROUP_CHOICES:
        return _GROUP_CHOICES[key]
    if d.choices:
        return d.choices
    return ("true", "false") if d.type == "boolean" else ()


def describe(entity: str, key: str) -> str:
    """A one-line summary shown next to a completion: type and default."""
    d = _table(entity).get(key) if entity in ENTITIES else None
    if d is None:
        return ""
    return d.type if d.default in (None, "") else f"{d.type}, default {d.default}"
