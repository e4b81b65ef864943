"""One convention for every command's output (issue 22): each command of the registry is run
with `--output json` on a sandbox that has something to show, and every table's columns are
CamelCase as Kafka's tools print them, its ids and numbers JSON integers or null, its yes/no
values JSON booleans, and its topic and directory ids as Kafka prints them (base64, not a
dashed UUID). A command left out of the walk is listed below with the reason."""

from __future__ import annotations

import io
import json
import re

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_shell.declarations.registry import load_commands
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.test_groups_cmd import commit

CAMEL = re.compile(r"[A-Z][A-Za-z0-9]*")
DASHED_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Words that stand for a value JSON has a type for (null, a boolean).
UNTYPED = {"none", "None", "null", "yes", "no", "true", "false", "*", "-"}
# ACLs' "*" is Kafka's own value, and so is cordoned.log.dirs' (every log dir of the broker).
WILDCARDS = {"Host", "Principal", "Name", "Resource", "ResourceName", "Cordoned", "CordonedBefore"}
# Columns that hold integers (or null) wherever they appear.
INTEGER = re.compile(r"(Partition|Leader|Replica|Offset|Epoch|Count|Bytes|Lag|Port|NodeId|Id|Broker|Size|Members|"
                     r"Partitions|ReplicationFactor|Throttle|Ms|Timestamp|Since|HighWatermark|Controller)$")
BOOLEAN = re.compile(r"^(Is[A-Z]\w*|Sensitive|ReadOnly|Internal|Chosen|LastIsr|ActiveController)$")
NOT_INTEGER = {"TopicId", "ClusterId", "DirectoryId", "ClientId", "MemberId", "GroupInstanceId", "TransactionalId",
               "ProducerId", "Id_", "DesignatedLeader", "TopicPartitions"}

# The walk: (line, what it shows). Lines run in order on one sandbox.
WALK = [
    "health", "list-topics", "describe-topic --topic orders", "describe-topic --under-replicated-partitions",
    "get-offsets --topic orders", "describe-configs --topic orders --all", "describe-configs --entity-default",
    "alter-configs --topic orders --add-config retention.ms=1000 --dry-run", "alter-configs --broker 1 --add-config "
    "log.cleaner.threads=2", "list-brokers", "describe-cluster", "api-versions --broker 1", "describe-controller",
    "describe-quorum --status", "describe-quorum --replication", "describe-log-dirs", "controller-history",
    "list-groups", "list-streams-groups", "list-share-groups", "describe-group app", "describe-group app --members", "describe-group app --state",
    "describe-group app --by-topic", "list-groups --lag", "copy-offsets --from-group app --to-group app-copy",
    "export-configs {tmp}/configs.json", "import-configs {tmp}/configs.json", "diff-configs --all-brokers",
    "unregister-controller --id 100 --dry-run",
    "reset-offsets --group app --topic orders --to-earliest", "consume --topic orders --from-beginning",
    "produce --topic orders x y", "delete-records --topic orders --partition 0 --before-offset 0 --yes",
    "elect-leaders --election-type preferred --all-topic-partitions --dry-run",
    "preferred-replica-leader-election --topic orders --dry-run",
    "reassign-partitions --generate --topic orders --broker-list 1,2,3", "reassign-partitions --list",
    "create-topic --topic lonely --replica-assignment 3:2 --config min.insync.replicas=2",
    "sandbox stop-broker 2", "sandbox stop-broker 3", "sandbox start-broker 2",
    "describe-topic --topic lonely", "describe-topic --unavailable-partitions",
    "unclean-recovery --all-offline-partitions --show-replica-info --dry-run", "sandbox start-broker 3",
    "rolling-restart-plan", "balance", "balance --leaders-only --dry-run", "drain-broker 1 --dry-run",
    "cordon --broker 1", "uncordon --broker 1", "undrain-broker 1 --dry-run",
    "broker-ids missing", "preferred-controller show",
    "create-acls --allow-principal User:alice --operation Read --topic orders", "describe-acls",
    "delete-acls --topic orders --yes", "alter-user-scram-credentials --add alice --mechanism SCRAM-SHA-512 "
    "--password-env ALICE_PW", "describe-user-scram-credentials",
    "alter-client-quotas --entity-type users --entity-name alice --add-config producer_byte_rate=1024",
    "describe-client-quotas", "sandbox status", "snapshot --output-dir {tmp}/snapshots",
    "add-cluster local --bootstrap-server {bootstrap}", "clusters", "use-cluster local",
    "create-topic --topic t2", "alter-topic --topic t2 --partitions 2", "delete-topic --topic t2 --yes",
    "delete-offsets --group old --topic orders --yes", "delete-group old --yes",
    "list-groups --type classic", "describe-configs --entity-type groups --entity-name app",
    # An open transaction of producer "tx" on orders-0, from {txn_offset} (made by open_transaction).
    "list-transactions", "describe-transaction --transactional-id tx", "describe-producers --topic orders --partition 0",
    "find-hanging-transactions --topic orders --max-transaction-timeout 1",
    "abort-transaction --topic orders --partition 0 --start-offset {txn_offset} --dry-run",
    "describe-features", "version-mapping --release-version 4.1", "upgrade-features --metadata 4.4 --dry-run",
    "downgrade-features --feature share.version=1 --dry-run", "disable-feature --feature streams.version --dry-run",
    "unregister-broker --id 3 --dry-run", "describe-configs --entity-type broker-loggers --entity-name 1",
    "alter-client-metrics --name subs --metrics org.apache.kafka.producer. --interval 60000", "list-client-metrics",
    "describe-client-metrics", "delete-client-metrics --name subs --yes",
]
# Commands the walk leaves out, and why.
LEFT_OUT = {
    "analyze": "Spark: its summary's shape is checked by tests/test_pipeline_analyze.py",
    "watch": "redraws another command's result until Ctrl-C (tests/test_first_hour.py)",
    "clear": "clears the screen", "exit": "leaves the REPL", "refresh": "refreshes the cache, says so",
    "output": "a setting of the shell", "pager": "a setting of the shell", "expanded": "a setting of the shell",
    "topic": "a setting of the shell", "help": "text for people, in every format",
    **dict.fromkeys(["describe-share-group", "delete-share-group", "reset-share-group-offsets",
                     "delete-share-group-offsets"],
                    "a share group needs Kafka's Java share consumer (tests/test_share_streams_cmd.py, tests/test_share_clients.py)"),
    **dict.fromkeys(("describe-streams-group", "reset-streams-group-offsets", "delete-streams-group-offsets",
                     "delete-streams-group"),
                    "needs a running Kafka Streams application: tests/test_streams_groups_cmd.py reads their JSON"),
    "add-controller": "needs a dynamic quorum and a new controller (tests/test_cluster_tools.py)",
    "remove-controller": "needs a dynamic quorum (tests/test_cluster_tools.py)",
    **{f"{verb}-delegation-token": "needs a SASL connection (tests/test_cluster_tools.py)"
       for verb in ("create", "renew", "expire", "describe")},
}


@pytest.fixture
def shaped(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ALICE_PW", "alice-secret")
    with Sandbox(brokers=3, authorizer=True, allow_everyone_if_no_acl_found=True) as sandbox:
        yield sandbox


def _check(line: str, doc: object) -> None:
    assert isinstance(doc, dict), (line, doc)
    for name, rows in doc.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (line, name)
        for row in rows:
            for key, value in row.items():
                assert CAMEL.fullmatch(key), f"{line}: column {key!r} is not CamelCase"
                values = value if isinstance(value, list) else [value]
                if key.endswith("Value"):   # a config's value, as Kafka gives it ("false" is one)
                    continue
                for v in values:
                    assert not (isinstance(v, str) and v in UNTYPED and not (v == "*" and key in WILDCARDS)), \
                        f"{line}: {key} = {v!r} (use null or a boolean)"
                    assert not (isinstance(v, str) and DASHED_UUID.fullmatch(v)), f"{line}: {key} = {v!r} (Kafka's base64)"
                if BOOLEAN.match(key) and not (key == "ActiveController" and "nodes" != name):
                    assert all(isinstance(v, bool) for v in values), f"{line}: {key} = {value!r} is no boolean"
                elif INTEGER.search(key) and key not in NOT_INTEGER:
                    assert all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values), \
                        f"{line}: {key} = {value!r} is no integer"


def open_transaction(sandbox: Sandbox) -> tuple[int, Producer]:
    """A transaction of producer "tx" left open on orders-0: the offset it starts at, and the
    producer (kept alive so the transaction stays open)."""
    consumer = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "shapes"})
    try:
        start = consumer.get_watermark_offsets(TopicPartition("orders", 0), timeout=30)[1]
    finally:
        consumer.close()
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "transactional.id": "tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("orders", b"open", partition=0)
    producer.flush(30)
    return start, producer


def test_every_command_prints_typed_json_under_one_naming_convention(shaped, tmp_path):
    sandbox = shaped
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO(),
                      output="json")
    try:
        for setup in ("create-topic --topic orders --partitions 3 --replication-factor 2",
                      "produce --topic orders a b c --key-separator : --header h=1"):
            assert run_line(session, setup.replace("a b c", "k:a k:b k:c")) == 0, session.stderr.getvalue()
        commit(sandbox, "app", "orders", {0: 1})
        commit(sandbox, "old", "orders", {1: 0})
        txn_offset, producer = open_transaction(sandbox)
        walked = set()
        for line in WALK:
            line = line.format(tmp=tmp_path, bootstrap=sandbox.bootstrap, txn_offset=txn_offset)
            session.stdout.seek(0)
            session.stdout.truncate()
            code = run_line(session, line)
            assert code == 0, f"{line}: {session.stderr.getvalue()[-500:]}"
            text = session.stdout.getvalue()
            try:
                doc = json.loads(text) if text.strip() else {}
            except ValueError:
                raise AssertionError(f"{line}: stdout is no JSON: {text[:300]!r}") from None
            _check(line, doc)
            walked.add(line.split()[0])
    finally:
        session.close()
    every = set(load_commands().commands)
    assert every - walked - set(LEFT_OUT) == set(), "commands the walk misses"
