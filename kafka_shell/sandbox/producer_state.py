"""Idempotent and transactional producers' state per partition, as Kafka's ProducerStateManager
keeps it: for each producer id its epoch, the metadata of its last five batches (duplicates of
those are acknowledged with their first offsets, not appended again), its coordinator epoch and
the first offset of its open transaction; the open transactions (the last stable offset is the
first offset of the oldest, or the high watermark) and the aborted ones (Fetch lists them to
read_committed consumers, as Kafka's transaction index does).

The state is derived from the log, as Kafka rebuilds it: it is made from the partition's batches
when first asked for, kept up to date by `append` (after `check` for a client's batch, after
`check_marker` for the coordinator's markers), and made again from the batches when the log was truncated (an
unclean election, a lost disk) or replaced (a restart from --data-dir). It lives in
`Runtime.producers` by (topic id, partition) (made again from the log when missing).
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import log
from kafka_shell.sandbox.model import Batch, ClusterState, Partition

BATCHES_TO_RETAIN = 5          # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
MAX_SEQUENCE = (1 << 31) - 1
ABORT, COMMIT = 0, 1           # control record types of an end-transaction marker
MARKER_KEY = struct.Struct(">hh")    # version, type
MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch


@dataclass(frozen=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int = log.NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    txn_first_offset: int | None = None   # the open transaction's first offset

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else log.NO_SEQUENCE

    def duplicate_of(self, h: log.Header) -> BatchMetadata | None:
        if h.producer_epoch != self.epoch:
            return None
        return next((b for b in self.batches if b.first_seq == h.base_sequence and b.last_seq == h.last_sequence), None)

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int


@dataclass
class PartitionProducers:
    entries: dict[int, ProducerEntry] = field(default_factory=dict)
    ongoing: dict[int, int] = field(default_factory=dict)    # producer id -> its transaction's first offset
    aborted: list[AbortedTxn] = field(default_factory=list)  # by marker offset
    # What of the log this state covers: its end and last batch (to see truncations and replacements).
    end_offset: int = 0
    last_batch: Batch | None = None

    def entry(self, producer_id: int) -> ProducerEntry:
        e = self.entries.get(producer_id)
        if e is None:
            e = self.entries[producer_id] = ProducerEntry(producer_id)
        return e

    def has_ongoing(self, producer_id: int, epoch: int) -> bool:
        e = self.entries.get(producer_id)
        return e is not None and e.txn_first_offset is not None and e.epoch == epoch

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values(), default=None)


# -- access ---------------------------------------------------------------------------------------


def state_of(cluster: ClusterState, p: Partition) -> PartitionProducers:
    """The partition's producer state, made from its batches when missing or out of step."""
    states = cluster.runtime.producers
    t = cluster.topics.get(p.topic)
    key = (t.id if t is not None else p.topic, p.index)
    s = states.get(key)
    if s is None or not _in_step(s, p):
        s = states[key] = _rebuild(p)
    return s


def _in_step(s: PartitionProducers, p: Partition) -> bool:
    last = p.batches[-1] if p.batches else None
    return last is s.last_batch and s.end_offset <= p.leo.get(p.leader, s.end_offset)


def _rebuild(p: Partition) -> PartitionProducers:
    """Replay the log (Kafka's loadProducersFromRecords): no checks, as for a follower."""
    s = PartitionProducers()
    _replay(s, p, p.batches)
    return s


def _replay(s: PartitionProducers, p: Partition, batches: list[Batch]) -> None:
    for b in batches:
        h = log.header(b.data)
        if h.control:
            marker = read_marker(b.data)
            if marker is not None:
                _complete(s, h.producer_id, h.producer_epoch, marker[1], marker[0], h.base_offset, b.max_timestamp)
        elif h.has_producer_id:
            _add_batch(s, h, b.max_timestamp)
    s.end_offset = p.leo.get(p.leader, p.batches[-1].last_offset + 1 if p.batches else 0)
    s.last_batch = p.batches[-1] if p.batches else None


def read_marker(data: bytes) -> tuple[int, int] | None:
    """(control type, coordinator epoch) of a control batch's end-transaction marker; None for
    an empty control batch (Kafka's cleaner leaves those)."""
    entries = log.records(data)
    if not entries or entries[0].key is None or len(entries[0].key) < MARKER_KEY.size:
        return None
    _, kind = MARKER_KEY.unpack_from(entries[0].key)
    value = entries[0].value or b""
    coordinator_epoch = MARKER_VALUE.unpack_from(value)[1] if len(value) >= MARKER_VALUE.size else -1
    return kind, coordinator_epoch


def marker_batch(producer_id: int, epoch: int, coordinator_epoch: int, commit: bool) -> bytearray:
    """The control batch of an end-transaction marker, as the coordinator writes it."""
    return log.build_batch([(MARKER_KEY.pack(0, COMMIT if commit else ABORT), MARKER_VALUE.pack(0, coordinator_epoch))],
                           producer_id=producer_id, producer_epoch=epoch, transactional=True, control=True)


# -- client appends (Kafka's ProducerAppendInfo with origin CLIENT) -------------------------------


def check(s: PartitionProducers, h: log.Header) -> BatchMetadata | None:
    """Check a client batch against the producer's state before it is appended: the duplicate it
    repeats (answered with its offsets, not appended), else None; raises InvalidBatch with
    Kafka's error when the batch is out of sequence, from a fenced epoch, or not transactional
    inside an open transaction."""
    if not h.has_producer_id:
        return None
    e = s.entries.get(h.producer_id)
    if e is not None and (dup := e.duplicate_of(h)) is not None:
        return dup
    current = e.epoch if e is not None else log.NO_PRODUCER_EPOCH
    where = f"for producer {h.producer_id}"
    if h.producer_epoch < current:
        raise log.InvalidBatch(ErrorCode.invalid_producer_epoch,
                               f"Epoch of producer {h.producer_id} is {h.producer_epoch}, which is smaller "
                               f"than the last seen epoch {current}")
    if h.producer_epoch != current:
        if h.base_sequence != 0 and current != log.NO_PRODUCER_EPOCH:
            raise log.InvalidBatch(ErrorCode.out_of_order_sequence_number,
                                   f"Invalid sequence number for new epoch {where}: {h.producer_epoch} (request "
                                   f"epoch), {h.base_sequence} (seq. number), {current} (current producer epoch)")
    elif e is not None and not _in_sequence(e.last_seq, h.base_sequence):
        raise log.InvalidBatch(ErrorCode.out_of_order_sequence_number,
                               f"Out of order sequence number {where}: {h.base_sequence} (incoming seq. number), "
                               f"{e.last_seq} (current end sequence number)")
    if e is not None and e.txn_first_offset is not None and e.epoch == h.producer_epoch and not h.transactional:
        raise log.InvalidBatch(ErrorCode.invalid_txn_state,
                               f"Expected transactional write from producer {h.producer_id}")
    return None


def _in_sequence(last: int, first: int) -> bool:
    return first == last + 1 or (first == 0 and last == MAX_SEQUENCE)


def append(cluster: ClusterState, p: Partition, batches: list[bytearray]) -> tuple[int, int]:
    """Append checked batches on the leader (client data or the coordinator's markers) and
    replicate them, keeping the producers' state. Returns log.append's (base offset, append time)."""
    s = state_of(cluster, p)
    first = len(p.batches)
    answer = log.append(cluster, p, batches)
    _replay(s, p, p.batches[first:])
    log.replicate(cluster, p)
    return answer


def _add_batch(s: PartitionProducers, h: log.Header, timestamp: int) -> None:
    e = s.entry(h.producer_id)
    e.set_epoch(h.producer_epoch)
    e.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, h.base_offset, h.last_offset, timestamp))
    e.last_timestamp = timestamp
    if h.transactional and e.txn_first_offset is None:
        e.txn_first_offset = h.base_offset
        s.ongoing[h.producer_id] = h.base_offset


# -- markers (origin COORDINATOR) ---------------------------------------------------------------


def check_marker(s: PartitionProducers, producer_id: int, epoch: int, coordinator_epoch: int,
                 transaction_version: int) -> int:
    """Kafka's checks of a marker before it is written (0: write it): a marker of transactions v2
    must carry a newer epoch than the producer's (a repeat of the one that ended its transaction
    is written again, KAFKA-19999), older ones at least the producer's; and a coordinator epoch
    not older than the last marker's."""
    e = s.entries.get(producer_id)
    current = e.epoch if e is not None else log.NO_PRODUCER_EPOCH
    stale = epoch <= current if transaction_version >= 2 else epoch < current
    if stale and not (transaction_version >= 2 and epoch == current and (e is None or e.txn_first_offset is None)):
        return ErrorCode.invalid_producer_epoch
    if e is not None and e.coordinator_epoch > coordinator_epoch:
        return ErrorCode.transaction_coordinator_fenced
    return 0


def _complete(s: PartitionProducers, producer_id: int, epoch: int, coordinator_epoch: int, kind: int,
              offset: int, timestamp: int) -> None:
    e = s.entry(producer_id)
    if e.txn_first_offset is not None and kind == ABORT:
        s.aborted.append(AbortedTxn(producer_id, e.txn_first_offset, offset))
    s.ongoing.pop(producer_id, None)
    e.set_epoch(epoch)
    e.coordinator_epoch = coordinator_epoch
    e.txn_first_offset = None
    e.last_timestamp = timestamp


# -- reading ------------------------------------------------------------------------------------


def last_stable_offset(cluster: ClusterState, p: Partition) -> int:
    """The first offset of the oldest open transaction, or the high watermark."""
    first = state_of(cluster, p).first_unstable_offset()
    return p.high_watermark if first is None else max(min(first, p.high_watermark), p.log_start_offset)


def aborted_between(cluster: ClusterState, p: Partition, start: int, end: int) -> list[AbortedTxn]:
    """The aborted transactions a read of [start, end) may hold records of (Kafka's
    collectAbortedTransactions)."""
    aborted = state_of(cluster, p).aborted   # in marker order: by last offset
    first = bisect.bisect_left(aborted, start, key=lambda a: a.last_offset)
    return [a for a in aborted[first:] if a.first_offset < end]


def last_records(cluster: ClusterState, p: Partition) -> dict[int, tuple[int | None, int]]:
    """Per producer id: the last offset of its last data batch (None after an epoch bump) and its
    epoch (Kafka's lastRecordsOfActiveProducers): the batches the cleaner must keep."""
    return {pid: (e.batches[-1].last_offset if e.batches else None, e.epoch)
            for pid, e in state_of(cluster, p).entries.items()}


def forget_aborted(cluster: ClusterState, p: Partition, below: int) -> None:
    """After the cleaner rewrote the log below `below`: forget the aborted transactions whose
    abort marker was there, as the transaction index of the cleaned segments is gone."""
    s = state_of(cluster, p)
    s.aborted = [a for a in s.aborted if a.last_offset >= below]

