"""The connection manager against the sandbox cluster: bootstrap, the metadata cache, routing
to the controller and the retries when it moves."""

from __future__ import annotations

import socket
import time

import pytest
from kafka_shell.admin import elections, records
from kafka_shell.connection.client_config import load_properties, parse_x_options, redact
from kafka_shell.connection.manager import ConnectionManager, _settle, parse_bootstrap, unreachable_message
from kafka_shell.base.errors import ClusterUnreachable, KafkaCallError, ShellError, UsageError
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from tests.conftest import BOTH_MODES, ZK_MODE
from tests.sandbox.wire import API_VERSIONS_BODY

LIST_REASSIGNMENTS, ELECT_LEADERS, DELETE_RECORDS = (ApiKey.LIST_PARTITION_REASSIGNMENTS, ApiKey.ELECT_LEADERS,
                                                     ApiKey.DELETE_RECORDS)
NOT_CONTROLLER = Error.not_controller


@pytest.fixture
def manager(sandbox):
    messages: list[str] = []
    cm = ConnectionManager(sandbox.bootstrap, timeout_s=5, notify=messages.append)
    cm.messages = messages  # type: ignore[attr-defined]
    yield cm
    cm.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_refresh_done(cm: ConnectionManager) -> None:
    for _ in range(1000):
        if not cm.refreshing:
            return
        time.sleep(0.01)
    raise AssertionError("background refresh never finished")


# -- bootstrap and the cache ---------------------------------------------------------------------


def test_connect_fills_the_snapshot(sandbox, manager):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "orders", 3, 2)
    snap = manager.connect()
    assert snap is manager.snapshot
    assert snap.cluster_id == sandbox.cluster.cluster_id
    assert snap.controller_id == sandbox.cluster.controller_id
    assert sorted(snap.brokers) == [1, 2, 3]
    assert snap.brokers[2].address == "{}:{}".format(*sandbox.address(2))
    orders = snap.topics["orders"]
    assert orders.topic_id == sandbox.cluster.topics["orders"].id
    assert [p.partition for p in orders.partitions] == [0, 1, 2]
    for p, real in zip(orders.partitions, sandbox.cluster.topics["orders"].partitions):
        assert p.replicas == tuple(real.replicas) and p.leader == real.leader
        assert p.isr == tuple(real.isr) and p.leader_epoch == real.leader_epoch
    assert manager.router.controller.address == "{}:{}".format(*sandbox.address(snap.controller_id))


def test_snapshot_shows_offline_replicas_and_racks():
    from kafka_shell.sandbox.server import Sandbox
    with Sandbox(brokers=3, racks=["a", "b", "c"]) as sandbox:
        sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 3, [[1, 2, 3]])
        sandbox.stop_broker(3)
        cm = ConnectionManager(sandbox.bootstrap, timeout_s=5)
        try:
            snap = cm.connect()
        finally:
            cm.close()
    assert {b.id: b.rack for b in snap.brokers.values()} == {1: "a", 2: "b"}
    p = snap.topics["t"].partitions[0]
    assert p.offline_replicas == (3,) and p.replicas == (1, 2, 3) and 3 not in p.isr


def test_refused_bootstrap_is_reported_at_once_as_refused():
    address = f"127.0.0.1:{_closed_port()}"
    cm = ConnectionManager(address, timeout_s=30)  # no waiting for the timeout: it is refused
    with pytest.raises(ClusterUnreachable) as err:
        cm.connect()
    assert str(err.value) == (f"Cannot reach any broker of {address}: connection refused by {address} "
                              "(check the address and that the brokers are up)")
    assert err.value.exit_code == 1


def test_silent_bootstrap_names_the_servers_and_the_timeout():
    with socket.socket() as silent:  # accepts connections (the backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        bootstrap = f"127.0.0.1:{silent.getsockname()[1]}"
        cm = ConnectionManager(bootstrap, timeout_s=0.3)
        with pytest.raises(ClusterUnreachable) as err:
            cm.connect()
    assert str(err.value).startswith(f"Cannot reach any broker of {bootstrap} within 0.3 s (last: ")
    assert "did not answer ApiVersions in time" in str(err.value)


def test_unreachable_message_drops_decimals_of_whole_seconds():
    assert unreachable_message("h:9092", 10.0) == "Cannot reach any broker of h:9092 within 10 s"
    assert unreachable_message("a:1,b:2", 2.5) == "Cannot reach any broker of a:1,b:2 within 2.5 s"


def test_stopped_bootstrap_broker_is_skipped(sandbox):
    sandbox.stop_broker(1)  # first in the bootstrap list
    cm = ConnectionManager(sandbox.bootstrap, timeout_s=5)
    try:
        snap = cm.connect()
    finally:
        cm.close()
    assert sorted(snap.brokers) == [2, 3]
    assert snap.controller_id == sandbox.active_controller


def test_bad_bootstrap_is_a_usage_error():
    assert parse_bootstrap("PLAINTEXT://a:1, [::1]:2") == [("a", 1), ("::1", 2)]
    for bad in ("", "host", "host:port", ":9092"):
        with pytest.raises(UsageError):
            parse_bootstrap(bad)


def test_background_refresh_swaps_in_a_new_snapshot(sandbox, manager):
    first = manager.connect()
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "late", 2, 1)
    manager.refresh_in_background()
    _wait_refresh_done(manager)
    assert "late" not in first.topics  # the old snapshot is never changed in place
    assert manager.snapshot is not first
    assert len(manager.snapshot.topics["late"].partitions) == 2


# -- routing and retries ---------------------------------------------------------------------------
# ZooKeeper mode: the controller is a broker and the others answer NOT_CONTROLLER, so these tests
# exercise the retries. In KRaft mode brokers forward (tests/test_controller_truth.py).


@BOTH_MODES
def test_controller_request_goes_to_the_controller(sandbox, manager):
    manager.connect()
    # ListPartitionReassignments answers NOT_CONTROLLER on any other broker.
    answer = manager.controller_request(LIST_REASSIGNMENTS, {"topics": None})
    assert answer.error_code == 0
    assert manager.messages == []


@ZK_MODE
def test_broker_request_goes_to_the_named_broker(sandbox, manager):
    snap = manager.connect()
    other = next(b for b in snap.brokers if b != snap.controller_id)
    answer = manager.broker_request(other, LIST_REASSIGNMENTS, {"topics": None})
    assert answer.error_code == NOT_CONTROLLER  # not retried elsewhere: the caller named it
    with pytest.raises(ShellError, match=r"Broker 9 is not live in the cluster \(live brokers: 1, 2, 3\)"):
        manager.broker_request(9, LIST_REASSIGNMENTS, {"topics": None})


@ZK_MODE
def test_controller_move_is_retried_on_the_new_controller_and_reported(sandbox, manager):
    old = manager.connect().controller_id
    new = sandbox.kill_controller()
    answer = manager.controller_request(LIST_REASSIGNMENTS, {"topics": None})
    assert answer.error_code == 0
    assert manager.router.controller.id == new
    assert manager.messages == [f"Controller moved from broker {old} to broker {new}."]


@ZK_MODE
def test_mutation_rejected_with_not_controller_is_resent(sandbox, manager):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2)
    old = manager.connect().controller_id
    new = sandbox.kill_controller()
    body = {"election_type": 0, "topic_partitions": [{"topic": "t", "partitions": [0]}], "timeout": 1000}
    answer = manager.controller_request(ELECT_LEADERS, body, mutation=True)
    assert answer.error_code == 0
    results = answer.replica_election_results[0].partition_result
    assert results[0].error_code == 84  # ELECTION_NOT_NEEDED: the leader is the preferred one
    assert manager.messages == [f"Controller moved from broker {old} to broker {new}."]


@ZK_MODE
def test_injected_not_controller_is_retried_a_bounded_number_of_times(sandbox, manager):
    controller = manager.connect().controller_id
    sandbox.fail(controller, "ListPartitionReassignments", "NOT_CONTROLLER")
    with pytest.raises(KafkaCallError) as err:
        manager.controller_request(LIST_REASSIGNMENTS, {"topics": None})
    assert err.value.code == NOT_CONTROLLER and err.value.retriable
    assert str(err.value) == (f"ListPartitionReassignments failed: no controller answered within 5 s (last: "
                              f"NOT_CONTROLLER from broker {controller} at "
                              "{}:{}).".format(*sandbox.address(controller)))
    assert manager.messages == []  # the controller did not move


@ZK_MODE
def test_lost_controller_connection_retries_on_the_new_controller(sandbox, manager):
    old = manager.connect().controller_id
    manager.controller_request(LIST_REASSIGNMENTS, {"topics": None})  # opens the connection
    sandbox.stop_broker(old)  # drops it; another broker becomes controller
    answer = manager.controller_request(LIST_REASSIGNMENTS, {"topics": None})
    assert answer.error_code == 0
    new = manager.router.controller.id
    assert new != old and new == sandbox.active_controller
    assert manager.messages == [f"Controller moved from broker {old} to broker {new}."]


@BOTH_MODES
def test_mutation_whose_answer_is_lost_is_not_resent(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
    cm = ConnectionManager(sandbox.bootstrap, timeout_s=0.2)
    try:
        cm.connect()
        for broker in (1, 2, 3):
            sandbox.delay(broker, 400)  # the answer comes after our timeout
        body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 0}]}]}
        with pytest.raises(KafkaCallError, match="may or may not have taken effect"):
            cm.controller_request(DELETE_RECORDS, body, mutation=True)
    finally:
        cm.close()
    time.sleep(0.4)  # let the broker finish the delayed request before the sandbox stops


def test_request_to_a_stopped_broker_fails_after_a_refresh(sandbox, manager):
    manager.connect()
    assert manager.broker_request(2, 18, API_VERSIONS_BODY).error_code == 0
    sandbox.stop_broker(2)
    with pytest.raises(ShellError, match="Broker 2 is not live"):
        manager.broker_request(2, 18, API_VERSIONS_BODY)
    assert 2 not in manager.router.brokers


def test_request_to_a_restarted_broker_reconnects(sandbox, manager):
    manager.connect()
    manager.broker_request(2, 18, API_VERSIONS_BODY)
    sandbox.stop_broker(2)
    sandbox.start_broker(2)  # same id, new port: the refresh finds it
    assert manager.broker_request(2, 18, API_VERSIONS_BODY).error_code == 0
    assert manager.router.brokers[2].address == "{}:{}".format(*sandbox.address(2))


def test_api_versions_and_supports(sandbox, manager):
    manager.connect()
    assert 3 in manager.api_versions() and manager.supports(3, 12)
    assert not manager.supports(3, 99)
    assert not manager.supports(38, broker_id=2)  # CreateDelegationToken: the sandbox lacks it


# -- what the admin layer builds on: per-broker reads, typed answers, records' settings ------------


def test_each_broker_answers_for_the_live_ones_and_names_the_silent_one(sandbox, manager):
    manager.connect()
    sandbox.stop_broker(2)
    answers = manager.each_broker([1, 2, 3], ApiKey.LIST_GROUPS, {})
    assert sorted(answers.rows) == [1, 3] and all(a.error_code == 0 for a in answers.rows.values())
    assert list(answers.errors) == [2] and answers.errors[2].code is None
    assert str(answers.errors[2]).startswith("Broker 2 ")


def test_refusals_are_kafka_call_errors_with_code_and_line(sandbox, manager):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2)
    for broker in (1, 2, 3):  # whichever broker the request reaches
        sandbox.fail(broker, "ElectLeaders", "CLUSTER_AUTHORIZATION_FAILED")
    with pytest.raises(KafkaCallError) as err:
        elections.elect(manager, [("t", 0, None)], elections.PREFERRED, 1000)
    assert err.value.code == 31
    assert str(err.value) == "not authorized: ALTER on CLUSTER is needed to elect leaders"


@ZK_MODE
def test_admin_requests_follow_the_controller_move(sandbox, manager):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2)
    old = manager.connect().controller_id
    assert elections.elect(manager, [("t", 0, None)], elections.PREFERRED, 1000)[("t", 0)].state != elections.FAILED
    new = sandbox.kill_controller()
    # The connection manager still believes in the old controller, which answers NOT_CONTROLLER.
    outcome = elections.elect(manager, [("t", 0, None)], elections.PREFERRED, 1000)[("t", 0)]
    assert outcome.state == elections.NOT_NEEDED  # ELECTION_NOT_NEEDED, from the new one
    assert manager.messages == [f"Controller moved from broker {old} to broker {new}."]


def test_invalid_client_setting_is_a_usage_error_without_secrets():
    cm = ConnectionManager("127.0.0.1:1", {"no.such.property": "x", "sasl.password": "hunter22"})
    with pytest.raises(UsageError) as err:
        records.produce(cm, "t", [(None, b"x")])  # librdkafka refuses the settings before connecting
    assert "no.such.property" in str(err.value) and "hunter22" not in str(err.value)


# -- client settings -------------------------------------------------------------------------------


def test_load_properties_reads_java_properties(tmp_path):
    f = tmp_path / "client.properties"
    f.write_text(
        "# comment\n! also a comment\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism : SCRAM-SHA-512\n"
        "ssl.ca.location /etc/ca.pem\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="alice" password="s3cr\\\\et";\n'
        "client.id=shell\\u00e9\\tx\n"
        "empty=\n")
    props = load_properties(str(f))
    assert props == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.ca.location": "/etc/ca.pem",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="alice" password="s3cr\\et";',
        "client.id": "shell\u00e9\tx", "empty": "",
    }
    with pytest.raises(UsageError, match="Cannot read --command-config"):
        load_properties(str(tmp_path / "missing"))


def test_jaas_config_becomes_librdkafka_credentials():
    from kafka_shell.connection.client_config import librdkafka_properties
    props = {"sasl.jaas.config": 'x.PlainLoginModule required username="bob" password="pw";',
             "sasl.mechanism": "PLAIN"}
    assert librdkafka_properties(props) == {"sasl.mechanism": "PLAIN", "sasl.username": "bob",
                                            "sasl.password": "pw"}


def test_x_options():
    assert parse_x_options(["acks=all", "a.b=c=d", "acks=1"]) == {"acks": "1", "a.b": "c=d"}
    with pytest.raises(UsageError, match="key=value"):
        parse_x_options(["novalue"])
    with pytest.raises(UsageError) as err:
        parse_x_options(["=topsecret"])
    assert "topsecret" not in str(err.value)


def test_redact_hides_every_secret():
    props = {"sasl.password": "p", "ssl.key.password": "k", "ssl.keystore.password": "s",
             "sasl.jaas.config": "x", "sasl.oauthbearer.client.secret": "c",
             "sasl.username": "alice", "bootstrap.servers": "h:1"}
    shown = redact(props)
    assert shown == {"sasl.password": "******", "ssl.key.password": "******",
                     "ssl.keystore.password": "******", "sasl.jaas.config": "******",
                     "sasl.oauthbearer.client.secret": "******",
                     "sasl.username": "alice", "bootstrap.servers": "h:1"}
    assert props["sasl.password"] == "p"  # a copy


# -- CreateTopics and groups (sandbox APIs that landed while this was written) ---------------------


CREATE_TOPICS = 19


@ZK_MODE
def test_create_topics_follows_the_controller(sandbox, manager):
    old = manager.connect().controller_id
    new = sandbox.kill_controller()
    body = {"topics": [{"name": "fresh", "num_partitions": 3, "replication_factor": 2}], "timeout": 5000}
    answer = manager.controller_request(CREATE_TOPICS, body, mutation=True)
    assert answer.topics[0].error_code == 0
    assert manager.messages == [f"Controller moved from broker {old} to broker {new}."]
    assert len(sandbox.cluster.topics["fresh"].partitions) == 3
    assert manager.router.controller.id == new


def test_resent_create_topics_counts_our_own_first_attempt_as_success(sandbox, manager):
    before = manager.connect()
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "mine", 3, 1)  # the lost first attempt
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "other", 1, 1)
    after = manager.refresh()
    body = {"topics": [{"name": "mine", "num_partitions": 3}, {"name": "other", "num_partitions": 5}]}
    resent = manager.controller_request(CREATE_TOPICS, body)  # answers TOPIC_ALREADY_EXISTS twice
    assert [t.error_code for t in resent.topics] == [36, 36]
    settled = _settle(CREATE_TOPICS, body, resent, before, after)
    # "mine" is as asked and was absent before: ours. "other" differs from the request: an error.
    assert {t.name: t.error_code for t in settled.topics} == {"mine": 0, "other": 36}


def test_snapshot_lists_consumer_groups(sandbox, manager):
    from confluent_kafka import Consumer
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
    consumer = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "billing",
                         "auto.offset.reset": "earliest", "log_level": 3})
    try:
        consumer.subscribe(["t"])
        for _ in range(50):
            consumer.poll(0.1)
            if consumer.assignment():
                break
        assert manager.connect().groups == ("billing",)
    finally:
        consumer.close()


def test_refresh_when_every_broker_is_too_slow_is_unreachable(sandbox):
    cm = ConnectionManager(sandbox.bootstrap, timeout_s=0.3)
    try:
        cm.connect()
        for broker in (1, 2, 3):
            sandbox.delay(broker, 600)
        with pytest.raises(ClusterUnreachable, match="within 0.3 s"):
            cm.refresh()
        assert sorted(cm.snapshot.brokers) == [1, 2, 3]  # the old cache stays
    finally:
        cm.close()
    time.sleep(0.6)  # let the brokers finish the delayed requests before the sandbox stops


def test_a_request_key_no_version_has_is_refused_under_the_tests(sandbox):
    """The suite sets KAFKA_SHELL_STRICT_REQUESTS (tests/conftest.py): a misspelt field, which
    would go out as its default (DeleteTopics' timeout 0), is refused before anything is sent."""
    from kafka_shell.protocol import codec
    from kafka_shell.protocol.codes import ApiKey
    assert codec.unknown_request_keys(ApiKey.DELETE_TOPICS, {"topics": [{"name": "t", "nmae": 1}], "timeout_ms": 1}) \
        == ["topics.nmae", "timeout_ms"]
    with pytest.raises(ValueError, match="DeleteTopics has no field timeout_ms in any version"):
        codec.build_request(ApiKey.DELETE_TOPICS, 6, {"topics": [], "timeout_ms": 1000})
    assert codec.build_request(ApiKey.DELETE_TOPICS, 6, {"topic_names": [], "topics": [], "timeout": 1000})
