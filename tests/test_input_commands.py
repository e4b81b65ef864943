"""What a command line asks of the shell before it runs: secrets kept out of clusters.json, the
topic context, confirmations that name their targets. Lines run in-process through the runner,
one-shot (no terminal) unless a test gives the session a confirm function as the REPL does."""

from __future__ import annotations

import io
import json
import os
import stat

import pytest


from kafka_shell.face.runner import run_line
from kafka_shell.connection.session import Session, Target


def oneshot(line: str, target: Target | None = None, **session_attrs) -> tuple[int, str, str]:
    s = Session(target=target, stdout=io.StringIO(), stderr=io.StringIO(), **session_attrs)
    try:
        code = run_line(s, line)
    finally:
        s.close()
    return code, s.stdout.getvalue(), s.stderr.getvalue()


def test_add_cluster_keeps_secrets_out_of_the_file_unless_told(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path))
    path = tmp_path / "clusters.json"
    code, out, err = oneshot("add-cluster p --bootstrap-server h:1 -X sasl.username=me -X sasl.password=hunter2")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "sasl.password" in err and "${" in err and "--store-secret" in err and "hunter2" not in err
    assert not path.exists()
    code, _, err = oneshot("add-cluster p --bootstrap-server h:1 -X 'sasl.password=${P_PASSWORD}'")
    assert code == 0, err
    assert json.loads(path.read_text())["clusters"]["p"]["properties"] == {"sasl.password": "${P_PASSWORD}"}
    code, _, err = oneshot("add-cluster q --bootstrap-server h:1 -X sasl.password=hunter2 --store-secret")
    assert code == 0, err
    assert json.loads(path.read_text())["clusters"]["q"]["properties"] == {"sasl.password": "hunter2"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_topic_context_reaches_every_command_that_takes_a_topic(sandbox):
    from tests.output import json_rows
    s = Session(target=Target(sandbox.bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
    try:
        for line in ("create-topic --topic orders --partitions 2 --replication-factor 1",
                     "create-topic --topic other --partitions 1 --replication-factor 1", "topic orders"):
            assert run_line(s, line) == 0, s.stderr.getvalue()
        start = len(s.stdout.getvalue())
        assert run_line(s, "describe-log-dirs -o json") == 0, s.stderr.getvalue()
        rows = json_rows(s.stdout.getvalue()[start:], "partitions")
        assert {r["topic"] for r in rows} == {"orders"}             # filtered to the context topic
        start = len(s.stdout.getvalue())
        assert run_line(s, "reassign-partitions --generate --broker-list 1,2,3") == 0, s.stderr.getvalue()
        plan = s.stdout.getvalue()[start:]
        assert '"orders"' in plan and '"other"' not in plan
        assert run_line(s, "reassign-partitions --list") == 0, s.stderr.getvalue()   # no --topic there
    finally:
        s.close()


def test_the_context_topic_narrows_only_reads_of_every_topic_and_says_so(sandbox):
    """Issue 31: a cluster-wide check (a health filter, a broker's partitions, a group's
    description) is never narrowed by the context topic; a read it does narrow says so."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    from tests.output import json_rows
    note = "only topic orders: the context topic; 'topic' alone leaves it"
    s = Session(target=Target(sandbox.bootstrap, timeout_s=5), stdout=io.StringIO(), stderr=io.StringIO())

    def rows(line: str, table: str) -> tuple[list[dict], list[str]]:
        out, err = len(s.stdout.getvalue()), len(s.stderr.getvalue())
        assert run_line(s, line + " -o json") == 0, s.stderr.getvalue()
        return json_rows(s.stdout.getvalue()[out:], table), s.stderr.getvalue()[err:].splitlines()
    try:
        for line in ("create-topic --topic orders --replica-assignment 1,2",
                     "create-topic --topic payments --replica-assignment 3", "topic orders"):
            assert run_line(s, line) == 0, s.stderr.getvalue()
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 0})
        committed = [TopicPartition("orders", 0, 1), TopicPartition("orders", 1, 1), TopicPartition("payments", 0, 0)]
        for f in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("app", committed)]).values():
            f.result(10)
        found, said = rows("describe-group app", "offsets")
        assert {r["topic"] for r in found} == {"orders", "payments"} and note not in said
        sandbox.stop_broker(3)   # payments-0 has no leader now
        found, said = rows("describe-topic", "partitions")
        assert {r["topic"] for r in found} == {"orders"} and said == [note]
        found, said = rows("describe-topic --unavailable-partitions", "partitions")
        assert [(r["topic"], r["partition"]) for r in found] == [("payments", 0)] and note not in said
        found, said = rows("describe-log-dirs", "partitions")
        assert {r["topic"] for r in found} == {"orders"} and said[0] == note
        found, said = rows("describe-log-dirs --broker-list 1,2", "partitions")
        assert {r["topic"] for r in found} >= {"orders"} and note not in said
        _, said = rows("find-hanging-transactions --broker-id 1", "hanging")
        assert note not in said
        assert run_line(s, "topic") == 0
        found, said = rows("describe-topic --exclude-internal", "topics")
        assert {r["topic"] for r in found} == {"orders", "payments"} and note not in said
    finally:
        s.close()


@pytest.mark.parametrize("name", ["alter-topic", "delete-topic", "describe-topic", "describe-log-dirs",
                                  "reassign-partitions", "elect-leaders", "alter-configs"])
def test_help_says_the_context_topic_one_way(name):
    from kafka_shell.declarations.parsing import help_text
    from kafka_shell.declarations.registry import load_commands
    text = help_text(load_commands().commands[name], width=1000).splitlines()   # one line per option
    line = next(row for row in text if row.strip().startswith("--topic "))
    assert ("(default: the context topic)" in line or ", or the context topic)" in line) and "(required)" not in line


def test_confirmations_name_targets_and_refuse_missing_ones_before_asking(sandbox):
    asked: list[str] = []
    s = Session(target=Target(sandbox.bootstrap), stdout=io.StringIO(), stderr=io.StringIO(),
                interactive=True, confirm=lambda question: asked.append(question) is None and False)
    try:
        for name, partitions in (("t1", 1), ("t2", 2), ("t3", 3), ("keep", 1)):
            assert run_line(s, f"create-topic --topic {name} --partitions {partitions} --replication-factor 1") == 0
        assert run_line(s, "delete-topic --topic 't.*'") == 1                      # answered no
        assert asked == ["Delete 3 topics (t1, t2, t3; 6 partitions)?"]
        assert run_line(s, "delete-topic --topic nosuch") == 1                    # refused, never asked
        assert len(asked) == 1 and 'Topic "nosuch" does not exist' in s.stderr.getvalue()
        assert run_line(s, "elect-leaders --election-type unclean --topic t2") == 1
        assert asked[1] == ("Run an unclean election for 2 partitions (t2-0, t2-1), which may lose "
                            "acknowledged records?")
        assert run_line(s, "elect-leaders --election-type preferred --topic t2") == 0   # asks nothing
        assert len(asked) == 2
    finally:
        s.close()
    assert set(topics_of(sandbox)) >= {"t1", "t2", "t3", "keep"}               # nothing deleted


def test_one_shot_needs_yes_for_unclean_elections_and_deletions(sandbox):
    target = Target(sandbox.bootstrap)
    assert oneshot("create-topic --topic t --partitions 2 --replication-factor 1", target)[0] == 0
    code, out, err = oneshot("elect-leaders --election-type unclean --topic t", target)
    assert code == 2 and out == "" and err == (
        "Run an unclean election for 2 partitions (t-0, t-1), which may lose acknowledged records: "
        "add --yes to confirm\n")
    code, _, err = oneshot("elect-leaders --election-type unclean --topic t --yes", target)
    assert code == 0, err
    code, _, err = oneshot("delete-topic --topic 'nosuch.*'", target)
    assert code == 1 and "No topic matches nosuch.*" in err and "--yes" not in err
    code, _, err = oneshot("delete-topic --topic t", target)
    assert code == 2 and err == "Delete 1 topic (t; 2 partitions): add --yes to confirm\n"
    assert "t" in topics_of(sandbox)


def topics_of(sandbox) -> list[str]:
    return sandbox.call(lambda cluster: list(cluster.topics), sandbox.cluster)


def test_confirmed_deletion_deletes_what_it_named(sandbox):
    target = Target(sandbox.bootstrap)
    assert oneshot("create-topic --topic t1 --partitions 1 --replication-factor 1", target)[0] == 0
    assert oneshot("create-topic --topic t2 --partitions 1 --replication-factor 1", target)[0] == 0
    asked: list[str] = []
    code, _, err = oneshot("delete-topic --topic 't.*'", target, interactive=True,
                           confirm=lambda question: asked.append(question) is None)
    assert code == 0, err
    assert asked == ["Delete 2 topics (t1, t2; 2 partitions)?"]
    assert "Deleted topic t1." in err and "Deleted topic t2." in err
    assert not {"t1", "t2"} & set(topics_of(sandbox))
