"""Log segments, retention and compaction in the sandbox (sandbox/log.py, sandbox/cleaner.py):
what tests/test_compaction_vs_kafka.py compares with Kafka, plus what needs the sandbox's own
settings (a short retention check), real clients (confluent-kafka reading a compacted topic with
every codec and headers, a keyless record refused), the last stable offset bounding the cleaner,
and --data-dir keeping a cleaned log."""

from __future__ import annotations

import shutil

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_shell.sandbox import cleaner, journal, persist
from kafka_shell.sandbox.model import now_ms
from kafka_shell.sandbox.server import Sandbox
from tests.compaction_scenarios import HOUR_MS, Topic, records
from tests.sandbox.test_transactions import wait_for
from tests.txn_scenarios import READ_COMMITTED

COMPACTED = {"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01"}
MIB = 1 << 20


def drain(s: Sandbox) -> None:
    def go() -> None:
        while cleaner.clean_filthiest(s.cluster, now_ms()):
            pass
    s.call(go)


def partition(s: Sandbox, topic: str):
    return s.cluster.topics[topic].partitions[0]


@pytest.fixture
def sandbox1():
    # Retention checked every 100 ms (Kafka: 5 minutes), the cleaner waking every 100 ms.
    with Sandbox(brokers=1, configs={"log.retention.check.interval.ms": "100", "log.cleaner.backoff.ms": "100"}) as s:
        yield s


def test_segments_roll_by_time_and_by_size(sandbox1):
    by_time = Topic(sandbox1.bootstrap, **{"segment.ms": "1000"})
    for at in (0, 500, 1000, 1001, 2500, 2600):
        by_time.put([(b"k", b"v")], at)
    # Rolled by the first batch whose timestamp is more than 1000 ms after the segment's first.
    assert partition(sandbox1, by_time.topic).segments == [0, 3, 4]
    by_size = Topic(sandbox1.bootstrap, **{"segment.bytes": str(MIB)})
    for i in range(5):
        by_size.put([(b"k", b"x" * 300_000)], i)
    assert partition(sandbox1, by_size.topic).segments == [0, 3]   # a fourth batch would pass 1 MiB
    by_time.close()
    by_size.close()


def test_retention_ms_deletes_whole_old_segments(sandbox1):
    """Delete policy: a closed segment older than retention.ms goes and the log start moves to
    the next; when even the active segment is old, a new empty one starts at the log end."""
    t = Topic(sandbox1.bootstrap, **{"retention.ms": str(HOUR_MS), "segment.ms": "500"})
    for i in range(3):
        t.put([(None, b"old%d" % i)], -2 * HOUR_MS + i)
    for i in range(3):
        t.put([(None, b"new%d" % i)], i)
    wait_for(lambda: t.earliest() == 3, "the old segment deleted")
    assert [r[0] for r in records(t.probe())] == [3, 4, 5]
    # Everything older than 1 s: the whole log goes, the next record is offset 6.
    expiring = Topic(sandbox1.bootstrap, **{"retention.ms": "1000"})
    for i in range(4):
        expiring.put([(None, b"v%d" % i)], -5000 + i)
    wait_for(lambda: expiring.earliest() == 4, "every segment deleted")
    assert partition(sandbox1, expiring.topic).segments == [4]
    assert expiring.put([(None, b"next")], 0) == (0, 4)
    t.close()
    expiring.close()


def test_retention_bytes_keeps_what_fits(sandbox1):
    """The oldest segments go while the log without them is still at least retention.bytes."""
    t = Topic(sandbox1.bootstrap, **{"segment.bytes": str(MIB), "retention.bytes": str(MIB + MIB // 2)})
    for i in range(10):
        t.put([(None, b"x" * 300_000)], i)
    # Segments [0-2] [3-5] [6-8] [9]: 2.7 MiB; dropping [0-2] leaves 1.8 MiB, dropping [3-5] too would leave 0.9.
    wait_for(lambda: t.earliest() == 3, "the first segment deleted")
    assert partition(sandbox1, t.topic).segments == [3, 6, 9]
    t.close()


def test_dirty_ratio_decides_when_to_clean(sandbox1):
    """min.cleanable.dirty.ratio=0.9: the first cleaning (all dirty) runs; a little new dirt
    after it does not reach 0.9, so the log is left as it is."""
    t = Topic(sandbox1.bootstrap, **{**COMPACTED, "min.cleanable.dirty.ratio": "0.9"})
    for i in range(20):
        t.put([(b"k%d" % (i % 2), b"v%d" % i)], i * 100)
    drain(sandbox1)
    first = records(t.probe())
    assert len(first) < 20 and partition(sandbox1, t.topic).cleaner_checkpoint > 0
    t.put([(b"k0", b"late")], 5000)
    t.put([(b"k1", b"roll")], 9000)
    drain(sandbox1)
    assert [r[0] for r in records(t.probe())] == [r[0] for r in first] + [20, 21]
    t.close()


def test_an_open_transaction_bounds_the_cleaner(sandbox1):
    """The cleaner stops at the last stable offset: the segment holding an open transaction's
    first batch, and all after it, stay dirty until the transaction ends."""
    t = Topic(sandbox1.bootstrap, **COMPACTED)
    tid = "bound-" + t.topic
    init = t.init_producer_id(tid)
    pid, epoch = init["producer_id"], init["producer_epoch"]
    for i in range(4):
        t.put([(b"k", b"before%d" % i)], i * 100)
    txn = {"producer_id": pid, "producer_epoch": epoch, "transactional": True, "version": 12, "transactional_id": tid}
    assert t.put([(b"t", b"open")], 1000, base_sequence=0, **txn) == (0, 4)
    for i in range(4):
        t.put([(b"k", b"after%d" % i)], 2000 + i * 1000)
    drain(sandbox1)
    assert [r[0] for r in records(t.probe())] == [3, 4, 5, 6, 7, 8]   # [0-3] cleaned, [4..] not
    t.end_and_settle(tid, pid, epoch, True, 5)
    t.put([(b"k", b"roll")], 10_000)
    drain(sandbox1)
    probe = t.probe()
    assert [r[0] for r in records(probe)] == [4, 8, 10]
    assert [b["offsets"][0] for b in probe["batches"] if b["control"]] == [9]   # its transaction's batch is left
    assert t.fetch(READ_COMMITTED)["records"][0] == (4, b"open")
    t.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_consumer_reads_a_cleaned_topic(sandbox1, codec):
    """confluent-kafka reads what the cleaner rewrote: each key's last value, with its headers
    and timestamp, in batches still compressed with the producer's codec."""
    t = Topic(sandbox1.bootstrap, **COMPACTED)
    producer = Producer({"bootstrap.servers": sandbox1.bootstrap, "compression.type": codec, "linger.ms": 1000,
                         "batch.num.messages": 3, "log_level": 0})
    for i in range(12):
        producer.produce(t.topic, key=b"k%d" % (i % 4), value=value(i), headers=[("n", b"%d" % i)],
                         timestamp=t.t0 + (i // 3) * 1000)
    producer.produce(t.topic, key=b"roll", value=b"r", timestamp=t.t0 + 9000)
    assert producer.flush(10) == 0
    drain(sandbox1)
    probe = t.probe()
    assert [r[:3] for r in records(probe)] == [(8, b"k0", value(8)), (9, b"k1", value(9)), (10, b"k2", value(10)),
                                              (11, b"k3", value(11)), (12, b"roll", b"r")]
    assert all(b["codec"] for b in probe["batches"][:-1])   # the last is one small record: sent as it is
    consumer = Consumer({"bootstrap.servers": sandbox1.bootstrap, "group.id": "g-" + t.topic, "log_level": 0,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(t.topic, 0, 0)])
    got = []
    while len(got) < 5:
        m = wait_for(lambda: consumer.poll(0.2), "a record")
        assert m.error() is None, m.error()
        got.append((m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1] - t.t0))
    consumer.close()
    assert got[:2] == [(8, b"k0", value(8), [("n", b"8")], 2000), (9, b"k1", value(9), [("n", b"9")], 3000)]
    t.close()


def value(i: int) -> bytes:
    return b"value %d " % i * 40   # worth compressing (librdkafka sends what does not shrink uncompressed)


def test_a_keyless_record_is_refused_on_a_compacted_topic(sandbox1):
    t = Topic(sandbox1.bootstrap, **{"cleanup.policy": "compact"})
    errors = []
    producer = Producer({"bootstrap.servers": sandbox1.bootstrap, "log_level": 0, "message.send.max.retries": 0})
    producer.produce(t.topic, value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(10) == 0   # its own batch: Kafka refuses a batch with any keyless record whole
    producer.produce(t.topic, key=b"k", value=b"keyed", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(10) == 0
    assert [e.code() if e else None for e in errors] == [KafkaError.INVALID_RECORD, None]
    t.close()


def test_data_dir_keeps_the_cleaned_log(tmp_path):
    configs = {"log.cleaner.backoff.ms": "100"}
    with Sandbox(brokers=1, data_dir=tmp_path, configs=configs) as s:
        t = Topic(s.bootstrap, **{**COMPACTED, "delete.retention.ms": "3600000"})
        name, t0 = t.topic, t.t0
        for i in range(10):
            t.put([(b"k%d" % (i % 3), None if i == 7 else b"v%d" % i)], i * 100)
        t.put([(b"roll", b"r")], 5000)
        drain(s)
        before = t.probe()
        p = partition(s, name)
        layout = (list(p.segments), p.cleaner_checkpoint)
        assert len(records(before)) < 10 and any(b["horizon"] for b in before["batches"])
        t.close()
    with Sandbox(brokers=1, data_dir=tmp_path, configs=configs) as s:
        t = Topic(s.bootstrap, topic=name)
        t.t0 = t0
        after = t.probe()
        p = partition(s, name)
        assert (list(p.segments), p.cleaner_checkpoint) == layout
        assert [shape(b) for b in after["batches"]] == [shape(b) for b in before["batches"]]
        assert records(after) == records(before)
        t.close()


def test_the_journal_keeps_a_cleaned_log(tmp_path):
    """A kill -9 after a cleaning: the journal brings back the cleaned batches, the segments and
    the cleaner's checkpoint (not the log as written)."""
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        t = Topic(s.bootstrap, **COMPACTED)
        for i in range(12):
            t.put([(b"k%d" % (i % 2), b"v%d" % i)], i * 200)
        drain(s)   # Sandbox.call returns once the journal has it
        assert len(records(t.probe())) < 12
        crashed = tmp_path / "crashed"
        shutil.copytree(data, crashed, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
        live = s.call(persist.state_of, s.cluster)
        t.close()
    recovered, _ = journal.recover(crashed)
    assert persist.state_of(recovered)["records"] == live["records"]


def shape(batch: dict) -> tuple:
    return batch["offsets"], batch["count"], batch["horizon"]
