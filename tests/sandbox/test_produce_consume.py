"""The data path (Produce, Fetch, ListOffsets, DeleteRecords) with real confluent-kafka clients,
and exact error codes through hand-made requests."""

from __future__ import annotations

import datetime
import io
import threading
import uuid

from confluent_kafka import (TIMESTAMP_LOG_APPEND_TIME, Consumer, ConsumerGroupTopicPartitions,
                             Producer, TopicPartition)
from confluent_kafka.admin import OffsetSpec
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.schema.errors import ErrorCode
from kio.static.primitive import TZAwareMicros

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import log
from tests.sandbox.test_groups import Wire, _consume

PRODUCE, FETCH = 0, 1


def _producer(sandbox, **extra) -> Producer:
    conf = {"bootstrap.servers": sandbox.bootstrap, "linger.ms": 5, "batch.num.messages": 2000,
            "log_level": 3}
    conf.update(extra)
    return Producer(conf)


def _consumer(sandbox, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "heartbeat.interval.ms": 100, "log_level": 3})


def _produce_all(producer: Producer, topic: str, count: int, partitions: int) -> None:
    failures: list = []
    for i in range(count):
        producer.produce(topic, value=b"%d:%d" % (i % partitions, i // partitions), partition=i % partitions,
                         on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(10) == 0
    assert failures == []


def _per_partition_in_order(messages: list, partitions: int) -> None:
    seen: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for m in messages:
        part, seq = m.value().split(b":")
        assert int(part) == m.partition()
        seen[m.partition()].append(int(seq))
        assert m.offset() == int(seq)  # offsets assigned densely from 0, in produce order
    for p, seqs in seen.items():
        assert seqs == list(range(len(seqs))), f"partition {p} out of order"


def test_10000_messages_consumed_in_order_committed_and_listed(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "bulk", 3, 2)
    _produce_all(_producer(sandbox), "bulk", 10_000, 3)
    c = _consumer(sandbox, "bulk-readers")
    c.subscribe(["bulk"])
    messages = _consume(c, 10_000)
    _per_partition_in_order(messages, 3)
    c.commit(asynchronous=False)
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("bulk-readers")])
    committed = {tp.partition: tp.offset for tp in listed["bulk-readers"].result().topic_partitions}
    assert committed == {0: 3334, 1: 3333, 2: 3333}
    c.close()


def test_gzip_batches_are_stored_compressed_and_read_back(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "zipped", 2, 2)
    _produce_all(_producer(sandbox, **{"compression.type": "gzip"}), "zipped", 2000, 2)
    batches = sandbox.cluster.topics["zipped"].partitions[0].batches
    assert batches and all(log.codec_of(b.data) == log.GZIP for b in batches)
    c = _consumer(sandbox, "zip-readers")
    c.subscribe(["zipped"])
    _per_partition_in_order(_consume(c, 2000), 2)
    c.close()


def test_topic_compression_and_log_append_time_are_applied(sandbox):
    before = datetime.datetime.now().timestamp() * 1000
    sandbox.call(lambda: sandbox_admin.create_topic(
        sandbox.cluster, "stamped", 1, 1,
        configs={"message.timestamp.type": "LogAppendTime", "compression.type": "gzip"}))
    p = _producer(sandbox)
    p.produce("stamped", value=b"x", timestamp=1000)
    assert p.flush(10) == 0
    assert log.codec_of(sandbox.cluster.topics["stamped"].partitions[0].batches[0].data) == log.GZIP
    c = _consumer(sandbox, "stamp-readers")
    c.subscribe(["stamped"])
    (m,) = _consume(c, 1)
    kind, ts = m.timestamp()
    assert kind == TIMESTAMP_LOG_APPEND_TIME and ts >= before
    c.close()


def test_lag_after_consuming_part_of_a_partition(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "lagging", 1, 1)
    _produce_all(_producer(sandbox), "lagging", 1000, 1)
    c = _consumer(sandbox, "laggards")
    c.assign([TopicPartition("lagging", 0, 0)])
    taken = _consume(c, 400)
    c.commit(offsets=[TopicPartition("lagging", 0, taken[-1].offset() + 1)], asynchronous=False)
    c.close()
    committed = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("laggards")])["laggards"].result().topic_partitions[0].offset
    end = admin.list_offsets({TopicPartition("lagging", 0): OffsetSpec.latest()})
    log_end = next(iter(end.values())).result().offset
    assert (committed, log_end, log_end - committed) == (400, 1000, 600)


def test_list_offsets_earliest_latest_max_timestamp_and_by_time(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "timed", 1, 2)
    p = _producer(sandbox)
    for i, ts in enumerate([1000, 5000, 3000, 7000, 2000]):
        p.produce("timed", value=b"%d" % i, timestamp=ts)
        p.flush(10)  # one batch per record, so lookups go inside and across batches
    tp = TopicPartition("timed", 0)

    def lookup(spec):
        return next(iter(admin.list_offsets({tp: spec}).values())).result()

    assert lookup(OffsetSpec.earliest()).offset == 0
    assert lookup(OffsetSpec.latest()).offset == 5
    top = lookup(OffsetSpec.max_timestamp())
    assert (top.offset, top.timestamp) == (3, 7000)
    at = lookup(OffsetSpec.for_timestamp(2500))
    assert (at.offset, at.timestamp) == (1, 5000)
    assert lookup(OffsetSpec.for_timestamp(9999)).offset == -1


def test_delete_records_moves_the_log_start(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "trimmed", 1, 2)
    _produce_all(_producer(sandbox), "trimmed", 100, 1)
    tp = TopicPartition("trimmed", 0, 40)
    result = admin.delete_records([tp])[tp].result()
    assert result.low_watermark == 40
    earliest = admin.list_offsets({TopicPartition("trimmed", 0): OffsetSpec.earliest()})
    assert next(iter(earliest.values())).result().offset == 40
    too_far = TopicPartition("trimmed", 0, 101)
    try:
        admin.delete_records([too_far])[too_far].result()
        raise AssertionError("deleting past the high watermark must fail")
    except Exception as exc:  # confluent-kafka raises KafkaException carrying the Kafka error
        assert "OFFSET_OUT_OF_RANGE" in str(exc)
    c = _consumer(sandbox, "after-trim")
    c.subscribe(["trimmed"])
    assert [m.offset() for m in _consume(c, 60)] == list(range(40, 100))
    c.close()


# -- exact error codes on the wire ----------------------------------------------------------------


def _batch(*values: bytes, codec: int = 0) -> bytes:
    ts = TZAwareMicros.parse(datetime.datetime.now(datetime.UTC))
    records = tuple(Record(attributes=0, timestamp=ts, offset=i, key=None, value=v, headers=())
                    for i, v in enumerate(values))
    buf = io.BytesIO()
    write_new_batch(buf, NewRecordBatch(producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        records=records, attributes=codec))
    return buf.getvalue()


def _produce_req(topic: str, records: bytes, acks: int = 1, partition: int = 0) -> dict:
    return {"acks": acks, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def _produce_code(w: Wire, request: dict) -> int:
    return w.call(PRODUCE, 9, request)["responses"][0]["partition_responses"][0]["error_code"]


def test_produce_errors_and_acks_zero(sandbox):
    sandbox.call(lambda: sandbox_admin.create_topic(
        sandbox.cluster, "strict", 1, 2, [[1, 2]], configs={"min.insync.replicas": "3"}))
    leader, follower = Wire(sandbox, 1), Wire(sandbox, 2)
    assert _produce_code(follower, _produce_req("strict", _batch(b"a"))) == ErrorCode.not_leader_or_follower
    assert _produce_code(leader, _produce_req("nope", _batch(b"a"))) == ErrorCode.unknown_topic_or_partition
    assert _produce_code(leader, _produce_req("strict", _batch(b"a"), acks=-1)) == ErrorCode.not_enough_replicas
    # Records that do not decompress (lz4 claimed, none sent): Kafka's UNKNOWN_SERVER_ERROR.
    assert _produce_code(leader, _produce_req("strict", _batch(b"a", codec=3))) == ErrorCode.unknown_server_error
    corrupt = bytearray(_batch(b"a"))
    corrupt[-1] ^= 0xFF
    assert _produce_code(leader, _produce_req("strict", bytes(corrupt))) == ErrorCode.corrupt_message
    ok = leader.call(PRODUCE, 9, _produce_req("strict", _batch(b"a", b"b")))
    assert ok["responses"][0]["partition_responses"][0]["base_offset"] == 0
    # acks=0 gets no answer: the next answer on the connection is the next request's.
    leader.send(PRODUCE, 9, _produce_req("strict", _batch(b"c"), acks=0))
    second = leader.call(PRODUCE, 9, _produce_req("strict", _batch(b"d")))
    assert second["responses"][0]["partition_responses"][0]["base_offset"] == 3
    leader.close()
    follower.close()


def _fetch_req(topic_id, offset: int, epoch: int = -1, max_wait: int = 0, min_bytes: int = 1) -> dict:
    return {"max_wait": max_wait, "min_bytes": min_bytes, "max_bytes": 1 << 20, "topics": [
        {"topic_id": topic_id, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                "current_leader_epoch": epoch,
                                                "partition_max_bytes": 1 << 20}]}]}


def test_fetch_errors_and_long_poll(sandbox):
    topic = sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "polled", 1, 2, [[1, 2]])
    leader = Wire(sandbox, 1)

    def part(response: dict) -> dict:
        return response["responses"][0]["partitions"][0]

    assert part(Wire(sandbox, 2).call(FETCH, 13, _fetch_req(topic.id, 0)))["error_code"] == \
        ErrorCode.not_leader_or_follower
    assert part(leader.call(FETCH, 13, _fetch_req(uuid.uuid4(), 0)))["error_code"] == ErrorCode.unknown_topic_id
    assert part(leader.call(FETCH, 13, _fetch_req(topic.id, 5)))["error_code"] == ErrorCode.offset_out_of_range
    epoch = sandbox.cluster.topics["polled"].partitions[0].leader_epoch
    assert part(leader.call(FETCH, 13, _fetch_req(topic.id, 0, epoch + 1)))["error_code"] == \
        ErrorCode.unknown_leader_epoch

    # A long poll (30 s max wait) answers as soon as a write arrives.
    answer: dict = {}
    poller = threading.Thread(target=lambda: answer.update(
        leader.call(FETCH, 13, _fetch_req(topic.id, 0, epoch, max_wait=30000))))
    poller.start()
    writer = Wire(sandbox, 1)
    assert _produce_code(writer, _produce_req("polled", _batch(b"hello"))) == 0
    poller.join(25)
    got = part(answer)
    assert got["error_code"] == 0 and got["high_watermark"] == 1 and b"hello" in got["records"]
    writer.close()
    leader.close()
