"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs of the sandbox, through a real
AdminClient (and raw requests where the client hides a field)."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.test_topics_api import INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC, raw_request
from tests.conftest import ZK_MODE

SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE,
                                 AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT)
THROTTLED = "leader.replication.throttled.replicas"


def describe(admin, kind: str, name: str) -> dict:
    r = ConfigResource(kind, name)
    return admin.describe_configs([r], request_timeout=10)[r].result()


def incremental(admin, kind: str, name: str, *ops: tuple, validate_only: bool = False):
    """None on success, else (code, message)."""
    r = ConfigResource(kind, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops])
    exc = admin.incremental_alter_configs([r], validate_only=validate_only, request_timeout=10)[r].exception()
    return None if exc is None else (exc.args[0].code(), exc.args[0].str())


def alter_default(sandbox, *ops: tuple, validate_only: bool = False):
    """IncrementalAlterConfigs on the cluster-wide default (broker resource ""), which the
    confluent client cannot name: None on success, else (code, message)."""
    answer = raw_request(sandbox, 1, 44, 1, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": key, "config_operation": int(op.value), "value": value} for key, op, value in ops]}],
        "validate_only": validate_only})
    (r,) = answer["responses"]
    return None if r["error_code"] == 0 else (r["error_code"], r["error_message"])


def describe_default(sandbox) -> dict:
    answer = raw_request(sandbox, 1, 32, 4, {"resources": [
        {"resource_type": 4, "resource_name": "", "configuration_keys": None}], "include_synonyms": True})
    return {c["name"]: (c["value"], c["config_source"]) for c in answer["results"][0]["configs"]}


def test_describe_topic_configs_gives_every_key_with_sources_and_synonyms(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1, None, {"retention.ms": "1000"})
    assert alter_default(sandbox, ("log.cleanup.policy", SET, "compact")) is None
    entries = describe(admin, "topic", "t")
    assert len(entries) > 25 and "min.insync.replicas" in entries
    retention = entries["retention.ms"]
    assert (retention.value, retention.source) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert not retention.is_read_only and not retention.is_sensitive
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source) == ("compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    # Synonyms over the wire (the client keys them by name, folding same-named levels).
    answer = raw_request(sandbox, 1, 32, 4, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configuration_keys": ["cleanup.policy", "retention.ms"]}],
        "include_synonyms": True})
    synonyms = {c["name"]: [(s["name"], s["value"], s["source"]) for s in c["synonyms"]]
                for c in answer["results"][0]["configs"]}
    assert synonyms == {
        "cleanup.policy": [("log.cleanup.policy", "compact", 3), ("log.cleanup.policy", "delete", 5)],
        "retention.ms": [("retention.ms", "1000", 1)]}
    assert entries["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    r = ConfigResource("topic", "missing")
    assert admin.describe_configs([r])[r].exception().args[0].code() == UNKNOWN_TOPIC


def test_describe_broker_configs_sources_read_only_and_cluster_defaults(sandbox, admin):
    assert incremental(admin, "broker", "2", ("log.retention.bytes", SET, "1000")) is None
    assert alter_default(sandbox, ("message.max.bytes", SET, "2000000")) is None
    entries = describe(admin, "broker", "2")
    assert entries["log.retention.bytes"].value == "1000"
    assert entries["log.retention.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert entries["message.max.bytes"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert entries["broker.id"].value == "2" and entries["broker.id"].is_read_only
    assert entries["num.partitions"].is_read_only and not entries["message.max.bytes"].is_read_only
    assert describe(admin, "broker", "1")["log.retention.bytes"].value == "-1"
    # Kafka 4.x's controller writes the cluster-wide min.insync.replicas at bootstrap (ELR).
    assert describe_default(sandbox) == {
        "min.insync.replicas": ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        "message.max.bytes": ("2000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)}


def test_describe_configs_raw_types_documentation_and_wrong_broker(sandbox):
    answer = raw_request(sandbox, 1, 32, 4, {"resources": [
        {"resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions", "log.cleanup.policy"]},
        {"resource_type": 4, "resource_name": "2", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "x", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": True})
    own, other, bad = answer["results"]
    types = {c["name"]: (c["config_type"], c["config_source"], bool(c["documentation"])) for c in own["configs"]}
    assert types == {"num.partitions": (3, 5, True), "log.cleanup.policy": (7, 5, True)}  # INT, LIST
    assert (other["error_code"], other["error_message"]) == (
        INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
    assert bad["error_code"] == INVALID_REQUEST


def test_incremental_alter_set_delete_append_subtract(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
    assert incremental(admin, "topic", "t", ("retention.ms", SET, "60000"), (THROTTLED, APPEND, "0:1,0:2")) is None
    assert incremental(admin, "topic", "t", (THROTTLED, APPEND, "0:2,1:3")) is None
    assert sandbox.cluster.topics["t"].configs == {"retention.ms": "60000", THROTTLED: "0:1,0:2,1:3"}
    assert incremental(admin, "topic", "t", (THROTTLED, SUBTRACT, "0:1"), ("retention.ms", DELETE, None)) is None
    assert sandbox.cluster.topics["t"].configs == {THROTTLED: "0:2,1:3"}
    assert describe(admin, "topic", "t")["retention.ms"].value == "604800000"


def test_incremental_alter_rejects_bad_keys_values_and_ops_and_validate_only_changes_nothing(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
    assert incremental(admin, "topic", "t", ("retention.mss", SET, "1")) == (
        INVALID_CONFIG, "Unknown topic config name: retention.mss")
    assert incremental(admin, "topic", "t", ("min.insync.replicas", SET, "0")) == (
        INVALID_CONFIG, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1")
    assert incremental(admin, "topic", "t", ("preallocate", SET, "yes"))[0] == INVALID_CONFIG
    assert incremental(admin, "topic", "t", ("retention.ms", APPEND, "5")) == (
        INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")
    assert incremental(admin, "topic", "t", ("retention.ms", SET, "5"), validate_only=True) is None
    assert incremental(admin, "topic", "missing", ("retention.ms", SET, "5"))[0] == UNKNOWN_TOPIC
    assert sandbox.cluster.topics["t"].configs == {}


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_alter_configs_replaces_every_dynamic_config_of_the_resource(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1, None,
                 {"retention.ms": "1000", "segment.ms": "2000"})
    r = ConfigResource("topic", "t", set_config={"cleanup.policy": "compact"})
    assert admin.alter_configs([r], request_timeout=10)[r].result() is None
    assert sandbox.cluster.topics["t"].configs == {"cleanup.policy": "compact"}
    r = ConfigResource("topic", "t", set_config={"max.message.bytes": "1"})
    assert admin.alter_configs([r], validate_only=True)[r].result() is None
    assert sandbox.cluster.topics["t"].configs == {"cleanup.policy": "compact"}


def test_broker_alters_check_read_only_keys_and_types_and_keep_static_values():
    with Sandbox(brokers=2, configs={"num.partitions": "3"}) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        assert incremental(admin, "broker", "1", ("log.dirs", SET, "/elsewhere")) == (
            INVALID_REQUEST, "Cannot update these configs dynamically: [log.dirs]")
        code, message = alter_default(sandbox, ("message.max.bytes", SET, "big"))
        assert code == INVALID_REQUEST and "Not a number of type INT" in message
        assert alter_default(sandbox, ("no.such.key", SET, "1")) is None  # Kafka takes unknown broker keys
        answer = raw_request(sandbox, 2, 33, 2, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
            {"name": "min.insync.replicas", "value": "2"}]}], "validate_only": False})
        assert answer["responses"][0]["error_code"] == 0
        assert sandbox.cluster.cluster_configs == {"min.insync.replicas": "2"}  # the legacy API replaced them
        assert sandbox.cluster.static_configs == {"num.partitions": "3"}
        entries = describe(admin, "broker", "1")
        assert (entries["num.partitions"].value, entries["num.partitions"].source) == (
            "3", ConfigSource.STATIC_BROKER_CONFIG.value)
        # Topics see the new cluster-wide default through their synonym.
        sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
        assert describe(admin, "topic", "t")["min.insync.replicas"].value == "2"


@ZK_MODE  # KRaft: tests/sandbox/test_kraft.py (the preferred controller is a voter there)
def test_preferred_controller_is_a_cluster_wide_key_that_moves_the_controller(sandbox, admin):
    target = next(b for b in sandbox.cluster.brokers if b != sandbox.cluster.controller_id)
    code, _ = incremental(admin, "broker", str(target), ("preferred.controller.id", SET, str(target)))
    assert code == INVALID_REQUEST
    assert alter_default(sandbox, ("preferred.controller.id", SET, "42"))[0] == INVALID_REQUEST
    assert alter_default(sandbox, ("preferred.controller.id", SET, str(target))) is None
    assert sandbox.cluster.controller_id == target
    assert admin.list_topics(timeout=5).controller_id == target
    # The controller now takes topic creation; a real client follows it.
    futures = admin.create_topics([NewTopic("after-move", 1, 1)], request_timeout=10)
    assert futures["after-move"].result() is None


@pytest.mark.parametrize("value, java", [(1048576.0, "1048576.0"), (0.5, "0.5"), (1e7, "1.0E7"), (1.5e-4, "1.5E-4"),
                                         (123456789.0, "1.23456789E8"), (-2.5e10, "-2.5E10"), (0.0, "0.0")])
def test_a_double_is_described_as_java_writes_it(value, java):
    from kafka_shell.sandbox.configs import java_double
    assert java_double(value) == java
