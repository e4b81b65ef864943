"""Share and streams group commands: on Kafka 4.4 a share group made by Kafka's own console share
consumer (ConsoleShareConsumer from the jars) is listed, described (start offsets and lag,
members, state) as Kafka's kafka-share-groups describes it, and deleted; on a 3.9 cluster, which
lacks both group types, every such command says so in one line, exit 1. Both types on the 4.4
sandbox: tests/test_share_clients.py, tests/test_streams_groups_cmd.py."""

from __future__ import annotations

import subprocess
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.connection.manager import ConnectionManager
from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client
from tests.test_consumer_groups_cmd import rows, wait_for
from tests.test_transactions_cmd import sh

COMMANDS = {"share": ["list-share-groups", "describe-share-group g", "describe-share-group g --members",
                      "describe-share-group g --state", "delete-share-group g --yes",
                      "reset-share-group-offsets --group g --all-topics --to-latest",
                      "delete-share-group-offsets --group g --topic t --yes"],
            "streams": ["list-streams-groups", "describe-streams-group g", "describe-streams-group g --members",
                        "describe-streams-group g --state", "delete-streams-group g --yes",
                        "reset-streams-group-offsets --group g --all-input-topics --to-earliest",
                        "delete-streams-group-offsets --group g --all-input-topics --yes"]}


def test_a_3_9_cluster_says_it_lacks_the_group_types():
    with Sandbox(brokers=1, kafka_version="3.9") as s:
        for kind, lines in COMMANDS.items():
            for line in lines:
                assert sh(s.bootstrap, line)[0::2] == (1, f"{kind} groups need Kafka 4.1 or later; this cluster is 3.9.\n"), line


def share_tool(bootstrap: str, *args: str) -> list[list[str]]:
    done = java_client.run("consumer.group.ShareGroupCommand", "--bootstrap-server", bootstrap, *args)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def test_share_group_on_kafka(kafka4):
    b = kafka4.bootstrap
    topic, group = "sh-" + uuid.uuid4().hex[:8], "sg-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    code, _, err = sh(b, f"alter-configs --entity-type groups --entity-name {group} "
                         "--add-config share.auto.offset.reset=earliest")
    assert code == 0, err
    producer = Producer({"bootstrap.servers": b, "log_level": 0})
    for i in range(10):
        producer.produce(topic, str(i).encode(), partition=i % 2)
    producer.flush(30)
    consumer = subprocess.Popen(java_client.command("consumer.ConsoleShareConsumer", "--bootstrap-server", b,
                                                    "--topic", topic, "--group", group),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        wait_for(lambda: [g["group"] for g in rows(b, "list-share-groups")], lambda ids: group in ids)
        conn = ConnectionManager(b)
        try:   # the REPL's metadata cache lists groups of every type: a share group completes too
            assert group in conn.refresh().groups
        finally:
            conn.close()
        state = wait_for(lambda: rows(b, f"describe-share-group {group} --state --verbose"),
                         lambda r: r and r[0]["state"] == "Stable" and r[0]["members"] == 1)[0]
        assert state["assignor"] == "simple" and state["group_epoch"] >= 1
        listed = [g for g in rows(b, "list-groups --type share") if g["group"] == group]
        assert [(g["type"], g["state"], g["members"]) for g in listed] == [("share", "Stable", 1)]   # not "-"
        [member] = wait_for(lambda: rows(b, f"describe-share-group {group} --members --verbose"),
                            lambda r: len(r) == 1 and r[0]["partitions"] == 2)
        assert member["subscription"] == [topic] and member["member_epoch"] >= 1
        assert consumer.stdout is not None
        delivered = [consumer.stdout.readline() for _ in range(10)]   # the share consumer printed every record
        assert sorted(int(v) for v in delivered) == list(range(10))

        def both() -> tuple[list, list]:
            ours = sorted((o["partition"], o["start_offset"], o["lag"]) for o in rows(b, f"describe-share-group {group}"))
            table = share_tool(b, "--describe", "--group", group, "--offsets")
            header = table[0]
            theirs = sorted((int(r[header.index("PARTITION")]), int(r[header.index("START-OFFSET")]),
                             int(r[header.index("LAG")])) for r in table[1:])
            return ours, theirs
        ours, theirs = wait_for(both, lambda pair: pair[0] == pair[1])   # the same facts at the same moment
        assert [p for p, _, _ in ours] == [0, 1]
        code, _, err = sh(b, f"delete-share-group {group} --yes")
        assert code == 1 and "1 active member(s)" in err
    finally:
        consumer.terminate()
        consumer.wait(30)
    wait_for(lambda: rows(b, f"describe-share-group {group} --state")[0]["members"], lambda n: n == 0)
    code, _, err = sh(b, f"delete-share-group {group} --yes")
    assert (code, err.strip()) == (0, f"Deleted share group '{group}'.")
    code, _, err = sh(b, f"describe-share-group {group}")
    assert code == 1 and "does not exist" in err


def test_share_reset_plans_equal_kafkas_tool(kafka4, tmp_path):
    """reset-share-group-offsets --export gives the CSV kafka-share-groups --reset-offsets --export
    gives, for each reset specifier Kafka's tool has (both clamp an offset past the log end);
    --from-file reads it back; --execute applies it."""
    from tests.test_share_clients import _consume
    b = kafka4.bootstrap
    topic, group = "sr-" + uuid.uuid4().hex[:8], "sr-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    assert sh(b, f"alter-configs --entity-type groups --entity-name {group} --add-config share.auto.offset.reset=earliest")[0] == 0
    producer = Producer({"bootstrap.servers": b, "log_level": 0})
    for i in range(10):
        producer.produce(topic, str(i).encode(), partition=i % 2)
    producer.flush(30)
    _consume(b, topic, group, 10)
    wait_for(lambda: rows(b, f"describe-share-group {group} --state")[0]["members"], lambda n: n == 0)
    assert sh(b, f"reset-share-group-offsets --group {group} --topic {topic}:1 --to-offset 2 --execute")[0] == 0
    for spec in ("--to-current", "--to-earliest", "--to-latest", "--to-offset 3", "--to-offset 99",
                 "--to-datetime 2020-01-01T00:00:00.000"):
        code, ours, err = sh(b, f"reset-share-group-offsets --group {group} --topic {topic} {spec} --export")
        assert code == 0, err
        done = java_client.run("consumer.group.ShareGroupCommand", "--bootstrap-server", b, "--reset-offsets",
                               "--group", group, "--topic", topic, *spec.split(), "--export", "--dry-run")
        assert done.returncode == 0, done.stderr
        theirs = [line for line in done.stdout.splitlines() if line.count(",") == 2]
        assert sorted(ours.splitlines()) == sorted(theirs) and len(theirs) == 2, spec   # theirs in HashMap order
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{topic},0,1\n{topic},1,4\n")
    code, ours, err = sh(b, f"reset-share-group-offsets --group {group} --from-file {plan} --export")
    assert (code, ours) == (0, plan.read_text()), err
    code, _, err = sh(b, f"reset-share-group-offsets --group {group} --from-file {plan} --execute")
    assert (code, err) == (0, f"Reset 2 start offset(s) of share group '{group}'.\n")
    assert sorted((r["partition"], r["start_offset"]) for r in rows(b, f"describe-share-group {group}")) == [(0, 1), (1, 4)]
