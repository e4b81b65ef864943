"""ApiVersions and Metadata."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafka_shell import protocol
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


def _all_topics(ctx) -> tuple:
    """Built topic entities for a full-metadata answer, cached per (version, generation): a
    10,000-topic cluster answers repeated full requests without rebuilding them."""
    cache = ctx.cluster.extras.setdefault("metadata_cache", {})
    key = (ctx.version, ctx.cluster.generation)
    hit = cache.get(key)
    if hit is None:
        cache.clear()
        cls = protocol.response_schema(3, ctx.version)
        topic_cls = protocol._fields(cls)[[f.name for f in protocol._fields(cls)].index("topics")].nested
        hit = cache[key] = tuple(protocol.build(topic_cls, topic_metadata(ctx.cluster, t))
                                 for t in ctx.cluster.topics.values())
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
            if t is None:
                code = ErrorCode.unknown_topic_or_partition if name else ErrorCode.unknown_topic_id
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
