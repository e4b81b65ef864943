"""Faults on real Apache Kafka with a REPL open the whole time (kafka-shell in a pseudo-terminal,
as a user would have it): a broker killed with SIGKILL and started again; the active controller
of a three-controller quorum killed; a partition made offline and recovered with
unclean-recovery's stock-Kafka path; a reassignment whose new replica's broker dies. After each
change the REPL's next command shows it, the controller change is said once, and every command
ends within --timeout (the prompt is back by then; a margin covers a loaded machine).

Each test restores the shared cluster it breaks (`with cluster.restored():`) and deletes its topic.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.real_kafka import RealKafka
from tests.test_repl import Terminal

TIMEOUT_S = 10          # the REPL's --timeout
MARGIN_S = 5            # rendering, and a loaded machine's scheduling
SETTLE_S = 90.0         # how long Kafka may take to notice a death (session timeout, elections)
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\r")
LINE_TAKEN = "\x1b[?2004l"   # bracketed paste off: prompt_toolkit has handed the typed line over


class Repl:
    """kafka-shell's REPL on a real cluster; `run` types a command and returns its JSON lines."""

    def __init__(self, cluster: RealKafka, data_dir: Path):
        self.term = Terminal(data_dir, ("--bootstrap-server", cluster.bootstrap, "--timeout", str(TIMEOUT_S)),
                             timeout=TIMEOUT_S + MARGIN_S)
        self.transcript = ANSI.sub("", self.term.prompt())   # "Connected to cluster ... (KRaft, ...)."

    def run(self, line: str, answer: str | None = None) -> str:
        """Type `line` (and `answer` at a confirmation prompt); the text it printed, ANSI codes
        removed. The prompt must be back within --timeout (and the margin)."""
        start = time.monotonic()
        child = self.term.child
        child.send(line + "\r")
        # The prompt hands the line over (a redraw of the old prompt, as the toolbar refreshes, comes
        # before this and is no answer to the line); what comes before it are notices.
        child.expect_exact(LINE_TAKEN)
        self.transcript += ANSI.sub("", child.before)
        text = ""
        if answer is not None:
            child.expect_exact("[y/N]")
            text += child.before + child.after
            child.send(answer + "\r")
        text = ANSI.sub("", text + self.term.prompt())
        elapsed = time.monotonic() - start
        assert elapsed <= TIMEOUT_S + MARGIN_S, f"{line!r} took {elapsed:.1f} s with --timeout {TIMEOUT_S}"
        self.transcript += text
        return text

    def rows(self, line: str, table: str) -> list[dict]:
        """`line -o jsonl`: the rows of `table`."""
        out = self.run(f"{line} -o jsonl")
        rows = [row for row in (json.loads(x) for x in out.splitlines() if x.startswith("{"))
                if row.pop("table", None) == table]
        assert rows, f"{line}: no {table} rows in {out!r}"
        return rows

    def close(self) -> None:
        if self.term.child.isalive():
            self.term.child.sendcontrol("d")
            try:
                self.term.child.expect(pexpect.EOF, timeout=10)
            finally:
                self.term.child.close(force=True)


@pytest.fixture
def repl_on(tmp_path):
    repls: list[Repl] = []

    def start(cluster: RealKafka) -> Repl:
        repls.append(Repl(cluster, tmp_path / "data"))
        return repls[-1]

    yield start
    for r in repls:
        r.close()


def wait_until(what: str, done: Callable[[], bool], timeout_s: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.25)


def admin(cluster: RealKafka) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})


def partition(cluster: RealKafka, topic: str, index: int = 0):
    """The partition's metadata now (leader, replicas, isrs), read by confluent-kafka."""
    try:
        return admin(cluster).list_topics(topic, timeout=5).topics[topic].partitions[index]
    except Exception:  # noqa: BLE001 - the cluster is settling
        return None


def in_isr(cluster: RealKafka, topic: str, index: int, broker: int) -> bool:
    p = partition(cluster, topic, index)
    return p is not None and broker in p.isrs


def live_brokers(cluster: RealKafka) -> set[int]:
    try:
        return set(admin(cluster).list_topics(timeout=5).brokers)
    except Exception:  # noqa: BLE001 - the cluster is settling
        return set()


def produce(cluster: RealKafka, topic: str, count: int, size: int = 10) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 0,
                         "linger.ms": 20, "batch.size": 1_000_000})
    for i in range(count):
        producer.produce(topic, value=f"{i:0{size}d}".encode())
    assert producer.flush(60) == 0


def test_a_broker_killed_and_started_while_the_repl_is_open(kafka4, repl_on):
    topic = "faults-broker-kill"
    repl = repl_on(kafka4)
    repl.run(f"create-topic --topic {topic} --replica-assignment 2:1:3,3:2:1")
    with kafka4.restored():
        kafka4.kill(2)
        repl.run(f"describe-topic --topic {topic}")       # whatever Kafka knows yet: it ends in time
        wait_until("broker 2 fenced", lambda: live_brokers(kafka4) == {1, 3})
        assert [b["id"] for b in repl.rows("list-brokers", "brokers")] == [1, 3]
        parts = repl.rows(f"describe-topic --topic {topic}", "partitions")
        assert parts[0]["leader"] == 1 and 2 not in parts[0]["isr"]
        assert parts[1]["leader"] == 3 and 2 not in parts[1]["isr"]
        kafka4.start_node(2)
        wait_until("broker 2 back in the ISR", lambda: all(in_isr(kafka4, topic, i, 2) for i in (0, 1)))
        assert [b["id"] for b in repl.rows("list-brokers", "brokers")] == [1, 2, 3]
        parts = repl.rows(f"describe-topic --topic {topic}", "partitions")
        assert sorted(parts[0]["isr"]) == [1, 2, 3] and sorted(parts[1]["isr"]) == [1, 2, 3]
    repl.run(f"delete-topic --topic {topic} --yes")


def test_the_active_controller_killed_while_the_repl_is_open(kafka4_quorum, repl_on):
    cluster = kafka4_quorum
    repl = repl_on(cluster)
    match = re.search(r"active controller (\d+) at", repl.transcript)
    assert match, repl.transcript
    old = int(match.group(1))
    [row] = repl.rows("describe-controller", "controller")
    assert row["id"] == old
    with cluster.restored():
        cluster.kill(old)
        # Kafka elects another voter (a few election timeouts); the REPL is only asked afterwards.
        wait_until("a new active controller", lambda: quorum_leader(cluster) not in (None, old))
        new = quorum_leader(cluster)
        [row] = repl.rows("describe-controller", "controller")
        assert row["id"] == new
        [status] = repl.rows("describe-quorum", "status")
        assert status["leader_id"] == new
        repl.run("create-topic --topic faults-controller --partitions 2 --replication-factor 2")
        assert {t["topic"] for t in repl.rows("list-topics", "topics")} >= {"faults-controller"}
        said = re.findall(r"Active controller changed from (\d+) to (\d+)", repl.transcript)
        assert said == [(str(old), str(new))], repl.transcript
    repl.run("delete-topic --topic faults-controller --yes")
    assert len(re.findall(r"Active controller changed", repl.transcript)) == 1


def quorum_leader(cluster: RealKafka) -> int | None:
    """The quorum leader as a fresh one-shot kafka-shell reads it (DescribeQuorum)."""
    from tests.test_oneshot import shell
    p = shell("--bootstrap-server", cluster.bootstrap, "--timeout", "5", "--output", "json",
              "--command", "describe-quorum")
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)["status"][0]["leader_id"]


def test_an_offline_partition_recovered_by_unclean_recovery_in_the_repl(kafka4, repl_on):
    """unclean-recovery's stock-Kafka path (no GetReplicaLogInfo): the log ends from ListOffsets
    with replica id -2, then a reorder-only reassignment and an unclean election."""
    topic = "faults-offline"
    repl = repl_on(kafka4)
    repl.run(f"create-topic --topic {topic} --replica-assignment 2:3 --config unclean.leader.election.enable=false")
    produce(kafka4, topic, 5)
    with kafka4.restored():
        kafka4.kill(3)
        wait_until("3 out of the ISR", lambda: (p := partition(kafka4, topic)) is not None and list(p.isrs) == [2])
        produce(kafka4, topic, 7)                       # only broker 2 has these
        kafka4.kill(2)
        wait_until("broker 2 fenced", lambda: live_brokers(kafka4) == {1})
        kafka4.start_node(3)
        wait_until("broker 3 back", lambda: live_brokers(kafka4) == {1, 3})
        [offline] = repl.rows(f"describe-topic --topic {topic} --unavailable-partitions", "partitions")
        assert offline["leader"] in (None, -1, "none")
        replicas = repl.rows(f"unclean-recovery --all-offline-partitions --topic {topic} --show-replica-info", "replicas")
        by_replica = {r["replica"]: r for r in replicas}
        assert by_replica[3]["log_end_offset"] == 5 and by_replica[3]["chosen"]
        assert by_replica[2]["state"] == "fenced"
        out = repl.run(f"unclean-recovery --all-offline-partitions --topic {topic} --automated-recovery", answer="y")
        assert "elected" in out, out
        [part] = repl.rows(f"describe-topic --topic {topic}", "partitions")
        assert part["leader"] == 3 and part["replicas"] == [2, 3]   # the original order is restored
        [offset] = repl.rows(f"get-offsets --topic {topic}", "offsets")
        assert offset["offset"] == 5
    wait_until("broker 2 truncated and back in the ISR",
               lambda: (p := partition(kafka4, topic)) is not None and sorted(p.isrs) == [2, 3])
    repl.run(f"delete-topic --topic {topic} --yes")


def test_a_reassignment_whose_new_replica_dies(kafka4, repl_on, tmp_path):
    topic = "faults-reassign"
    repl = repl_on(kafka4)
    repl.run(f"create-topic --topic {topic} --replica-assignment 1:2")
    produce(kafka4, topic, 3000, size=1000)             # about 3 MB to copy to the new replica
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3]}]}))
    with kafka4.restored():
        # 100 kB/s: the copy takes half a minute, so broker 3 dies in the middle of it.
        out = repl.run(f"reassign-partitions --execute --reassignment-json-file {plan} --throttle 100000")
        assert "Successfully started" in out, out
        kafka4.kill(3)
        [status] = repl.rows(f"reassign-partitions --verify --reassignment-json-file {plan}", "status")
        assert status["status"] == "in progress", status
        [moving] = repl.rows("reassign-partitions --list", "reassignments")
        assert moving["adding"] == [3] and moving["removing"] == [1]
        wait_until("broker 3 fenced", lambda: live_brokers(kafka4) == {1, 2})
        [status] = repl.rows(f"reassign-partitions --verify --reassignment-json-file {plan}", "status")
        assert status["status"] == "in progress", status
        kafka4.start_node(3)
        # A higher throttle lets the copy finish now (--additional: the move in progress is ours).
        repl.run(f"reassign-partitions --execute --reassignment-json-file {plan} --additional --throttle 1000000000")

        def completed() -> bool:
            [row] = repl.rows(f"reassign-partitions --verify --reassignment-json-file {plan}", "status")
            return row["status"] == "completed"
        wait_until("the move completed", completed)
        [part] = repl.rows(f"describe-topic --topic {topic}", "partitions")
        assert part["replicas"] == [2, 3] and sorted(part["isr"]) == [2, 3]
        for broker in (1, 2, 3):
            configs = {c["name"] for c in repl.rows(f"describe-configs --broker {broker}", "configs")}
            assert not configs & {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
    repl.run(f"delete-topic --topic {topic} --yes")
