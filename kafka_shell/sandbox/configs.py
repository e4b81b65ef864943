"""The sandbox's broker and topic configs: Kafka's own definitions for the release the sandbox
follows (kafka_shell.protocol.definitions), the few keys and defaults the sandbox adds, and how values
resolve and are described, as Kafka's DynamicBrokerConfig, LogConfig and ConfigHelper do.

A broker value resolves as Kafka's does: the broker's own dynamic config, the cluster-wide
dynamic default, the static config the sandbox started with (`--broker-config`, Kafka's
server.properties), the default. A topic value: the topic's override, else its broker synonym
resolved so (with the unit of the first synonym set: log.retention.hours feeds retention.ms).
"""

from __future__ import annotations

import math
from decimal import Decimal
from dataclasses import replace
from functools import cache

from kafka_shell.protocol.definitions import releases
from kafka_shell.protocol.definitions.releases import ConfigDef, Validator, check_value, split_list
from kafka_shell.sandbox.model import Broker, ClusterState, Controller
from kafka_shell.sandbox.records import (BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE,
                                         ConfigRecord, ReplayError)

__all__ = ["ConfigDef", "check_value", "split_list", "broker_defs", "topic_defs", "topic_value", "broker_value",
           "describe_topic", "describe_broker", "describe_cluster_defaults"]

# Keys no Kafka release has, which the sandbox adds.
SANDBOX_BROKER_CONFIGS = {c.name: c for c in [
    ConfigDef("preferred.controller.id", "int", "-1", mode="cluster-wide", validator=Validator("Range", "[-1,...]", min=-1),
              doc="Sandbox extension (KAFKA-1778): the node that should hold the controller role while it is "
                  "usable; -1 for none."),
    ConfigDef("host.name", "string", None,
              doc="Sandbox extension: the broker machine's host name (kafka-shell sandbox --hosts; KIP-426's mapping key)."),
]}

# Kafka's defaults the sandbox changes, and why (docs/sandbox.md lists them).
SANDBOX_DEFAULTS = {
    "auto.leader.rebalance.enable": ("false", "the sandbox moves leadership back at once (not every 300 s "
                                              "past a 10% imbalance), so it is off unless asked for"),
    "queued.max.request.bytes": ("104857600", "all the sandbox's brokers share one process, so it bounds the "
                                              "bytes of queued requests (Kafka: -1, no bound)"),
    "group.initial.rebalance.delay.ms": ("100", "a group's first rebalance waits 0.1 s, not 3 s, so tests and "
                                                "demos do not wait"),
}

# DescribeConfigs config sources and types, numbered as in Kafka's DescribeConfigsResponse.
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
                "list": 7, "class": 8, "password": 9}
UNKNOWN_TYPE = 0

# The unit of a broker key that feeds a topic key in another unit (log.retention.hours -> retention.ms).
_UNITS_MS = {".ms": 1, ".minutes": 60_000, ".hours": 3_600_000}


@cache
def _broker_defs(release: str) -> dict[str, ConfigDef]:
    defs = dict(releases.release(release).broker_configs) | SANDBOX_BROKER_CONFIGS
    for key, (value, _) in SANDBOX_DEFAULTS.items():
        defs[key] = replace(defs[key], default=value)
    return defs


def broker_defs(cluster: ClusterState) -> dict[str, ConfigDef]:
    """Every broker key of the cluster's release, with the sandbox's additions and defaults."""
    return _broker_defs(cluster.kafka_version)


def topic_defs(cluster: ClusterState) -> dict[str, ConfigDef]:
    return releases.release(cluster.kafka_version).topic_configs


def release(cluster: ClusterState) -> releases.Release:
    return releases.release(cluster.kafka_version)


# -- values -------------------------------------------------------------------------------------

def _layers(cluster: ClusterState, broker_id: int | None) -> list[tuple[dict[str, str], int]]:
    """Where broker values come from, most specific first, with their DescribeConfigs source:
    the node's dynamic configs, the cluster's, and the static ones (the sandbox's start-up
    configs and what the node's own server.properties would say of it)."""
    node = cluster.node(broker_id) if broker_id is not None else None
    static = cluster.static_configs if node is None else {**cluster.static_configs, **_node_facts(cluster, node)}
    return [(node.configs if node is not None else {}, DYNAMIC_BROKER_CONFIG),
            (cluster.cluster_configs, DYNAMIC_DEFAULT_BROKER_CONFIG),
            (static, STATIC_BROKER_CONFIG)]


FACT_KEYS = frozenset({"node.id", "process.roles", "broker.id", "broker.rack", "host.name", "log.dirs"})


def _node_facts(cluster: ClusterState, node) -> dict[str, str]:
    """The static configs that are facts of a node: its id, roles, rack, host name and a broker's
    log dirs."""
    facts = {"node.id": str(node.id)}
    if cluster.kraft:
        facts["process.roles"] = "broker" if node.id in cluster.brokers else "controller"
    if node.id in cluster.brokers:
        from kafka_shell.sandbox.directories import broker_dirs
        facts["broker.id"] = str(node.id)
        facts["log.dirs"] = ",".join(broker_dirs(cluster, node.id))
    if node.rack is not None:
        facts["broker.rack"] = node.rack
    if getattr(node, "host_name", None) is not None:
        facts["host.name"] = node.host_name
    return facts


def broker_int(cluster: ClusterState, key: str, defaults: dict[str, int]) -> int:
    """A cluster-wide broker setting as an int, else its default from `defaults` (settings Kafka
    has that the shared config table lacks)."""
    value = broker_value(cluster, None, key)
    return int(value) if value not in (None, "") else defaults[key]


def broker_value(cluster: ClusterState, broker_id: int | None, key: str) -> str | None:
    """The effective value of a broker config: per-broker, cluster default, static, default."""
    node = cluster.node(broker_id) if broker_id is not None else None
    if node is not None and key in node.configs:
        return node.configs[key]
    if key in cluster.cluster_configs:
        return cluster.cluster_configs[key]
    if node is not None and key in FACT_KEYS:
        fact = _node_facts(cluster, node).get(key)
        if fact is not None:
            return fact
    if key in cluster.static_configs:
        return cluster.static_configs[key]
    d = broker_defs(cluster).get(key)
    return d.default if d else None


def topic_value(cluster: ClusterState, topic: str, key: str, broker_id: int | None = None) -> str | None:
    """The effective value of a topic config: its override, else what its broker synonyms give."""
    t = cluster.topics.get(topic)
    if t is not None and key in t.configs:
        return t.configs[key]
    return _topic_default(cluster, key, broker_id)


def _topic_default(cluster: ClusterState, key: str, broker_id: int | None) -> str | None:
    """A topic key's value where the topic does not set it (Kafka's LogConfig from KafkaConfig)."""
    d = topic_defs(cluster).get(key)
    if d is None:
        return None
    if d.synonym is None:
        return d.default
    defs = broker_defs(cluster)
    synonyms = defs[d.synonym].synonyms if d.synonym in defs else (d.synonym,)
    chosen = next((s for s in synonyms if any(s in values for values, _ in _layers(cluster, broker_id))), None)
    if chosen is None:
        chosen = next((s for s in synonyms if s in defs and defs[s].default is not None), None)
        if chosen is None:
            return d.default
    value = broker_value(cluster, broker_id, chosen)
    unit = next((u for suffix, u in _UNITS_MS.items() if chosen.endswith(suffix)), 1)
    primary = next((u for suffix, u in _UNITS_MS.items() if d.synonym.endswith(suffix)), 1)
    if value is not None and unit != primary:
        value = str(int(value) * unit // primary)
    return value


# -- DescribeConfigs entries (Kafka's ConfigHelper) ------------------------------------------------

def _entry(name: str, value: str | None, source: int, d: ConfigDef | None, read_only: bool,
           synonyms: list[dict]) -> dict:
    # A key Kafka does not know (set dynamically) may hold a secret: Kafka hides its value.
    sensitive = d is None or d.sensitive
    return {
        "name": name, "value": None if sensitive else _as_kafka_prints(value, d), "read_only": read_only,
        "config_source": source, "is_default": source == DEFAULT_CONFIG, "is_sensitive": sensitive,
        "synonyms": [{**s, "value": None} for s in synonyms] if sensitive else synonyms,
        "config_type": CONFIG_TYPES.get(d.type, UNKNOWN_TYPE) if d else UNKNOWN_TYPE,
        "documentation": d.doc if d else None,
    }


def _as_kafka_prints(value: str | None, d: ConfigDef | None) -> str | None:
    """A value as Kafka describes it: parsed by its type, then written back (ConfigDef's
    convertToString), so a double set as 1048576 reads 1048576.0 and a boolean TRUE reads true.
    Synonyms keep the text as set, as Kafka's do."""
    if value is None or d is None:
        return value
    try:
        if d.type == "double":
            return java_double(float(value.strip()))
        if d.type == "boolean":
            return value.strip().lower()
        if d.type in ("int", "short", "long"):
            return str(int(value.strip()))
    except ValueError:
        pass
    return value


def java_double(x: float) -> str:
    """Java's Double.toString: plain from 10^-3 to 10^7 (1048576.0), else computerized scientific
    notation (1.0E7, 1.5E-4), with the fewest digits that read back the same."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    shortest = Decimal(repr(abs(x)))   # the fewest digits that read back the same, as Java's
    digits = "".join(map(str, shortest.normalize().as_tuple().digits))
    exponent = shortest.adjusted()
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{'-' if x < 0 else ''}{mantissa}E{exponent}"


def _synonyms(cluster: ClusterState, broker_id: int | None, name: str, synonyms: tuple[str, ...]) -> list[dict]:
    """Kafka's ConfigHelper.configSynonyms: each synonym's value in each layer (dynamic per-broker,
    dynamic default, static, default), from the first entry for `name` on."""
    defs = broker_defs(cluster)
    out = []
    for values, source in _layers(cluster, broker_id):
        out += [{"name": s, "value": values[s], "source": source} for s in synonyms if s in values]
    out += [{"name": s, "value": defs[s].default, "source": DEFAULT_CONFIG}
            for s in synonyms if s in defs and defs[s].default is not None]
    first = next((i for i, s in enumerate(out) if s["name"] == name), len(out))
    return out[first:]


def describe_topic(cluster: ClusterState, overrides: dict[str, str], broker_id: int | None = None) -> list[dict]:
    """Every topic key of the release with its effective value, source and synonyms."""
    defs = broker_defs(cluster)
    out = []
    for key, d in topic_defs(cluster).items():
        if d.internal:
            continue
        synonyms: list[dict] = []
        if key in overrides:
            synonyms.append({"name": key, "value": overrides[key], "source": DYNAMIC_TOPIC_CONFIG})
        if d.synonym is not None:
            synonyms += _synonyms(cluster, broker_id, d.synonym, defs[d.synonym].synonyms if d.synonym in defs else (d.synonym,))
        value = overrides[key] if key in overrides else _topic_default(cluster, key, broker_id)
        source: int = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        out.append(_entry(key, value, source, d, False, synonyms))
    return out


def describe_broker(cluster: ClusterState, broker_id: int) -> list[dict]:
    """Every broker key as that node sees it (Kafka's allConfigs: its ConfigDef's keys, not the
    internal ones), and the unknown and dynamic-only keys set on it."""
    defs = broker_defs(cluster)
    set_keys = {k for values, _ in _layers(cluster, broker_id) for k in values}
    out = []
    for key in [*(k for k, d in defs.items() if not d.internal and not d.dynamic_only),
                *sorted(k for k in set_keys if k not in defs or defs[k].dynamic_only)]:
        d = defs.get(key)
        synonyms = _synonyms(cluster, broker_id, key, d.synonyms if d else (key,))
        source = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        out.append(_entry(key, broker_value(cluster, broker_id, key), source, d,
                          d is None or d.read_only, synonyms))
    return out


def describe_cluster_defaults(cluster: ClusterState) -> list[dict]:
    """The cluster-wide dynamic defaults only, as Kafka answers for the broker resource ""."""
    defs = broker_defs(cluster)
    out = []
    for key, value in cluster.cluster_configs.items():
        d = defs.get(key)
        synonyms = [s for s in _synonyms(cluster, None, key, d.synonyms if d else (key,))
                    if s["source"] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        out.append(_entry(key, value, DYNAMIC_DEFAULT_BROKER_CONFIG, d, d is None or d.read_only, synonyms))
    return out


# -- validating changes (Kafka's LogConfig.validate and DynamicBrokerConfig.validate) ----------

INVALID_CONFIG, INVALID_REQUEST = 40, 42
ELR_FEATURE = "eligible.leader.replicas.version"
MIN_ISR = "min.insync.replicas"
LOG_CLEANER_THREADS = "log.cleaner.threads"
_LISTENER_PREFIX = "listener.name."


class ConfigProblem(ValueError):
    """A change Kafka would refuse, with its error code and message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def check_topic_configs(cluster: ClusterState, values: dict[str, str | None], topic: str | None = None) -> None:
    """Kafka's LogConfig validation of a topic's configs (INVALID_CONFIG). `topic`: an alteration
    of that topic (ZooKeeper-era brokers name the resource in value errors)."""
    defs = topic_defs(cluster)
    for key, value in values.items():
        if value is None:
            raise ConfigProblem(INVALID_CONFIG, f"Null value not supported for topic configs: {key}")
        d = defs.get(key)
        if d is None:
            raise ConfigProblem(INVALID_CONFIG, f"Unknown topic config name: {key}")
        problem = check_value(d, value)
        if problem:
            raise ConfigProblem(INVALID_CONFIG, _in_resource(cluster, topic, problem))
    if (values.get("remote.storage.enable") or "").strip().lower() == "true":
        raise ConfigProblem(INVALID_CONFIG, _in_resource(
            cluster, topic, "Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                            "with remote log storage."))
    low = int(topic_value_of(cluster, values, "min.compaction.lag.ms") or 0)
    high = int(topic_value_of(cluster, values, "max.compaction.lag.ms") or 0)
    if low > high:
        raise ConfigProblem(INVALID_CONFIG, f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                                            f"max.compaction.lag.ms ({high})")


def topic_value_of(cluster: ClusterState, values: dict[str, str | None], key: str) -> str | None:
    """A key's value for a topic with these configs."""
    return values[key] if values.get(key) is not None else _topic_default(cluster, key, None)


def _in_resource(cluster: ClusterState, topic: str | None, message: str) -> str:
    if topic is None or cluster.kraft:
        return message
    return f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): {message}"


def _key_set(cluster: ClusterState, keys: set[str], security: bool = False) -> str:
    """A set of keys as Kafka prints it: Java's [a, b] on 4.x, Scala's Set(a, b) on 3.9."""
    ordered = ", ".join(sorted(keys))
    if release(cluster).major >= 4:
        return f"[{ordered}]"
    return f"{'HashSet' if security else 'Set'}({ordered})"


def check_broker_change(cluster: ClusterState, receiver: int, resource: str, changed: dict[str, str]) -> None:
    """Kafka's validation of a dynamic broker config change made through node `receiver`:
    DynamicBrokerConfig.validate on the broker (INVALID_REQUEST), then the KRaft controller's
    ELR rule (INVALID_CONFIG). `changed`: the keys the request sets, with their new values."""
    defs = broker_defs(cluster)
    cluster_wide = resource == ""
    read_only = {k for k in changed if k in defs and defs[k].read_only}
    if read_only:
        raise ConfigProblem(INVALID_REQUEST, f"Cannot update these configs dynamically: {_key_set(cluster, read_only)}")
    security = set(changed) & release(cluster).dynamic_security_configs
    if security:
        raise ConfigProblem(INVALID_REQUEST, "These security configs can be dynamically updated only per-listener "
                                             f"using the listener prefix: {_key_set(cluster, security, True)}")
    for key, value in changed.items():
        if key in defs:
            problem = check_value(defs[key], value)
            if problem:
                raise ConfigProblem(INVALID_REQUEST, problem)
    if cluster_wide:
        per_broker = {k for k in changed if (k in defs and defs[k].mode == "per-broker") or k.startswith(_LISTENER_PREFIX)}
        if per_broker:
            raise ConfigProblem(INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id "
                                                 f"must be specified: {_key_set(cluster, per_broker)}")
    if LOG_CLEANER_THREADS in changed:
        _check_cleaner_threads(int(broker_value(cluster, receiver, LOG_CLEANER_THREADS) or 1),
                               int(changed[LOG_CLEANER_THREADS]))


def _check_cleaner_threads(current: int, wanted: int) -> None:
    """Kafka's LogCleaner.validateReconfiguration (its CleanerConfig divides by the count first)."""
    if wanted == 0:
        raise ConfigProblem(INVALID_REQUEST, "/ by zero")
    bound = (f"cannot be reduced to less than half the current value {current}" if wanted < current // 2 else
             f"cannot be increased to more than double the current value {current}" if wanted > current * 2 else None)
    if bound:
        raise ConfigProblem(INVALID_REQUEST, "Invalid value org.apache.kafka.common.config.ConfigException: "
                                             f"Log cleaner threads {bound} for configuration Invalid dynamic configuration")


def elr_enabled(cluster: ClusterState) -> bool:
    from kafka_shell.sandbox.handlers import features
    return cluster.kraft and features.finalized(cluster).get(ELR_FEATURE, 0) >= 1


def check_min_isr_change(cluster: ClusterState, resource: str, named: set[str], old: dict[str, str],
                         new: dict[str, str]) -> None:
    """The KRaft controller's rule while ELR is on: min.insync.replicas stays set cluster-wide, and
    a request naming it for one broker is refused (ConfigurationControlManager)."""
    if not elr_enabled(cluster):
        return
    if resource != "":
        if MIN_ISR in named:
            raise ConfigProblem(INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
        return
    if MIN_ISR in old and MIN_ISR not in new:
        raise ConfigProblem(INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")


# -- static configs (the sandbox's server.properties) ---------------------------------------------

# Keys that say what the sandbox itself sets up, and what to use instead.
SET_BY_THE_SANDBOX = {
    "broker.id": "broker ids are 1..N (--brokers)", "node.id": "node ids are the sandbox's own",
    "broker.rack": "use --rack", "host.name": "use --hosts", "process.roles": "see --mode",
    "listeners": "use --listeners and --listen", "advertised.listeners": "use --listeners and --listen",
    "listener.security.protocol.map": "use --listeners", "controller.listener.names": "see --controllers",
    "controller.quorum.voters": "use --controllers", "controller.quorum.bootstrap.servers": "use --controllers",
    "zookeeper.connect": "use --mode zk", "log.dirs": "use --data-dir", "log.dir": "use --data-dir",
}


def is_static(cluster: ClusterState, key: str) -> bool:
    d = broker_defs(cluster).get(key)
    return d is not None and d.read_only


def check_static(cluster: ClusterState, key: str, value: str) -> None:
    """A static broker config given at start-up, as Kafka reads server.properties: a bad value
    stops it (ValueError). Unknown keys are refused too (Kafka only warns), so a typo is seen."""
    if key in SET_BY_THE_SANDBOX:
        raise ValueError(f"{key} is set by the sandbox itself: {SET_BY_THE_SANDBOX[key]}")
    d = broker_defs(cluster).get(key)
    if d is None:
        raise ValueError(f"unknown broker config {key}: Kafka {cluster.kafka_version} has no such key")
    problem = check_value(d, value)
    if problem:
        raise ValueError(problem)


# -- ConfigRecords (Kafka's ConfigurationControlManager) ----------------------------------------


def config_records(resource_type: int, name: str, old: dict[str, str], new: dict[str, str]) -> list[ConfigRecord]:
    """The ConfigRecords that turn a resource's configs `old` into `new` (value None: deleted)."""
    return [ConfigRecord(resource_type, name, key, new.get(key))
            for key in [*old, *(k for k in new if k not in old)] if new.get(key) != old.get(key)]


def _resource_configs(cluster: ClusterState, resource_type: int, name: str) -> dict[str, str]:
    """The live dict a ConfigRecord changes."""
    if resource_type == TOPIC_RESOURCE:
        t = cluster.topics.get(name)
        if t is None:
            raise ReplayError(f"configures topic {name!r}, which no TopicRecord created")
        return t.configs
    if resource_type == BROKER_RESOURCE:
        if name == "":
            return cluster.cluster_configs
        node = cluster.node(int(name)) if name.isdigit() else None
        if node is None:
            raise ReplayError(f"configures node {name!r}, which is not registered")
        return node.configs
    if resource_type == GROUP_RESOURCE:
        return cluster.group_configs.setdefault(name, {})
    if resource_type == CLIENT_METRICS_RESOURCE:
        return cluster.client_metrics.setdefault(name, {})
    raise ReplayError(f"configures a resource of type {resource_type}, which has no dynamic configs")


def replay_config(cluster: ClusterState, record: ConfigRecord) -> None:
    values = _resource_configs(cluster, record.resource_type, record.resource_name)
    if record.value is None:
        values.pop(record.name, None)
    else:
        values[record.name] = record.value
    # A group or a client metrics subscription without configs is gone (Kafka's ConfigurationsImage).
    for table in (cluster.group_configs, cluster.client_metrics):
        if not values and table.get(record.resource_name) is values:
            del table[record.resource_name]


def snapshot(cluster: ClusterState) -> list[ConfigRecord]:
    """Every dynamic config but the topics' (theirs follow their TopicRecords)."""
    out = config_records(BROKER_RESOURCE, "", {}, cluster.cluster_configs)
    nodes: list[Broker | Controller] = [*cluster.brokers.values(), *cluster.controllers.values()]
    for n in nodes:
        out += config_records(BROKER_RESOURCE, str(n.id), {}, n.configs)
    for resource, table in ((GROUP_RESOURCE, cluster.group_configs), (CLIENT_METRICS_RESOURCE, cluster.client_metrics)):
        for name, values in table.items():
            out += config_records(resource, name, {}, values)
    return out


REPLAY = {ConfigRecord: replay_config}
