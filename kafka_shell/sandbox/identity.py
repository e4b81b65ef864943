"""KIP-426 on the sandbox: how a replaced broker machine finds its id, and what a lost disk
loses. `Sandbox.replace_broker` uses these on the event loop thread."""

from __future__ import annotations

from kio._kio_native import read_signed_varint, read_signed_varlong

from kafka_shell.broker_identity import Choice, apply_record, choose_id
from kafka_shell.sandbox import log
from kafka_shell.sandbox.model import Cluster


def read_mapping(cluster: Cluster, topic: str) -> dict[str, int]:
    """host -> id from the mapping topic's committed records (up to each high watermark)."""
    mapping: dict[str, int] = {}
    t = cluster.topics.get(topic)
    for p in t.partitions if t is not None else ():
        for batch in p.batches:
            if batch.base_offset >= p.high_watermark:
                break
            for key, value in _records(batch.data):
                apply_record(mapping, key, value)
    return mapping


def _records(batch: bytes) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of each record of a v2 batch."""
    count = log.HEADER.unpack_from(batch)[-1]
    body = log.records_section(batch)
    out = []
    pos = 0
    for _ in range(count):
        length, size = read_signed_varint(body, pos)
        start = pos = pos + size
        pos += 1                                       # attributes
        pos += read_signed_varlong(body, pos)[1]       # timestamp delta
        pos += read_signed_varint(body, pos)[1]        # offset delta
        fields: list[bytes | None] = []
        for _field in range(2):                        # key, value
            n, size = read_signed_varint(body, pos)
            pos += size
            fields.append(None if n < 0 else bytes(body[pos:pos + n]))
            pos += max(n, 0)
        out.append((fields[0], fields[1]))
        pos = start + length
    return out


def startup_choice(cluster: Cluster, host: str, topic: str) -> Choice:
    """The id a broker starting on `host` with no id in its config or meta.properties takes."""
    live = {b.id for b in cluster.brokers.values() if b.usable}
    named = {r for t in cluster.topics.values() for p in t.partitions for r in p.replicas}
    # KRaft keeps a stopped broker registered (fenced); ZooKeeper forgets it (an ephemeral znode).
    missing = {r for r in named if r not in live} | {b.id for b in cluster.brokers.values()
                                                     if cluster.kraft and b.registered and not b.usable}
    return choose_id(host, read_mapping(cluster, topic), live, missing, set(cluster.brokers))


def lose_disk(cluster: Cluster, broker_id: int) -> None:
    """Every replica on the (stopped, so out of every ISR it could leave) broker is empty: it
    catches up from the leaders once it runs, as a replica being added does."""
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id in p.replicas:
                p.leo[broker_id], p.replica_epoch[broker_id] = 0, 0
    cluster.changed()
