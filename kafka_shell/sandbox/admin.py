"""State changes shared by several APIs (the one place each is done): creating a topic.

Placement follows Kafka's `StripedReplicaPlacer` idea: replicas spread round-robin over brokers,
leaders rotate, and when racks are set each partition's replicas land on distinct racks first.
"""

from __future__ import annotations

import random
import uuid

from kafka_shell.sandbox.model import Cluster, Partition, Topic


def place_replicas(cluster: Cluster, partitions: int, replication_factor: int,
                   first_partition: int = 0) -> list[list[int]]:
    """Replica lists for `partitions` new partitions over the usable brokers."""
    brokers = sorted(b.id for b in cluster.live_brokers())
    if replication_factor > len(brokers):
        raise ValueError(f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    racks: dict[str | None, list[int]] = {}
    for b in brokers:
        racks.setdefault(cluster.brokers[b].rack, []).append(b)
    # Interleave brokers across racks (a1, b1, c1, a2, ...) so consecutive picks change rack.
    order: list[int] = []
    lists = [racks[r] for r in sorted(racks, key=str)]
    for i in range(max(len(x) for x in lists)):
        order += [x[i] for x in lists if i < len(x)]
    n = len(order)
    start = random.randrange(n)
    shift = random.randrange(n)
    result = []
    for p in range(first_partition, first_partition + partitions):
        first = (start + p) % n
        replicas = [order[first]]
        step = 1 + (shift + p // n) % max(n - 1, 1) if n > 1 else 1
        j = first
        while len(replicas) < replication_factor:
            j = (j + step) % n if n > 1 else j
            if order[j] not in replicas:
                replicas.append(order[j])
            else:
                step = 1
        result.append(replicas)
    return result


def create_topic(cluster: Cluster, name: str, partitions: int = 1, replication_factor: int = 1,
                 assignment: list[list[int]] | None = None,
                 configs: dict[str, str] | None = None, internal: bool = False) -> Topic:
    """Add a topic (validation is the caller's job; see handlers.topics)."""
    if assignment is None:
        assignment = place_replicas(cluster, partitions, replication_factor)
    topic = Topic(name=name, id=uuid.uuid4(), partitions=[], configs=dict(configs or {}),
                  internal=internal)
    for i, replicas in enumerate(assignment):
        topic.partitions.append(new_partition(cluster, name, i, replicas))
    cluster.topics[name] = topic
    cluster.changed()
    return topic


def new_partition(cluster: Cluster, topic: str, index: int, replicas: list[int]) -> Partition:
    live = [r for r in replicas if cluster.brokers[r].usable]
    p = Partition(topic=topic, index=index, replicas=list(replicas), isr=live or list(replicas[:1]),
                  leo={r: 0 for r in replicas}, replica_epoch={r: 0 for r in replicas})
    p.leader = live[0] if live else -1
    return p
