"""A broker's metadata a moment behind the controller (`Sandbox.lag_metadata`).

Kafka's brokers learn each change a moment after the controller made it (KRaft brokers fetch the
metadata log; in ZooKeeper mode the controller sends UpdateMetadata), so a client that asks a
broker right after a change may be told the state before it: a topic not there yet, a
reassignment's old replica set, a partition still led by a fenced broker. A lagging broker
answers what a broker serves from its metadata cache (Metadata, DescribeTopicPartitions,
DescribeCluster) from the cluster as it was `ms` milliseconds ago. While any broker lags, an
image of what those answers read (brokers, topics and partitions, without their records) is taken
whenever the cluster changes; requests to other APIs are served from the cluster as it is.
"""

from __future__ import annotations

import copy
import dataclasses
import time

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox.model import ClusterState, Topic

SERVED_FROM_CACHE = frozenset({ApiKey.METADATA, ApiKey.DESCRIBE_TOPIC_PARTITIONS, ApiKey.DESCRIBE_CLUSTER})


def set_lag(cluster: ClusterState, broker_id: int, ms: int) -> None:
    """Broker `broker_id` sees each change `ms` later (0: at once). The state now is its first
    image, so the broker is behind only for changes made from here on."""
    lags = cluster.runtime.metadata_lags
    if ms > 0:
        lags[broker_id] = ms
        observe(cluster)
    else:
        lags.pop(broker_id, None)
        if not lags:
            clear(cluster)


def lags(cluster: ClusterState) -> dict[int, int]:
    return dict(cluster.runtime.metadata_lags)


def clear(cluster: ClusterState) -> None:
    cluster.runtime.metadata_lags.clear()
    cluster.runtime.metadata_images.clear()


def observe(cluster: ClusterState) -> None:
    """Take an image if the cluster changed since the last one (after every request, and every
    change made from outside the brokers, while some broker lags); drop those no lag needs."""
    lag_ms = max(lags(cluster).values(), default=0)
    if not lag_ms:
        return
    images = cluster.runtime.metadata_images
    now = time.monotonic()
    if not images or images[-1][1] != cluster.generation:
        images.append((now, cluster.generation, _image(cluster)))
    # Keep the newest image older than the longest lag, and everything after it.
    cutoff = now - lag_ms / 1000
    while len(images) > 1 and images[1][0] <= cutoff:
        images.pop(0)


def view(cluster: ClusterState, broker_id: int, api_key: int) -> ClusterState | None:
    """The cluster as broker `broker_id` knows it for this request, when it lags and the API is
    served from its metadata cache; None: the cluster as it is."""
    lag_ms = lags(cluster).get(broker_id, 0)
    images = cluster.runtime.metadata_images
    if not lag_ms or api_key not in SERVED_FROM_CACHE or not images:
        return None
    cutoff = time.monotonic() - lag_ms / 1000
    seen = [image for taken, _, image in images if taken <= cutoff]
    image = seen[-1] if seen else images[0][2]
    # Each request gets its own copy of the image's topics (a handler may add to them).
    return dataclasses.replace(image, topics=dict(image.topics))


def _image(cluster: ClusterState) -> ClusterState:
    """What a broker's metadata cache holds: the brokers and topics (replica sets, leaders, ISR)
    as they are now, without the records."""
    topics = {name: _topic_image(t) for name, t in cluster.topics.items()}
    brokers = {i: dataclasses.replace(b, failures=dict(b.failures)) for i, b in cluster.brokers.items()}
    # The other subsystems' state (ACLs, groups...) is shared, as it is now; not the answers
    # cached for the cluster as it is, nor the images.
    runtime = dataclasses.replace(cluster.runtime, metadata_cache={}, metadata_lags={}, metadata_images=[])
    return dataclasses.replace(cluster, topics=topics, brokers=brokers, runtime=runtime,
                               controllers=copy.copy(cluster.controllers))


def _topic_image(topic: Topic) -> Topic:
    partitions = [dataclasses.replace(p, replicas=list(p.replicas), isr=list(p.isr), elr=list(p.elr),
                                      last_known_elr=list(p.last_known_elr), adding=list(p.adding),
                                      removing=list(p.removing), leo=dict(p.leo), replica_epoch=dict(p.replica_epoch),
                                      batches=[], segments=list(p.segments))
                  for p in topic.partitions]
    return dataclasses.replace(topic, partitions=partitions, configs=dict(topic.configs))
