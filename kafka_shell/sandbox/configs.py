"""Config keys the sandbox knows, with Kafka's types and defaults, and how values resolve.

A topic value resolves as Kafka does: topic override, then the cluster-wide dynamic default of
its broker synonym, then the broker's static default.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _t(name: str, type_: str, default: str | None, synonym: str | None = None,
       choices: tuple[str, ...] = ()) -> ConfigDef:
    return ConfigDef(name, type_, default, synonym, choices)


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
]}


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
        b = cluster.brokers.get(broker_id)
        if b is not None and key in b.configs:
            return b.configs[key]
    if key in cluster.cluster_configs:
        return cluster.cluster_configs[key]
    d = BROKER_CONFIGS.get(key)
    return d.default if d else None
