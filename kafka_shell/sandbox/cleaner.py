"""Log retention and log compaction in the sandbox, after Kafka's UnifiedLog.deleteOldSegments,
LogCleanerManager and LogCleaner.

Both work on whole segments (`log.segment_list`; the active segment is the last). Retention
deletes the oldest segments of a topic whose cleanup.policy has `delete`: those older than
retention.ms (by their largest timestamp) and those retention.bytes has no room for; never past
the high watermark; when every segment goes, a new empty one starts at the log end. The log
start offset moves to the first segment kept. Delete-only topics are checked every
`log.retention.check.interval.ms`, compacted ones after each pass of the cleaner, as in Kafka.

The cleaner wakes every `log.cleaner.backoff.ms` and cleans the compacted log with the highest
dirty ratio over `min.cleanable.dirty.ratio` (or whose oldest dirty segment waited longer than
`max.compaction.lag.ms`), then the next, until none is left. It cleans the closed segments below
the first uncleanable offset (the active segment, the last stable offset, a segment newer than
`min.compaction.lag.ms`): for each key only its last record stays; a tombstone stays until its
delete horizon (`delete.retention.ms` after the cleaning that first kept it, written into its
batch as KIP-534 does) has passed; records of aborted transactions go, and a transaction's
marker once no record of it is left (after the delete horizon too); a producer's last batch
stays, emptied, to keep its sequence and epoch. Segments are merged in groups of up to
segment.bytes, each group into one. The cleaner's checkpoint (the first dirty offset) is
`Partition.cleaner_checkpoint`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_shell.sandbox import configs, log, producer_state
from kafka_shell.sandbox.log import Segment
from kafka_shell.sandbox.model import Batch, ClusterState, Partition, now_ms

logger = logging.getLogger("kafka_shell.sandbox")

# Broker settings with Kafka's defaults (static ones: `Sandbox(configs=...)`).
DEFAULTS = {"log.cleaner.backoff.ms": 15000, "log.retention.check.interval.ms": 300000}
MAX_OFFSET_SPAN = (1 << 31) - 1   # a segment's offsets must fit in its index's 32-bit deltas


def setting(cluster: ClusterState, key: str) -> int:
    return configs.broker_int(cluster, key, DEFAULTS)


def _topic_long(cluster: ClusterState, topic: str, key: str) -> int:
    return int(configs.topic_value(cluster, topic, key) or 0)


def start(cluster: ClusterState) -> None:
    """At the sandbox's start (loop thread): the cleaner and the retention check run from now on."""
    spawn = cluster.runtime.spawn
    if spawn is None:
        return

    async def cleaner() -> None:
        while True:
            if configs.broker_value(cluster, None, "log.cleaner.enable") != "false":
                while clean_filthiest(cluster, now_ms()):
                    await asyncio.sleep(0)   # let requests in between two logs
            await asyncio.sleep(setting(cluster, "log.cleaner.backoff.ms") / 1000)

    async def retention() -> None:
        while True:
            await asyncio.sleep(setting(cluster, "log.retention.check.interval.ms") / 1000)
            now = now_ms()
            for p in _partitions(cluster, compact=False):
                delete_old_segments(cluster, p, now)

    spawn(cleaner())
    spawn(retention())


def _partitions(cluster: ClusterState, compact: bool) -> list[Partition]:
    """The online partitions of compacted (or of not compacted) topics."""
    return [p for t in cluster.topics.values() if log.compacted(cluster, t.name) == compact
            for p in t.partitions if p.leader >= 0]


# -- retention ----------------------------------------------------------------------------------


def delete_old_segments(cluster: ClusterState, p: Partition, now: int) -> int:
    """Kafka's UnifiedLog.deleteOldSegments: segments below the log start offset always; with a
    delete policy, those over retention.bytes and those older than retention.ms. Returns how
    many went."""
    deleted = _delete_segments(cluster, p, lambda seg, size: seg.end <= p.log_start_offset)
    if "delete" not in configs.split_list(configs.topic_value(cluster, p.topic, "cleanup.policy")):
        return deleted
    retention_bytes = _topic_long(cluster, p.topic, "retention.bytes")
    total = p.size_bytes()
    if retention_bytes >= 0 and total >= retention_bytes:
        excess = [total - retention_bytes]

        def over_size(seg: Segment, size: int) -> bool:
            if excess[0] - size < 0:
                return False
            excess[0] -= size
            return True
        deleted += _delete_segments(cluster, p, over_size)
    retention_ms = _topic_long(cluster, p.topic, "retention.ms")
    if retention_ms >= 0:
        deleted += _delete_segments(cluster, p, lambda seg, size: now - seg.largest_timestamp(p) > retention_ms)
    return deleted


def _delete_segments(cluster: ClusterState, p: Partition, deletable: Callable[[Segment, int], bool]) -> int:
    """Delete the oldest segments while `deletable(segment, its size)` holds, never a segment
    reaching past the high watermark, never an empty active segment (UnifiedLog.deletableSegments)."""
    segs = log.segment_list(p)
    doomed = []
    for seg in segs:
        size = seg.size(p)
        last_and_empty = seg is segs[-1] and size == 0
        if p.high_watermark >= seg.end and deletable(seg, size) and not last_and_empty:
            doomed.append(seg)
        else:
            break
    if not doomed:
        return 0
    log.delete_segments(cluster, p, len(doomed))
    return len(doomed)


# -- choosing the log to clean (LogCleanerManager) ------------------------------------------------


@dataclass
class LogToClean:
    p: Partition
    first_dirty: int
    first_uncleanable: int      # the base of the first segment not cleaned
    clean_bytes: int
    cleanable_bytes: int
    overdue: bool               # a dirty segment waited longer than max.compaction.lag.ms

    @property
    def ratio(self) -> float:
        return self.cleanable_bytes / (self.clean_bytes + self.cleanable_bytes)


def to_clean(cluster: ClusterState, p: Partition, now: int) -> LogToClean | None:
    """What of a compacted log could be cleaned now (LogCleanerManager.cleanableOffsets and
    LogToClean), or None when its log is empty."""
    segs = log.segment_list(p)
    dirty = p.cleaner_checkpoint
    if not p.log_start_offset <= dirty <= log.log_end(p):   # an invalid checkpoint: clean it all
        dirty = p.log_start_offset
    closed_dirty = [s for s in segs[:-1] if s.end > dirty]   # UnifiedLog.nonActiveLogSegmentsFrom
    limits = [producer_state.last_stable_offset(cluster, p), segs[-1].base]
    min_lag = max(_topic_long(cluster, p.topic, "min.compaction.lag.ms"), 0)
    if min_lag > 0:
        limits += [s.base for s in closed_dirty if s.largest_timestamp(p) > now - min_lag][:1]
    uncleanable = max(dirty, min(limits))
    first_uncleanable = next((s.base for s in segs[:-1] if s.end > uncleanable), segs[-1].base)
    start = min(dirty, first_uncleanable)
    clean_bytes = sum(s.size(p) for s in segs if s.base < dirty)
    cleanable_bytes = sum(s.size(p) for s in segs if s.end > start and s.base < first_uncleanable)
    if clean_bytes + cleanable_bytes == 0:
        return None
    max_lag = max(_topic_long(cluster, p.topic, "max.compaction.lag.ms"), 0)
    firsts = [ts for s in closed_dirty if (ts := s.first_timestamp(p)) is not None and ts > 0]
    overdue = bool(firsts) and min(firsts) < now - max_lag
    return LogToClean(p, dirty, first_uncleanable, clean_bytes, cleanable_bytes, overdue)


def filthiest(cluster: ClusterState, now: int) -> LogToClean | None:
    """The compacted log to clean next: the highest dirty ratio among those over their
    min.cleanable.dirty.ratio or overdue (LogCleanerManager.grabFilthiestCompactedLog)."""
    best: LogToClean | None = None
    for p in _partitions(cluster, compact=True):
        ltc = to_clean(cluster, p, now)
        if ltc is None:
            continue
        threshold = float(configs.topic_value(cluster, p.topic, "min.cleanable.dirty.ratio") or 0.5)
        if (ltc.overdue and ltc.cleanable_bytes > 0) or ltc.ratio > threshold:
            if best is None or ltc.ratio > best.ratio:
                best = ltc
    return best


def clean_filthiest(cluster: ClusterState, now: int) -> bool:
    """One pass of Kafka's cleaner thread: clean the filthiest log, then apply retention to the
    compacted logs. Returns whether a log was cleaned."""
    ltc = filthiest(cluster, now)
    if ltc is not None:
        clean(cluster, ltc, now)
    for p in _partitions(cluster, compact=True):
        delete_old_segments(cluster, p, now)
    return ltc is not None


# -- cleaning (LogCleaner's Cleaner) --------------------------------------------------------------


@dataclass
class _TxnState:
    """Kafka's CleanedTransactionMetadata: the cleaner's view of transactions as it reads the log,
    to tell records of aborted transactions and the markers it may drop."""
    committed: set[int] = field(default_factory=set)   # producer ids with a committed transaction open here
    aborted: dict[int, list] = field(default_factory=dict)   # producer id -> [AbortedTxn, last batch read]
    pending: list = field(default_factory=list)   # aborted transactions not reached yet, by first offset
    _order: itertools.count = field(default_factory=itertools.count)

    def add(self, txns: list[producer_state.AbortedTxn]) -> None:
        for a in txns:
            heapq.heappush(self.pending, (a.first_offset, next(self._order), a))

    def _reach(self, offset: int) -> None:
        while self.pending and self.pending[0][0] <= offset:
            a = heapq.heappop(self.pending)[2]
            self.aborted.setdefault(a.producer_id, [a, None])

    def on_control(self, h: log.Header, data: bytes) -> bool:
        """A marker read; whether it may go (no record of its transaction left)."""
        self._reach(h.last_offset)
        marker = producer_state.read_marker(data)
        if marker is None:
            return True   # an empty control batch: cleaned before
        if marker[0] == producer_state.ABORT:
            entry = self.aborted.pop(h.producer_id, None)
            return entry is None or entry[1] is None
        if marker[0] == producer_state.COMMIT:
            had = h.producer_id in self.committed
            self.committed.discard(h.producer_id)
            return not had
        return False

    def on_batch(self, h: log.Header) -> bool:
        """A data batch read; whether it belongs to an aborted transaction."""
        self._reach(h.last_offset)
        if not h.transactional:
            return False
        entry = self.aborted.get(h.producer_id)
        if entry is not None:
            entry[1] = h.last_offset
            return True
        self.committed.add(h.producer_id)
        return False


class _Parsed(dict):
    """The records of each batch one cleaning reads, parsed once (the offset map and the filter
    both read the dirty batches)."""

    def of(self, b: Batch) -> list[log.Record]:
        found = self.get(id(b))
        if found is None:
            found = self[id(b)] = log.records(b.data)
        return found


def _offset_map(cluster: ClusterState, p: Partition, segs: list[Segment], start: int, end: int,
                parsed: _Parsed) -> tuple[dict[bytes, int], int]:
    """Each key's last offset in [start, end), records of aborted transactions left out, and the
    last offset the map covers (Cleaner.buildOffsetMap)."""
    txns = _TxnState()
    txns.add(producer_state.aborted_between(cluster, p, start, end))
    keys: dict[bytes, int] = {}
    latest = -1
    for seg in segs:
        if seg.end <= start or seg.base >= end:
            continue
        for b in seg.batches(p):
            if b.last_offset < start:
                continue
            h = log.header(b.data)
            if h.control:
                txns.on_control(h, b.data)
            elif not txns.on_batch(h):
                for r in parsed.of(b):
                    if r.key is not None and h.base_offset + r.offset_delta >= start:
                        keys[r.key] = h.base_offset + r.offset_delta
            latest = h.last_offset
        latest = min(seg.end, end) - 1
    return keys, latest


def _groups(p: Partition, segs: list[Segment], max_size: int, first_uncleanable: int) -> list[list[Segment]]:
    """Segments merged into one each, up to segment.bytes together (Cleaner.groupSegmentsBySize)."""
    sizes = [s.size(p) for s in segs]
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segs):
        group, total = [segs[i]], sizes[i]
        i += 1
        while i < len(segs) and total + sizes[i] <= max_size:
            last_offset = segs[i + 1].base - 1 if i + 1 < len(segs) else first_uncleanable - 1
            if sizes[i] and last_offset - group[-1].base > MAX_OFFSET_SPAN:
                break
            group.append(segs[i])
            total += sizes[i]
            i += 1
        groups.append(group)
    return groups


@dataclass
class _Filter:
    """The cleaner's record filter for one cleaning (Cleaner.cleanInto's RecordFilter)."""
    keys: dict[bytes, int]
    latest: int
    now: int
    delete_retention_ms: int
    upper: int                                  # the round's first uncleanable offset
    last_records: dict[int, tuple[int | None, int]]
    txns: _TxnState
    parsed: _Parsed

    def batch(self, b: Batch) -> Batch | None:
        """What of the batch stays: itself, a rewrite with fewer records (and a delete horizon),
        its empty header, or nothing."""
        h = log.header(b.data)
        discardable = self.txns.on_control(h, b.data) if h.control else self.txns.on_batch(h)
        drop_records = discardable and (not h.control or (h.delete_horizon is not None and h.delete_horizon <= self.now))
        keep_empty = (h.has_producer_id and self._last_of_producer(h)) or h.last_offset + 1 == self.upper
        if drop_records and not keep_empty:
            return None
        records = self.parsed.of(b)
        kept = [] if drop_records else [r for r in records if h.control or self._retain(h, r)]
        if not kept:
            return Batch(b.base_offset, b.last_offset, b.max_timestamp, log.empty_batch(b.data)) if keep_empty else None
        needs_horizon = h.delete_horizon is None and (any(r.value is None for r in kept) or (discardable and h.control))
        if len(kept) == len(records) and not needs_horizon:
            return b
        horizon = self.now + self.delete_retention_ms if needs_horizon else h.delete_horizon
        data = log.rebuild(b.data, kept, horizon)
        return Batch(b.base_offset, b.last_offset, log.header(data).max_timestamp, data)

    def _last_of_producer(self, h: log.Header) -> bool:
        """The producer's last data batch, or its last marker when that bumped its epoch."""
        last = self.last_records.get(h.producer_id)
        if last is None:
            return False
        last_data, epoch = last
        return h.last_offset == last_data if last_data is not None else h.control and h.producer_epoch == epoch

    def _retain(self, h: log.Header, r: log.Record) -> bool:
        offset = h.base_offset + r.offset_delta
        if offset > self.latest:
            return True
        if r.key is None:
            return False
        horizon = h.delete_horizon
        return offset >= self.keys.get(r.key, -1) and (r.value is not None or horizon is None or self.now < horizon)


def clean(cluster: ClusterState, ltc: LogToClean, now: int) -> None:
    """Clean the log below `ltc.first_uncleanable` (Cleaner.doClean) and move its checkpoint there."""
    p = ltc.p
    segs = log.segment_list(p)
    parsed = _Parsed()
    keys, latest = _offset_map(cluster, p, segs, ltc.first_dirty, ltc.first_uncleanable, parsed)
    end = latest + 1
    if end <= 0:
        return
    txns = _TxnState()
    cleaner = _Filter(keys, latest, now, _topic_long(cluster, p.topic, "delete.retention.ms"), ltc.first_uncleanable,
                      producer_state.last_records(cluster, p), txns, parsed)
    below = [s for s in segs if s.base < end]
    groups = _groups(p, below, _topic_long(cluster, p.topic, "segment.bytes"), ltc.first_uncleanable)
    cleaned: list[Batch] = []
    for group in groups:
        for seg in group:
            txns.add(producer_state.aborted_between(cluster, p, seg.base, seg.end))
            cleaned += [kept for b in seg.batches(p) if (kept := cleaner.batch(b)) is not None]
    before = sum(s.size(p) for s in below)
    log.replace_cleaned(cluster, p, below[0].first, below[-1].stop, cleaned,
                        [g[0].base for g in groups] + [s.base for s in segs if s.base >= end], end)
    # Kafka 4.4's cleaned segments keep no transaction index (checked on the real broker): a
    # read_committed fetch is told of no aborted transaction whose marker was cleaned.
    producer_state.forget_aborted(cluster, p, end)
    logger.debug("cleaned %s-%d below offset %d: %d bytes to %d", p.topic, p.index, end, before,
                 sum(len(b.data) for b in cleaned))
