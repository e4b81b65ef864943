"""Configs of topics, brokers, the cluster-wide broker defaults and groups (KIP-848's group
configs): DescribeConfigs (read here and nowhere else) and IncrementalAlterConfigs.

A broker's own configs go to that broker, as Kafka's tools send them (only it knows its static
configs); topics, groups and the broker defaults go to the controller's side (any broker in KRaft mode,
the controller listener with --bootstrap-controller).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.protocol import definitions
from kafka_shell.protocol.codes import AlterConfigOp, ApiKey, ConfigSource, ResourceType
from kafka_shell.base.answers import BROKER, CONTROLLER, AdminError, Answers, Target
from kafka_shell.protocol.definitions import releases as definitions_releases

from kafka_shell.admin import releases
from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

TOPICS, BROKERS, GROUPS = "topics", "brokers", "groups"      # kafka-configs' entity types
BROKER_LOGGERS = "broker-loggers"   # a node's log4j loggers: name -> level (KIP-412)
CLIENT_METRICS = "client-metrics"   # client metrics subscriptions (KIP-714)
RESOURCE_TYPES = {TOPICS: ResourceType.TOPIC, BROKERS: ResourceType.BROKER, GROUPS: ResourceType.GROUP,
                  BROKER_LOGGERS: ResourceType.BROKER_LOGGER, CLIENT_METRICS: ResourceType.CLIENT_METRICS}
NODE_KINDS = (BROKERS, BROKER_LOGGERS)   # entities named by a node id, asked of that node
MIN_ISR = "min.insync.replicas"
PREFERRED_CONTROLLER_KEY = "preferred.controller.id"   # KAFKA-1778, a cluster-wide broker config
HOST_NAME_KEY = "host.name"
HIDDEN = "******"   # a sensitive value is never shown
# Where an entity's removable overrides come from (what `--delete-config` can take back).
_OVERRIDE_SOURCES = {TOPICS: (ConfigSource.DYNAMIC_TOPIC_CONFIG,), BROKERS: (ConfigSource.DYNAMIC_BROKER_CONFIG,),
                     BROKER_LOGGERS: (ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,),
                     "": (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,), GROUPS: (ConfigSource.GROUP_CONFIG,)}


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: str          # Kafka's source name: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, ...
    sensitive: bool
    read_only: bool
    # Read by `each_broker`: every source that sets it, the one in effect first, as
    # (source name, config name, value as the shell may print it); log.retention.ms has
    # log.retention.hours among them.
    synonyms: tuple[tuple[str, str, str | None], ...] = ()

    @property
    def shown(self) -> str | None:
        """The value as the shell may print it."""
        return HIDDEN if self.sensitive and self.value is not None else self.value


def label(kind: str, name: str) -> str:
    """How messages name the entity: topic "t", broker 2, or the cluster-wide broker defaults."""
    if kind == TOPICS:
        return f'topic "{name}"'
    if kind == GROUPS:
        return f'group "{name}"'
    if kind == BROKER_LOGGERS:
        return f"the loggers of node {name}"
    if kind == CLIENT_METRICS:
        return f'client metrics subscription "{name}"'
    return f"broker {name}" if name else "the cluster-wide broker defaults"


def describe(conn: ConnectionManager, kind: str, names: list[str],
             keys: list[str] | None = None) -> dict[str, list[ConfigEntry]]:
    """name -> its config entries (`keys` only, or all), by entity: topics (groups) in one
    request, each named broker at that broker, the broker defaults ("") at the controller."""
    if not names:
        return {}
    rtype = RESOURCE_TYPES[kind]
    if kind not in NODE_KINDS:
        groups: dict[int | None, list[str]] = {None: names}
    else:
        groups = {}
        for n in names:
            groups.setdefault(int(n) if n else None, []).append(n)
    out: dict[str, list[ConfigEntry]] = {}
    for broker, group in groups.items():
        body = {"resources": [{"resource_type": rtype, "resource_name": n, "configuration_keys": keys}
                              for n in group],
                "include_synonyms": False, "include_documentation": False}
        conn.debug(f"DescribeConfigs request: {_what(kind, group)}")
        answer = (conn.broker_request(broker, ApiKey.DESCRIBE_CONFIGS, body) if broker is not None
                  else conn.controller_request(ApiKey.DESCRIBE_CONFIGS, body))
        for r in answer.results:
            name = r.resource_name
            if r.error_code:
                raise response_error(ApiKey.DESCRIBE_CONFIGS, r.error_code, r.error_message,
                                     entity=label(kind, name), **({"topic": name} if kind == TOPICS else {}))
            out[name] = [_entry(c) for c in r.configs]
    return out


def each_broker(conn: ConnectionManager, brokers: list[int]) -> Answers[int, list[ConfigEntry]]:
    """Every config of each broker, with the sources beneath each (synonyms), asked of all the
    brokers at once within one deadline: what the brokers that answered said, and an error for
    each of the others."""
    body = {"resources": [], "include_synonyms": True, "include_documentation": False}
    conn.debug(f"DescribeConfigs request to broker(s) {', '.join(map(str, brokers))}")
    answers = conn.each_broker(brokers, ApiKey.DESCRIBE_CONFIGS, lambda broker, version: {**body, "resources": [
        {"resource_type": ResourceType.BROKER, "resource_name": str(broker), "configuration_keys": None}]})
    out: dict[int, list[ConfigEntry]] = {}
    errors = dict(answers.errors)
    for broker, answer in answers.rows.items():
        for r in answer.results:
            if r.error_code:
                errors[broker] = AdminError(int(r.error_code), Target(BROKER, broker), r.error_message or "")
            else:
                out[broker] = [_entry(c) for c in r.configs]
    return Answers(out, errors)


LIST_BY_TYPE_VERSION = 1   # ListConfigResources lists resources of every type from v1 (KIP-1142, Kafka 4.1)


def configured(conn: ConnectionManager, kind: str) -> list[str] | None:
    """The names of the entities of `kind` (groups) that have configs of their own, as the
    cluster lists them (ListConfigResources v1, Kafka 4.1); None when it cannot list them."""
    if not conn.supports(ApiKey.LIST_CONFIG_RESOURCES, LIST_BY_TYPE_VERSION):
        return None
    rtype = RESOURCE_TYPES[kind]
    conn.debug(f"ListConfigResources request ({kind})")
    answer = conn.any_broker_request(ApiKey.LIST_CONFIG_RESOURCES, {"resource_types": [rtype]})
    if answer.error_code:
        raise response_error(ApiKey.LIST_CONFIG_RESOURCES, answer.error_code, entity=kind)
    return sorted(r.resource_name for r in answer.config_resources if r.resource_type == rtype)


def require_group_configs(conn: ConnectionManager) -> None:
    """Group configs came with KIP-848's consumer groups (generally available in Kafka 4.0, with
    ConsumerGroupHeartbeat v1; 3.9 lists v0 for its early access, without group configs)."""
    releases.require(conn, ApiKey.CONSUMER_GROUP_HEARTBEAT, "group configs", "4.0", version=1)


def _what(kind: str, names: list[str]) -> str:
    if kind in (TOPICS, GROUPS):
        return f"{len(names)} {kind[:-1]}(s)"
    if kind == CLIENT_METRICS:
        return f"{len(names)} client metrics subscription(s)"
    if kind == BROKER_LOGGERS:
        return f"loggers of node {', '.join(names)}"
    return "cluster-wide broker defaults" if names == [""] else f"broker {', '.join(names)}"


def _entry(c: Any) -> ConfigEntry:
    source = getattr(c, "config_source", None)
    if source is None:  # v0 tells only whether the value is the default
        source = ConfigSource.DEFAULT_CONFIG if getattr(c, "is_default", False) else ConfigSource.UNKNOWN_CONFIG
    source_name = _source_name(source)
    sensitive = bool(c.is_sensitive)
    synonyms = tuple((_source_name(s.source), s.name, HIDDEN if sensitive and s.value is not None else s.value)
                     for s in getattr(c, "synonyms", None) or ())
    return ConfigEntry(c.name, c.value, source_name, sensitive, bool(c.read_only), synonyms)


def _source_name(source: int) -> str:
    try:
        return ConfigSource(source).name
    except ValueError:
        return f"SOURCE_{source}"


@dataclass(frozen=True)
class TopicConfig:
    overrides: dict[str, str | None]   # dynamic topic configs, sensitive values hidden
    min_isr: int                       # min.insync.replicas (1 when the cluster does not say)


def topic_configs(conn: ConnectionManager, names: list[str], keys: list[str] | None = None) -> dict[str, TopicConfig]:
    """topic -> its overrides and min.insync.replicas, in one DescribeConfigs request. With
    `keys` only those are asked for (every key of 1,000 topics is ~40,000 entries to decode)."""
    out = {}
    for name, entries in describe(conn, TOPICS, names, keys).items():
        overrides = {e.name: e.shown for e in entries if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.name}
        min_isr = next((e.value for e in entries if e.name == MIN_ISR), None)
        out[name] = TopicConfig(overrides, int(min_isr) if min_isr else 1)
    return out


def overrides(conn: ConnectionManager, kind: str, name: str) -> list[str]:
    """The config keys a topic or broker (name "": the broker defaults) overrides dynamically:
    what --delete-config can take back."""
    sources = {s.name for s in _OVERRIDE_SOURCES["" if kind == BROKERS and not name else kind]}
    return sorted(e.name for e in describe(conn, kind, [name]).get(name, []) if e.source in sources)


def known_keys(kind: str) -> frozenset[str] | None:
    """The config keys Kafka defines for an entity type (any release the shell knows), or None
    when any name may be valid (a node's loggers)."""
    if kind in (TOPICS, BROKERS):
        return frozenset(definitions_releases.configs_of(kind))
    if kind == GROUPS:
        return frozenset(definitions.group_configs())
    return None


def missing_deletions(conn: ConnectionManager, kind: str, names: list[str], keys: list[str]) -> dict[str, list[str]]:
    """The keys of a --delete-config that kafka-configs refuses ("Invalid config(s)"), by entity,
    found before anything changes: an entity does not have them, and Kafka knows no config by
    that name (a typo: retention.m). Only such keys cost a read."""
    known = known_keys(kind)
    unknown = [k for k in keys if known is not None and k not in known]
    if not unknown:
        return {}
    described = describe(conn, kind, names)
    out = {}
    for name in names:
        have = {e.name for e in described.get(name, [])}
        missing = [k for k in unknown if k not in have]
        if missing:
            out[name] = missing
    return out


def value_of(conn: ConnectionManager, kind: str, name: str, key: str) -> str | None:
    """One config's value, or None when the entity does not have it (or leaves it empty)."""
    # Every key, not just ours: some brokers (Tansu) drop the connection on a key filter.
    return next((e.value for e in describe(conn, kind, [name]).get(name, []) if e.name == key and e.value), None)


def read_preferred_controller(conn: ConnectionManager) -> int | None:
    """The cluster's preferred controller (KAFKA-1778), or None when the cluster does not know
    the key or leaves it at -1: read now from the cluster-wide broker configs."""
    value = value_of(conn, BROKERS, "", PREFERRED_CONTROLLER_KEY)
    return int(value) if value not in (None, "-1") else None


def broker_knows(conn: ConnectionManager, broker: int, key: str) -> bool:
    """Whether `broker` has config `key` (a broker lists every config it has when asked for all)."""
    return any(e.name == key for e in describe(conn, BROKERS, [str(broker)]).get(str(broker), []))


def host_names(conn: ConnectionManager, brokers: list[int]) -> dict[int, str]:
    """id -> the machine name each broker tells in its `host.name` config, where it does (the
    sandbox's --hosts)."""
    out = {}
    for b in brokers:
        entries = describe(conn, BROKERS, [str(b)], [HOST_NAME_KEY]).get(str(b), [])
        value = next((e.value for e in entries if e.name == HOST_NAME_KEY and e.value), None)
        if value:
            out[b] = value
    return out


def alter(conn: ConnectionManager, kind: str, names: list[str], set_: dict[str, str], delete: list[str],
          dry_run: bool) -> Answers[str, None]:
    """Set and delete configs of topics or brokers with IncrementalAlterConfigs: the entities
    changed (with `dry_run`, validated) as rows, an AdminError for each one refused. `names`
    holds topic names or broker ids ("" is the broker defaults). A broker's own configs go to
    that broker, the rest to the controller, as Kafka's tools do."""
    configs = ([{"name": k, "config_operation": AlterConfigOp.SET, "value": v} for k, v in set_.items()]
               + [{"name": k, "config_operation": AlterConfigOp.DELETE, "value": None} for k in delete])
    rtype = RESOURCE_TYPES[kind]
    body = {"resources": [{"resource_type": rtype, "resource_name": str(n), "configs": configs} for n in names],
            "validate_only": dry_run}
    conn.require(ApiKey.INCREMENTAL_ALTER_CONFIGS, "Changing configs")
    conn.debug(f"IncrementalAlterConfigs request: {len(names)} resource(s)")
    if kind in NODE_KINDS and len(names) == 1 and names[0]:
        target = Target(BROKER, int(names[0]))
        answer = conn.broker_request(int(names[0]), ApiKey.INCREMENTAL_ALTER_CONFIGS, body, mutation=True)
    else:
        target = Target(CONTROLLER)
        answer = conn.controller_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, body, mutation=True)
    out: Answers[str, None] = Answers()
    for r in answer.responses:
        if r.error_code:
            out.errors[r.resource_name] = AdminError(r.error_code, target._replace(asked=(r.resource_name,)),
                                                     r.error_message or "")
        else:
            out.rows[r.resource_name] = None
    return out


def refusal_context(kind: str, name: str) -> dict[str, str]:
    """What an IncrementalAlterConfigs refusal's line names (see admin.errors.error_line)."""
    return {"entity": label(kind, name), **({"topic": name} if kind == TOPICS else {})}


def alter_or_fail(conn: ConnectionManager, kind: str, names: list[str], set_: dict[str, str], delete: list[str],
                  dry_run: bool) -> Answers[str, None]:
    """`alter` for a caller that cannot go on past a refusal: the first one is the error the
    call fails with; else the entities changed."""
    answers = alter(conn, kind, names, set_, delete, dry_run)
    refused = answers.errors
    if refused:
        name, error = next(iter(refused.items()))
        raise response_error(ApiKey.INCREMENTAL_ALTER_CONFIGS, error.code or 0, error.message or None,
                             **refusal_context(kind, name))
    return answers
