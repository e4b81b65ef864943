"""Share groups served to Kafka's own Java share consumer (ConsoleShareConsumer, from the Kafka
4.4 jars): the same scenarios on the sandbox and on real Kafka 4.4 give the same facts. Records
accepted (the consumer's implicit acknowledgement), released (each delivered again until
share.delivery.count.limit, then archived) and rejected; the start offsets and lag the shell
describes afterwards; the group's state; delete-share-group."""

from __future__ import annotations

import subprocess
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client
from tests.test_consumer_groups_cmd import rows, wait_for
from tests.test_transactions_cmd import sh

RECORDS, PARTITIONS = 10, 2
DELIVERY_LIMIT = 5   # share.delivery.count.limit's default


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(brokers=3) as s:
        yield s


@pytest.fixture(params=["sandbox", "kafka4"])
def bootstrap(request) -> str:
    return request.getfixturevalue(request.param).bootstrap


def _topic(bootstrap: str) -> str:
    topic = "sq-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(RECORDS):
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    producer.flush(30)
    return topic


def _group(bootstrap: str) -> str:
    group = "sq-" + uuid.uuid4().hex[:8]
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                                 "--add-config share.auto.offset.reset=earliest")
    assert code == 0, err
    return group


def _consume(bootstrap: str, topic: str, group: str, count: int, *flags: str) -> list[int]:
    """Kafka's console share consumer until it has printed `count` records (each delivery once)."""
    done = subprocess.run(java_client.command("consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                                              "--topic", topic, "--group", group, "--max-messages", str(count),
                                              "--timeout-ms", "60000", *flags),
                          capture_output=True, text=True, timeout=180)
    assert f"Processed a total of {count} messages" in done.stderr, done.stderr[-2000:]
    return [int(v) for v in done.stdout.split()]


def _offsets(bootstrap: str, group: str) -> list[tuple[int, int, int]]:
    """(partition, start offset, lag) once every partition's start offset has settled at the end."""
    return wait_for(lambda: sorted((r["Partition"], r["StartOffset"], r["Lag"])
                                   for r in rows(bootstrap, f"describe-share-group {group}")),
                    lambda r: len(r) == PARTITIONS and all(lag == 0 for _, _, lag in r))


@pytest.mark.parametrize("how", ["accept", "release", "reject"])
def test_share_consumer_deliveries(bootstrap, how):
    topic, group = _topic(bootstrap), _group(bootstrap)
    flags = {"accept": (), "release": ("--release",), "reject": ("--reject",)}[how]
    # Released records come back until they were delivered DELIVERY_LIMIT times; then archived.
    count = RECORDS * DELIVERY_LIMIT if how == "release" else RECORDS
    delivered = Counter(_consume(bootstrap, topic, group, count, *flags))
    assert delivered == Counter({i: count // RECORDS for i in range(RECORDS)})
    # Every record is done with (acknowledged or archived): the start offsets are at the end.
    assert _offsets(bootstrap, group) == [(p, RECORDS // PARTITIONS, 0) for p in range(PARTITIONS)]
    state = wait_for(lambda: rows(bootstrap, f"describe-share-group {group} --state --verbose"),
                     lambda r: r and r[0]["Members"] == 0)[0]
    assert (state["State"], state["Assignor"]) == ("Empty", "simple")
    assert sh(bootstrap, f"delete-share-group {group} --yes")[0::2] == (0, f"Deleted share group '{group}'.\n")


def test_a_second_consumer_shares_the_partitions(bootstrap):
    """Two members of one group: the simple assignor gives each its partitions, every record is
    delivered once between them, and describe shows both members while they run."""
    topic, group = _topic(bootstrap), _group(bootstrap)
    command = java_client.command("consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                                  "--topic", topic, "--group", group)
    consumers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for _ in range(2)]
    try:
        members = wait_for(lambda: rows(bootstrap, f"describe-share-group {group} --members --verbose"),
                           lambda r: len(r) == 2 and sum(m["Partitions"] for m in r) == PARTITIONS
                           and len({m["MemberEpoch"] for m in r}) == 1)
        assert all(m["Subscription"] == topic for m in members)
        _offsets(bootstrap, group)
    finally:
        for c in consumers:
            c.terminate()
        outs = [c.communicate(timeout=60)[0] for c in consumers]
    assert sorted(int(v) for out in outs for v in out.split()) == list(range(RECORDS))
