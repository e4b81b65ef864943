"""ApiVersions and Metadata."""

from __future__ import annotations

from typing import TYPE_CHECKING

import re

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.authorization import OPERATIONS_NOT_REQUESTED
from kafka_shell.sandbox import topic_lifecycle
from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api, features
from kafka_shell.sandbox.model import Topic

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext


# ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN: client software names and versions (v3+).
SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_versions_error(req, version: int) -> int:
    """Kafka's ApiVersionsRequest.isValid: v5's cluster id and node id come together, v3+ name
    the client's software by the pattern."""
    if version >= 5 and (req.cluster_id is None) != (req.node_id == -1):
        return ErrorCode.invalid_request
    if version >= 3 and not (SOFTWARE_NAME_VERSION.fullmatch(req.client_software_name)
                             and SOFTWARE_NAME_VERSION.fullmatch(req.client_software_version)):
        return ErrorCode.invalid_request
    return ErrorCode.none


@api(ApiKey.API_VERSIONS)
def api_versions(ctx: RequestContext) -> dict:
    """The APIs of the listener asked, as a listener of that kind on the Kafka release the sandbox
    follows lists them (sandbox.apis): a KRaft broker lists DescribeQuorum, a zk-mode broker does
    not, a controller listener lists what controllers serve."""
    req = ctx.request
    error = _api_versions_error(req, ctx.version)
    if not error and req.cluster_id is not None and not ctx.on_controller_listener and \
            (req.cluster_id != ctx.cluster.cluster_id or req.node_id != ctx.broker.id):
        # v5 (Kafka 4.4's KafkaApis): a client whose metadata names another cluster or node rebootstraps.
        error = ErrorCode.rebootstrap_required
    if error:
        return {"error_code": error, "api_keys": []}
    keys = [{"api_key": k, "min_version": v.start, "max_version": v.stop - 1}
            for k, v in sorted(ctx.served_apis().items())]
    if not ctx.cluster.kraft:
        return {"error_code": 0, "api_keys": keys, "finalized_features_epoch": -1}
    return {"error_code": 0, "api_keys": keys, **features.api_versions_features(ctx.cluster, ctx.version)}


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


def partition_state(p) -> tuple:
    """Everything `partition_metadata` reads from the partition (the rest is which brokers are
    alive): equal states give equal answers. Keep the two in step."""
    return p.index, p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr)


def topic_metadata(cluster, t, partitions: object = None) -> dict:
    """A topic's answer; `partitions` (e.g. already encoded) replaces its partitions' answers."""
    return {
        "error_code": 0, "name": t.name, "topic_id": t.id, "is_internal": t.internal,
        "partitions": [partition_metadata(cluster, p) for p in t.partitions] if partitions is None else partitions,
        "topic_authorized_operations": OPERATIONS_NOT_REQUESTED,
    }


class EncodedTopics:
    """The topics array of a full-metadata answer for one Metadata version, kept encoded.

    The whole array is reused while the cluster's generation stays the same. After a change it
    is assembled again from encoded pieces: each topic's fixed bytes around its partitions, kept
    by name, id and internal flag, and each partition kept by its `partition_state` while the
    set of live brokers is the same (so a stopped broker encodes each distinct state once: they
    differ only by index, replicas, ISR and epochs). Pieces the latest answer did not use are
    dropped."""

    def __init__(self, version: int) -> None:
        self.response_cls = codec.response_schema(3, version)
        self.topic_cls = codec.element_class(self.response_cls, "topics")
        self.partition_cls = codec.element_class(self.topic_cls, "partitions")
        self.generation = -1
        self.answer = codec.Encoded(b"")
        self.alive: frozenset[int] = frozenset()
        self.partitions: dict[tuple, bytes] = {}
        self.topics: dict[tuple, tuple[bytes, bytes]] = {}
        self.named: dict[str, tuple[int, frozenset[int], bytes]] = {}  # topic -> (generation, alive, element)

    def get(self, cluster) -> codec.Encoded:
        if cluster.generation != self.generation:
            self.answer = self._build(cluster)
            self.generation = cluster.generation
        return self.answer

    def topic(self, cluster, t) -> bytes:
        """One topic's encoded element, for requests naming topics: kept until the cluster's
        generation moves (a 10,000-partition topic answers in about a millisecond, not 0.15 s)."""
        alive = self._alive(cluster)
        hit = self.named.get(t.name)
        if hit is not None and hit[:2] == (cluster.generation, alive):
            return hit[2]
        if len(self.named) > 1000:  # a bound on what requests naming many topics leave behind
            self.named.clear()
        data = self._encode_topic(cluster, t, {}, self.partitions if alive == self.alive else {}, self.topics)
        self.named[t.name] = (cluster.generation, alive, data)
        return data

    @staticmethod
    def _alive(cluster) -> frozenset[int]:
        return frozenset(b.id for b in cluster.brokers.values() if b.alive)

    def _build(self, cluster) -> codec.Encoded:
        alive = self._alive(cluster)
        old_partitions = self.partitions if alive == self.alive else {}
        partitions: dict[tuple, bytes] = {}
        topics: dict[tuple, tuple[bytes, bytes]] = {}
        encoded = [self._encode_topic(cluster, t, partitions, old_partitions, topics, self.topics)
                   for t in cluster.topics.values()]
        self.alive, self.partitions, self.topics = alive, partitions, topics
        return codec.encode_array(self.response_cls, "topics", encoded)

    def _encode_topic(self, cluster, t, partitions: dict, old_partitions: dict, topics: dict,
                      old_topics: dict | None = None) -> bytes:
        """A topic's element from cached pieces; the pieces it used go into `partitions` and
        `topics` (the caches the next build keeps)."""
        parts = []
        for p in t.partitions:
            state = partition_state(p)
            data = partitions.get(state) or old_partitions.get(state)
            if data is None:
                data = codec.serialize(codec.build(self.partition_cls, partition_metadata(cluster, p)))
            partitions[state] = data
            parts.append(data)
        key = (t.name, t.id, t.internal)
        around = (old_topics if old_topics is not None else topics).get(key) or codec.encode_around(
            self.topic_cls, topic_metadata(cluster, t, partitions=()), "partitions")
        topics[key] = around
        return around[0] + codec.encode_array(self.topic_cls, "partitions", parts).data + around[1]


def _encoded(ctx: RequestContext) -> EncodedTopics:
    cache = ctx.cluster.runtime.metadata_cache
    encoded = cache.get(ctx.version)
    if encoded is None:
        encoded = cache[ctx.version] = EncodedTopics(ctx.version)
    return encoded


def _all_topics(ctx: RequestContext) -> object:
    """The topics of a full-metadata answer (see `EncodedTopics`): those the principal may
    describe (Kafka leaves the others out). An injected Metadata failure needs the topics as
    data (the error goes on each of them)."""
    visible = [t for t in ctx.cluster.topics.values() if ctx.permits(AclResourceType.TOPIC, t.name)]
    if ctx.api_key in ctx.broker.failures or ctx.request.include_topic_authorized_operations:
        return [_with_operations(ctx, topic_metadata(ctx.cluster, t)) for t in visible]
    encoded = _encoded(ctx)
    if len(visible) == len(ctx.cluster.topics):
        return encoded.get(ctx.cluster)
    return codec.encode_array(encoded.response_cls, "topics", [encoded.topic(ctx.cluster, t) for t in visible])


def _may_create(ctx: RequestContext, name: str) -> bool:
    """Auto-creation needs CREATE on the cluster or on the topic (KafkaApis.handleTopicMetadataRequest)."""
    return ctx.authorize(AclOperation.CREATE, AclResourceType.CLUSTER) or \
        ctx.authorize(AclOperation.CREATE, AclResourceType.TOPIC, name)


@api(ApiKey.METADATA)
def metadata(ctx: RequestContext) -> dict:
    cluster = ctx.cluster
    req = ctx.request
    topics: object
    if req.topics is None or (ctx.version == 0 and not req.topics):
        topics = _all_topics(ctx)
    else:
        found: list[Topic | dict] = []  # a topic, or the error answer for a name or id
        for rt in req.topics:
            name = getattr(rt, "name", None)
            topic_id = getattr(rt, "topic_id", None)
            t = cluster.topics.get(name) if name else cluster.topic_by_id(topic_id) if topic_id else None
            code: int = ErrorCode.unknown_topic_or_partition if name else ErrorCode.unknown_topic_id
            shown = name or (t.name if t is not None else None)
            if shown and not ctx.permits(AclResourceType.TOPIC, shown):
                t, code = None, ErrorCode.topic_authorization_failed  # whether it exists or not
            elif t is None and name and req.allow_auto_topic_creation and not _may_create(ctx, name):
                code = ErrorCode.topic_authorization_failed
            elif t is None and name and req.allow_auto_topic_creation:
                if not cluster.controller_available:
                    code = ErrorCode.leader_not_available  # creation waits for a KRaft controller
                else:
                    try:
                        t = topic_lifecycle.auto_create_topic(cluster, name)
                    except topic_lifecycle.AdminError as exc:
                        code = exc.code
            if t is None:
                found.append({"error_code": code, "name": name, "topic_id": topic_id or codec.ZERO_UUID,
                              "partitions": []})
            else:
                found.append(t)
        if ctx.api_key in ctx.broker.failures or req.include_topic_authorized_operations:
            # As data: an injected error goes on each topic; asked-for operations are per principal.
            topics = [_with_operations(ctx, topic_metadata(cluster, t)) if not isinstance(t, dict) else t
                      for t in found]
        else:
            encoded = _encoded(ctx)
            topics = codec.encode_array(encoded.response_cls, "topics", [
                encoded.topic(cluster, t) if not isinstance(t, dict)
                else codec.serialize(codec.build(encoded.topic_cls, t)) for t in found])
    return {
        "brokers": [{"node_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack}
                    for b in cluster.brokers.values() if b.usable],
        "cluster_id": cluster.cluster_id,
        "controller_id": ctx.advertised_controller_id(),
        "topics": topics,
        "cluster_authorized_operations": ctx.authorized_operations(
            req.include_cluster_authorized_operations, AclResourceType.CLUSTER),
    }


def _with_operations(ctx: RequestContext, answer: dict) -> dict:
    """A topic's answer with its authorized operations, when the request asked for them."""
    answer["topic_authorized_operations"] = ctx.authorized_operations(
        ctx.request.include_topic_authorized_operations, AclResourceType.TOPIC, answer["name"])
    return answer
