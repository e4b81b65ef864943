"""Broker and topic configs as real Kafka has them, release by release (kafka_shell.protocol.definitions).

DescribeConfigs of a sandbox broker and of a new topic lists the keys a real broker of the same
release and mode lists (the sandbox's own two keys aside), with the same types, read-only flags,
sensitivity, documentation, and the same values wherever the real broker answers a default; and
alterations (validate_only) get Kafka's error code and message, or succeed, as on the real broker.
"""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import configs
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.test_api_versions import REAL_CLUSTERS, real_listeners
from tests.sandbox.wire import exchange

DEFAULT = configs.DEFAULT_CONFIG
UNKNOWN_TOPIC = 3
SET, DELETE, APPEND = 0, 1, 2
TOPIC, BROKER = 2, 4


def describe(address, resource_type: int, name: str, wait_s: float = 0.0) -> dict[str, dict]:
    """DescribeConfigs of one resource; `wait_s`: while the broker does not know the topic yet
    (a ZooKeeper-era broker learns a new one from the controller a moment after it is created)."""
    deadline = time.monotonic() + wait_s
    while True:
        answer = exchange(address, ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": True, "include_documentation": True})
        [result] = answer["results"]  # type: ignore[index]
        if result["error_code"] != UNKNOWN_TOPIC or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    assert result["error_code"] == 0, result
    return {c["name"]: c for c in result["configs"]}


def create_topic(bootstrap: str, name: str) -> None:
    """With a real client, which finds the controller (ZooKeeper mode) or is forwarded (KRaft)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(name, 1, 1)], request_timeout=30)[name].result(30)


def defaults_only(synonyms: list[dict]) -> list[tuple]:
    return [(s["name"], s["value"]) for s in synonyms if s["source"] == DEFAULT]


@contextlib.contextmanager
def beside(real, release: str, mode: str):
    """A sandbox of the real cluster's release and mode; each has a new topic of the same name.
    Yields (the real broker's address, the sandbox, the topic)."""
    address = real_listeners(real)["broker" if mode == "kraft" else "zk_broker"]
    topic = f"cfg-{uuid.uuid4().hex[:8]}"
    create_topic(real.bootstrap, topic)
    describe(address, TOPIC, topic, wait_s=30)  # until the broker asked knows it
    with Sandbox(brokers=1, mode=mode, kafka_version=release) as sandbox:
        create_topic(sandbox.bootstrap, topic)
        yield address, sandbox, topic


def compare_describe(real, release: str, mode: str) -> None:
    with beside(real, release, mode) as (address, sandbox, topic):
        defs = configs.broker_defs(sandbox.cluster)
        for kind, name in ((BROKER, "1"), (TOPIC, topic)):
            theirs, ours = describe(address, kind, name), describe(sandbox.address(1), kind, name)
            if kind == BROKER:  # keys a test or an operator set dynamically on the shared cluster aside
                theirs = {k: v for k, v in theirs.items() if k in defs and not defs[k].dynamic_only}
                ours = {k: v for k, v in ours.items() if k not in configs.SANDBOX_BROKER_CONFIGS}
            assert set(ours) == set(theirs), (kind, sorted(set(ours) ^ set(theirs)))
            for key, real_entry in theirs.items():
                entry = ours[key]
                for field in ("config_type", "read_only", "is_sensitive", "documentation"):
                    assert entry[field] == real_entry[field], (kind, key, field, entry[field], real_entry[field])
                if real_entry["config_source"] == DEFAULT and key not in configs.SANDBOX_DEFAULTS:
                    assert (entry["value"], entry["config_source"]) == (real_entry["value"], DEFAULT), (kind, key)
                    assert defaults_only(entry["synonyms"]) == defaults_only(real_entry["synonyms"]), (kind, key)


@pytest.mark.real_kafka
@REAL_CLUSTERS
def test_real_kafkas_configs_are_the_sandboxs(cluster, release, mode, request):
    compare_describe(request.getfixturevalue(cluster), release, mode)


# -- alterations, validated as Kafka validates them ----------------------------------------------------

BROKER_CASES = [
    ("", "log.cleaner.threads", SET, "2"), ("1", "log.cleaner.threads", SET, "2"),
    ("", "log.cleaner.threads", SET, "abc"), ("", "log.cleaner.threads", SET, "0"), ("", "log.cleaner.threads", SET, "3"),
    ("", "log.cleaner.threads", SET, "-1"), ("", "log.cleaner.threads", APPEND, "2"),
    ("", "sasl.kerberos.min.time.before.relogin", SET, "60000"), ("1", "sasl.kerberos.min.time.before.relogin", SET, "60000"),
    ("", "foo.bar", SET, "1"), ("1", "foo.bar", SET, "1"), ("", "foo.bar", DELETE, None),
    ("", "num.partitions", SET, "3"), ("", "advertised.listeners", SET, "PLAINTEXT://x:1"),
    ("", "ssl.keystore.location", SET, "/x"), ("", "listener.name.plaintext.ssl.keystore.location", SET, "/x"),
    ("2", "log.cleaner.threads", SET, "2"), ("", "log.retention.ms", SET, "-5"), ("", "log.retention.hours", SET, "5"),
    ("", "log.cleanup.policy", SET, "bogus"), ("", "log.cleanup.policy", APPEND, "compact"),
    ("", "compression.type", SET, "bogus"), ("", "message.max.bytes", SET, "-1"),
    ("", "log.cleaner.min.cleanable.ratio", SET, "2"), ("", "leader.replication.throttled.rate", SET, "abc"),
    ("1", "follower.replication.throttled.rate", SET, "1000"), ("", "log.cleaner.threads", SET, None),
    ("1", "min.insync.replicas", SET, "2"), ("1", "min.insync.replicas", DELETE, None),
    ("", "min.insync.replicas", DELETE, None), ("", "min.insync.replicas", SET, "2"),
]
TOPIC_CASES = [
    ("message.format.version", SET, "3.0"), ("foo.bar", SET, "1"), ("retention.ms", SET, "-5"),
    ("min.cleanable.dirty.ratio", SET, "2"), ("cleanup.policy", SET, "bogus"), ("cleanup.policy", SET, "compact,bogus"),
    ("segment.bytes", SET, "10"), ("compression.type", SET, "bogus"), ("message.timestamp.type", SET, "x"),
    ("max.message.bytes", SET, "-1"), ("min.insync.replicas", SET, "0"), ("message.timestamp.difference.max.ms", SET, "100"),
    ("message.downconversion.enable", SET, "true"), ("remote.storage.enable", SET, "true"), ("local.retention.ms", SET, "-3"),
    ("segment.index.bytes", SET, "1"), ("retention.ms", APPEND, "5"), ("preallocate", SET, "yes"),
    ("leader.replication.throttled.replicas", SET, "x"), ("leader.replication.throttled.replicas", SET, "0:1, a:2"),
    ("leader.replication.throttled.replicas", SET, "0:1, 1:2"), ("follower.replication.throttled.replicas", SET, "*"),
    ("retention.ms", SET, None), ("retention.ms", DELETE, None), ("segment.ms", SET, "0"),
]


def alter(address, resource_type: int, name: str, *changes: tuple) -> tuple[int, str | None]:
    answer = exchange(address, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": resource_type, "resource_name": name, "configs": [
            {"name": key, "config_operation": op, "value": value} for key, op, value in changes]}],
        "validate_only": True})
    [r] = answer["responses"]  # type: ignore[index]
    return r["error_code"], r["error_message"]


def legacy_alter(address, name: str, values: dict[str, str]) -> tuple[int, str | None]:
    answer = exchange(address, ApiKey.ALTER_CONFIGS, 2, {"resources": [
        {"resource_type": BROKER, "resource_name": name, "configs": [{"name": k, "value": v} for k, v in values.items()]}],
        "validate_only": True})
    [r] = answer["responses"]  # type: ignore[index]
    return r["error_code"], r["error_message"]


def compare_alterations(real, release: str, mode: str) -> None:
    with beside(real, release, mode) as (address, sandbox, topic):
        ours = sandbox.address(1)
        for name, key, op, value in BROKER_CASES:
            assert alter(ours, BROKER, name, (key, op, value)) == alter(address, BROKER, name, (key, op, value)), (name, key, op, value)
        for key, op, value in TOPIC_CASES:
            assert alter(ours, TOPIC, topic, (key, op, value)) == alter(address, TOPIC, topic, (key, op, value)), (key, op, value)
        conflict = (("min.compaction.lag.ms", SET, "5000"), ("max.compaction.lag.ms", SET, "5"))
        assert alter(ours, TOPIC, topic, *conflict) == alter(address, TOPIC, topic, *conflict)
        for values in ({"log.cleaner.threads": "2"}, {"min.insync.replicas": "1", "log.cleaner.threads": "3"}):
            assert legacy_alter(ours, "", values) == legacy_alter(address, "", values), values


@pytest.mark.real_kafka
@REAL_CLUSTERS
def test_alterations_are_validated_as_real_kafka_does(cluster, release, mode, request):
    compare_alterations(request.getfixturevalue(cluster), release, mode)


@pytest.mark.parametrize("release", ["4.4", "3.9"])
def test_every_broker_and_topic_key_of_the_release_is_described(release):
    """Without a real broker: each definition's key is described (none internal), with its type."""
    with Sandbox(brokers=1, kafka_version=release) as sandbox:
        ours = describe(sandbox.address(1), BROKER, "1")
        defs = configs.broker_defs(sandbox.cluster)
        assert set(ours) == {k for k, d in defs.items() if not d.internal and not d.dynamic_only}
        assert all(ours[k]["config_type"] == configs.CONFIG_TYPES[defs[k].type] for k in ours)
        assert "log.cleaner.threads" in ours and "sasl.kerberos.min.time.before.relogin" in ours
