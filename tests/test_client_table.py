"""Independent clients against the sandbox, in KRaft (4.x) and ZooKeeper mode: one table of
scenarios, each done by every client family whose protocol code nobody here wrote, with each
client's default settings unless the scenario says otherwise:

- kafka-python 3.x (the test venv's) and 2.x (older request versions; installed into
  ~/.cache/kafka-shell by the table itself), aiokafka, kcat (Debian's package, installed when
  missing), and Kafka's own Java clients (console producer and consumer, the producer perf
  test, TopicCommand, ConfigCommand, GetOffsetShell... from the jars .ci/kafka-dist caches).
- Scenarios: admin calls, produce with each codec and each acks setting, idempotent and
  transactional produce, group consumption with a rebalance, read_committed, seek to the
  beginning, the end and a time, and the error codes of common mistakes.

What each client did is checked against the sandbox's own state and against confluent-kafka
reading the topic back. Where a tool has no way to do a scenario (kcat cannot create topics or
write transactions; Kafka's console tools cannot abort a transaction), the table says so in
`NOT_IN_CLIENT` and the cell is not a test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox import log
from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client, kcat_client

HERE = Path(__file__).resolve().parent
KAFKA_PYTHON_2 = "2.3.3"
KAFKA_PYTHON_2_SPEAKS = "2.0"   # it talks as to a Kafka 2.0 broker: the old request versions
CLIENTS = ("kafka-python-3", "kafka-python-2", "aiokafka", "kcat", "java")
SCENARIOS = ("admin", "produce", "idempotent", "transactional", "group", "read_committed", "seek", "errors")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ACKS = ("0", "1", "all")

# The error each common mistake gets (Kafka's codes).
EXPECTED_ERRORS = {
    "topic exists": 36, "replication factor": 38, "invalid config": 40, "fewer partitions": 37,
    "unknown topic": 3, "unknown group": 69, "acls without an authorizer": 54, "preferred leader already": 84,
    "keyless on a compacted topic": 87, "record too large": 10,
}

NOT_IN_CLIENT = {
    ("kcat", "transactional"): "kcat has no transactional producer",
}
# Each codec with acks=all, each acks setting uncompressed: a JVM per produce run (about 1.5 s
# each) would make the full 15-run product the slowest cell of the table.
JAVA_COMBOS = [(codec, "all") for codec in CODECS] + [("none", "0"), ("none", "1")]
# What a client makes of an error it has no name for: aiokafka knows no INVALID_RECORD (87) and
# raises UnknownError (errno -1); the test checks the record was refused all the same.
CLIENT_SEES = {"aiokafka": {"keyless on a compacted topic": -1}}
# Codecs and acks settings a client cannot produce with: kafka-python 2.3.3 never sends an acks=0
# produce request (it queues it and waits for nothing; so on Kafka 4.4 too), and as a Kafka 2.0
# client it refuses zstd (2.1+).
PRODUCE_NOT_IN_CLIENT = {"kafka-python-2": {"0", "zstd"}}
# The mistakes a client can make (a Kafka 2.0 client has no ElectLeaders; kcat and Kafka's
# console tools make only some): by default all of EXPECTED_ERRORS.
REQUIRED_ERRORS: dict[str, set[str]] = {
    "kafka-python-2": set(EXPECTED_ERRORS) - {"preferred leader already"},
    # aiokafka's admin client has no group deletion, ACLs or elections.
    "aiokafka": set(EXPECTED_ERRORS) - {"unknown group", "acls without an authorizer", "preferred leader already"},
    "kcat": {"keyless on a compacted topic", "record too large"},
    # TopicCommand checks itself that a topic exists and that its configs are valid.
    "java": set(EXPECTED_ERRORS) - {"unknown topic", "invalid config"},
}


# -- the clients -------------------------------------------------------------------------------


def kafka_python_2_path() -> Path:
    """kafka-python 2.x in a directory of its own (it cannot share the venv with 3.x)."""
    target = Path.home() / ".cache" / "kafka-shell" / f"kafka-python-{KAFKA_PYTHON_2}"
    if not (target / "kafka" / "__init__.py").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target",
                        str(target), f"kafka-python=={KAFKA_PYTHON_2}"], check=True, capture_output=True, timeout=600)
    return target


def python_client(script: str, scenario: str, path: Path | None = None, env_add: dict | None = None, **args) -> dict:
    """Run one scenario of a Python client driver in its own process; its JSON answer."""
    env = {**os.environ, **(env_add or {})}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    done = subprocess.run([sys.executable, str(HERE / "clients" / script), scenario, json.dumps(args)],
                          capture_output=True, text=True, timeout=240, env=env, cwd=str(HERE.parent))
    assert done.returncode == 0, f"{script} {scenario} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_client(client: str, scenario: str, **args) -> dict:
    if client == "kafka-python-3":
        return python_client("kafka_python_client.py", scenario, **args)
    if client == "kafka-python-2":
        return python_client("kafka_python_client.py", scenario, path=kafka_python_2_path(),
                             env_add={"KAFKA_PYTHON_API_VERSION": KAFKA_PYTHON_2_SPEAKS}, **args)
    if client == "aiokafka":
        return python_client("aiokafka_client.py", scenario, **args)
    module = {"kcat": kcat_client, "java": java_client}[client]
    if client == "kcat":
        kcat_path()
    return getattr(module, scenario)(**args)


# -- the sandbox and what confluent-kafka reads back -------------------------------------------


@pytest.fixture(scope="module", params=["kraft", "zk"])
def cluster(request):
    with Sandbox(brokers=3, mode=request.param) as s:
        yield s


def new_topic(s: Sandbox, partitions: int = 1, **configs: str) -> str:
    name = "table-" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": s.bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(30)
    return name


def read_back(s: Sandbox, topic: str, committed: bool = False, partition: int = 0) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every record of one partition, read by confluent-kafka."""
    c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "reader-" + uuid.uuid4().hex[:6], "log_level": 0,
                  "enable.auto.commit": False, "isolation.level": "read_committed" if committed else "read_uncommitted",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, partition, 0)])
    out = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            break   # the end of the partition
        out.append((m.key(), m.value()))
    c.close()
    return out


def stored_batches(s: Sandbox, topic: str, partition: int = 0) -> list[tuple[log.Header, list[log.Record]]]:
    def go() -> list:
        p = s.cluster.partition(topic, partition)
        return [(log.header(b.data), log.records(b.data)) for b in p.batches]
    return s.call(go)  # type: ignore[return-value]


# -- the table ---------------------------------------------------------------------------------


def cells() -> list:
    return [pytest.param(c, sc, id=f"{c}-{sc}") for c in CLIENTS for sc in SCENARIOS if (c, sc) not in NOT_IN_CLIENT]


@pytest.mark.parametrize("client,scenario", cells())
def test_client_table(cluster, client, scenario):
    globals()["check_" + scenario](cluster, client)


def check_admin(s: Sandbox, client: str) -> None:
    if client == "kcat":   # kcat's only admin request: the metadata listing
        topic = new_topic(s, partitions=3)
        assert run_client(client, "admin", bootstrap=s.bootstrap, topic=topic) == \
            {"brokers": 3, "partitions": 3, "leaders": True}
        return
    topic = "table-admin-" + uuid.uuid4().hex[:8]
    got = run_client(client, "admin", bootstrap=s.bootstrap, topic=topic)
    assert got == {"created": 0, "listed": True, "described": "3600000", "altered": 0, "described after": "7200000",
                   "partitions added": 0, "brokers": 3, "deleted": 0}
    assert topic not in s.cluster.topics


def check_produce(s: Sandbox, client: str) -> None:
    topic = new_topic(s)
    left_out = PRODUCE_NOT_IN_CLIENT.get(client, set())
    combos = JAVA_COMBOS if client == "java" else \
        [(codec, acks) for codec in CODECS for acks in ACKS if not {codec, acks} & left_out]
    run_client(client, "produce", bootstrap=s.bootstrap, topic=topic, combos=combos)
    codec_of = {}
    for h, records in stored_batches(s, topic):
        for r in records:
            codec_of[r.key.decode().rsplit("-", 1)[0]] = h.attributes & log.CODEC_MASK
    assert codec_of == {f"{codec}-{acks}": CODEC_IDS[codec] for codec, acks in combos}
    assert len(read_back(s, topic)) == 5 * len(combos)


def check_idempotent(s: Sandbox, client: str) -> None:
    topic = new_topic(s)
    run_client(client, "idempotent", bootstrap=s.bootstrap, topic=topic)
    batches = stored_batches(s, topic)
    assert all(h.has_producer_id for h, _ in batches)
    assert [h.base_sequence for h, _ in batches][0] == 0
    assert [r.value for _, records in batches for r in records] == [b"v%d" % i for i in range(10)]


def check_transactional(s: Sandbox, client: str) -> None:
    topic = new_topic(s)
    got = run_client(client, "transactional", bootstrap=s.bootstrap, topic=topic)
    batches = stored_batches(s, topic)
    assert all(h.transactional for h, _ in batches) and any(h.control for h, _ in batches)
    if "records" in got:   # the perf test's records: random bytes, every transaction committed
        assert len(read_back(s, topic, committed=True)) == got["records"]
        return
    assert [v for _, v in read_back(s, topic, committed=True)] == [b"c%d" % i for i in range(5)]
    # What of the aborted transaction reached the log (kafka-python drops batches it had not sent yet).
    assert {v for _, v in read_back(s, topic)} <= {b"%s%d" % (p, i) for p in (b"c", b"a") for i in range(5)}


def check_read_committed(s: Sandbox, client: str) -> None:
    topic = new_topic(s)
    p = Producer({"bootstrap.servers": s.bootstrap, "transactional.id": "ref-" + topic, "log_level": 0})
    p.init_transactions(30)
    for prefix, commit in (("c", True), ("a", False), ("d", True)):
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, key=b"k", value=f"{prefix}{i}".encode())
        (p.commit_transaction if commit else p.abort_transaction)(30)
    got = run_client(client, "read_committed", bootstrap=s.bootstrap, topic=topic, count=10)
    assert got["values"] == [f"{prefix}{i}" for prefix in "cd" for i in range(5)]


def check_group(s: Sandbox, client: str) -> None:
    topic = new_topic(s, partitions=4)
    group_id = "g-" + topic
    extra = {"members": lambda: group_assignment(s, group_id)} if client == "java" else {}
    got = run_client(client, "group", bootstrap=s.bootstrap, topic=topic, group_id=group_id, **extra)
    assert got["first"] == [0, 1, 2, 3]
    assert sorted(p for ps in got["after"] for p in ps) == [0, 1, 2, 3] and all(got["after"])
    assert got.get("members described", 2) == 2


def group_assignment(s: Sandbox, group_id: str) -> list[list[int]]:
    """Each member's partitions, as the group's coordinator has them (a stable group only)."""
    admin = AdminClient({"bootstrap.servers": s.bootstrap, "log_level": 0})
    try:
        g = admin.describe_consumer_groups([group_id])[group_id].result(30)
    except Exception:  # noqa: BLE001 - not there yet
        return []
    if str(g.state) != "ConsumerGroupState.STABLE":
        return []
    return [sorted(tp.partition for tp in m.assignment.topic_partitions) for m in g.members]


def check_seek(s: Sandbox, client: str) -> None:
    topic = new_topic(s)
    p = Producer({"bootstrap.servers": s.bootstrap, "log_level": 0})
    t0 = int(time.time() * 1000) - 60_000
    for i in range(10):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp=t0 + i * 1000)
    assert p.flush(30) == 0
    got = run_client(client, "seek", bootstrap=s.bootstrap, topic=topic, at=t0 + 4500)
    assert got == {"beginning": 0, "end": 10, "time": 5}


def check_errors(s: Sandbox, client: str) -> None:
    existing = new_topic(s)
    compacted = new_topic(s, **{"cleanup.policy": "compact"})
    small = new_topic(s, **{"max.message.bytes": "1000"})
    got = run_client(client, "errors", bootstrap=s.bootstrap, existing=existing, compacted=compacted, small=small)
    expected = {**EXPECTED_ERRORS, **CLIENT_SEES.get(client, {})}
    assert got == {k: expected[k] for k in got} and got.keys() >= REQUIRED_ERRORS.get(client, EXPECTED_ERRORS.keys())
    assert stored_batches(s, compacted) == [] and stored_batches(s, small) == []   # refused, whatever the client says



def kcat_path() -> str:
    """kcat, installed from Debian when missing (as the completion tests install zsh)."""
    for step in (["apt-get", "install", "-y", "-q", "kcat"], ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "kcat"]):   # a clean machine has no package lists yet
        if shutil.which("kcat") or not shutil.which("apt-get"):
            break
        subprocess.run(step, capture_output=True, timeout=600)
    path = shutil.which("kcat")
    assert path, "apt-get install -y kcat"
    return path
