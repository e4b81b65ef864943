"""Topic, config, cluster and named-cluster commands, run as a real process on a sandbox."""

from __future__ import annotations

import json
import os
import stat

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from tests.test_oneshot import run, shell, topics
from tests.output import json_data, json_documents, json_rows


def out_json(p):
    assert p.returncode == 0, p.stderr
    return json_data(p.stdout)


def test_if_not_exists_if_exists_and_dry_run_change_nothing(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 1)
    p = run(sandbox, "create-topic --topic t --topic u --if-not-exists")
    assert p.returncode == 0 and "Topic t already exists: skipped." in p.stderr
    p = run(sandbox, "create-topic --topic v --partitions 4 --dry-run")
    assert p.returncode == 0 and "Topic v would be created (dry run)." in p.stderr
    p = run(sandbox, "alter-topic --topic t --partitions 6 --dry-run")
    assert p.returncode == 0 and "would grow from 2 to 6" in p.stderr
    p = run(sandbox, "delete-topic --topic t --dry-run")
    assert p.returncode == 0 and "Would delete topic t (dry run)." in p.stderr
    p = run(sandbox, "delete-topic --topic gone --if-exists --yes")
    assert p.returncode == 0 and "Topic gone does not exist: skipped." in p.stderr
    assert topics(sandbox) == {"t": 2, "u": 1}


def test_delete_by_pattern_and_replica_assignment(sandbox):
    p = run(sandbox, "create-topic --topic tmp-1 --topic tmp-2 --topic keep --replica-assignment 3:1,1:2")
    assert p.returncode == 0, p.stderr
    assert [pt.replicas for pt in sandbox.cluster.topics["keep"].partitions] == [[3, 1], [1, 2]]
    p = run(sandbox, "delete-topic --topic 'tmp-.*' --yes")
    assert p.returncode == 0 and p.stderr.count("Deleted topic") == 2
    assert set(topics(sandbox)) == {"keep"}
    p = run(sandbox, "delete-topic --topic 'zzz-.*' --yes")
    assert p.returncode == 1 and "No topic matches zzz-.*" in p.stderr


def test_describe_filters(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 3, 3, [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "o", 1, 1, [[1]], {"retention.ms": "5"})
    sandbox.stop_broker(3)
    rows = out_json(run(sandbox, "describe-topic --unavailable-partitions", "-o", "json"))
    assert rows == []  # every partition still has a live leader
    rows = out_json(run(sandbox, "describe-topic --topic t --not-preferred-leader", "-o", "json"))
    assert [r["partition"] for r in rows] == [2]  # partition 2 lost its preferred leader 3
    rows = out_json(run(sandbox, "describe-topic --topic t --under-replicated-partitions", "-o", "json"))
    assert [r["partition"] for r in rows] == [0, 1, 2]
    rows = out_json(run(sandbox, "describe-topic --topics-with-overrides", "-o", "json"))
    assert [(r["topic"], r["configs"]) for r in rows] == [("o", {"retention.ms": "5"})]   # an object, not k=v text
    p = run(sandbox, "alter-configs --topic t --add-config min.insync.replicas=3")
    assert p.returncode == 0, p.stderr
    rows = out_json(run(sandbox, "describe-topic --topic t --under-min-isr-partitions", "-o", "json"))
    assert len(rows) == 3
    rows = out_json(run(sandbox, "describe-topic --topic o --at-min-isr-partitions", "-o", "json"))
    assert [r["topic"] for r in rows] == ["o"]


def test_configs_for_topics_brokers_and_defaults(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)
    p = run(sandbox, "alter-configs --topic t --add-config retention.ms=1000,cleanup.policy=[compact,delete]")
    assert p.returncode == 0 and 'Completed updating config for topic "t".' in p.stderr
    assert sandbox.cluster.topics["t"].configs == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    rows = out_json(run(sandbox, "describe-configs --topic t", "-o", "json"))
    # min.insync.replicas: Kafka 4.x's controller sets it cluster-wide at bootstrap (ELR).
    assert {r["name"]: r["value"] for r in rows} == {"retention.ms": "1000", "cleanup.policy": "compact,delete",
                                                      "min.insync.replicas": "1"}
    p = run(sandbox, "alter-configs --topic t --delete-config retention.ms")
    assert p.returncode == 0 and sandbox.cluster.topics["t"].configs == {"cleanup.policy": "compact,delete"}
    p = run(sandbox, "alter-configs --entity-type brokers --entity-default --add-config log.retention.ms=3600000")
    assert p.returncode == 0, p.stderr
    assert "cluster-wide broker defaults" in p.stderr
    assert sandbox.cluster.cluster_configs.get("log.retention.ms") == "3600000"
    rows = out_json(run(sandbox, "describe-configs --broker 1 --all", "-o", "json"))
    assert any(r["name"] == "log.retention.ms" and r["value"] == "3600000" for r in rows)


def test_cluster_views(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 6, 2)
    data = out_json(run(sandbox, "describe-cluster", "-o", "json"))
    assert data["cluster"] == [{"cluster_id": sandbox.cluster.cluster_id, "mode": "KRaft", "controller": 100,
                                "controller_epoch": sandbox.controller_epoch, "brokers": 3, "topics": 1,
                                "partitions": 6}]
    assert sum(b["partitions"] for b in data["brokers"]) == 12
    assert sum(b["leaders"] for b in data["brokers"]) == 6
    rows = out_json(run(sandbox, "api-versions", "-o", "json"))
    create = next(r for r in rows if r["api"] == "CreateTopics")
    assert create["key"] == 19 and create["max_version"] >= create["min_version"]


def test_named_clusters_file(sandbox, tmp_path):
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path), "SANDBOX_ADDR": sandbox.bootstrap}
    p = shell("--command", "add-cluster dev --bootstrap-server ${SANDBOX_ADDR} -X client.id=shell-test",
              env=env)
    assert p.returncode == 0, p.stderr
    path = tmp_path / "clusters.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text())["clusters"]["dev"]["bootstrap"] == "${SANDBOX_ADDR}"  # kept unexpanded
    rows = out_json(shell("--command", "clusters", "-o", "json", env=env))
    assert rows == [{"name": "dev", "bootstrap": "${SANDBOX_ADDR}", "bootstrap_controller": None, "properties": 1, "current": False}]
    p = shell("--cluster", "dev", "--command", "create-topic --topic via-name", env=env)
    assert p.returncode == 0, p.stderr
    assert "via-name" in topics(sandbox)
    p = shell("--command", "use-cluster dev", env=env)
    assert p.returncode == 0
    assert json.loads((tmp_path / "state.json").read_text()) == {"current": "dev"}
    p = shell("--command", "list-topics", "-o", "csv", env=env)  # the current cluster is the default, said so
    assert p.returncode == 0 and "via-name" in p.stdout
    assert p.stderr == ('Using cluster "dev", the current one (use-cluster chose it; --cluster or --bootstrap-server '
                        "picks another).\n")
    p = shell("--cluster", "prod", "--command", "list-topics", env=env)
    assert p.returncode == 2 and 'Unknown cluster "prod" (known clusters: dev)' in p.stderr
    assert shell("--command", "add-cluster bad --bootstrap-server '${KSH_TEST_UNSET}'", env=env).returncode == 0
    p = shell("--cluster", "bad", "--command", "list-topics", env=env)
    assert p.returncode == 2
    assert p.stderr.strip() == 'Cluster "bad" uses ${KSH_TEST_UNSET}, which is not set: export it and retry'
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_sandbox_commands_with_embedded_cluster():
    p = shell("--sandbox", "--file", "-", "--quiet", "--output", "json", stdin=(
        "sandbox stop-broker 2\n"
        "sandbox status\n"
        "sandbox start-broker 2\n"
        "sandbox stop-broker 9\n"))
    assert p.returncode == 1
    assert "Broker 2 stopped." in p.stderr and "Broker 2 started." in p.stderr
    (status_doc,) = [d for d in json_documents(p.stdout) if d]   # the other lines print {}
    status = json_rows(json.dumps(status_doc))
    assert {r["node"]: r["state"] for r in status} == {1: "up", 2: "down", 3: "up", 100: "up"}
    assert "stdin:4: no broker 9 in the sandbox" in p.stderr


def test_describe_shows_moving_replicas_and_eligible_leaders(sandbox, tmp_path):
    from tests.sandbox.wire import produce
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "m", 1, 2, [[1, 2]])
    produce(sandbox, "m", 0, 4, 2000)
    sandbox.set_replication_rate(100)  # broker 3 copies 8 kB at 100 B/s: the move stays in progress
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "m", "partition": 0, "replicas": [3, 2]}]}))
    p = run(sandbox, f"reassign-partitions --execute --reassignment-json-file {plan}")
    assert p.returncode == 0, p.stderr
    (row,) = out_json(run(sandbox, "describe-topic --topic m", "-o", "json"))["partitions"]
    assert (row["replicas"], row["adding_replicas"], row["removing_replicas"]) == ([3, 2, 1], [3], [1])
    # Kafka does not count replicas being added: 2 in-sync of the 2 the partition will keep.
    assert out_json(run(sandbox, "describe-topic --topic m --under-replicated-partitions", "-o", "json")) == []

    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "e", 1, 3, [[1, 2, 3]], {"min.insync.replicas": "3"})
    sandbox.stop_broker(3)
    (row,) = out_json(run(sandbox, "describe-topic --topic e", "-o", "json"))["partitions"]
    assert row["isr"] == [1, 2] and row["elr"] == [3]  # KIP-966: left the ISR below min ISR
