"""Group commands on KIP-848 consumer groups (group.protocol=consumer) beside classic ones, on the
sandbox and on real Apache Kafka 4.4, with real confluent-kafka consumers; on Kafka, Kafka's own
kafka-consumer-groups describes the same group and its facts are compared."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.connection.manager import ConnectionManager
from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client
from tests.output import json_rows, json_tables
from tests.test_transactions_cmd import sh

PARTITIONS = 6


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


def rows(bootstrap: str, line: str, table: str | None = None) -> list[dict]:
    code, out, err = sh(bootstrap, line + " -o json")
    assert code == 0, err
    return json_rows(out, table)


class Members:
    """confluent-kafka consumers in one group, polled by a thread until stopped (a KIP-848
    consumer reconciles its assignment in poll)."""

    def __init__(self, bootstrap: str, group: str, topic: str, count: int, protocol: str = "consumer"):
        settings = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                    "enable.auto.commit": False, "log_level": 0, "client.id": "k848-cmd"}
        if protocol == "consumer":
            settings["group.protocol"] = "consumer"
        self.consumers = [Consumer(settings) for _ in range(count)]
        for c in self.consumers:
            c.subscribe([topic])
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop.is_set():
            for c in self.consumers:
                with self.lock:
                    c.poll(0.05)

    def assigned(self) -> list[list[int]]:
        with self.lock:
            return sorted(sorted(tp.partition for tp in c.assignment()) for c in self.consumers)

    def commit(self) -> None:
        with self.lock:
            for c in self.consumers:
                if c.assignment():
                    c.commit(offsets=[TopicPartition(tp.topic, tp.partition, 2) for tp in c.assignment()],
                             asynchronous=False)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        for c in self.consumers:
            c.close()


def wait_for(read, done, timeout_s: float = 90):
    deadline = time.monotonic() + timeout_s
    while not done(found := read()):
        assert time.monotonic() < deadline, f"not reached: {found}"
        time.sleep(0.2)
    return found


def scene(bootstrap: str) -> tuple[str, str, str]:
    """A topic of PARTITIONS partitions with records, a classic group that committed and left."""
    topic, tag = "cg-" + uuid.uuid4().hex[:8], uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(PARTITIONS * 5):
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    producer.flush(30)
    classic = Consumer({"bootstrap.servers": bootstrap, "group.id": "classic-" + tag, "log_level": 0,
                        "enable.auto.commit": False})
    classic.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    classic.commit(offsets=[TopicPartition(topic, p, 1) for p in range(PARTITIONS)], asynchronous=False)
    classic.close()
    return topic, "k848-" + tag, "classic-" + tag


def facts(bootstrap: str, kafka: bool = False) -> dict:
    topic, group, classic = scene(bootstrap)
    out: dict = {}
    members = Members(bootstrap, group, topic, 2)
    try:
        wait_for(members.assigned, lambda a: [len(x) for x in a] == [3, 3])
        members.commit()
        stable = wait_for(lambda: rows(bootstrap, f"describe-group {group} --state --verbose"),
                          lambda r: r[0]["state"] == "Stable" and r[0]["group_epoch"] == r[0]["target_assignment_epoch"])
        s = stable[0]
        out["state"] = (s["state"], s["assignment_strategy"], s["members"], s["type"], s["group_epoch"] >= 2)
        listed = {g["group"]: g for g in rows(bootstrap, "list-groups")}
        conn = ConnectionManager(bootstrap)
        try:   # the REPL's metadata cache (completion) lists both types
            out["cached"] = {group, classic} <= set(conn.refresh().groups)
        finally:
            conn.close()
        out["listed"] = sorted((g["type"], g["protocol_type"], g["state"], g["members"])
                               for gid, g in listed.items() if gid in (group, classic))
        out["type consumer"] = sorted(g["group"] for g in rows(bootstrap, "list-groups --type consumer")
                                      if g["group"] in (group, classic)) == [group]
        out["type classic"] = sorted(g["group"] for g in rows(bootstrap, "list-groups --group-type classic")
                                     if g["group"] in (group, classic)) == [classic]
        verbose = rows(bootstrap, f"describe-group {group} --members --verbose")
        out["members"] = sorted((m["partitions"], m["current_epoch"] == s["group_epoch"],
                                 m["target_epoch"] == s["target_assignment_epoch"], m["reconciled"],
                                 m["subscription"] == [topic], m["assignment"] == m["target_assignment"],
                                 m["client_id"]) for m in verbose)
        offsets = rows(bootstrap, f"describe-group {group}", "offsets")
        out["offsets"] = sorted((o["partition"], o["current_offset"], o["log_end_offset"], o["lag"],
                                 o["consumer_id"] in {m["consumer_id"] for m in verbose}) for o in offsets)
        code, _, err = sh(bootstrap, f"reset-offsets --group {group} --topic {topic} --to-earliest --execute --yes")
        out["reset while active"] = (code, err.strip().replace(group, "G"))
        code, _, err = sh(bootstrap, f"delete-group {group} --yes")
        out["delete while active"] = (code, "active member" in err)
        out["kafka tool"] = kafka_tool_facts(bootstrap, group) if kafka else None
        out["ours for the tool"] = ours_for_tool(verbose, s) if kafka else None
    finally:
        members.close()
    wait_for(lambda: rows(bootstrap, f"describe-group {group} --state"), lambda r: r[0]["state"] == "Empty")
    out["reset"] = [r["new_offset"] for r in rows(
        bootstrap, f"reset-offsets --group {group} --topic {topic} --to-earliest --execute --yes")]
    out["after reset"] = sorted(o["current_offset"] for o in rows(bootstrap, f"describe-group {group}", "offsets"))
    code, out_text, err = sh(bootstrap, f"delete-offsets --group {group} --topic {topic}:0 --yes -o json")
    out["delete offsets"] = (code, [(r["partition"], r["status"]) for r in json_rows(out_text)] if code == 0 else err)
    for gid in (group, classic):
        code, _, err = sh(bootstrap, f"delete-group {gid} --yes")
        out[f"delete {'consumer' if gid == group else 'classic'}"] = (code, err.strip().replace(gid, "G"))
    code, _, err = sh(bootstrap, f"describe-group {group}")
    out["after delete"] = (code, err.strip().replace(group, "G"))
    return out


def kafka_tool_facts(bootstrap: str, group: str) -> dict:
    """Kafka's kafka-consumer-groups --describe --members --verbose and --state --verbose."""
    tool = "consumer.group.ConsumerGroupCommand"
    members = java_client.run(tool, "--bootstrap-server", bootstrap, "--describe", "--group", group, "--members",
                              "--verbose")
    state = java_client.run(tool, "--bootstrap-server", bootstrap, "--describe", "--group", group, "--state",
                            "--verbose")
    assert members.returncode == 0 and state.returncode == 0, members.stderr + state.stderr
    table = [line.split() for line in members.stdout.splitlines() if line.strip()]
    header, body = table[0], table[1:]
    picked = sorted((r[header.index("CONSUMER-ID")], r[header.index("#PARTITIONS")], r[header.index("CURRENT-EPOCH")],
                     r[header.index("TARGET-EPOCH")]) for r in body)
    [state_header, state_row] = [line for line in state.stdout.splitlines() if line.strip()]
    values = state_row.split()
    return {"members": picked, "state": (values[-5], values[-4], values[-3], values[-2], values[-1])}


def ours_for_tool(verbose: list[dict], s: dict) -> dict:
    picked = sorted((m["consumer_id"], str(m["partitions"]), str(m["current_epoch"]), str(m["target_epoch"]))
                    for m in verbose)
    return {"members": picked, "state": (s["assignment_strategy"], s["state"], str(s["group_epoch"]),
                                         str(s["target_assignment_epoch"]), str(s["members"]))}


def test_consumer_groups_on_the_sandbox_and_kafka(kafka4, sandbox3):
    real, ours = facts(kafka4.bootstrap, kafka=True), facts(sandbox3.bootstrap)
    assert real["kafka tool"] == real["ours for the tool"]
    assert ours["state"] == ("Stable", "uniform", 2, "consumer", True)
    assert ours["listed"] == [("classic", None, "Empty", 0), ("consumer", "consumer", "Stable", 2)]
    assert ours["type consumer"] and ours["type classic"] and ours["cached"]
    assert [m[:6] for m in ours["members"]] == [(3, True, True, True, True, True)] * 2
    assert ours["offsets"] == [(p, 2, 5, 3, True) for p in range(PARTITIONS)]
    assert ours["reset while active"][0] == 1 and "is inactive" in ours["reset while active"][1]
    assert ours["delete while active"] == (1, True)
    assert ours["reset"] == [0] * PARTITIONS and ours["after reset"] == [0] * PARTITIONS
    assert ours["delete consumer"] == (0, "Deleted consumer group 'G'.")
    for k in ("kafka tool", "ours for the tool"):
        real.pop(k)
        ours.pop(k)
    assert ours == real


def test_classic_group_verbose_state(kafka4):
    """describe-group --state --verbose of a classic group: its type, no KIP-848 epochs."""
    topic, group, classic = scene(kafka4.bootstrap)
    tables = json_tables(sh(kafka4.bootstrap, f"describe-group {classic} --state --verbose -o json")[1])
    [row] = tables["groups"]
    assert row["type"] == "classic" and row["group_epoch"] is None and row["target_assignment_epoch"] is None
    assert sh(kafka4.bootstrap, f"delete-group {classic} --yes")[0] == 0
