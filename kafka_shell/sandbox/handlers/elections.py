"""ElectLeaders v0-v3: preferred (0), unclean (1) and, from v3, designated (2) elections.

A controller API: other brokers answer NOT_CONTROLLER (top level from v1, per partition always),
as Kafka's KafkaApis did before requests were forwarded. A null partition list means every
partition (results that need no election are left out, as Kafka does). A v3 request is served
for its first 1000 partitions; the rest are ignored and not answered (KAFKA-20098).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.base.limits import MAX_PARTITIONS_PER_ELECTION
from kafka_shell.protocol.seed_apis import DESIGNATED_ELECTION
from kafka_shell.sandbox import replay, replication
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

PREFERRED, UNCLEAN = 0, 1


def _kind(ctx: RequestContext) -> int:
    return ctx.request.election_type  # v0: Kafka's default, preferred


def _requested(ctx: RequestContext) -> list[tuple[str, int, int | None, int]]:
    """(topic, partition, designated leader, error or NONE) for each requested partition."""
    out: list[tuple[str, int, int | None, int]] = []
    for tp in ctx.request.topic_partitions:
        designated = getattr(tp, "designated_leaders", None)
        mismatch = (_kind(ctx) == DESIGNATED_ELECTION
                    and (designated is None or len(designated) != len(tp.partitions)))
        for i, index in enumerate(tp.partitions):
            if mismatch:
                out.append((tp.topic, index, None, ErrorCode.invalid_request))
            else:
                out.append((tp.topic, index, designated[i] if designated else None, ErrorCode.none))
    if ctx.version >= 3:
        out = out[:MAX_PARTITIONS_PER_ELECTION]
    return out


def _elect(ctx: RequestContext, topic: str, index: int, designated: int | None) -> tuple[int, str | None]:
    p = ctx.cluster.partition(topic, index)
    if p is None:
        what = f"partition {topic}-{index}" if topic in ctx.cluster.topics else f"topic {topic}"
        return ErrorCode.unknown_topic_or_partition, f"No such {what}"
    kind = _kind(ctx)
    if kind == PREFERRED:
        return replay.commit(ctx.cluster, replication.elect_preferred(ctx.cluster, p)), None
    if kind == UNCLEAN:
        return replication.elect_unclean(ctx.cluster, p), None
    return replication.elect_designated(ctx.cluster, p, designated)  # type: ignore[arg-type]


def _group(results: list[tuple[str, int, int, str | None]]) -> list[dict]:
    by_topic: dict[str, list[dict]] = {}
    for topic, index, code, message in results:
        by_topic.setdefault(topic, []).append(
            {"partition_id": index, "error_code": code, "error_message": message})
    return [{"topic": t, "partition_result": parts} for t, parts in by_topic.items()]


@api(ApiKey.ELECT_LEADERS, controller_only=True)
def elect_leaders(ctx: RequestContext) -> dict:
    req = ctx.request
    kind = _kind(ctx)
    valid_kind = kind in (PREFERRED, UNCLEAN) or (kind == DESIGNATED_ELECTION and ctx.version >= 3)
    top_error = ErrorCode.none
    if not ctx.permits(AclResourceType.CLUSTER):
        top_error = ErrorCode.cluster_authorization_failed  # on every partition named too
    elif not ctx.is_controller:
        top_error = ErrorCode.not_controller
    elif not valid_kind or (kind == DESIGNATED_ELECTION and req.topic_partitions is None):
        top_error = ErrorCode.invalid_request
    if req.topic_partitions is None:
        if top_error:
            return {"error_code": top_error, "replica_election_results": []}
        results = []
        for t in ctx.cluster.topics.values():
            for p in t.partitions:
                code, message = _elect(ctx, t.name, p.index, None)
                if code != ErrorCode.election_not_needed:
                    results.append((t.name, p.index, code, message))
        replication.settle(ctx.cluster)
        return {"error_code": 0, "replica_election_results": _group(results)}
    results = []
    for topic, index, designated, error in _requested(ctx):
        if top_error or error:
            code, message = top_error or error, None
        else:
            code, message = _elect(ctx, topic, index, designated)
        results.append((topic, index, code, message))
    # New leaders' followers truncate and catch up.
    elected = (ctx.cluster.partition(topic, index) for topic, index, code, _ in results if not code)
    replication.settle(ctx.cluster, [p for p in elected if p is not None])
    return {"error_code": top_error, "replica_election_results": _group(results)}
