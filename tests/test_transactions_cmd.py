"""Transaction commands (kafka-transactions) on the sandbox and on real Apache Kafka 4.4, where
Kafka's own TransactionsCommand runs beside them on the same cluster.

A hanging transaction is made as it happens in the field (KAFKA-14402): with the brokers'
transaction.partition.verification.enable off, a transactional producer writes into a partition
it never added to its transaction, then dies; its coordinator never learns of the partition, so
no marker will end that transaction, and read_committed consumers stop at it. A second producer
keeps a proper open transaction on the same partition: open, but not hanging.
"""

from __future__ import annotations

import io
import time
import warnings
from dataclasses import dataclass

import pytest

from kafka_shell.face.runner import run_line
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests import txn_scenarios
from kafka_shell.declarations.render import snake_case
from tests.clients import java_client
from tests.output import json_rows

VERIFICATION = "transaction.partition.verification.enable"


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


def sh(bootstrap: str, line: str, interactive: bool = False, answer: bool = True) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(bootstrap, timeout_s=15), stdout=out, stderr=err, interactive=interactive)
    if interactive:
        session.confirm = lambda question: (err.write(question + "\n"), answer)[1]
    try:
        return run_line(session, line), out.getvalue(), err.getvalue()
    finally:
        session.close()


def rows(bootstrap: str, line: str, table: str | None = None) -> list[dict]:
    code, out, err = sh(bootstrap, line + " -o json")
    assert code == 0, err
    return json_rows(out, table)


def _verification(bootstrap: str, on: bool) -> None:
    """The brokers' default (dynamic) partition verification, set with the shell's own alter-configs."""
    change = f"--delete-config {VERIFICATION}" if on else f"--add-config {VERIFICATION}=false"
    code, _, err = sh(bootstrap, f"alter-configs --entity-type brokers --entity-default {change}")
    assert code == 0, err


@dataclass
class Scene:
    topic: str
    hanging_id: str          # its producer wrote without adding the partition, then died
    hanging_pid: int
    hanging_epoch: int
    open_id: str             # a proper open transaction on the same partition
    open_pid: int
    open_epoch: int
    leader: int
    cluster: txn_scenarios.Cluster


def hanging_scene(bootstrap: str) -> Scene:
    c = txn_scenarios.Cluster(bootstrap)
    tid, other = "hang-" + c.topic, "open-" + c.topic
    init = c.init_producer_id(tid)
    pid, epoch = init["producer_id"], init["producer_epoch"]
    _verification(bootstrap, False)
    try:
        deadline = time.monotonic() + 30   # until every broker has the dynamic change
        while (written := c.produce(txn_scenarios.batch(0, epoch, pid, 2, transactional=True),
                                    transactional_id=tid)) != (0, 0):
            assert time.monotonic() < deadline, f"verification still on: {written}"
            time.sleep(0.2)
    finally:
        _verification(bootstrap, True)
    init2 = c.init_producer_id(other)
    pid2, epoch2 = init2["producer_id"], init2["producer_epoch"]
    assert c.add_partitions(other, pid2, epoch2) == 0
    assert c.produce(txn_scenarios.batch(0, epoch2, pid2, 1, transactional=True), transactional_id=other) == (0, 2)
    leader = c.admin.list_topics(c.topic, timeout=10).topics[c.topic].partitions[0].leader
    return Scene(c.topic, tid, pid, epoch, other, pid2, epoch2, leader, c)


def kafka_tool(bootstrap: str, *args: str) -> list[dict]:
    """Kafka's kafka-transactions output (a tab-separated table with a header) as rows."""
    done = java_client.run("TransactionsCommand", "--bootstrap-server", bootstrap, *args)
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines() if line.strip()]
    header = [snake_case(h.strip()) for h in lines[0]]   # the shell's json spelling of Kafka's words
    return [dict(zip(header, (v.strip() for v in line))) for line in lines[1:]]


def shell_facts(bootstrap: str, s: Scene) -> dict:
    """What the shell says of the scene, reduced to what must agree on any cluster."""
    producers = rows(bootstrap, f"describe-producers --topic {s.topic} --partition 0")
    hanging = rows(bootstrap, f"find-hanging-transactions --topic {s.topic} --max-transaction-timeout 0")
    by_broker = rows(bootstrap, f"find-hanging-transactions --broker-id {s.leader} --max-transaction-timeout 0")
    described = rows(bootstrap, f"describe-transaction --transactional-id {s.open_id}")[0]
    listed = rows(bootstrap, f"list-transactions --producer-id {s.hanging_pid},{s.open_pid}")
    return {
        "producers": sorted((p["producer_id"] == s.hanging_pid, p["producer_epoch"] - s.hanging_epoch
                             if p["producer_id"] == s.hanging_pid else p["producer_epoch"] - s.open_epoch,
                             p["last_sequence"], p["current_transaction_start_offset"]) for p in producers),
        "hanging": [(h["topic"] == s.topic, h["partition"], h["producer_id"] == s.hanging_pid, h["start_offset"],
                     h["duration_min"]) for h in hanging],
        "hanging on the leader": [h["producer_id"] for h in by_broker if h["topic"] == s.topic] == [s.hanging_pid],
        "open": (described["transaction_state"], described["producer_id"] == s.open_pid,
                 described["topic_partitions"] == f"{s.topic}-0", described["current_transaction_start_time_ms"] > 0),
        "listed": sorted((t["transactional_id"] == s.hanging_id, t["transaction_state"]) for t in listed),
        "pattern": [t["transactional_id"] for t in rows(
            bootstrap, f"list-transactions --transactional-id-pattern 'hang-{s.topic}'")] == [s.hanging_id],
        "state filter": s.open_id in [t["transactional_id"] for t in rows(bootstrap, "list-transactions --state Ongoing")],
    }


def abort_facts(bootstrap: str, s: Scene) -> dict:
    """abort-transaction: refused without --yes outside the REPL (naming what it would abort),
    a dry run, "no" in the REPL, then --yes; what find-hanging and describe-producers say after."""
    out: dict = {}
    line = f"abort-transaction --topic {s.topic} --partition 0 --start-offset 0"
    code, _, err = sh(bootstrap, line)
    out["without --yes"] = (code, f"producer {s.hanging_pid}" in err and f"{s.topic}-0" in err, "--yes" in err)
    code, _, err = sh(bootstrap, line + " --dry-run")
    out["dry run"] = (code, "Would abort" in err)
    code, _, err = sh(bootstrap, line, interactive=True, answer=False)
    out["answered no"] = (code, f"producer {s.hanging_pid}" in err)
    out["still hanging"] = len(rows(bootstrap, f"find-hanging-transactions --topic {s.topic} --max-transaction-timeout 0"))
    code, _, err = sh(bootstrap, line + " --yes")
    out["aborted"] = (code, err.startswith("Aborted the transaction of producer"))
    out["after: hanging"] = rows(bootstrap, f"find-hanging-transactions --topic {s.topic} --max-transaction-timeout 0")
    out["after: open starts"] = sorted(
        p["current_transaction_start_offset"] for p in rows(bootstrap, f"describe-producers --topic {s.topic} --partition 0")
        if p["current_transaction_start_offset"] is not None)
    code, _, err = sh(bootstrap, line + " --yes")
    out["again"] = (code, "Could not find any open transactions starting at offset 0" in err)
    code, _, err = sh(bootstrap, f"abort-transaction --topic {s.topic} --partition 0 --producer-id 5")
    out["producer id without epochs"] = (code, err.strip())
    code, _, err = sh(bootstrap, "find-hanging-transactions")
    out["no scope"] = (code, err.strip())
    code, _, err = sh(bootstrap, "describe-transaction --transactional-id no-such-id")
    out["unknown id"] = (code, err.strip())
    return out


def test_transactions_on_the_sandbox_and_kafka(kafka4, sandbox3):
    facts = []
    for bootstrap in (kafka4.bootstrap, sandbox3.bootstrap):
        s = hanging_scene(bootstrap)
        try:
            facts.append((shell_facts(bootstrap, s), abort_facts(bootstrap, s)))
        finally:
            s.cluster.end_and_settle(s.open_id, s.open_pid, s.open_epoch, False, 4)
            s.cluster.close()
    (kafka, kafka_abort), (ours, ours_abort) = facts
    assert ours["hanging"] == [(True, 0, True, 0, 0)]
    assert ours["open"] == ("Ongoing", True, True, True)
    assert ours["listed"] == [(False, "Ongoing"), (True, "Empty")]
    assert ours["pattern"] and ours["state filter"] and ours["hanging on the leader"]
    assert ours_abort["without --yes"] == (2, True, True) and ours_abort["dry run"] == (0, True)
    assert ours_abort["answered no"] == (1, True) and ours_abort["still hanging"] == 1
    assert ours_abort["aborted"] == (0, True) and ours_abort["after: hanging"] == []
    assert ours_abort["after: open starts"] == [2] and ours_abort["again"] == (1, True)
    assert ours_abort["producer id without epochs"][0] == 2 and ours_abort["no scope"][0] == 2
    assert ours_abort["unknown id"] == (1, "Transactional id 'no-such-id' does not exist (see list-transactions).")
    assert ours == kafka
    assert ours_abort == kafka_abort


def test_find_hanging_gives_kafka_tools_facts(kafka4):
    """The shell and Kafka's TransactionsCommand on one cluster: find-hanging, describe-producers,
    describe and list agree row by row; after Kafka's tool aborts, the shell finds nothing."""
    s = hanging_scene(kafka4.bootstrap)
    b = kafka4.bootstrap
    try:
        theirs = kafka_tool(b, "find-hanging", "--topic", s.topic, "--max-transaction-timeout", "0")
        ours = rows(b, f"find-hanging-transactions --topic {s.topic} --max-transaction-timeout 0")
        keys = ["topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch", "start_offset", "last_timestamp"]
        assert [[str(r[k]) for k in keys] for r in ours] == [[r[k] for k in keys] for r in theirs]
        assert len(ours) == 1 and ours[0]["producer_id"] == s.hanging_pid

        theirs = kafka_tool(b, "describe-producers", "--topic", s.topic, "--partition", "0")
        ours = rows(b, f"describe-producers --topic {s.topic} --partition 0")
        assert sorted([str(r["producer_id"]), str(r["producer_epoch"]), str(r["latest_coordinator_epoch"]),
                       str(r["last_sequence"]), str(r["last_timestamp"]),
                       str(r["current_transaction_start_offset"])] for r in ours) == \
            sorted([r["producer_id"], r["producer_epoch"], r["latest_coordinator_epoch"], r["last_sequence"],
                    r["last_timestamp"], r["current_transaction_start_offset"]] for r in theirs)

        [theirs_d] = kafka_tool(b, "describe", "--transactional-id", s.open_id)
        [ours_d] = rows(b, f"describe-transaction --transactional-id {s.open_id}")
        for k in ("coordinator_id", "transactional_id", "producer_id", "producer_epoch", "transaction_state",
                  "transaction_timeout_ms", "current_transaction_start_time_ms", "topic_partitions"):
            assert str(ours_d[k]) == theirs_d[k], k

        theirs_l = kafka_tool(b, "list", "--transactional-id-pattern", f".*-{s.topic}")
        ours_l = rows(b, f"list-transactions --transactional-id-pattern '.*-{s.topic}'")
        assert sorted([r["transactional_id"], str(r["coordinator"]), str(r["producer_id"]), r["transaction_state"]]
                      for r in ours_l) == \
            sorted([r["transactional_id"], r["coordinator"], r["producer_id"], r["transaction_state"]] for r in theirs_l)

        done = java_client.run("TransactionsCommand", "--bootstrap-server", b, "abort", "--topic", s.topic,
                               "--partition", "0", "--start-offset", "0")
        assert done.returncode == 0, done.stderr
        assert rows(b, f"find-hanging-transactions --topic {s.topic} --max-transaction-timeout 0") == []
    finally:
        s.cluster.end_and_settle(s.open_id, s.open_pid, s.open_epoch, False, 4)
        s.cluster.close()


def test_transactional_ids_complete_from_one_list_per_broker(sandbox3):
    """The cache's refresh lists each broker's transactional ids (ListTransactions, as it lists
    group ids), and describe-transaction's --transactional-id completes them."""
    from confluent_kafka import Producer
    from prompt_toolkit.document import Document

    from kafka_shell.declarations.registry import load_commands
    from kafka_shell.face.repl.completer import KafkaCompleter

    producer = Producer({"bootstrap.servers": sandbox3.bootstrap, "transactional.id": "orders-writer-7"})
    producer.init_transactions(30)
    session = Session(target=Target(sandbox3.bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
    try:
        snapshot = session.conn.refresh()
    finally:
        session.close()
    assert "orders-writer-7" in snapshot.transactional_ids
    completer = KafkaCompleter(load_commands(), snapshot)
    offered = [c.text for c in completer.get_completions(Document("describe-transaction --transactional-id orders-w"))]
    assert offered == ["orders-writer-7"]


def test_a_java_regex_python_warns_about_is_read_quietly(sandbox3):
    """"[[a]" is a class nested in a class in Java (it matches "a") and a set of "[" and "a" in
    Python, which warns that it may read it as Java does one day: neither the shell nor the
    sandbox passes that warning on."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": sandbox3.bootstrap, "transactional.id": "a-warned"})
    producer.init_transactions(30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a warning anywhere in the shell or the sandbox fails the command
        code, out, err = sh(sandbox3.bootstrap, "list-transactions --transactional-id-pattern '[[a]-warned' -o json")
    assert (code, err) == (0, "") and [r["transactional_id"] for r in json_rows(out)] == ["a-warned"]
