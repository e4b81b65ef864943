"""Config keys the sandbox knows, with Kafka's types and defaults, and how values resolve.

A topic value resolves as Kafka does: topic override, then the cluster-wide dynamic default of
its broker synonym, then the broker's static default.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kafka_shell.sandbox.model import Cluster


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str               # boolean, string, int, long, double, list, class, password
    default: str | None
    synonym: str | None = None  # the broker key a topic key falls back to
    choices: tuple[str, ...] = ()
    sensitive: bool = False
    read_only: bool = False   # broker keys that cannot change dynamically
    minimum: float | None = None  # Kafka's Range.atLeast / between validators
    maximum: float | None = None
    doc: str | None = None


def _t(name: str, type_: str, default: str | None, synonym: str | None = None,
       choices: tuple[str, ...] = (), minimum: float | None = None, maximum: float | None = None,
       doc: str | None = None) -> ConfigDef:
    return ConfigDef(name, type_, default, synonym, choices, minimum=minimum, maximum=maximum, doc=doc)


TOPIC_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    _t("cleanup.policy", "list", "delete", "log.cleanup.policy", ("compact", "delete")),
    _t("compression.type", "string", "producer", "compression.type",
       ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _t("delete.retention.ms", "long", "86400000", "log.cleaner.delete.retention.ms"),
    _t("file.delete.delay.ms", "long", "60000", "log.segment.delete.delay.ms"),
    _t("flush.messages", "long", "9223372036854775807", "log.flush.interval.messages"),
    _t("flush.ms", "long", "9223372036854775807", "log.flush.interval.ms"),
    _t("follower.replication.throttled.replicas", "list", "",
       "follower.replication.throttled.replicas"),
    _t("index.interval.bytes", "int", "4096", "log.index.interval.bytes"),
    _t("leader.replication.throttled.replicas", "list", "", "leader.replication.throttled.replicas"),
    _t("local.retention.bytes", "long", "-2", "log.local.retention.bytes"),
    _t("local.retention.ms", "long", "-2", "log.local.retention.ms"),
    _t("max.compaction.lag.ms", "long", "9223372036854775807", "log.cleaner.max.compaction.lag.ms"),
    _t("max.message.bytes", "int", "1048588", "message.max.bytes"),
    _t("message.timestamp.type", "string", "CreateTime", "log.message.timestamp.type",
       ("CreateTime", "LogAppendTime")),
    _t("min.cleanable.dirty.ratio", "double", "0.5", "log.cleaner.min.cleanable.ratio"),
    _t("min.compaction.lag.ms", "long", "0", "log.cleaner.min.compaction.lag.ms"),
    _t("min.insync.replicas", "int", "1", "min.insync.replicas"),
    _t("preallocate", "boolean", "false", "log.preallocate", ("true", "false")),
    _t("retention.bytes", "long", "-1", "log.retention.bytes"),
    _t("retention.ms", "long", "604800000", "log.retention.ms"),
    _t("segment.bytes", "int", "1073741824", "log.segment.bytes"),
    _t("segment.index.bytes", "int", "10485760", "log.index.size.max.bytes"),
    _t("segment.jitter.ms", "long", "0", "log.roll.jitter.ms"),
    _t("segment.ms", "long", "604800000", "log.roll.ms"),
    _t("unclean.leader.election.enable", "boolean", "false", "unclean.leader.election.enable",
       ("true", "false")),
    _t("message.downconversion.enable", "boolean", "true", "log.message.downconversion.enable",
       ("true", "false")),
    _t("message.timestamp.before.max.ms", "long", "9223372036854775807",
       "log.message.timestamp.before.max.ms", minimum=0),
    _t("message.timestamp.after.max.ms", "long", "3600000", "log.message.timestamp.after.max.ms",
       minimum=0),
    _t("remote.storage.enable", "boolean", "false", choices=("true", "false")),
]}

# Broker keys: the synonyms above plus broker-only keys. Values are Kafka's defaults.
BROKER_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    _t("log.cleanup.policy", "list", "delete", choices=("compact", "delete")),
    _t("compression.type", "string", "producer",
       choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _t("log.cleaner.delete.retention.ms", "long", "86400000"),
    _t("log.segment.delete.delay.ms", "long", "60000"),
    _t("log.flush.interval.messages", "long", "9223372036854775807"),
    _t("log.flush.interval.ms", "long", None),
    _t("log.index.interval.bytes", "int", "4096"),
    _t("log.local.retention.bytes", "long", "-2"),
    _t("log.local.retention.ms", "long", "-2"),
    _t("log.cleaner.max.compaction.lag.ms", "long", "9223372036854775807"),
    _t("message.max.bytes", "int", "1048588"),
    _t("log.message.timestamp.type", "string", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    _t("log.cleaner.min.cleanable.ratio", "double", "0.5"),
    _t("log.cleaner.min.compaction.lag.ms", "long", "0"),
    _t("min.insync.replicas", "int", "1"),
    _t("log.preallocate", "boolean", "false", choices=("true", "false")),
    _t("log.retention.bytes", "long", "-1"),
    _t("log.retention.ms", "long", None),
    _t("log.retention.hours", "int", "168"),
    _t("log.segment.bytes", "int", "1073741824"),
    _t("log.index.size.max.bytes", "int", "10485760"),
    _t("log.roll.jitter.ms", "long", None),
    _t("log.roll.ms", "long", None),
    _t("log.roll.hours", "int", "168"),
    _t("unclean.leader.election.enable", "boolean", "false", choices=("true", "false")),
    _t("log.message.downconversion.enable", "boolean", "true", choices=("true", "false")),
    _t("auto.leader.rebalance.enable", "boolean", "false", choices=("true", "false")),
    _t("auto.create.topics.enable", "boolean", "true", choices=("true", "false")),
    _t("default.replication.factor", "int", "1"),
    _t("num.partitions", "int", "1"),
    _t("offsets.topic.replication.factor", "int", "3"),
    _t("offsets.topic.num.partitions", "int", "50"),
    _t("leader.replication.throttled.rate", "long", "9223372036854775807"),
    _t("follower.replication.throttled.rate", "long", "9223372036854775807"),
    _t("replica.alter.log.dirs.io.max.bytes.per.second", "long", "9223372036854775807"),
    _t("leader.replication.throttled.replicas", "list", ""),
    _t("follower.replication.throttled.replicas", "list", ""),
    _t("preferred.controller.id", "int", "-1"),
    _t("delete.topic.enable", "boolean", "true", choices=("true", "false")),
    _t("background.threads", "int", "10"),
    _t("num.io.threads", "int", "8"),
    _t("num.network.threads", "int", "3"),
    _t("num.replica.fetchers", "int", "1"),
    _t("log.dirs", "string", None),
    _t("broker.id", "int", "-1"),
    _t("node.id", "int", "-1"),
    _t("broker.rack", "string", None),
    _t("host.name", "string", None),
    # The log cleaner's pause between passes (sandbox/cleaner.py; a dynamic cluster-wide config).
    _t("log.cleaner.backoff.ms", "long", "15000", minimum=0),
    _t("log.message.timestamp.before.max.ms", "long", "9223372036854775807", minimum=0),
    _t("log.message.timestamp.after.max.ms", "long", "3600000", minimum=0),
    # The socket server's limits (Kafka's SocketServerConfigs); see docs/sandbox.md, "Limits".
    _t("socket.request.max.bytes", "int", "104857600", minimum=1),
    # Kafka's default is -1 (no limit); the sandbox bounds it (all its brokers share one process).
    _t("queued.max.request.bytes", "long", "104857600"),
    _t("max.connections", "int", "2147483647", minimum=0),
    _t("max.connections.per.ip", "int", "2147483647", minimum=0),
    _t("connections.max.idle.ms", "long", "600000"),
    _t("connections.max.reauth.ms", "long", "0"),
]}


# Kafka's range validators (LogConfig, KafkaConfig) for the keys that have one.
_LIMITS: dict[str, tuple[float | None, float | None]] = {
    "delete.retention.ms": (0, None), "file.delete.delay.ms": (0, None), "flush.messages": (1, None),
    "flush.ms": (0, None), "index.interval.bytes": (0, None), "local.retention.bytes": (-2, None),
    "local.retention.ms": (-2, None), "max.compaction.lag.ms": (1, None), "max.message.bytes": (0, None),
    "min.cleanable.dirty.ratio": (0, 1), "min.compaction.lag.ms": (0, None),
    "min.insync.replicas": (1, None), "retention.ms": (-1, None), "segment.bytes": (14, None),
    "segment.index.bytes": (4, None), "segment.jitter.ms": (0, None), "segment.ms": (1, None),
    "num.partitions": (1, None), "default.replication.factor": (1, None),
    "background.threads": (1, None), "num.io.threads": (1, None), "num.network.threads": (1, None),
    "num.replica.fetchers": (1, None), "log.retention.hours": (None, None),
    "leader.replication.throttled.rate": (0, None), "follower.replication.throttled.rate": (0, None),
    "replica.alter.log.dirs.io.max.bytes.per.second": (1, None), "preferred.controller.id": (-1, None),
}

# One-line summaries of Kafka's documentation (DescribeConfigs include_documentation).
_DOCS = {
    "cleanup.policy": "The retention policy on log segments: delete (by time or size), compact "
                      "(keep the latest value per key), or both.",
    "compression.type": "The final compression of the topic's data; 'producer' keeps the "
                        "producer's codec, 'uncompressed' stores data uncompressed.",
    "delete.retention.ms": "How long delete tombstones are retained on compacted topics.",
    "file.delete.delay.ms": "The time to wait before deleting a file from the filesystem.",
    "flush.messages": "The number of messages after which an fsync of the log is forced.",
    "flush.ms": "The time after which an fsync of the log is forced.",
    "follower.replication.throttled.replicas": "Replicas (partition:broker) whose follower "
                                               "replication is throttled, or *.",
    "index.interval.bytes": "How often an entry is added to the offset index.",
    "leader.replication.throttled.replicas": "Replicas (partition:broker) whose leader-side "
                                             "replication is throttled, or *.",
    "local.retention.bytes": "Local log size kept before deletion when tiered storage is on "
                             "(-2: use retention.bytes).",
    "local.retention.ms": "Local log age kept before deletion when tiered storage is on "
                          "(-2: use retention.ms).",
    "max.compaction.lag.ms": "The maximum time a message stays ineligible for compaction.",
    "max.message.bytes": "The largest record batch size allowed by the topic.",
    "message.timestamp.type": "Whether the record timestamp is the create time or the log "
                              "append time.",
    "message.timestamp.before.max.ms": "The maximum a record timestamp may be behind the "
                                       "broker's time.",
    "message.timestamp.after.max.ms": "The maximum a record timestamp may be ahead of the "
                                      "broker's time.",
    "min.cleanable.dirty.ratio": "How dirty the log must be before the cleaner compacts it.",
    "min.compaction.lag.ms": "The minimum time a message stays uncompacted in the log.",
    "min.insync.replicas": "The minimum number of in-sync replicas that must acknowledge a "
                           "write with acks=all.",
    "preallocate": "Preallocate the file on disk when creating a new log segment.",
    "remote.storage.enable": "Whether tiered storage is enabled for the topic.",
    "retention.bytes": "The maximum size a partition can grow to before old segments are "
                       "discarded (-1: no limit).",
    "retention.ms": "The maximum time a log segment is retained before deletion (-1: no limit).",
    "segment.bytes": "The segment file size of the log.",
    "segment.index.bytes": "The size of the index mapping offsets to file positions.",
    "segment.jitter.ms": "The maximum random jitter subtracted from the segment roll time.",
    "segment.ms": "The time after which Kafka rolls a new segment even if it is not full.",
    "unclean.leader.election.enable": "Whether replicas not in the ISR may be elected leader "
                                      "as a last resort, at the risk of data loss.",
    "message.downconversion.enable": "Whether down-conversion of message formats is enabled "
                                     "to satisfy consume requests.",
    "auto.create.topics.enable": "Enable auto creation of topics on the server.",
    "auto.leader.rebalance.enable": "Move leadership back to the preferred replicas periodically.",
    "default.replication.factor": "The replication factor of automatically created topics "
                                  "and of CreateTopics requests asking for the default.",
    "num.partitions": "The default number of partitions per topic.",
    "delete.topic.enable": "Enables topic deletion.",
    "leader.replication.throttled.rate": "The leader-side replication throttle in bytes/s.",
    "follower.replication.throttled.rate": "The follower-side replication throttle in bytes/s.",
    "preferred.controller.id": "Sandbox extension (KAFKA-1778): the broker that should hold "
                               "the controller role while it is usable; -1 for none.",
    "broker.rack": "The rack of the broker, used by rack-aware replica placement.",
    "host.name": "The broker machine's host name (the sandbox's --hosts; KIP-426's mapping key).",
    "socket.request.max.bytes": "The maximum number of bytes in a socket request.",
    "queued.max.request.bytes": "The number of queued bytes allowed before no more requests are "
                                "read (sandbox: for all its brokers together; -1: no limit).",
    "max.connections": "The maximum number of connections a broker allows at any time; new "
                       "connections over it are closed.",
    "max.connections.per.ip": "The maximum number of connections a broker allows from each ip "
                              "address; new connections over it are closed.",
    "connections.max.idle.ms": "Idle connections timeout: connections idle for longer than this "
                               "are closed (-1: never).",
    "log.cleaner.backoff.ms": "The amount of time to sleep when there are no logs to clean.",
    "connections.max.reauth.ms": "The longest SASL session (KIP-368): a client must log in "
                                 "again on its connection before it ends (0: no limit).",
}

# Broker keys that cannot change without a restart (not in Kafka's DynamicBrokerConfig).
_STATIC_BROKER_KEYS = {
    "auto.create.topics.enable", "auto.leader.rebalance.enable", "default.replication.factor",
    "num.partitions", "offsets.topic.replication.factor", "offsets.topic.num.partitions",
    "delete.topic.enable", "log.dirs", "broker.id", "node.id", "broker.rack", "host.name",
    "socket.request.max.bytes", "queued.max.request.bytes", "connections.max.idle.ms",
    "connections.max.reauth.ms",
}


def _finish(defs: dict[str, ConfigDef], broker: bool) -> dict[str, ConfigDef]:
    out = {}
    for name, d in defs.items():
        low, high = _LIMITS.get(name, (d.minimum, d.maximum))
        doc = _DOCS.get(name) or next((_DOCS[t.name] for t in TOPIC_CONFIGS.values()
                                       if t.synonym == name and t.name in _DOCS), None)
        out[name] = replace(d, minimum=low, maximum=high, doc=doc,
                            read_only=broker and name in _STATIC_BROKER_KEYS)
    return out


TOPIC_CONFIGS = _finish(TOPIC_CONFIGS, broker=False)
BROKER_CONFIGS = _finish(BROKER_CONFIGS, broker=True)

# DescribeConfigs config sources and types, numbered as in Kafka's DescribeConfigsResponse.
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
                "list": 7, "class": 8, "password": 9}
_INT_RANGE = {"int": (-2**31, 2**31 - 1), "short": (-2**15, 2**15 - 1), "long": (-2**63, 2**63 - 1)}

def topic_value(cluster: Cluster, topic: str, key: str) -> str | None:
    """The effective value of a topic config: override, cluster default, static default."""
    t = cluster.topics.get(topic)
    if t is not None and key in t.configs:
        return t.configs[key]
    d = TOPIC_CONFIGS.get(key)
    synonym = d.synonym if d else key
    if synonym in cluster.cluster_configs:
        return cluster.cluster_configs[synonym]
    if d is not None:
        return d.default
    b = BROKER_CONFIGS.get(key)
    return b.default if b else None


def broker_value(cluster: Cluster, broker_id: int | None, key: str) -> str | None:
    """The effective value of a broker config: per-broker, cluster default, static default."""
    if broker_id is not None:
        b = cluster.node(broker_id)
        if b is not None and key in b.configs:
            return b.configs[key]
    if key in cluster.cluster_configs:
        return cluster.cluster_configs[key]
    d = BROKER_CONFIGS.get(key)
    return d.default if d else None


# -- validation -----------------------------------------------------------------------------


def check_value(d: ConfigDef, value: str) -> str | None:
    """Kafka's ConfigDef parse + validator message for a bad value, or None when it is valid."""
    bad = f"Invalid value {value} for configuration {d.name}: "
    text = value.strip()
    if d.type == "boolean":
        if text.lower() not in ("true", "false"):
            return bad + "Expected value to be either true or false"
        return None
    if d.type in _INT_RANGE:
        try:
            number: float = int(text)
        except ValueError:
            return bad + f"Not a number of type {d.type.upper()}"
        low, high = _INT_RANGE[d.type]
        if not low <= number <= high:
            return bad + f"Not a number of type {d.type.upper()}"
    elif d.type == "double":
        try:
            number = float(text)
        except ValueError:
            return bad + "Not a number of type DOUBLE"
    else:
        items = split_list(text) if d.type == "list" else [text]
        for item in items:
            if d.choices and item not in d.choices:
                return bad + f"String must be one of: {', '.join(d.choices)}"
        return None
    if d.minimum is not None and number < d.minimum:
        return bad + f"Value must be at least {_num(d.minimum)}"
    if d.maximum is not None and number > d.maximum:
        return bad + f"Value must be no more than {_num(d.maximum)}"
    return None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


# -- DescribeConfigs entries ------------------------------------------------------------------


def _entry(name: str, value: str | None, source: int, d: ConfigDef | None, read_only: bool,
           synonyms: list[dict]) -> dict:
    sensitive = bool(d and (d.sensitive or d.type == "password"))
    return {
        "name": name, "value": None if sensitive else value, "read_only": read_only,
        "config_source": source, "is_sensitive": sensitive, "synonyms": synonyms,
        "config_type": CONFIG_TYPES.get(d.type, 0) if d else 0, "documentation": d.doc if d else None,
    }


def _synonym(name: str, value: str | None, source: int) -> dict:
    return {"name": name, "value": value, "source": source}


def cluster_default_source(key: str) -> int:
    """A cluster-wide value of a read-only key came from the sandbox's start-up configuration
    (Kafka's server.properties); of a dynamic key, from a dynamic default."""
    d = BROKER_CONFIGS.get(key)
    return STATIC_BROKER_CONFIG if d is not None and d.read_only else DYNAMIC_DEFAULT_BROKER_CONFIG


def describe_topic(cluster: Cluster, overrides: dict[str, str]) -> list[dict]:
    """Every topic key with its effective value (as `topic_value` resolves it), source and
    synonyms, most specific first, for a topic with these overrides."""
    out = []
    for key, d in TOPIC_CONFIGS.items():
        synonyms = []
        if key in overrides:
            synonyms.append(_synonym(key, overrides[key], DYNAMIC_TOPIC_CONFIG))
        broker_key = d.synonym
        if broker_key and broker_key in cluster.cluster_configs:
            synonyms.append(_synonym(broker_key, cluster.cluster_configs[broker_key],
                                     cluster_default_source(broker_key)))
        b = BROKER_CONFIGS.get(broker_key or "")
        if b is not None and b.default is not None:
            synonyms.append(_synonym(b.name, b.default, DEFAULT_CONFIG))
        if synonyms and synonyms[0]["source"] != DEFAULT_CONFIG:
            value, source = synonyms[0]["value"], synonyms[0]["source"]
        else:
            value, source = d.default, DEFAULT_CONFIG
        out.append(_entry(key, value, source, d, False, synonyms))
    return out


def _broker_facts(cluster: Cluster, broker_id: int) -> dict[str, str | None]:
    """Keys whose value is a fact of the broker itself (its static identity)."""
    b = cluster.node(broker_id)
    assert b is not None
    return {"broker.id": str(b.id), "node.id": str(b.id), "broker.rack": b.rack,
            "host.name": getattr(b, "host_name", None)}


def describe_broker(cluster: Cluster, broker_id: int) -> list[dict]:
    """Every broker key as that broker sees it: per-broker, cluster default, static, default."""
    facts = _broker_facts(cluster, broker_id)
    per_broker = cluster.node(broker_id).configs  # type: ignore[union-attr]
    out = []
    for key, d in BROKER_CONFIGS.items():
        synonyms = []
        if key in per_broker:
            synonyms.append(_synonym(key, per_broker[key], DYNAMIC_BROKER_CONFIG))
        if key in cluster.cluster_configs:
            synonyms.append(_synonym(key, cluster.cluster_configs[key], cluster_default_source(key)))
        if key in facts and facts[key] is not None:
            synonyms.append(_synonym(key, facts[key], STATIC_BROKER_CONFIG))
        if d.default is not None:
            synonyms.append(_synonym(key, d.default, DEFAULT_CONFIG))
        value, source = (synonyms[0]["value"], synonyms[0]["source"]) if synonyms else (None, DEFAULT_CONFIG)
        out.append(_entry(key, value, source, d, d.read_only, synonyms))
    return out


def describe_cluster_defaults(cluster: Cluster) -> list[dict]:
    """The cluster-wide dynamic defaults only, as Kafka answers for the broker resource ""."""
    out = []
    for key, value in cluster.cluster_configs.items():
        d = BROKER_CONFIGS.get(key)
        if cluster_default_source(key) == DYNAMIC_DEFAULT_BROKER_CONFIG:
            out.append(_entry(key, value, DYNAMIC_DEFAULT_BROKER_CONFIG, d, False,
                              [_synonym(key, value, DYNAMIC_DEFAULT_BROKER_CONFIG)]))
    return out
