"""Idempotent and transactional producers and the four codecs on the sandbox, with real clients:
confluent-kafka (librdkafka), kafka-python 3.x and aiokafka with their defaults, Kafka's own Java
producer (kafka-producer-perf-test, transactions v2); transaction timeouts, markers waiting for a
leader, offsets committed in transactions, and what --data-dir keeps across a restart.
(tests/test_transactions_vs_kafka.py compares raw answers with real Kafka.)"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import codecs, log, transactions
from kafka_shell.sandbox.server import Sandbox
from tests import txn_scenarios
from tests.conftest import BOTH_MODES
from tests.sandbox.wire import create, request
from tests.txn_scenarios import READ_COMMITTED, READ_UNCOMMITTED, batch


def wait_for(condition, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def new_topic(sandbox, partitions: int = 1, rf: int = 1, **configs: str) -> str:
    return new_topic_on(sandbox.bootstrap, partitions, rf, **configs)


def new_topic_on(bootstrap: str, partitions: int = 1, rf: int = 1, **configs: str) -> str:
    name = "t-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, partitions, rf, config=configs)])[name].result(10)
    return name


def read(bootstrap: str, topic: str, isolation: str, partitions: int = 1) -> list[bytes]:
    """Every record a consumer of `isolation` reads from the start of the topic."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "r-" + uuid.uuid4().hex,
                         "isolation.level": isolation, "enable.auto.commit": False, "log_level": 0})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while any(consumer.position([TopicPartition(topic, p)])[0].offset < end for p, end in ends.items() if end > 0):
            assert time.monotonic() < deadline, "the consumer did not reach the end"
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                values.append(m.value())
    finally:
        consumer.close()
    return values


def stored_codecs(sandbox, topic: str) -> set[int]:
    return {log.codec_of(b.data) for b in sandbox.cluster.topics[topic].partitions[0].batches}


# -- codecs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_each_codec_in_and_out_as_the_producer_sent_it(sandbox, codec):
    topic = new_topic(sandbox)
    p = Producer({"bootstrap.servers": sandbox.bootstrap, "compression.type": codec, "linger.ms": 5, "log_level": 0})
    for i in range(200):
        p.produce(topic, b"%s-%d " % (codec.encode(), i) * 20)
    assert p.flush(10) == 0
    assert stored_codecs(sandbox, topic) == {codecs.NAMES[codec]}   # compression.type=producer keeps it
    assert read(sandbox.bootstrap, topic, "read_uncommitted") == [b"%s-%d " % (codec.encode(), i) * 20 for i in range(200)]


@pytest.mark.parametrize("target", ["uncompressed", "gzip", "snappy", "lz4", "zstd"])
def test_a_topic_compression_type_recompresses(sandbox, target):
    topic = new_topic(sandbox, **{"compression.type": target})
    p = Producer({"bootstrap.servers": sandbox.bootstrap, "compression.type": "gzip", "log_level": 0,
                  "enable.idempotence": True})
    for i in range(50):
        p.produce(topic, b"value %d" % i, key=b"k%d" % i)
    assert p.flush(10) == 0
    assert stored_codecs(sandbox, topic) == {codecs.NAMES[target]}
    assert read(sandbox.bootstrap, topic, "read_committed") == [b"value %d" % i for i in range(50)]


def test_the_broker_compression_type_applies_to_topics_without_one():
    with Sandbox(brokers=1, configs={"compression.type": "zstd"}) as s:
        topic = new_topic(s)
        p = Producer({"bootstrap.servers": s.bootstrap, "log_level": 0})
        p.produce(topic, b"x" * 1000)
        assert p.flush(10) == 0
        assert stored_codecs(s, topic) == {codecs.ZSTD}
        # Fetch before v10 cannot carry zstd (Kafka's UNSUPPORTED_COMPRESSION_TYPE).
        leader = s.cluster.topics[topic].partitions[0].leader
        answer = request(s, leader, ApiKey.FETCH, {
            "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]},
            version=9)
        assert answer["responses"][0]["partitions"][0]["error_code"] == 76


def test_corrupt_compressed_data_is_refused(sandbox):
    topic = new_topic(sandbox)
    c = txn_scenarios.Cluster(sandbox.bootstrap, topic)
    try:
        good = log.build_batch([(None, b"x" * 100)], codec=codecs.LZ4)
        bad = bytearray(good[:log.HEADER_SIZE]) + b"\x04\x22\x4d\x18garbage"
        bad[8:12] = (len(bad) - log.LENGTH_PREFIX).to_bytes(4, "big")
        log.set_crc(bad)
        assert c.produce(bytes(bad))[0] == -1   # Kafka's UNKNOWN_SERVER_ERROR
        assert c.produce(bytes(good)) == (0, 0)
    finally:
        c.close()


# -- real clients -------------------------------------------------------------------------------


def test_kafka_python_with_its_defaults_is_idempotent(sandbox):
    from kafka import KafkaProducer
    topic = new_topic(sandbox)
    producer = KafkaProducer(bootstrap_servers=sandbox.bootstrap)   # idempotence on by default (3.x)
    try:
        for i in range(100):
            producer.send(topic, b"m%d" % i)
        producer.flush(10)
    finally:
        producer.close()
    c = txn_scenarios.Cluster(sandbox.bootstrap, topic)
    try:
        producers = c.producers()
    finally:
        c.close()
    assert len(producers) == 1 and list(producers.values())[0][1] == 99   # last sequence
    assert read(sandbox.bootstrap, topic, "read_uncommitted") == [b"m%d" % i for i in range(100)]


@BOTH_MODES
def test_transactions_of_three_client_families_read_committed(sandbox):
    topic = new_topic(sandbox, partitions=2)
    # confluent-kafka
    p = Producer({"bootstrap.servers": sandbox.bootstrap, "transactional.id": "ck-" + topic, "log_level": 0})
    p.init_transactions(10)
    for outcome in ("aborted", "committed"):
        p.begin_transaction()
        for i in range(4):
            p.produce(topic, b"ck-" + outcome.encode(), partition=i % 2)
        p.flush(10)
        p.commit_transaction(10) if outcome == "committed" else p.abort_transaction(10)
    # kafka-python
    from kafka import KafkaConsumer, KafkaProducer
    kp = KafkaProducer(bootstrap_servers=sandbox.bootstrap, transactional_id="kp-" + topic, compression_type="lz4")
    kp.init_transactions()
    for outcome in ("aborted", "committed"):
        kp.begin_transaction()
        kp.send(topic, b"kp-" + outcome.encode(), partition=0)
        kp.flush()
        kp.commit_transaction() if outcome == "committed" else kp.abort_transaction()
    kp.close()

    # aiokafka
    async def aiokafka_transactions() -> None:
        from aiokafka import AIOKafkaProducer
        ap = AIOKafkaProducer(bootstrap_servers=sandbox.bootstrap, transactional_id="aio-" + topic,
                              compression_type="zstd")
        await ap.start()
        try:
            async with ap.transaction():
                await ap.send_and_wait(topic, b"aio-committed", partition=1)
            await ap.begin_transaction()
            await ap.send_and_wait(topic, b"aio-aborted", partition=1)
            await ap.abort_transaction()
        finally:
            await ap.stop()

    asyncio.run(aiokafka_transactions())
    committed = sorted(read(sandbox.bootstrap, topic, "read_committed", 2))
    assert committed == sorted([b"ck-committed"] * 4 + [b"kp-committed", b"aio-committed"])
    assert len(read(sandbox.bootstrap, topic, "read_uncommitted", 2)) == 12
    # kafka-python's and aiokafka's read_committed consumers skip the aborted records too.
    kc = KafkaConsumer(topic, bootstrap_servers=sandbox.bootstrap, isolation_level="read_committed",
                       auto_offset_reset="earliest", consumer_timeout_ms=3000, group_id="kc-" + topic)
    assert sorted(m.value for m in kc) == committed
    kc.close()

    async def aiokafka_read() -> list[bytes]:
        from aiokafka import AIOKafkaConsumer
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=sandbox.bootstrap, isolation_level="read_committed",
                                    auto_offset_reset="earliest", group_id="ac-" + topic)
        await consumer.start()
        got: list[bytes] = []
        try:
            while len(got) < len(committed):
                for msgs in (await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)).values():
                    got += [m.value for m in msgs]
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(aiokafka_read())) == committed


def test_kafkas_java_producer_uses_transactions_v2(sandbox):
    from tests.real_kafka import KAFKA_4, kafka_libs
    topic = new_topic(sandbox)
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{kafka_libs(KAFKA_4)}/*", "org.apache.kafka.tools.ProducerPerformance",
         "--topic", topic, "--num-records", "3000", "--record-size", "100", "--throughput", "-1",
         "--command-property", f"bootstrap.servers={sandbox.bootstrap}", "compression.type=snappy",
         "--transactional-id", "java-" + topic, "--transaction-duration-ms", "100"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "3000 records sent" in done.stdout, done.stdout + done.stderr
    assert len(read(sandbox.bootstrap, topic, "read_committed")) == 3000
    txn = sandbox.call(lambda: transactions.store(sandbox.cluster).txns["java-" + topic])
    # Transactions v2: the epoch went up with each transaction's end.
    assert txn.state == transactions.COMPLETE_COMMIT and txn.producer_epoch >= 1 and txn.client_version == 2


def test_offsets_sent_to_a_transaction_commit_with_it(sandbox):
    source, sink = new_topic(sandbox), new_topic(sandbox)
    p = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 0})
    for i in range(10):
        p.produce(source, b"in%d" % i)
    assert p.flush(10) == 0
    group = "g-" + source
    consumer = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed", "log_level": 0})
    consumer.subscribe([source])
    txp = Producer({"bootstrap.servers": sandbox.bootstrap, "transactional.id": "eos-" + source, "log_level": 0})
    txp.init_transactions(10)
    try:
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 10:
            assert time.monotonic() < deadline
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                seen += 1
        for outcome, position in (("abort", None), ("commit", 10)):
            txp.begin_transaction()
            txp.produce(sink, b"out")
            txp.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                            consumer.consumer_group_metadata(), 10)
            txp.commit_transaction(10) if outcome == "commit" else txp.abort_transaction(10)
            committed = consumer.committed([TopicPartition(source, 0)], timeout=10)[0].offset
            assert committed == (position if position is not None else -1001), outcome
    finally:
        consumer.close()
    assert read(sandbox.bootstrap, sink, "read_committed") == [b"out"]


@pytest.mark.parametrize("cluster", ["sandbox", "kafka4"])
def test_offsets_of_a_topic_deleted_inside_a_transaction_are_not_committed(cluster, request):
    """Kafka's group coordinator drops a deleted topic's offsets from its open transactions too
    (OffsetMetadataManager.onTopicsDeleted): committing the transaction afterwards commits none."""
    bootstrap = request.getfixturevalue(cluster).bootstrap
    source, sink = new_topic_on(bootstrap), new_topic_on(bootstrap)
    group = "g-" + source
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    txp = Producer({"bootstrap.servers": bootstrap, "transactional.id": "gone-" + source, "log_level": 0})
    txp.init_transactions(30)
    txp.begin_transaction()
    txp.produce(sink, b"out")
    txp.send_offsets_to_transaction([TopicPartition(source, 0, 5)], member.consumer_group_metadata(), 30)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.delete_topics([source])[source].result(30)
    txp.commit_transaction(30)
    member.close()

    def committed_topics() -> set[str]:
        answer = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
        return {tp.topic for tp in answer.topic_partitions}

    deadline = time.monotonic() + 30
    while committed_topics():
        assert time.monotonic() < deadline, f"the group still has offsets of {committed_topics()}"
        time.sleep(0.2)
    # The sink's high watermark and commit marker reach the consumer a moment after the commit
    # on a loaded machine (Kafka's followers must fetch first): read until it is there.
    while (values := read(bootstrap, sink, "read_committed")) != [b"out"]:
        assert time.monotonic() < deadline + 30, f"read {values} from the committed transaction"
        time.sleep(0.2)


# -- the coordinator ----------------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted():
    with Sandbox(brokers=1, configs={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"}) as s:
        topic = new_topic(s)
        p = Producer({"bootstrap.servers": s.bootstrap, "transactional.id": "slow", "transaction.timeout.ms": 1000,
                      "log_level": 0})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(topic, b"never")
        p.flush(10)
        c = txn_scenarios.Cluster(s.bootstrap, topic)
        try:
            assert c.fetch(READ_COMMITTED)["last_stable_offset"] == 0   # held by the open transaction
            wait_for(lambda: c.describe_transaction("slow")["state"] == "CompleteAbort", "the timeout's abort")
            fetched = c.fetch(READ_COMMITTED)
            assert (fetched["last_stable_offset"], fetched["aborted"]) == (2, [0])
        finally:
            c.close()
        with pytest.raises(KafkaException):
            p.commit_transaction(10)


def test_markers_wait_for_a_partition_leader(sandbox):
    create(sandbox, "solo", [[3]])
    c = txn_scenarios.Cluster(sandbox.bootstrap, "solo")
    c.coordinator("any")   # creates __transaction_state
    # An id coordinated elsewhere than on broker 3, which stops.
    tid = next(t for t in (f"waiting-{i}" for i in range(100)) if transactions_coordinator(sandbox, t) != 3)
    try:
        coordinator = c.coordinator(tid)
        init = c.init_producer_id(tid)
        pid, epoch = init["producer_id"], init["producer_epoch"]
        assert c.add_partitions(tid, pid, epoch) == 0
        assert c.produce(batch(0, epoch, pid, 3, transactional=True), transactional_id=tid) == (0, 0)
        sandbox.stop_broker(3)
        assert c.end_txn(tid, pid, epoch, True, 4)["error_code"] == 0
        assert c.describe_transaction(tid)["state"] == "PrepareCommit"
        again = coordinator.request(ApiKey.INIT_PRODUCER_ID, {"transactional_id": tid, "transaction_timeout": 60000,
                                                              "producer_id": -1, "producer_epoch": -1}, 5)
        assert again["error_code"] == 51   # CONCURRENT_TRANSACTIONS until the markers are written
        sandbox.start_broker(3)
        wait_for(lambda: c.describe_transaction(tid)["state"] == "CompleteCommit", "the markers")
        c.reconnect()
        fetched = c.fetch(READ_COMMITTED)
        assert [v for _, v in fetched["records"]] == [b"v0", b"v1", b"v2", "commit"]
    finally:
        c.close()


def test_list_and_describe_transactions(sandbox):
    topic = new_topic(sandbox)
    c = txn_scenarios.Cluster(sandbox.bootstrap, topic)
    try:
        open_id, done_id = "open-" + topic, "done-" + topic
        for tid in (open_id, done_id):
            init = c.init_producer_id(tid)
            c.add_partitions(tid, init["producer_id"], init["producer_epoch"])
        done = c.init_producer_id(done_id)   # fences the first: its transaction aborts
        # (An Empty transaction's start time is -1, which kio cannot read back: asked of the state.)
        assert sandbox.call(lambda: transactions.store(sandbox.cluster).txns[done_id].state_name) == "Empty"
        assert c.describe_transaction(open_id)["state"] == "Ongoing"
        assert c.describe_transaction(open_id)["topics"] == [("the topic", [0])]
        listed = {}
        for i in range(1, 4):
            answer = request(sandbox, i, ApiKey.LIST_TRANSACTIONS, {"state_filters": ["Ongoing", "Nope"],
                                                                    "producer_id_filters": [], "duration_filter": -1}, 1)
            assert answer["unknown_state_filters"] == ["Nope"]
            listed.update({t["transactional_id"]: t["transaction_state"] for t in answer["transaction_states"]})
        assert listed.get(open_id) == "Ongoing" and done_id not in listed
        pattern = request(sandbox, transactions_coordinator(sandbox, done_id), ApiKey.LIST_TRANSACTIONS, {
            "state_filters": [], "producer_id_filters": [done["producer_id"]], "duration_filter": -1,
            "transactional_id_pattern": "done-.*"}, 2)
        assert [t["transactional_id"] for t in pattern["transaction_states"]] == [done_id]
        for unreadable in ("done-[", "(" * 1000 + ")" * 1000):   # the second nests past Python's recursion limit
            refused = request(sandbox, 1, ApiKey.LIST_TRANSACTIONS, {
                "state_filters": [], "producer_id_filters": [], "duration_filter": -1,
                "transactional_id_pattern": unreadable}, 2)
            assert refused["error_code"] == ErrorCode.invalid_regular_expression, unreadable[:10]
        answer = request(sandbox, transactions_coordinator(sandbox, done_id), ApiKey.DESCRIBE_TRANSACTIONS,
                         {"transactional_ids": ["never-seen"]}, 0)
        assert answer["transaction_states"][0]["error_code"] in (16, 105)   # NOT_COORDINATOR or not found
    finally:
        c.close()


def transactions_coordinator(sandbox, transactional_id: str) -> int:
    return sandbox.call(transactions.coordinator_of, sandbox.cluster, transactional_id)


# -- --data-dir ---------------------------------------------------------------------------------


def test_producer_and_transaction_state_survive_a_restart(tmp_path):
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        topic = new_topic(s)
        c = txn_scenarios.Cluster(s.bootstrap, topic)
        try:
            pid = c.init_producer_id(None, version=4)["producer_id"]
            assert [c.produce(batch(seq, 0, pid))[0] for seq in range(3)] == [0, 0, 0]
            tid = "kept-" + topic
            init = c.init_producer_id(tid)
            tpid, epoch = init["producer_id"], init["producer_epoch"]
            assert c.produce(batch(0, epoch, tpid, 2, transactional=True), version=12, transactional_id=tid) == (0, 3)
        finally:
            c.close()
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        c = txn_scenarios.Cluster(s.bootstrap, topic)
        try:
            assert c.produce(batch(2, 0, pid)) == (0, 2)    # a duplicate still answers its first offset
            assert c.produce(batch(9, 0, pid))[0] == 45     # a gap is still one
            assert c.produce(batch(3, 0, pid)) == (0, 5)
            assert c.list_offset(READ_COMMITTED) == 3       # the open transaction holds the LSO
            assert c.describe_transaction(tid)["state"] == "Ongoing"
            assert c.end_and_settle(tid, tpid, epoch, False, 5)["error_code"] == 0
            assert c.fetch(READ_COMMITTED)["aborted"] == [3]
            assert c.list_offset(READ_COMMITTED) == c.list_offset(READ_UNCOMMITTED) == 7
            assert c.init_producer_id(None, version=4)["producer_id"] >= 1000   # a fresh block of ids
        finally:
            c.close()


def test_kill_9_keeps_committed_and_open_transactions(tmp_path):
    from tests.sandbox.test_data_dir import kill9, serve
    proc, bootstrap = serve(tmp_path)
    try:
        topic = "kept"
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(10)
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "survivor", "log_level": 0})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(topic, b"committed")
        p.commit_transaction(10)
        p.begin_transaction()
        p.produce(topic, b"left open")
        assert p.flush(10) == 0
    finally:
        kill9(proc)
    proc, bootstrap = serve(tmp_path)
    try:
        c = txn_scenarios.Cluster(bootstrap, topic)
        try:
            assert c.list_offset(READ_COMMITTED) == 2   # after the commit marker: the open transaction holds it
            assert c.describe_transaction("survivor")["state"] == "Ongoing"
            # A new producer with the id fences the old one: its open transaction is aborted.
            again = Producer({"bootstrap.servers": bootstrap, "transactional.id": "survivor", "log_level": 0})
            again.init_transactions(10)
            assert c.list_offset(READ_COMMITTED) == c.list_offset(READ_UNCOMMITTED) == 4
        finally:
            c.close()
        assert read(bootstrap, topic, "read_committed") == [b"committed"]
    finally:
        kill9(proc)


def test_a_transaction_log_under_min_isr_changes_nothing(sandbox):
    """Kafka's coordinator answers COORDINATOR_NOT_AVAILABLE when its log write fails
    (NOT_ENOUGH_REPLICAS), and its state stays as it was."""
    create(sandbox, "solo", [[1]])
    c = txn_scenarios.Cluster(sandbox.bootstrap, "solo")
    try:
        c.coordinator("any")
        tid = next(t for t in (f"isr-{i}" for i in range(100)) if transactions_coordinator(sandbox, t) == 1)
        init = c.init_producer_id(tid)
        pid, epoch = init["producer_id"], init["producer_epoch"]
        for b in (2, 3):
            sandbox.stop_broker(b)   # the coordinator's partition: ISR 1 < min.insync.replicas 2
        assert c.add_partitions(tid, pid, epoch) == 15
        assert sandbox.call(lambda: transactions.store(sandbox.cluster).txns[tid].state_name) == "Empty"
        for b in (2, 3):
            sandbox.start_broker(b)
        wait_for(lambda: c.add_partitions(tid, pid, epoch) == 0, "the ISR to grow back")
        assert c.describe_transaction(tid)["state"] == "Ongoing"
    finally:
        c.close()


def test_kafkas_java_consumer_reads_what_the_sandbox_recompressed(sandbox):
    """Kafka's own decoders (snappy-java's xerial stream, Lz4BlockInputStream, zstd-jni, gzip)
    read the batches the sandbox wrote, read_committed."""
    from tests.real_kafka import KAFKA_4, kafka_libs
    prefix = "java-" + uuid.uuid4().hex[:6]
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        create(sandbox, f"{prefix}-{codec}", [[1]], **{"compression.type": codec})
    p = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 20, "log_level": 0})
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        for i in range(50):
            p.produce(f"{prefix}-{codec}", b"%s %d " % (codec.encode(), i) * 30)
    assert p.flush(10) == 0
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{kafka_libs(KAFKA_4)}/*", "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", sandbox.bootstrap, "--include", f"{prefix}-.*", "--from-beginning",
         "--max-messages", "200", "--timeout-ms", "30000", "--isolation-level", "read_committed"],
        capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 200, done.stderr[-2000:]
    assert sorted(lines) == sorted(f"{codec} {i} " * 30 for codec in ("gzip", "snappy", "lz4", "zstd") for i in range(50))


def test_write_txn_markers_writes_a_marker_where_a_coordinator_asks(sandbox):
    topic = new_topic(sandbox)
    c = txn_scenarios.Cluster(sandbox.bootstrap, topic)
    try:
        tid = "marked-" + topic
        init = c.init_producer_id(tid)
        pid, epoch = init["producer_id"], init["producer_epoch"]
        assert c.add_partitions(tid, pid, epoch) == 0
        assert c.produce(batch(0, epoch, pid, 2, transactional=True), transactional_id=tid) == (0, 0)
        leader = sandbox.cluster.topics[topic].partitions[0].leader
        body = {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": True,
                             "coordinator_epoch": 0, "topics": [{"name": topic, "partition_indexes": [0]}]}]}
        answer = request(sandbox, leader, ApiKey.WRITE_TXN_MARKERS, body, 1)
        assert answer["markers"][0]["topics"][0]["partitions"][0]["error_code"] == 0
        fetched = c.fetch(READ_COMMITTED)
        assert (fetched["last_stable_offset"], [v for _, v in fetched["records"]]) == (3, [b"v0", b"v1", "commit"])
        # An older coordinator epoch is fenced (TRANSACTION_COORDINATOR_FENCED); elsewhere NOT_LEADER_OR_FOLLOWER.
        body["markers"][0]["coordinator_epoch"] = -1
        assert request(sandbox, leader, ApiKey.WRITE_TXN_MARKERS, body, 1)["markers"][0]["topics"][0]["partitions"][0][
            "error_code"] == 52
        other = next(b for b in (1, 2, 3) if b != leader)
        assert request(sandbox, other, ApiKey.WRITE_TXN_MARKERS, body, 1)["markers"][0]["topics"][0]["partitions"][0][
            "error_code"] == 6
    finally:
        c.close()
