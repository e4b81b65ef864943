"""Producer ids as Kafka hands them out: the controller gives a broker a block of 1000 at a time
(ProducerIdControlManager: a ProducerIdsRecord moves the end of the ids given out), and the broker
gives them to producers from its block (RPCProducerIdManager), asking for a new block when it runs
out. The controller's end is kept (`ClusterState.producer_ids_end`); a broker's block is the
running server's, so after a restart every broker starts a new block and no id is given twice.
ZooKeeper-mode brokers take their blocks from ZooKeeper the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.sandbox import replay
from kafka_shell.sandbox.records import ControllerResult, ProducerIdsRecord, ReplayError

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState

BLOCK_SIZE = 1000   # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


def next_block(cluster: ClusterState, broker_id: int) -> ControllerResult[range]:
    """The controller's generateNextProducerId: the next block, for this broker."""
    start = cluster.producer_ids_end
    broker = cluster.brokers.get(broker_id)
    record = ProducerIdsRecord(broker_id, broker.epoch if broker is not None else 0, start + BLOCK_SIZE)
    return ControllerResult([record], range(start, start + BLOCK_SIZE))


def new_producer_id(cluster: ClusterState, broker_id: int) -> int:
    """A producer id the broker has never given out: the next of its block (a new block first
    when its block is used up or it has none since the start)."""
    blocks = cluster.runtime.producer_id_blocks
    block = blocks.get(broker_id)
    if not block:
        block = blocks[broker_id] = replay.commit(cluster, next_block(cluster, broker_id))
    blocks[broker_id] = block[1:]
    return block[0]


def replay_producer_ids(cluster: ClusterState, record: ProducerIdsRecord) -> None:
    if record.producer_ids_end <= cluster.producer_ids_end:
        raise ReplayError(f"ends producer ids at {record.producer_ids_end}, not past {cluster.producer_ids_end}")
    cluster.producer_ids_end = record.producer_ids_end


def snapshot(cluster: ClusterState) -> list[ProducerIdsRecord]:
    return [ProducerIdsRecord(0, 0, cluster.producer_ids_end)] if cluster.producer_ids_end > 0 else []


REPLAY = {ProducerIdsRecord: replay_producer_ids}
