"""Log compaction and retention scenarios, sent alike to any cluster (the sandbox or real Apache
Kafka) as raw requests, with what the log holds afterwards reduced to what must agree: batches
(offsets, flags, codec, whether a delete horizon is set, producers relative to the topic),
records (offset, key, value, timestamp relative to the scenario's start), the log start offset
and the aborted transactions a read_committed fetch is told of.

A scenario is a topic's configs and a list of steps; each step writes (its answers must agree
too) and says what the cleaner must have done afterwards (`done`), so a comparison waits for the
cleaning rather than for a time. tests/test_compaction_vs_kafka.py runs them on both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import log, producer_state
from tests.txn_scenarios import READ_COMMITTED, READ_UNCOMMITTED, Cluster

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS


def now_ms() -> int:
    return int(time.time() * 1000)


class Topic(Cluster):
    """A fresh one-partition topic with `configs`; `t0` is the scenario's time origin."""

    def __init__(self, bootstrap: str, **configs: str):
        super().__init__(bootstrap, **configs)
        self.t0 = now_ms()

    def put(self, entries: list[tuple[bytes | None, bytes | None]], at_ms: int, codec: int = 0, version: int = 11,
            transactional_id: str | None = None, **producer) -> tuple:
        """Produce one batch whose records are stamped t0 + at_ms: (error, offset)."""
        return self.produce(bytes(log.build_batch(entries, timestamp=self.t0 + at_ms, codec=codec, **producer)),
                            version=version, transactional_id=transactional_id)

    def put_raw(self, batch: bytes, version: int = 11, transactional_id: str | None = None) -> dict:
        """The whole partition answer of a one-batch produce."""
        answer = self.leader.request(ApiKey.PRODUCE, {"transactional_id": transactional_id, "acks": -1, "timeout": 10000,
                                                      "topic_data": [{"name": self.topic, "partition_data": [
                                                          {"index": 0, "records": batch}]}]}, version)
        return answer["responses"][0]["partition_responses"][0]

    def earliest(self) -> int:
        answer = self.leader.request(ApiKey.LIST_OFFSETS, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": self.topic, "partitions": [{"partition_index": 0, "timestamp": -2, "current_leader_epoch": -1}]}]}, 9)
        return answer["topics"][0]["partitions"][0]["offset"]

    def read_all(self, isolation: int) -> tuple[bytes, dict]:
        """Every batch from the log start to the high watermark, and the last fetch's partition answer."""
        offset, data = self.earliest(), b""
        while True:
            answer = self.leader.request(ApiKey.FETCH, {
                "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": isolation,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": self.topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                                 "fetch_offset": offset, "log_start_offset": -1,
                                                                 "partition_max_bytes": 1 << 20}]}]}, 12)
            p = answer["responses"][0]["partitions"][0]
            headers = log.headers_in(p["records"])
            data += p["records"]
            if not headers or headers[-1].last_offset + 1 >= p["high_watermark"]:
                return data, p
            offset = headers[-1].last_offset + 1

    def probe(self) -> dict:
        """The log as it must agree between clusters."""
        data, p = self.read_all(READ_UNCOMMITTED)
        _, committed = self.read_all(READ_COMMITTED)
        producers: dict[int, int] = {}
        batches = []
        pos = 0
        while pos + log.HEADER_SIZE <= len(data):
            size = log.LENGTH_PREFIX + int.from_bytes(data[pos + 8:pos + 12], "big")
            raw = data[pos:pos + size]
            pos += size
            h = log.header(raw)
            producer = producers.setdefault(h.producer_id, len(producers)) if h.has_producer_id else None
            if h.control:
                marker = producer_state.read_marker(raw)
                content: object = None if marker is None else "commit" if marker[0] == producer_state.COMMIT else "abort"
            else:
                content = [(h.base_offset + r.offset_delta, r.key, r.value, log.record_timestamp(h, r) - self.t0)
                           for r in log.records(raw)]
            batches.append({"offsets": (h.base_offset, h.last_offset), "count": h.count, "codec": h.attributes & log.CODEC_MASK,
                            "transactional": h.transactional, "control": h.control, "producer": producer,
                            "sequence": h.base_sequence, "horizon": h.delete_horizon is not None, "content": content})
        return {"log start": self.earliest(), "high watermark": p["high_watermark"], "batches": batches,
                "aborted": sorted(a["first_offset"] for a in committed["aborted_transactions"] or [])}

    def horizon(self) -> int:
        """The latest delete horizon the cleaner wrote into the log (0 for none)."""
        data, _ = self.read_all(READ_UNCOMMITTED)
        return max((h.delete_horizon or 0 for h in log.headers_in(data)), default=0)

    def wait_past_horizon(self) -> None:
        """Sleep until every delete horizon in the log is in the past (a known time, not a guess)."""
        time.sleep(max(self.horizon() - now_ms() + 100, 0) / 1000)


def records(probe: dict) -> list[tuple]:
    """(offset, key, value) of every data record of a probe."""
    return [r[:3] for b in probe["batches"] if not b["control"] for r in b["content"]]


@dataclass
class Step:
    act: Callable[[Topic], object]
    done: Callable[[dict], bool]


@dataclass
class Scenario:
    configs: dict[str, str]
    steps: list[Step] = field(default_factory=list)


def _each(t: Topic, entries: list[tuple[bytes | None, bytes | None, int]], **producer) -> list:
    """One batch per (key, value, at_ms)."""
    return [t.put([(k, v)], at, **producer)[0] for k, v, at in entries]


def _k(i: int) -> bytes:
    return b"k%d" % i


# -- the scenarios ------------------------------------------------------------------------------


def keys() -> Scenario:
    """40 records over 10 keys, 100 ms apart: segment.ms=500 closes a segment every 6 records;
    the closed ones keep each key's last record (14 records stay: 10 keys and the active
    segment's 4). Multi-record and compressed batches are rewritten, keeping their codec."""
    return Scenario({"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01"}, [
        Step(lambda t: _each(t, [(_k(i % 10), b"v%d" % i, i * 100) for i in range(40)]),
             lambda p: len(records(p)) == 14),
        Step(lambda t: [t.put([(_k(i % 3), b"gz%d" % i), (_k(7), b"x%d" % i)], 5000 + i * 300, codec=codec)[0]
                        for i, codec in enumerate([1, 2, 3, 4, 0, 1])],
             lambda p: any(b["codec"] and b["count"] == 1 for b in p["batches"])),
    ])


def tombstones() -> Scenario:
    """A tombstone survives the cleaning that finds it (which writes its delete horizon,
    delete.retention.ms later) and goes at the first cleaning after that."""
    return Scenario({"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01",
                     "delete.retention.ms": "1500"}, [
        Step(lambda t: _each(t, [(_k(0), b"a", 0), (_k(1), b"b", 100), (_k(2), b"c", 200), (_k(1), None, 300),
                                 (_k(2), None, 400), (_k(3), b"d", 900)]),
             lambda p: [r[0] for r in records(p)] == [0, 3, 4, 5] and sum(b["horizon"] for b in p["batches"]) == 2),
        Step(lambda t: (t.wait_past_horizon(), _each(t, [(_k(4), b"e", 2000), (_k(5), b"f", 3000)]))[1],
             lambda p: [r[0] for r in records(p)] == [0, 5, 6, 7]),
    ])


def compaction_lag() -> Scenario:
    """min.compaction.lag.ms keeps the segments with recent records dirty: only the old
    segment is cleaned."""
    old = -3 * HOUR_MS
    return Scenario({"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01",
                     "min.compaction.lag.ms": str(HOUR_MS)}, [
        Step(lambda t: _each(t, [(_k(i % 4), b"old%d" % i, old + i * 10) for i in range(12)]
                             + [(_k(i % 4), b"new%d" % i, i * 10) for i in range(8)] + [(_k(9), b"last", 5000)]),
             lambda p: len(records(p)) == 4 + 8 + 1),
    ])


def max_compaction_lag() -> Scenario:
    """min.cleanable.dirty.ratio=1 never lets the ratio trigger a cleaning, but records older
    than max.compaction.lag.ms are cleaned anyway; that lag also rolls the segments."""
    old = -60_000
    return Scenario({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1", "max.compaction.lag.ms": "1000"}, [
        Step(lambda t: _each(t, [(_k(i % 3), b"v%d" % i, old + i * 300) for i in range(12)]),
             lambda p: len(records(p)) < 12),
    ])


def transactions() -> Scenario:
    """A committed transaction, an aborted one over the same keys and later plain records. The
    aborted records go at once; a marker stays while a batch of its transaction is left (the
    producer's last marker, emptied, for good), then gets a delete horizon, and goes after it."""
    def act(t: Topic) -> list:
        tid = "compact-" + t.topic
        init = t.init_producer_id(tid)
        pid, epoch = init["producer_id"], init["producer_epoch"]
        out = [init["error_code"]]
        txn = {"producer_id": pid, "transactional": True, "version": 12, "transactional_id": tid}
        out.append(t.put([(_k(0), b"a"), (_k(1), b"b")], 0, producer_epoch=epoch, base_sequence=0, **txn)[0])
        out.append(t.end_and_settle(tid, pid, epoch, True, 5)["error_code"])
        out.append(t.put([(_k(0), b"x"), (_k(2), b"y")], 100, producer_epoch=epoch + 1, base_sequence=0, **txn)[0])
        out.append(t.end_and_settle(tid, pid, epoch + 1, False, 5)["error_code"])
        return out + _each(t, [(_k(1), b"c", 200), (_k(3), b"d", 2 * MINUTE_MS)])

    def markers(p: dict) -> dict[str, tuple]:
        return {b["content"] or "emptied": (b["count"], b["horizon"]) for b in p["batches"] if b["control"]}

    def then(step: int, key: bytes) -> Callable[[Topic], list]:
        """Two records that each roll a segment (step minutes 4n and 4n + 2), once every delete
        horizon has passed: the cleaner makes one more pass."""
        def act(t: Topic) -> list:
            t.wait_past_horizon()
            return _each(t, [(key, b"z", 4 * step * MINUTE_MS), (_k(9), b"roll", (4 * step + 2) * MINUTE_MS)])
        return act
    # segment.ms well above the markers' own (broker) timestamps: only the records roll.
    return Scenario({"cleanup.policy": "compact", "segment.ms": "60000", "min.cleanable.dirty.ratio": "0.01",
                     "delete.retention.ms": "1500"}, [
        Step(act, lambda p: records(p) == [(0, b"k0", b"a"), (6, b"k1", b"c"), (7, b"k3", b"d")] and p["aborted"] == []),
        Step(then(1, _k(0)), lambda p: markers(p) == {"commit": (1, False), "abort": (1, True)}),  # the commit's batch goes
        Step(then(2, _k(5)), lambda p: markers(p) == {"commit": (1, True), "emptied": (0, False)}),
        Step(then(3, _k(6)), lambda p: markers(p) == {"emptied": (0, False)}),
    ])


def idempotent_producer() -> Scenario:
    """A producer's last batch stays (emptied) when its records are superseded, so its next
    sequence number is still accepted."""
    def first(t: Topic) -> list:
        pid = t.init_producer_id(None, version=4)["producer_id"]
        t.producer_id = pid   # type: ignore[attr-defined]
        return [t.put([(_k(1), b"a")], 0, producer_id=pid, producer_epoch=0, base_sequence=0)[0],
                t.put([(_k(2), b"b")], 100, producer_id=pid, producer_epoch=0, base_sequence=1)[0],
                *_each(t, [(_k(1), b"c", 200), (_k(2), b"d", 300), (_k(3), b"e", 1000)])]

    def then(t: Topic) -> list:
        pid = t.producer_id  # type: ignore[attr-defined]
        return [t.put([(_k(4), b"f")], 1100, producer_id=pid, producer_epoch=0, base_sequence=2),
                t.put([(_k(4), b"g")], 1200, producer_id=pid, producer_epoch=0, base_sequence=4)[0]]
    return Scenario({"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01"}, [
        Step(first, lambda p: [b["count"] for b in p["batches"]] == [0, 1, 1, 1]),
        Step(then, lambda p: records(p)[-1][2] == b"f"),
    ])


def retention() -> Scenario:
    """cleanup.policy=compact,delete: segments older than retention.ms go (the log start
    offset moves to the first segment kept), and what is left is compacted."""
    old = -2 * HOUR_MS
    return Scenario({"cleanup.policy": "compact,delete", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01",
                     "retention.ms": str(HOUR_MS)}, [
        Step(lambda t: _each(t, [(_k(i % 3), b"old%d" % i, old + i * 10) for i in range(6)] + [(_k(0), b"new0", 0)]),
             lambda p: p["log start"] == 6),
        Step(lambda t: _each(t, [(_k(i % 3), b"new%d" % i, i * 10) for i in range(1, 6)] + [(_k(9), b"last", 5000)]),
             lambda p: p["log start"] == 6 and len(records(p)) == 4),
    ])


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    f.__name__: f for f in (keys, tombstones, compaction_lag, max_compaction_lag, transactions, idempotent_producer,
                            retention)}


def keyless(bootstrap: str) -> dict:
    """Records without a key on a compacted topic: Kafka's whole answer, per version."""
    t = Topic(bootstrap, **{"cleanup.policy": "compact"})
    try:
        mixed = bytes(log.build_batch([(b"k", b"v"), (None, b"x"), (None, None)]))
        answers = {f"v{v}": t.put_raw(mixed, version=v) for v in (3, 7, 8, 11)}
        answers["keyed"] = t.put_raw(bytes(log.build_batch([(b"k", b"v")])))
        for a in answers.values():
            a.pop("current_leader", None)   # KIP-951's field: what a leader change would tell
            for e in a.get("record_errors") or []:
                e["batch_index_error_message"] = e["batch_index_error_message"].replace(t.topic, "TOPIC")
            if a.get("error_message"):
                a["error_message"] = a["error_message"].replace(t.topic, "TOPIC")
        return answers
    finally:
        t.close()
