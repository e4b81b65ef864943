"""ApiVersions and Metadata."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafka_shell import protocol
from kafka_shell.sandbox import admin
from kafka_shell.sandbox.handlers import HANDLERS, api

INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state"}


@api(18)
def api_versions(ctx) -> dict:
    keys = [{"api_key": k, "min_version": a.versions.start, "max_version": a.versions.stop - 1}
            for k, a in sorted(HANDLERS.items())]
    return {"error_code": 0, "api_keys": keys, "finalized_features_epoch": -1}


def partition_metadata(cluster, p) -> dict:
    offline = [r for r in p.replicas if not cluster.brokers[r].alive]
    leader_live = p.leader >= 0 and cluster.brokers[p.leader].alive
    return {
        "error_code": 0 if leader_live else ErrorCode.leader_not_available,
        "partition_index": p.index,
        "leader_id": p.leader if leader_live else -1,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": p.replicas,
        "isr_nodes": p.isr,
        "offline_replicas": offline,
    }


def topic_metadata(cluster, t) -> dict:
    return {
        "error_code": 0, "name": t.name, "topic_id": t.id, "is_internal": t.internal,
        "partitions": [partition_metadata(cluster, p) for p in t.partitions],
        "topic_authorized_operations": -2147483648,
    }


def _all_topics(ctx) -> object:
    """The topics of a full-metadata answer, encoded once per (version, generation): a
    100,000-partition cluster answers repeated full requests without encoding them again.
    An injected Metadata failure needs the topics as data (the error goes on each of them)."""
    if ctx.api_key in ctx.broker.failures:
        return [topic_metadata(ctx.cluster, t) for t in ctx.cluster.topics.values()]
    cache = ctx.cluster.extras.setdefault("metadata_cache", {})
    key = (ctx.version, ctx.cluster.generation)
    hit = cache.get(key)
    if hit is None:
        cache.clear()
        hit = cache[key] = protocol.encode_field(
            protocol.response_schema(3, ctx.version), "topics",
            [topic_metadata(ctx.cluster, t) for t in ctx.cluster.topics.values()])
    return hit


@api(3)
def metadata(ctx) -> dict:
    cluster = ctx.cluster
    req = ctx.request
    if req.topics is None or (ctx.version == 0 and not req.topics):
        topics = _all_topics(ctx)
    else:
        topics = []
        for rt in req.topics:
            name = getattr(rt, "name", None)
            topic_id = getattr(rt, "topic_id", None)
            t = cluster.topics.get(name) if name else cluster.topic_by_id(topic_id)
            code = ErrorCode.unknown_topic_or_partition if name else ErrorCode.unknown_topic_id
            if t is None and name and getattr(req, "allow_auto_topic_creation", True):
                try:
                    t = admin.auto_create_topic(cluster, name)
                except admin.AdminError as exc:
                    code = exc.code
            if t is None:
                topics.append({"error_code": code, "name": name, "topic_id": topic_id or protocol.ZERO_UUID,
                               "partitions": []})
            else:
                topics.append(topic_metadata(cluster, t))
    return {
        "brokers": [{"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in cluster.brokers.values() if b.usable],
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
    }
