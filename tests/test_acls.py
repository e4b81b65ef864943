"""The authorizer end to end: ACLs made and removed with the shell's commands, checked with real
confluent-kafka producers and consumers (as User:ANONYMOUS on PLAINTEXT, which the authorizer
treats like any principal), the security commands' round trips, and the authorization messages
of existing commands for a user with no ACLs."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from kafka_shell.protocol.codes import AclOperation, AclPermission, AclResourceType, PatternType
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.authorizer import AclBinding
from kafka_shell.sandbox.server import Sandbox
from tests.conftest import BOTH_MODES, KRAFT_MODE
from tests.output import json_rows
from tests.test_oneshot import assert_one_line_error, run

pytestmark = BOTH_MODES

ME = "User:ANONYMOUS"
ADMIN_ACL = AclBinding(AclResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ME, "*",
                       AclOperation.ALL, AclPermission.ALLOW)


@pytest.fixture
def secured(sandbox_mode):
    with Sandbox(brokers=3, mode=sandbox_mode, authorizer=True) as s:
        sandbox_admin_create(s, "pay-orders")
        yield s


def sandbox_admin_create(s: Sandbox, name: str) -> None:
    s.call(sandbox_admin.create_topic, s.cluster, name, 1, 1)


def produce(s: Sandbox, topic: str) -> KafkaError | None:
    """One message; its delivery error (None when acknowledged)."""
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": s.bootstrap, "message.timeout.ms": 5000, "log_level": 0,
                  "allow.auto.create.topics": False})
    p.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(10)
    return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)


def consume(s: Sandbox, topic: str, group: str) -> bytes | int:
    """The first message's value, or the error code the consumer met."""
    c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "log_level": 0, "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        for _ in range(40):
            msg = c.poll(0.25)
            if msg is None:
                continue
            if msg.error():
                return msg.error().code()
            return msg.value()
        return -1
    except KafkaException as exc:
        return exc.args[0].code()
    finally:
        c.close()


def shell_ok(s: Sandbox, line: str) -> str:
    p = run(s, line)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_principal_gains_and_loses_access_as_acls_change(secured):
    s = secured
    s.add_acls(ADMIN_ACL)  # to manage ACLs; topics and groups still need their own
    assert produce(s, "pay-orders").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    shell_ok(s, f"create-acls --allow-principal {ME} --producer --topic pay- --resource-pattern-type PREFIXED")
    assert produce(s, "pay-orders") is None
    group = f"billing-{uuid.uuid4().hex[:6]}"
    assert consume(s, "pay-orders", group) in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                                KafkaError.GROUP_AUTHORIZATION_FAILED)

    shell_ok(s, f"create-acls --allow-principal {ME} --consumer --topic pay- --group billing- "
                "--resource-pattern-type PREFIXED")
    assert consume(s, "pay-orders", group) == b"v"

    other = group + "-2"   # a group that has read nothing yet
    shell_ok(s, f"create-acls --deny-principal {ME} --operation Read --group {other}")  # DENY wins
    assert consume(s, "pay-orders", other) == KafkaError.GROUP_AUTHORIZATION_FAILED
    shell_ok(s, f"delete-acls --deny-principal {ME} --group {other} --yes")
    assert consume(s, "pay-orders", other) == b"v"

    out = shell_ok(s, "delete-acls --topic pay- --resource-pattern-type PREFIXED --operation Write --yes -o json")
    assert [r["operation"] for r in json_rows(out, "acls")] == ["WRITE"]
    assert produce(s, "pay-orders").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


@KRAFT_MODE  # nothing here depends on the mode
def test_security_commands_round_trip(secured, tmp_path):
    s = secured
    s.add_acls(ADMIN_ACL)
    shell_ok(s, "create-acls --allow-principal User:alice --operation Read --operation Describe --topic orders")
    rows = json_rows(shell_ok(s, "describe-acls --principal User:alice -o json"), "acls")
    assert {(r["resource_type"], r["name"], r["operation"], r["permission"]) for r in rows} == {
        ("TOPIC", "orders", "READ", "ALLOW"), ("TOPIC", "orders", "DESCRIBE", "ALLOW")}
    p = run(s, "delete-acls --topic orders")  # not interactive: names what would go, deletes nothing
    assert_one_line_error(p, 2, "delete-acls would delete 2 ACL(s)", "TOPIC orders LITERAL User:alice * READ ALLOW")
    assert len(json_rows(shell_ok(s, "describe-acls --topic orders -o json"), "acls")) == 2

    secret = tmp_path / "pw"
    secret.write_text("alice-secret\n")
    p = run(s, f"alter-user-scram-credentials --add alice --mechanism SCRAM-SHA-512 --iterations 8192 "
               f"--password-file {secret}")
    assert p.returncode == 0 and "alice-secret" not in p.stdout + p.stderr, p.stderr
    assert json_rows(shell_ok(s, "describe-user-scram-credentials -o json"), "scram_credentials") == [
        {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 8192}]
    assert_one_line_error(run(s, f"alter-user-scram-credentials --add bob --mechanism SCRAM-SHA-256 "
                                 f"--iterations 100 --password-file {secret}"), 1, "Too few iterations")
    shell_ok(s, "alter-user-scram-credentials --delete alice --mechanism SCRAM-SHA-512")
    assert_one_line_error(run(s, "describe-user-scram-credentials --user alice"), 1,
                          'The SCRAM user "alice" does not exist.')

    shell_ok(s, "alter-client-quotas --entity-type users --entity-name alice "
                "--add-config producer_byte_rate=1024,consumer_byte_rate=2048")
    shell_ok(s, "alter-client-quotas --entity-default clients --add-config request_percentage=50")
    shell_ok(s, "alter-client-quotas --entity-type users --entity-name alice --delete-config producer_byte_rate")
    assert json_rows(shell_ok(s, "describe-client-quotas -o json"), "client_quotas") == [
        {"entity": {"client-id": None}, "key": "request_percentage", "value": 50},
        {"entity": {"user": "alice"}, "key": "consumer_byte_rate", "value": 2048}]
    assert_one_line_error(run(s, "alter-client-quotas --entity-type ips --entity-name nope "
                                 "--add-config connection_creation_rate=3"), 1, "nope is not a valid IP")


NO_ACL_MESSAGES = [
    ("describe-topic --topic pay-orders", 'not authorized: DESCRIBE on TOPIC "pay-orders" is needed'),
    ("describe-configs --topic pay-orders", 'not authorized: DESCRIBE on TOPIC "pay-orders" is needed'),
    ("describe-log-dirs", "not authorized: DESCRIBE on CLUSTER is needed to describe log dirs"),
    ("elect-leaders --election-type preferred --all-topic-partitions",
     "Not authorized to perform leader election: ALTER on CLUSTER is needed"),
    ("describe-acls", "not authorized: DESCRIBE on CLUSTER is needed to list ACLs"),
    ("create-acls --allow-principal User:x --topic t", "not authorized: ALTER on CLUSTER is needed to create ACLs"),
    ("describe-client-quotas", "not authorized: DESCRIBE_CONFIGS on CLUSTER is needed to read quotas"),
    ("describe-user-scram-credentials", "not authorized: DESCRIBE on CLUSTER is needed to list SCRAM users"),
]


@pytest.mark.parametrize("line, message", NO_ACL_MESSAGES)
def test_a_user_with_no_acls_is_told_what_was_refused(secured, line, message):
    p = run(secured, line)
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip() == message


def test_describe_topic_without_cluster_describe_shows_the_topic(secured):
    """kafka-topics ignores a refused ListPartitionReassignments: so does describe-topic."""
    secured.add_acls(*[AclBinding(AclResourceType.TOPIC, "pay-", PatternType.PREFIXED, ME, "*", op,
                                  AclPermission.ALLOW)
                       for op in (AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)])
    p = run(secured, "describe-topic --topic pay-orders")
    assert p.returncode == 0, p.stderr
    assert "pay-orders" in p.stdout
    assert "pay-orders" in shell_ok(secured, "list-topics")


def test_without_cluster_describe_the_controller_is_not_shown_but_the_rest_is(secured):
    from kafka_shell.connection.manager import ConnectionManager
    p = run(secured, "describe-cluster -o json")
    assert p.returncode == 0, p.stderr
    [cluster] = json_rows(p.stdout, "cluster")
    assert cluster["brokers"] == 3
    # zk mode: Metadata names the controller; KRaft: DescribeQuorum, which is refused.
    assert cluster["controller"] == (None if secured.mode == "kraft" else secured.active_controller)
    if secured.mode == "kraft":
        assert p.stderr.strip() == ("The active controller is not shown: not authorized: DESCRIBE on CLUSTER is "
                                    "needed to find the active controller (DescribeQuorum).")
        cm = ConnectionManager(secured.bootstrap, timeout_s=5)
        try:
            assert cm.greeting().endswith("(KRaft, active controller not shown: not authorized: DESCRIBE on "
                                          "CLUSTER is needed to find the active controller (DescribeQuorum)).")
        finally:
            cm.close()
    assert [r["id"] for r in json_rows(shell_ok(secured, "list-brokers -o json"))] == [1, 2, 3]


@KRAFT_MODE
@pytest.mark.parametrize("line, message", [
    ("create-topic --topic newt --partitions 1 --replication-factor 1", 'not authorized: CREATE on TOPIC "newt" is needed'),
    ("delete-topic --topic pay-orders --yes", 'not authorized: DELETE on TOPIC "pay-orders" is needed'),
    ("alter-configs --broker 1 --add-config log.cleaner.threads=2",
     "not authorized: ALTER_CONFIGS on CLUSTER is needed to alter configs"),
    ("reassign-partitions --list", "not authorized: DESCRIBE on CLUSTER is needed for reassignments"),
])
def test_more_refusals_name_the_operation(secured, line, message):
    assert_one_line_error(run(secured, line), 1, message)


def test_acls_scram_users_and_quotas_survive_a_kill_9(tmp_path):
    from tests.sandbox.test_data_dir import kill9, serve
    from tests.test_oneshot import shell

    def ok(bootstrap: str, line: str) -> str:
        p = shell("--bootstrap-server", bootstrap, "--command", line)
        assert p.returncode == 0, p.stderr
        return p.stdout

    secret = tmp_path / "pw"
    secret.write_text("s3cret")
    data = tmp_path / "data"
    args = ("--brokers", "1", "--authorizer", "--super-users", f"User:admin;{ME}")
    proc, bootstrap = serve(data, *args)
    try:
        ok(bootstrap, "create-acls --allow-principal User:alice --operation Read --topic orders")
        ok(bootstrap, f"alter-user-scram-credentials --add alice --mechanism SCRAM-SHA-256 --password-file {secret}")
        ok(bootstrap, "alter-client-quotas --entity-type users --entity-name alice --add-config producer_byte_rate=1024")
    finally:
        kill9(proc)   # no save at exit: the journal kept what was acknowledged
    proc, bootstrap = serve(data, *args)
    try:
        assert json_rows(ok(bootstrap, "describe-acls -o json"), "acls") == [
            {"resource_type": "TOPIC", "name": "orders", "pattern_type": "LITERAL", "principal": "User:alice",
             "host": "*", "operation": "READ", "permission": "ALLOW"}]
        assert json_rows(ok(bootstrap, "describe-user-scram-credentials -o json"), "scram_credentials") == [
            {"user": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 4096}]
        assert json_rows(ok(bootstrap, "describe-client-quotas -o json"), "client_quotas") == [
            {"entity": {"user": "alice"}, "key": "producer_byte_rate", "value": 1024}]
    finally:
        kill9(proc)


@KRAFT_MODE
def test_acls_name_only_operations_their_resource_has(secured):
    secured.add_acls(ADMIN_ACL)
    assert_one_line_error(run(secured, "create-acls --allow-principal User:x --operation Read --cluster"), 2,
                          "ResourceType CLUSTER only supports operations CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
                          "ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE, ALL")
