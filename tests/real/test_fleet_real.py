"""Issue 33 items 4-6 on real Apache Kafka 4.4: lag roll-ups and copy-offsets with real consumers,
configs across the cluster (export with a sensitive value left out, import validated then
executed, drift among brokers with Kafka's sources and synonyms), and KIP-1312's controller
unregistration on a dynamic quorum, a controller added, stopped, removed and unregistered for
real. The sandbox's side of each is in tests/test_lag_rollups.py, tests/test_cluster_configs.py
and tests/test_kafka44_tools.py; tests/real/test_conformance.py compares the two line by line.

The clusters are shared by the test session: every name here is this module's own, and what a
test changes on a broker it takes back."""

from __future__ import annotations

import json
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.output import json_rows, json_tables
from tests.real.test_cluster_tools_real import following, made_voter, ok, wait_until
from tests.test_oneshot import assert_one_line_error, shell

SECRET = "fleet-s3cret"


def on(cluster, line: str, *extra: str, controllers: bool = False):
    both = ("--bootstrap-controller", cluster.bootstrap_controllers) if controllers else ()
    return shell("--bootstrap-server", cluster.bootstrap, *both, "--timeout", "30", *extra, "--command", line)


def committed(cluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Offsets committed by a real consumer of `group`, which then leaves (the group is Empty)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def produced(cluster, topic: str, per_partition: list[int]) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition, count in enumerate(per_partition):
        for i in range(count):
            p.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert p.flush(30) == 0


# -- lag roll-ups ----------------------------------------------------------------------------------


def test_lag_rollups_and_copy_offsets_on_kafka(kafka4):
    run = uuid.uuid4().hex[:6]
    topic, a, b, copy = f"fleet-lag-{run}", f"fleet-a-{run}", f"fleet-b-{run}", f"fleet-copy-{run}"
    ok(on(kafka4, f"create-topic --topic {topic} --replica-assignment 1:2,2:3,3:1"))
    produced(kafka4, topic, [10, 6, 3])
    committed(kafka4, a, topic, {0: 4, 1: 6})
    committed(kafka4, b, topic, {2: 1})
    tables = ok(on(kafka4, f"describe-group {a} {b} --by-topic", "-o", "json"))
    assert "offsets" not in tables
    assert [(r["group"], r["partitions"], r["lag"]) for r in tables["topic_totals"]] == [(a, 2, 6), (b, 1, 2)]
    assert tables["total"] == [{"groups": 2, "topics": 1, "partitions": 3, "lag": 8}]
    lags = {r["group"]: r["lag"] for r in json_rows(on(kafka4, "list-groups --lag", "-o", "json").stdout)}
    assert (lags[a], lags[b]) == (6, 2)

    # copy-offsets: a plan, then --execute; Kafka itself holds the copied offsets after.
    plan = ok(on(kafka4, f"copy-offsets --from-group {a} --to-group {copy}", "-o", "json"))["offsets"]
    assert [(r["partition"], r["new_offset"]) for r in plan] == [(0, 4), (1, 6)]
    p = on(kafka4, f"copy-offsets --from-group {a} --to-group {copy} --execute")
    assert p.returncode == 0 and f"Copied 2 offset(s) of group '{a}' to group '{copy}'." in p.stderr, p.stderr
    rows = json_rows(on(kafka4, f"describe-group {copy}", "-o", "json").stdout, "offsets")
    assert [(r["partition"], r["current_offset"], r["lag"]) for r in rows] == [(0, 4, 6), (1, 6, 0)]

    # An active target group is refused, as kafka-consumer-groups refuses its reset.
    member = Consumer({"bootstrap.servers": kafka4.bootstrap, "group.id": b, "session.timeout.ms": 6000,
                       "heartbeat.interval.ms": 100})
    member.subscribe([topic])
    try:
        def stable():
            groups = json_rows(on(kafka4, f"describe-group {b} --state", "-o", "json").stdout)
            member.poll(0.1)
            return groups if groups and groups[0]["state"] == "Stable" else None
        wait_until(stable, f"group {b} to be Stable")
        p = on(kafka4, f"copy-offsets --from-group {a} --to-group {b} --execute")
        assert_one_line_error(p, 1, f"Offsets can only be copied to group '{b}' if it is inactive")
    finally:
        member.close()
    ok(on(kafka4, f"delete-topic --topic {topic} --yes"))


# -- configs across the cluster ----------------------------------------------------------------------


def test_export_import_and_drift_on_kafka(kafka4, tmp_path):
    run = uuid.uuid4().hex[:6]
    topic, group, user = f"fleet-configs-{run}", f"fleet-group-{run}", f"fleet-user-{run}"
    ok(on(kafka4, f"create-topic --topic {topic} --replica-assignment 1:2 --config retention.ms=86400000"))
    ok(on(kafka4, f"alter-configs --entity-type groups --entity-name {group} --add-config consumer.session.timeout.ms=50000"))
    ok(on(kafka4, f"alter-client-quotas --entity-type users --entity-name {user} --add-config producer_byte_rate=1024"))
    ok(on(kafka4, "alter-configs --broker 2 --add-config log.cleaner.threads=2"))
    ok(on(kafka4, f"alter-configs --broker 1 --add-config listener.name.plaintext.ssl.key.password={SECRET}"))
    try:
        path = tmp_path / "configs.json"
        p = on(kafka4, f"export-configs {path}", "-o", "json")
        assert p.returncode == 0, p.stderr
        assert SECRET not in path.read_text() + p.stdout + p.stderr
        doc = json.loads(path.read_text())
        assert doc["topics"][topic] == {"retention.ms": "86400000"}
        # Kafka 4.4 lists the group's configs (ListConfigResources) though the group does not exist.
        assert doc["groups"][group] == {"consumer.session.timeout.ms": "50000"}
        assert {"entity": {"user": user}, "quotas": {"producer_byte_rate": 1024}} in doc["client_quotas"]
        assert doc["brokers"]["2"]["log.cleaner.threads"] == "2"
        assert "listener.name.plaintext.ssl.key.password" in doc["sensitive_left_out"]["brokers"]["1"]
        assert "listener.name.plaintext.ssl.key.password" not in doc["brokers"]["1"]

        # Only this test's entities, changed: the plan, Kafka's validation, then --execute.
        mine = {"format": doc["format"], "version": doc["version"], "topics": {topic: {"retention.ms": "3600000"}},
                "groups": {group: {"consumer.session.timeout.ms": "45000"}},
                "client_quotas": [{"entity": {"user": user}, "quotas": {"consumer_byte_rate": 2048}}]}
        changed = tmp_path / "mine.json"
        changed.write_text(json.dumps(mine))
        rows = ok(on(kafka4, f"import-configs {changed}", "-o", "json"))["changes"]
        assert {(r["entity"], r["name"], r["value"], r["new_value"], r["action"]) for r in rows} == {
            (topic, "retention.ms", "86400000", "3600000", "set"),
            (group, "consumer.session.timeout.ms", "50000", "45000", "set"),
            (f"user={user}", "consumer_byte_rate", None, 2048, "set"),
            (f"user={user}", "producer_byte_rate", 1024, None, "delete")}
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**mine, "groups": {group: {"consumer.session.timeout.ms": "1"}}}))
        p = on(kafka4, f"import-configs {bad} --execute")
        assert p.returncode == 1 and "must be in the range" in p.stderr and "Nothing was changed" in p.stderr, p.stderr
        p = on(kafka4, f"import-configs {changed} --execute")
        assert p.returncode == 0 and "Changed the configs of 3 of 3 entities." in p.stderr, p.stderr
        assert "The cluster matches" in on(kafka4, f"import-configs {changed}").stderr
        configs = {r["name"]: r["value"] for r in ok(on(kafka4, f"describe-configs --topic {topic}", "-o", "json"))["configs"]}
        assert configs["retention.ms"] == "3600000"

        # Drift: broker 2's dynamic value beside the others' default, with Kafka's synonyms; the
        # sensitive value differs by its source and is never shown.
        rows = json_rows(on(kafka4, "diff-configs --all-brokers", "-o", "json").stdout)
        threads = {r["broker"]: (r["value"], r["source"], r["synonyms"]) for r in rows if r["name"] == "log.cleaner.threads"}
        assert threads[2] == ("2", "DYNAMIC_BROKER_CONFIG", ["DEFAULT_CONFIG:log.cleaner.threads=1"])
        assert threads[1] == threads[3] == ("1", "DEFAULT_CONFIG", [])
        secret = {r["broker"]: (r["value"], r["source"]) for r in rows if r["name"].endswith("ssl.key.password")}
        assert secret[1] == ("******", "DYNAMIC_BROKER_CONFIG") and secret[2] == (None, None)
        # The brokers' identity (ports, directories, racks) is no drift unless asked for.
        assert not {r["name"] for r in rows} & {"listeners", "log.dirs", "broker.rack", "node.id"}
        named = {r["name"] for r in json_rows(on(kafka4, "diff-configs --broker 1 --broker 3 --include-identity",
                                                 "-o", "json").stdout)}
        assert {"listeners", "log.dirs", "broker.rack", "node.id"} <= named
    finally:
        ok(on(kafka4, "alter-configs --broker 2 --delete-config log.cleaner.threads"))
        ok(on(kafka4, "alter-configs --broker 1 --delete-config listener.name.plaintext.ssl.key.password"))
        ok(on(kafka4, f"delete-topic --topic {topic} --yes"))


# -- KIP-1312: unregistering controllers ---------------------------------------------------------------


def registered(cluster) -> set[int]:
    return {c["id"] for c in ok(on(cluster, "describe-cluster", "-o", "json", controllers=True))["controllers"]}


def test_a_controller_removed_and_unregistered_for_real(kafka4_quorum):
    cluster = kafka4_quorum
    new_id = 106
    node = cluster.add_controller(new_id)
    try:
        following(cluster, new_id)
        made_voter(cluster, new_id)
        wait_until(lambda: True if new_id in registered(cluster) else None, f"controller {new_id} to register")
        cluster.kill(new_id)   # stopped for good: Kafka keeps its registration
        assert new_id in registered(cluster)
        line = (f"remove-controller --controller-id {new_id} --controller-directory-id {node.directory_id} "
                "--unregister")
        dry = on(cluster, line + " --dry-run", controllers=True)
        assert dry.returncode == 0 and "and unregister it" in dry.stderr, dry.stderr
        p = on(cluster, line + " --yes", controllers=True)
        assert p.returncode == 0, p.stderr
        assert "-> {100, 101, 102}." in p.stderr and f"Controller {new_id} is no longer registered." in p.stderr
        assert new_id not in registered(cluster)
        assert_one_line_error(on(cluster, f"unregister-controller --id {new_id} --yes", controllers=True), 1,
                              f"Controller ID {new_id} is not currently registered.")
        assert_one_line_error(on(cluster, line + " --yes", controllers=True), 2, "is no voter",
                              f"unregister-controller --id {new_id}")
        active = json_rows(on(cluster, "describe-quorum", "-o", "json", controllers=True).stdout)[0]["leader_id"]
        assert_one_line_error(on(cluster, f"unregister-controller --id {active} --yes", controllers=True), 1,
                              "Controller cannot unregister itself while it is active.")
    finally:
        cluster.forget(new_id)


def test_kip_1147_names_on_kafka(kafka4, tmp_path):
    props = tmp_path / "admin.properties"
    props.write_text("client.id=fleet-kip-1147\n")
    for options in (("--admin.config", str(props)), ("--command-property", "client.id=fleet")):
        p = shell("--bootstrap-server", kafka4.bootstrap, *options, "-o", "json", "--command", "describe-cluster")
        assert p.returncode == 0 and json_tables(p.stdout)["brokers"], (options, p.stderr)
