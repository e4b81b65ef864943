"""The topic and config commands against Tansu, an independent Kafka-compatible broker: the shell
must work on clusters other than our sandbox, and say clearly when one lacks an API."""

from __future__ import annotations


import pytest
from confluent_kafka.admin import AdminClient

from tests.tansu import tansu_broker
from tests.test_oneshot import shell
from tests.output import json_rows


@pytest.fixture(scope="module")
def tansu():
    with tansu_broker() as bootstrap:
        yield bootstrap


def run(bootstrap: str, line: str, *extra: str):
    return shell("--bootstrap-server", bootstrap, "--timeout", "10", *extra, "--command", line)


def topic_partitions(bootstrap: str) -> dict[str, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def test_create_list_describe_delete_topics(tansu):
    r = run(tansu, "create-topic --topic tansu-a --topic tansu-b --partitions 3 --replication-factor 1")
    assert r.returncode == 0, r.stderr
    assert "Created topic tansu-a." in r.stderr and "Created topic tansu-b." in r.stderr
    assert topic_partitions(tansu)["tansu-a"] == 3

    again = run(tansu, "create-topic --topic tansu-a --partitions 3 --replication-factor 1")
    assert again.returncode == 1
    assert again.stderr.strip() == 'Topic "tansu-a" already exists (use --if-not-exists).'

    listed = run(tansu, "list-topics", "--output", "json")
    assert {"tansu-a", "tansu-b"} <= {row["topic"] for row in json_rows(listed.stdout)}

    described = run(tansu, "describe-topic --topic tansu-a", "--output", "json")
    assert described.returncode == 0, described.stderr
    assert "tansu-a" in described.stdout and '"partition": 2' in described.stdout

    deleted = run(tansu, "delete-topic --topic tansu-b --yes")
    assert deleted.returncode == 0, deleted.stderr
    assert "tansu-b" not in topic_partitions(tansu)


def test_configs_and_cluster_description(tansu):
    assert run(tansu, "create-topic --topic tansu-c --partitions 1 --replication-factor 1").returncode == 0
    altered = run(tansu, "alter-configs --topic tansu-c --add-config retention.ms=1000")
    assert altered.returncode == 0, altered.stderr
    assert 'Completed updating config for topic "tansu-c".' in altered.stderr
    assert run(tansu, "describe-configs --topic tansu-c").returncode == 0
    cluster = run(tansu, "describe-cluster", "--output", "json")
    assert cluster.returncode == 0, cluster.stderr
    assert "tansu_cluster" in cluster.stdout


def test_missing_api_is_reported_as_not_supported_and_changes_nothing(tansu):
    assert run(tansu, "create-topic --topic tansu-d --partitions 2 --replication-factor 1").returncode == 0
    r = run(tansu, "alter-topic --topic tansu-d --partitions 4")
    assert r.returncode == 1
    assert r.stderr.strip() == ("Adding partitions needs the CreatePartitions API, which is not "
                                "supported by this cluster.")
    assert topic_partitions(tansu)["tansu-d"] == 2


def test_preferred_controller_is_refused_where_the_cluster_lacks_it(tansu):
    """Tansu, like Apache Kafka, has no preferred.controller.id: one line, exit 1, nothing sent."""
    r = run(tansu, "preferred-controller set 1 --blocking")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "This cluster has no preferred controller (preferred.controller.id is not a config of its brokers; "
        "KAFKA-1778 is not in Apache Kafka): nothing was changed. Plan the restart order with "
        "rolling-restart-plan instead."]
