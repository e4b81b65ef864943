"""KIP-426 on the sandbox: how a replaced broker machine finds its id, and what a lost disk
loses. `Sandbox.replace_broker` uses these on the event loop thread."""

from __future__ import annotations

from kafka_shell.protocol.broker_identity import Choice, apply_record, choose_id
from kafka_shell.sandbox import configs, log, replication
from kafka_shell.sandbox.model import ClusterState


def read_mapping(cluster: ClusterState, topic: str) -> dict[str, int]:
    """host -> id from the mapping topic's committed records (up to each high watermark)."""
    mapping: dict[str, int] = {}
    t = cluster.topics.get(topic)
    for p in t.partitions if t is not None else ():
        for batch in p.batches:
            if batch.base_offset >= p.high_watermark:
                break
            for r in log.records(batch.data):
                apply_record(mapping, r.key, r.value)
    return mapping


def startup_choice(cluster: ClusterState, host: str, topic: str) -> Choice:
    """The id a broker starting on `host` with no id in its config or meta.properties takes."""
    live = {b.id for b in cluster.brokers.values() if b.usable}
    named = {r for t in cluster.topics.values() for p in t.partitions for r in p.replicas}
    # KRaft keeps a stopped broker registered (fenced); ZooKeeper forgets it (an ephemeral znode).
    missing = {r for r in named if r not in live} | {b.id for b in cluster.brokers.values()
                                                     if cluster.kraft and b.registered and not b.usable}
    return choose_id(host, read_mapping(cluster, topic), live, missing, set(cluster.brokers))


def lose_disk(cluster: ClusterState, broker_id: int) -> None:
    """Every replica on the (stopped, so out of every ISR it could leave) broker is empty: it
    catches up from the leaders once it runs, as a replica being added does. Its new disk has no
    clean-shutdown mark, so with ELR its registration is an unclean shutdown: it leaves every ELR
    (ReplicationControlManager.handleBrokerShutdown), and a partition it alone could lead stays
    offline rather than come back empty. Without ELR it leads such a partition again, with an
    empty log (`log.truncate_to`): the records are lost, as on Kafka 3.9."""
    elr = configs.elr_enabled(cluster)
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id in p.replicas:
                log.empty_replica(cluster, p, broker_id)
                if elr and broker_id in p.elr:
                    replication.change(cluster, p, eligible_leader_replicas=[r for r in p.elr if r != broker_id])
