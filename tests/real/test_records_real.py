"""consume and produce on real Apache Kafka 4.4 beside Kafka's own console clients (from the cached
4.4 jars): keyed records land where Kafka's console producer (Java's murmur2) puts them, the
console consumer's key and header lines are the same bytes, and a read starts, ends and says so
as on the sandbox (tests/test_consume_produce.py): last N, from a time, kcat's format, the
isolation level at an open transaction, offset resets, a hung leader's partition named."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import java_client
from tests.output import json_rows
from tests.test_oneshot import ROOT, SHELL

HOUR_MS = 3_600_000


def topic_on(cluster, partitions: int, rf: int = 1) -> str:
    name = f"rec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(60)
    deadline = time.monotonic() + 60   # every broker knows it (a produce right after must not miss it)
    while len(admin.list_topics(name, timeout=10).topics[name].partitions) < partitions:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return name


def shell(cluster, line: str, *extra: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """A one-shot shell on the cluster, stdout and stderr as bytes."""
    return subprocess.run([*SHELL, "--bootstrap-server", cluster.bootstrap, "--timeout", "10", *extra, "--command", line],
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True,
                          timeout=120, cwd=ROOT)


def ok(cluster, line: str, *extra: str) -> tuple[bytes, str]:
    p = shell(cluster, line, *extra)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout, p.stderr.decode()


def placements(cluster, topic: str, partitions: int) -> dict[bytes, set[int]]:
    """key -> the partitions its records are in, read back with a real consumer."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"read-{uuid.uuid4()}", "log_level": 0,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found: dict[bytes, set[int]] = {}
    done: set[int] = set()
    deadline = time.monotonic() + 60
    while len(done) < partitions:
        assert time.monotonic() < deadline, f"read {sum(map(len, found.values()))} records"
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            done.add(m.partition())
            continue
        found.setdefault(m.key(), set()).add(m.partition())
    c.close()
    return found


def test_keyed_records_land_where_kafkas_console_producer_puts_them(kafka4):
    keys = [f"user-{i}" for i in range(60)] + ["alice", "bob", "carol", "ü-ключ"]
    java, ours = topic_on(kafka4, 7), topic_on(kafka4, 7)
    lines = "".join(f"{k}:v\n" for k in keys)
    done = java_client.run("ConsoleProducer", "--bootstrap-server", kafka4.bootstrap, "--topic", java,
                           "--reader-property", "parse.key=true", "--reader-property", "key.separator=:", stdin=lines)
    assert done.returncode == 0, done.stderr
    p = shell(kafka4, f"produce --topic {ours} --key-separator :", stdin=lines.encode())
    assert p.returncode == 0, p.stderr.decode()
    java_placed, our_placed = placements(kafka4, java, 7), placements(kafka4, ours, 7)
    assert our_placed == java_placed
    assert all(len(parts) == 1 for parts in our_placed.values()) and len({p for s in our_placed.values() for p in s}) > 3


def test_console_consumer_lines_are_the_same_bytes_as_kafkas(kafka4):
    topic = topic_on(kafka4, 1)
    producer = Producer({"bootstrap.servers": kafka4.bootstrap, "log_level": 0})
    producer.produce(topic, key=b"k1", value=b"hello", headers=[("h", b"1"), ("app", b"shell")])
    producer.produce(topic, key=None, value=b"no key")
    producer.produce(topic, key=b"k3", value=None, headers=[("h", b"3")])
    assert producer.flush(30) == 0
    done = subprocess.run(java_client.command(
        "consumer.ConsoleConsumer", "--bootstrap-server", kafka4.bootstrap, "--topic", topic, "--from-beginning",
        "--max-messages", "3", "--timeout-ms", "30000", "--formatter-property", "print.key=true",
        "--formatter-property", "print.headers=true"), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ours, err = ok(kafka4, f"consume --topic {topic} --from-beginning --print-key --print-headers")
    assert ours == done.stdout
    assert err == "Consumed 3 record(s): reached the end of the log.\n"


def test_where_a_read_starts_and_kcats_format(kafka4):
    topic = topic_on(kafka4, 2)
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": kafka4.bootstrap, "log_level": 0})
    for partition, value, ts in ((0, b"old0", now - 3 * HOUR_MS), (0, b"old1", now - 2 * HOUR_MS),
                                 (0, b"new0", now - 60_000), (1, b"new1", now - 30_000), (1, b"new2", now - 10_000)):
        producer.produce(topic, key=b"k", value=value, partition=partition, timestamp=ts)
    assert producer.flush(30) == 0
    out, err = ok(kafka4, f"consume --topic {topic} --offset -2 -o json")
    assert sorted((r["partition"], r["value"]) for r in json_rows(out.decode())) == [
        (0, "new0"), (0, "old1"), (1, "new1"), (1, "new2")]
    assert err == "Consumed 4 record(s): reached the end of the log.\n"
    out, _ = ok(kafka4, f"consume --topic {topic} --from-time -1h -o json")
    assert sorted(r["value"] for r in json_rows(out.decode())) == ["new0", "new1", "new2"]
    out, _ = ok(kafka4, f"consume --topic {topic} --partition 0 --from-time {now - 150 * 60_000} --format '%p:%o:%k=%s;'")
    assert out == b"0:1:k=old1;0:2:k=new0;"


def test_isolation_level_at_an_open_transaction(kafka4):
    topic = topic_on(kafka4, 1)
    producer = Producer({"bootstrap.servers": kafka4.bootstrap, "log_level": 0})
    for i in range(4):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0
    txn = Producer({"bootstrap.servers": kafka4.bootstrap, "transactional.id": f"tx-{topic}", "log_level": 0})
    txn.init_transactions(60)
    txn.begin_transaction()
    txn.produce(topic, b"open", partition=0)
    txn.flush(30)
    try:
        out, err = ok(kafka4, f"consume --topic {topic} --partition 0 --offset 0 -o json")
        assert [r["value"] for r in json_rows(out.decode())] == ["v0", "v1", "v2", "v3", "open"]
        out, err = ok(kafka4, f"consume --topic {topic} --partition 0 --offset 0 --isolation-level read_committed -o json")
        assert [r["value"] for r in json_rows(out.decode())] == ["v0", "v1", "v2", "v3"]
        assert err.splitlines()[1:] == [f"{topic}-0: stopped at offset 4, its last stable offset: a transaction is "
                                        "open (--isolation-level read_uncommitted reads past it)"]
    finally:
        txn.abort_transaction(60)


def test_offset_resets_are_said_once(kafka4):
    topic = topic_on(kafka4, 1)
    ok(kafka4, f"produce --topic {topic} a b c")
    p = shell(kafka4, f"consume --topic {topic} --partition 0 --offset 7")
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.decode().splitlines()[1] == (f"{topic}-0: offset 7 is outside the log (log start 0, log end 3): "
                                                 "the read stopped (--offset-reset earliest or latest goes on from there)")
    ok(kafka4, f"delete-records --topic {topic} --partition 0 --before-offset 2 --yes")
    out, err = ok(kafka4, f"consume --topic {topic} --partition 0 --offset 0 --offset-reset earliest --raw")
    assert out == b"c\n"
    assert err.splitlines()[1] == (f"{topic}-0: offset 0 is outside the log (log start 2, log end 3): went on from "
                                   "offset 2 (--offset-reset earliest)")
    # Records deleted under a following read (paused meanwhile: SIGSTOP): one line, the read stops.
    proc = subprocess.Popen([*SHELL, "--bootstrap-server", kafka4.bootstrap, "--command",
                             f"consume --topic {topic} --from-beginning --follow --timeout 5 --raw"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"c\n"
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(1)   # its fetch under way (fetch.wait.max.ms 100) is answered, empty, meanwhile
        ok(kafka4, f"produce --topic {topic} d e f")
        ok(kafka4, f"delete-records --topic {topic} --partition 0 --before-offset 5 --yes")
        os.kill(proc.pid, signal.SIGCONT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1 and stdout == b""
    assert stderr.decode().splitlines() == [
        "Consumed 1 record(s): stopped at an offset reset.",
        f"{topic}-0: offset 3 is outside the log (log start 5, log end 6): the read stopped "
        "(--offset-reset earliest or latest goes on from there)"]


def test_a_hung_leaders_partition_is_named_and_the_others_are_read(kafka4):
    topic = topic_on(kafka4, 3)
    for partition in range(3):
        ok(kafka4, f"produce --topic {topic} --partition {partition} x{partition}")
    admin = AdminClient({"bootstrap.servers": kafka4.bootstrap, "log_level": 0})
    leaders = {p: m.leader for p, m in admin.list_topics(topic, timeout=10).topics[topic].partitions.items()}
    hung = leaders[2]
    bootstrap = ",".join(f"127.0.0.1:{node.port}" for node in kafka4.brokers if node.node_id != hung)
    node = kafka4.nodes[hung]
    os.kill(node.proc.pid, signal.SIGSTOP)   # accepts, never answers: what a stopped JVM looks like
    try:
        p = subprocess.run([*SHELL, "--bootstrap-server", bootstrap, "--timeout", "2", "-o", "json", "--command",
                            f"consume --topic {topic} --from-beginning"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120, cwd=ROOT)
    finally:
        os.kill(node.proc.pid, signal.SIGCONT)
    assert p.returncode == 1, p.stderr
    assert sorted(r["partition"] for r in json_rows(p.stdout)) == sorted(q for q, b in leaders.items() if b != hung)
    assert f"{topic}-2: not read: its leader, broker {hung}, did not answer Fetch within 2 s" in p.stderr.splitlines(), p.stderr
    kafka4.wait_ready()
