"""The conformance suite: every scenario of SCENARIOS runs on real Apache Kafka and on the sandbox
in the same mode, and the two must answer alike (tests/real/conformance.py runs and compares
them). Clusters: `kraft4` (Kafka 4.x, controller 100, brokers 1-3 on racks a, b, c), `zk39`
(Kafka 3.9 in ZooKeeper mode, brokers 1-3) and `secured` (one 4.x node with SASL, TLS and
StandardAuthorizer). The scenarios of one cluster run in table order in one session, so a
scenario may see what earlier ones left (the sandbox sees the same); the ones that read the whole
cluster come first.

Where the sandbox answers otherwise and it is not fixed, KNOWN_DIFFERENCES says where and why
(docs/sandbox.md lists them by scenario): the comparison masks just that part, and fails when the
difference is gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox import tls
from kafka_shell.sandbox.server import Sandbox
from tests.real.conformance import (
    As, Commit, Join, KnownDifference, Leave, OldClient, Produce, ReadFile, ReadSnapshot, Scenario, ShareConsume, Side,
    StartBroker, Stdin, StopBroker, StopStreams, Streams, WaitFor, Where, analyze_together, compare, run_both, scenario,
    wait_brokers,
)
from tests.real_kafka import SECURED_MECHANISMS, SECURED_TOKEN_SECRET, SECURED_USERS, SUPER_USERS, RealKafka

K, Z, S = "kraft4", "zk39", "secured"


def rows(outcome: dict[str, Any], table: str | None = None) -> list[dict[str, Any]]:
    out = outcome["out"]
    if not isinstance(out, dict) or not out:
        return []
    return out[table] if table else next(iter(out.values()))


def reassignment_done(o: dict[str, Any]) -> bool:
    return o["rc"] == 0 and not rows(o)


def in_sync(o: dict[str, Any]) -> bool:
    parts = rows(o, "partitions")
    return o["rc"] == 0 and bool(parts) and all(sorted(p["isr"]) == sorted(p["replicas"]) and not p["adding_replicas"]
                                                 for p in parts)


def share_done(o: dict[str, Any]) -> bool:
    """Every record of the share group's partitions done with (lag 0 everywhere)."""
    return o["rc"] == 0 and bool(rows(o)) and all(r["lag"] == 0 for r in rows(o))


def streams_caught_up(o: dict[str, Any]) -> bool:
    """The word count read all 20 records and its repartition topic: every partition at lag 0."""
    offsets = rows(o)
    return (o["rc"] == 0 and len(offsets) == 6 and all(r["lag"] == 0 for r in offsets)
            and sum(r["current_offset"] or 0 for r in offsets if not r["topic"].endswith("-repartition")) == 20)


def streams_state(o: dict[str, Any]) -> str | None:
    groups = rows(o, "groups") if o["rc"] == 0 else []
    return groups[0]["state"] if groups else None


def leaderless(o: dict[str, Any]) -> bool:
    parts = rows(o, "partitions")
    return o["rc"] == 0 and bool(parts) and all(p["leader"] in (None, -1, "none") for p in parts)


# The scenarios, by cluster; each names the clusters it runs on. Lines are one-shot shell commands
# (`--output json --timeout 10`), `{t}`/`{t2}`/`{g}` the scenario's own topic and group names,
# `{dir}` its work dir, `{ctl}` the controller bootstrap.
SCENARIOS: list[tuple[tuple[str, ...], Scenario]] = [
    # -- the whole cluster first (before any scenario leaves topics or groups behind) ----------
    ((K, Z, S), scenario("cluster.describe", "describe-cluster", "list-brokers", "list-topics")),
    ((K, Z, S), scenario("cluster.controller", "describe-controller")),
    ((K,), scenario("cluster.quorum", "describe-quorum --status", "describe-quorum --replication")),
    ((K,), scenario("cluster.quorum-bootstrap-controller", "describe-quorum --bootstrap-controller {ctl}",
                    "describe-controller --bootstrap-controller {ctl}")),
    ((K, Z, S), scenario("cluster.api-versions", "api-versions --broker 1")),
    ((K,), scenario("cluster.features", "describe-features", "upgrade-features --metadata 4.4 --dry-run",
                    "disable-feature --feature streams.version --dry-run",
                    "downgrade-features --metadata 4.1 --dry-run",
                    "upgrade-features --feature no.such.version=1 --dry-run")),
    ((K,), scenario("cluster.features-bootstrap-controller", "describe-features --bootstrap-controller {ctl}",
                    "describe-cluster --bootstrap-controller {ctl}")),
    ((K,), scenario("cluster.broker-loggers",
                    "alter-configs --entity-type broker-loggers --entity-name 1 --add-config kafka.server.ReplicaManager=DEBUG",
                    "alter-configs --entity-type broker-loggers --entity-name 1 --add-config kafka.server.ReplicaManager=LOUD",
                    "alter-configs --entity-type broker-loggers --entity-name 1 --delete-config kafka.server.ReplicaManager")),
    ((K,), scenario("cluster.client-metrics",
                    "alter-client-metrics --name {t} --metrics org.apache.kafka.producer. --interval 60000 "
                    "--match client_software_name=kafka-python",
                    "describe-client-metrics --name {t}", "alter-client-metrics --name {t} --match nope=x",
                    "delete-client-metrics --name {t} --yes", "describe-client-metrics --name {t}")),
    ((K,), scenario("cluster.unregister-unknown-broker", "unregister-broker --id 7 --yes")),
    # KIP-1312 (Kafka 4.4) on a static quorum of one: the active controller refuses, an unknown id
    # is not registered; remove-controller --unregister of a non-voter hints at unregister-controller.
    ((K,), scenario("cluster.unregister-controller",
                    "unregister-controller --id 100 --dry-run", "unregister-controller --id 100 --yes",
                    "unregister-controller --id 7 --yes",
                    "remove-controller --controller-id 7 --controller-directory-id AAAAAAAAAAAAAAAAAAAAAQ --unregister --yes")),
    ((K, Z), scenario("cluster.rolling-restart-plan",
                      "create-topic --topic {t} --replica-assignment 1:2,2:3", "rolling-restart-plan",
                      "rolling-restart-plan --brokers 1,3", "delete-topic --topic {t} --yes")),
    ((K,), scenario("broker-ids.none-missing", "broker-ids missing", "broker-ids hosts",
                    "broker-ids suggest --host new-machine", "broker-ids record --dry-run")),
    ((K, Z), scenario("cluster.all-topic-partitions",
                      "create-topic --topic {t} --replica-assignment 1:2:3,2:3:1",
                      "elect-leaders --election-type preferred --all-topic-partitions",
                      "describe-topic", "delete-topic --topic {t} --yes")),
    # One analysis (one Spark run) of both clusters' snapshots: each side gets its cluster's rows.
    ((K,), scenario("snapshot.analyze",
                    "create-topic --topic {t} --replica-assignment 1:2:3,2:3:1,3:1:2",
                    Produce("{t}", 30, keyed=True),
                    Commit("{g}", "{t}", {0: 3, 2: 1}),
                    "snapshot --output-dir {dir}/snaps",
                    ReadSnapshot("snaps"),
                    "delete-topic --topic {t} --yes",
                    together=analyze_together("snaps", ("health", "broker_load", "rack_load", "missing_brokers",
                                                        "recovery", "preferred", "rebalance")))),

    # -- clients of another era ------------------------------------------------------------------
    # Kafka 3.9 still takes message formats v0 and v1 (Produce v0-v2) and gives them (Fetch v0-v3).
    ((Z,), scenario("clients.old-message-formats",
                    "create-topic --topic {t} --replica-assignment 1:2:3",
                    OldClient("{t}", (0, 9), 5),          # Produce v1 with format v0, Fetch v1
                    OldClient("{t}", (0, 10, 1), 5),      # Produce v2 with format v1, Fetch v3
                    "delete-topic --topic {t} --yes")),

    # -- topics ---------------------------------------------------------------------------------
    ((K, Z), scenario("topics.create-assigned",
                      "create-topic --topic {t} --replica-assignment 1:2:3,2:3:1,3:1:2",
                      "describe-topic --topic {t}", "list-topics '{t}.*'")),
    ((K, Z), scenario("topics.create-several",
                      "create-topic --topic {t} --topic {t2} --partitions 3 --replication-factor 3",
                      "list-topics '{t}.*'")),
    ((K, Z), scenario("topics.create-with-configs",
                      "create-topic --topic {t} --replica-assignment 1:2 --config retention.ms=60000 "
                      "--config cleanup.policy=compact --config max.message.bytes=2000000",
                      "describe-configs --topic {t}", "describe-topic --topic {t}")),
    ((K,), scenario("topics.if-not-exists",
                    "create-topic --topic {t} --replica-assignment 2:3",
                    "create-topic --topic {t} --replica-assignment 2:3 --if-not-exists",
                    "describe-topic --topic {t}")),
    ((K,), scenario("topics.dry-run",
                    "create-topic --topic {t} --partitions 2 --replication-factor 2 --dry-run",
                    "list-topics '{t}.*'",
                    "create-topic --topic {t} --replica-assignment 1,2",
                    "alter-topic --topic {t} --partitions 4 --dry-run",
                    "delete-topic --topic {t} --dry-run", "describe-topic --topic {t}")),
    ((K, Z), scenario("topics.add-partitions",
                      "create-topic --topic {t} --replica-assignment 1:2",
                      "alter-topic --topic {t} --partitions 3 --replica-assignment 2:3,3:1",
                      "describe-topic --topic {t}")),
    ((K,), scenario("topics.add-partitions-placed",
                    "create-topic --topic {t} --partitions 2 --replication-factor 3",
                    "alter-topic --topic {t} --partitions 5", "list-topics '{t}'")),
    ((K, Z), scenario("topics.alter-configs",
                      "create-topic --topic {t} --replica-assignment 1:2",
                      "alter-topic --topic {t} --config retention.ms=1000 --config segment.bytes=1048576",
                      "describe-configs --topic {t}",
                      "alter-topic --topic {t} --delete-config retention.ms",
                      "describe-configs --topic {t}")),
    ((K,), scenario("topics.alter-replication-factor",
                    "create-topic --topic {t} --replica-assignment 1,2,3",
                    "alter-topic --topic {t} --replication-factor 2",
                    WaitFor("reassign-partitions --list", reassignment_done),
                    "describe-topic --topic {t}")),
    ((K, Z), scenario("topics.delete",
                      "create-topic --topic {t} --topic {t2} --replica-assignment 1:2",
                      "delete-topic --topic {t} --yes", "list-topics '{t}.*'",
                      "delete-topic --topic {t} --if-exists --yes",
                      "delete-topic --topic '{t}-.*' --yes", "list-topics '{t}.*'")),
    ((K,), scenario("topics.glob",
                    "create-topic --topic {t}-a --topic {t}-b --topic {t}-c --replica-assignment 3:1",
                    "describe-topic --topic '{t}-[ab]'", "list-topics '{t}-.*'",
                    "alter-topic --topic '{t}-.*' --config retention.ms=5000",
                    "describe-topic --topic '{t}-.*' --topics-with-overrides")),
    ((K, Z), scenario("topics.filter-overrides",
                      "create-topic --topic {t} --replica-assignment 1:2 --config retention.ms=5000",
                      "create-topic --topic {t2} --replica-assignment 1:2",
                      "describe-topic --topic '{t}.*' --topics-with-overrides")),
    ((K,), scenario("topics.filter-min-isr",
                    "create-topic --topic {t} --replica-assignment 1:2:3,2:3:1 --config min.insync.replicas=3",
                    "describe-topic --topic {t} --at-min-isr-partitions",
                    "describe-topic --topic {t} --under-min-isr-partitions",
                    "describe-topic --topic {t} --under-replicated-partitions",
                    "describe-topic --topic {t} --unavailable-partitions",
                    "describe-topic --topic {t} --not-preferred-leader")),
    ((K,), scenario("topics.internal",
                    "list-topics '__*'", "list-topics '__*' --exclude-internal",
                    "describe-topic --topic __consumer_offsets --exclude-internal")),

    # -- configs --------------------------------------------------------------------------------
    ((K, Z), scenario("configs.topic-all",
                      "create-topic --topic {t} --replica-assignment 1:2:3 --config retention.ms=123456",
                      Where("describe-configs --topic {t} --all", "name",
                            ("retention.ms", "cleanup.policy", "segment.bytes", "min.insync.replicas",
                             "max.message.bytes", "compression.type", "unclean.leader.election.enable")))),
    ((K, Z), scenario("configs.broker-dynamic",
                      "alter-configs --broker 1 --add-config num.io.threads=6,max.connections=5000",
                      Where("describe-configs --broker 1", "source", ("DYNAMIC_BROKER_CONFIG",)),
                      "alter-configs --broker 1 --delete-config num.io.threads,max.connections",
                      Where("describe-configs --broker 1", "source", ("DYNAMIC_BROKER_CONFIG",)))),
    ((K,), scenario("configs.broker-cleaner",
                    "alter-configs --broker 2 --add-config log.cleaner.threads=2,log.cleaner.io.max.bytes.per.second=1048576",
                    Where("describe-configs --broker 2", "source", ("DYNAMIC_BROKER_CONFIG",)),
                    "alter-configs --broker 2 --delete-config log.cleaner.threads,log.cleaner.io.max.bytes.per.second")),
    ((K, Z), scenario("configs.broker-default",
                      "alter-configs --entity-default --add-config log.retention.bytes=1073741824",
                      "describe-configs --entity-default",
                      Where("describe-configs --broker 2 --all", "name", ("log.retention.bytes",)),
                      "alter-configs --entity-default --delete-config log.retention.bytes",
                      "describe-configs --entity-default")),
    ((K,), scenario("configs.entity-type-form",
                    "create-topic --topic {t} --replica-assignment 2:3",
                    "alter-configs --entity-type topics --entity-name {t} --add-config retention.ms=7000,flush.messages=10",
                    "describe-configs --entity-type topics --entity-name {t}",
                    "alter-configs --entity-type topics --entity-name {t} --delete-config flush.messages",
                    "describe-configs --topic {t}")),
    ((K,), scenario("configs.list-values",
                    "create-topic --topic {t} --replica-assignment 1:2,2:3",
                    "alter-configs --topic {t} --add-config 'leader.replication.throttled.replicas=[0:1,1:2]'",
                    "describe-configs --topic {t}")),
    ((K,), scenario("configs.dry-run",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    "alter-configs --topic {t} --add-config retention.ms=1 --dry-run",
                    "describe-configs --topic {t}")),
    # Configs across the cluster (issue 33): a file of this scenario's entities only (the clusters
    # hold others' too), planned, validated by the cluster, refused, executed.
    ((K,), scenario("configs.import",
                    "create-topic --topic {t} --replica-assignment 1:2 --config retention.ms=86400000 "
                    "--config cleanup.policy=compact",
                    "import-configs {dir}/mine.json", "import-configs {dir}/bad.json --execute",
                    "import-configs {dir}/mine.json --execute", "import-configs {dir}/mine.json",
                    "describe-configs --topic {t}", "describe-configs --entity-type groups --entity-name {g}",
                    "describe-client-quotas --entity-type users --entity-name {t}",
                    "import-configs {dir}/ghost.json",
                    files={"mine.json": '{{"format": "kafka-shell configs", "version": 1, '
                                        '"topics": {{"{t}": {{"retention.ms": "3600000"}}}}, '
                                        '"groups": {{"{g}": {{"consumer.session.timeout.ms": "50000"}}}}, '
                                        '"client_quotas": [{{"entity": {{"user": "{t}"}}, "quotas": {{"producer_byte_rate": 1024}}}}]}}',
                           "bad.json": '{{"format": "kafka-shell configs", "version": 1, '
                                       '"topics": {{"{t}": {{"retention.ms": "soon"}}}}, '
                                       '"groups": {{"{g}": {{"consumer.heartbeat.interval.ms": "1"}}}}}}',
                           "ghost.json": '{{"format": "kafka-shell configs", "version": 1, '
                                         '"topics": {{"{t2}": {{"retention.ms": "1"}}}}}}'})),
    ((K,), scenario("configs.drift",
                    "alter-configs --broker 2 --add-config log.cleaner.threads=2",
                    Where("diff-configs --all-brokers", "Name", ("log.cleaner.threads",)),
                    "alter-configs --broker 2 --delete-config log.cleaner.threads",
                    Where("diff-configs --broker 1 --broker 2", "Name", ("log.cleaner.threads",)),
                    "diff-configs --broker 1")),
    ((K,), scenario("configs.broker-all",
                    Where("describe-configs --broker 3 --all", "name",
                          ("num.io.threads", "log.retention.hours", "message.max.bytes", "auto.create.topics.enable",
                           "default.replication.factor", "unclean.leader.election.enable", "broker.rack")))),

    # -- elections ------------------------------------------------------------------------------
    ((K, Z), scenario("elect.preferred-not-needed",
                      "create-topic --topic {t} --replica-assignment 1:2,2:3",
                      "elect-leaders --election-type preferred --topic {t}",
                      "elect-leaders --election-type preferred --topic {t} --partition 1",
                      "preferred-replica-leader-election --topic {t}")),
    ((K,), scenario("elect.unclean-not-needed",
                    "create-topic --topic {t} --replica-assignment 3:1",
                    "elect-leaders --election-type unclean --topic {t} --partition 0 --yes")),
    ((K,), scenario("elect.unclean-offline",
                    "create-topic --topic {t} --replica-assignment 3:2 --config unclean.leader.election.enable=false",
                    Produce("{t}", 4),
                    StopBroker(2),
                    StopBroker(3),
                    StartBroker(2),
                    WaitFor("describe-topic --topic {t}", leaderless),
                    "elect-leaders --election-type preferred --topic {t}",
                    "elect-leaders --election-type unclean --topic {t} --partition 0 --yes",
                    "describe-topic --topic {t}",
                    "get-offsets --topic {t}")),
    ((K,), scenario("elect.json-file",
                    "create-topic --topic {t} --replica-assignment 1:2,2:3,3:1",
                    "elect-leaders --election-type preferred --path-to-json-file {dir}/elect.json",
                    files={"elect.json": '{{"partitions":[{{"topic":"{t}","partition":0}},{{"topic":"{t}","partition":2}}]}}'})),
    ((K,), scenario("elect.designated-on-stock-kafka",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    "elect-leaders --election-type designated --path-to-json-file {dir}/d.json --yes",
                    files={"d.json": '{{"partitions":[{{"topic":"{t}","partition":0,"designatedLeader":2}}]}}'})),
    ((K,), scenario("elect.after-restart",
                    "create-topic --topic {t} --replica-assignment 1:2:3,1:3:2",
                    StopBroker(1),
                    "describe-topic --topic {t}",
                    "describe-topic --topic {t} --under-replicated-partitions",
                    "list-brokers",
                    StartBroker(1, "{t}"),
                    "describe-topic --topic {t} --not-preferred-leader",
                    "elect-leaders --election-type preferred --topic {t}",
                    "describe-topic --topic {t}")),

    # -- reassignments --------------------------------------------------------------------------
    ((K,), scenario("reassign.generate",
                    "create-topic --topic {t} --replica-assignment 1:2,1:2,1:2,1:2",
                    "reassign-partitions --generate --topic {t} --broker-list 1,2,3 --proposed-json-file {dir}/proposed.json",
                    ReadFile("proposed.json"),
                    "reassign-partitions --generate --topic {t} --broker-list 1,2,3 --disable-rack-aware",
                    "reassign-partitions --generate --topics-to-move-json-file {dir}/move.json --broker-list 2,3",
                    files={"move.json": '{{"topics":[{{"topic":"{t}"}}],"version":1}}'})),
    ((K, Z), scenario("reassign.execute-verify",
                      "create-topic --topic {t} --replica-assignment 1:2,2:3",
                      Produce("{t}", 20, keyed=True),
                      "reassign-partitions --execute --reassignment-json-file {dir}/plan.json",
                      WaitFor("reassign-partitions --verify --reassignment-json-file {dir}/plan.json",
                              lambda o: o["rc"] == 0),
                      "reassign-partitions --verify --reassignment-json-file {dir}/plan.json",
                      "reassign-partitions --list",
                      "describe-topic --topic {t}",
                      files={"plan.json": '{{"version":1,"partitions":[{{"topic":"{t}","partition":0,"replicas":[3,2]}},'
                                          '{{"topic":"{t}","partition":1,"replicas":[2,1]}}]}}'})),
    ((K,), scenario("reassign.throttled",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json --throttle 50000000",
                    WaitFor("reassign-partitions --list", reassignment_done),
                    "reassign-partitions --verify --reassignment-json-file {dir}/plan.json",
                    Where("describe-configs --broker 3", "source", ("DYNAMIC_BROKER_CONFIG",)),
                    "describe-configs --topic {t}",
                    files={"plan.json": '{{"partitions":[{{"topic":"{t}","partition":0,"replicas":[3,1]}}]}}'})),
    ((K,), scenario("reassign.blocking",
                    "create-topic --topic {t} --replica-assignment 1:2:3",
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json --blocking",
                    "describe-topic --topic {t}",
                    files={"plan.json": '{{"partitions":[{{"topic":"{t}","partition":0,"replicas":[2,3,1]}}]}}'})),
    ((K,), scenario("reassign.in-progress-cancel",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    StopBroker(3),
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json",
                    "reassign-partitions --list",
                    "reassign-partitions --verify --reassignment-json-file {dir}/plan.json",
                    "describe-topic --topic {t}",
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json",
                    "reassign-partitions --cancel --reassignment-json-file {dir}/plan.json",
                    "reassign-partitions --list",
                    "describe-topic --topic {t}",
                    StartBroker(3),
                    files={"plan.json": '{{"partitions":[{{"topic":"{t}","partition":0,"replicas":[1,2,3]}}]}}'})),
    ((K, Z), scenario("reassign.list-none", "reassign-partitions --list",
                      "reassign-partitions --cancel --all")),

    # -- unclean recovery (the stock-Kafka path) -----------------------------------------------
    ((K,), scenario("recovery.stock-path",
                    "create-topic --topic {t} --replica-assignment 2:3 --config unclean.leader.election.enable=false",
                    Produce("{t}", 5),
                    StopBroker(3),
                    Produce("{t}", 7),
                    StopBroker(2),
                    StartBroker(3),
                    WaitFor("describe-topic --topic {t}", leaderless),
                    "describe-topic --topic {t} --unavailable-partitions",
                    "unclean-recovery --all-offline-partitions --show-replica-info",
                    "unclean-recovery --all-offline-partitions --automated-recovery --dry-run",
                    "unclean-recovery --all-offline-partitions --automated-recovery --yes",
                    "describe-topic --topic {t}",
                    "get-offsets --topic {t}",
                    "unclean-recovery --all-offline-partitions --automated-recovery --yes")),
    ((K,), scenario("recovery.nothing-offline",
                    "unclean-recovery --all-offline-partitions --show-replica-info",
                    "unclean-recovery --all-offline-partitions --automated-recovery --yes")),

    # -- groups and offsets ---------------------------------------------------------------------
    ((K, Z), scenario("groups.committed",
                      "create-topic --topic {t} --replica-assignment 1:2,2:3",
                      Produce("{t}", 10, partition=0), Produce("{t}", 4, partition=1),
                      Commit("{g}", "{t}", {0: 6, 1: 4}),
                      "describe-group {g}", "describe-group {g} --state", "describe-group {g} --members",
                      "list-groups --state Empty")),
    ((K, Z), scenario("groups.active-member",
                      "create-topic --topic {t} --replica-assignment 1:2,2:3,3:1",
                      Join("{g}", "{t}"),
                      "describe-group {g} --members", "describe-group {g} --state",
                      "reset-offsets --group {g} --topic {t} --to-earliest --execute --yes",
                      "delete-group {g} --yes",
                      Leave("{g}"))),
    ((K,), scenario("groups.reset-offsets",
                    "create-topic --topic {t} --replica-assignment 1:2,2:3",
                    Produce("{t}", 10, partition=0), Produce("{t}", 10, partition=1),
                    Commit("{g}", "{t}", {0: 5, 1: 5}),
                    "reset-offsets --group {g} --topic {t} --to-earliest",
                    "reset-offsets --group {g} --topic {t}:0 --shift-by -2 --execute --yes",
                    "reset-offsets --group {g} --topic {t}:1 --to-offset 99 --execute --yes",
                    "reset-offsets --group {g} --all-topics --to-latest --dry-run",
                    "reset-offsets --group {g} --all-topics --to-current --export",
                    "describe-group {g}")),
    # Share groups (KIP-932): Kafka's console share consumer accepts, then releases records until
    # the delivery limit; the shell describes, resets and deletes the share state alike.
    ((K,), scenario("share.groups",
                    "create-topic --topic {t} --replica-assignment 1:2,2:3",
                    Produce("{t}", 4, partition=0), Produce("{t}", 4, partition=1),
                    "alter-configs --entity-type groups --entity-name {g} --add-config share.auto.offset.reset=earliest",
                    ShareConsume("{g}", "{t}", 8),
                    WaitFor("describe-share-group {g}", share_done),
                    "describe-share-group {g}", "describe-share-group {g} --state", "describe-share-group {g} --members",
                    "reset-share-group-offsets --group {g} --topic {t} --to-earliest",
                    "reset-share-group-offsets --group {g} --all-topics --to-offset 2 --execute",
                    "describe-share-group {g}",
                    # Released until archived: which start offset Kafka last wrote depends on how its
                    # acknowledgements fell into writes, so only lag 0 (every record done with) is awaited.
                    ShareConsume("{g}", "{t}", 20, ("--release",)),
                    WaitFor("describe-share-group {g}", share_done),
                    "describe-share-group {g} --state",
                    "delete-share-group-offsets --group {g} --topic {t} --dry-run",
                    "delete-share-group-offsets --group {g} --topic {t} --yes",
                    "describe-share-group {g}",
                    "delete-share-group-offsets --group {g} --topic {t} --yes",
                    "delete-share-group-offsets --group {g} --topic {t}2 --yes",
                    "delete-share-group {g} --yes",
                    "describe-share-group {g}")),
    ((K,), scenario("groups.reset-from-file",
                    "create-topic --topic {t} --replica-assignment 3:1",
                    Produce("{t}", 8),
                    Commit("{g}", "{t}", {0: 8}),
                    "reset-offsets --group {g} --from-file {dir}/plan.csv --execute --yes",
                    "describe-group {g}",
                    files={"plan.csv": "{t},0,3\n"})),
    ((K, Z), scenario("groups.delete",
                      "create-topic --topic {t} --replica-assignment 2:3",
                      Produce("{t}", 3),
                      Commit("{g}", "{t}", {0: 3}), Commit("{g2}", "{t}", {0: 1}),
                      "delete-offsets --group {g} --topic {t} --yes",
                      "describe-group {g}",
                      "delete-group {g2} --yes",
                      "describe-group {g2} --state")),
    # Lag roll-ups and copy-offsets (issue 33): totals from each partition's log end read once.
    ((K,), scenario("groups.lag-rollups",
                    "create-topic --topic {t} --replica-assignment 1:2,2:3", "create-topic --topic {t2} --replica-assignment 3:1",
                    Produce("{t}", 10, partition=0), Produce("{t}", 6, partition=1), Produce("{t2}", 5),
                    Commit("{g}", "{t}", {0: 4, 1: 6}), Commit("{g}", "{t2}", {0: 1}), Commit("{g2}", "{t}", {0: 10}),
                    "describe-group {g} {g2} --by-topic", "describe-group {g} {g2}", "describe-group {g2} --by-topic",
                    Where("list-groups --lag", "Group", ("groups-lag-rollups-g", "groups-lag-rollups-g2")))),
    ((K,), scenario("groups.copy-offsets",
                    "create-topic --topic {t} --replica-assignment 1:2,2:3",
                    Produce("{t}", 8, partition=0), Produce("{t}", 3, partition=1),
                    Commit("{g}", "{t}", {0: 5, 1: 2}),
                    "copy-offsets --from-group {g} --to-group {g2}",
                    "copy-offsets --from-group {g} --to-group {g2} --topic {t}:0 --execute",
                    "describe-group {g2}",
                    "delete-records --topic {t} --partition 1 --before-offset 3 --yes",
                    "copy-offsets --from-group {g} --to-group {g2}-x --topic {t} --export",
                    Join("{g}", "{t}"),
                    "copy-offsets --from-group {g2} --to-group {g} --execute",
                    Leave("{g}"),
                    "copy-offsets --from-group {g} --to-group {g}",
                    "copy-offsets --from-group {g}-none --to-group {g2}")),
    ((K,), scenario("groups.all-groups",
                    "create-topic --topic {t} --replica-assignment 1:3",
                    Produce("{t}", 2),
                    Commit("{g}", "{t}", {0: 1}), Commit("{g2}", "{t}", {0: 2}),
                    "describe-group {g} {g2}", "describe-group {g} {g2} --state")),

    # -- records --------------------------------------------------------------------------------
    ((K, Z), scenario("records.produce-consume",
                      "create-topic --topic {t} --replica-assignment 1:2,2:3",
                      "produce --topic {t} --partition 0 alpha beta gamma",
                      Stdin("produce --topic {t} --partition 1", "one\ntwo\n"),
                      "consume --topic {t} --from-beginning --max-messages 5",
                      "get-offsets --topic {t}",
                      "get-offsets --topic {t} --time earliest")),
    ((K,), scenario("records.keys-headers",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    "produce --topic {t} --key-separator : --header app=test --header n=1 k1:v1 k2:v2",
                    "consume --topic {t} --from-beginning --max-messages 2")),
    ((K,), scenario("records.compacted-topic-needs-keys",
                    "create-topic --topic {t} --replica-assignment 1:2 --config cleanup.policy=compact",
                    "produce --topic {t} a b")),
    ((K,), scenario("records.delete-records",
                    "create-topic --topic {t} --replica-assignment 2:3:1",
                    Produce("{t}", 10),
                    "delete-records --topic {t} --partition 0 --before-offset 4 --yes",
                    "get-offsets --topic {t} --time earliest",
                    "consume --topic {t} --from-beginning --max-messages 2",
                    "delete-records --offset-json-file {dir}/del.json --yes",
                    "get-offsets --topic {t} --time earliest",
                    files={"del.json": '{{"partitions":[{{"topic":"{t}","partition":0,"offset":7}}],"version":1}}'})),
    ((K,), scenario("records.consume-group",
                    "create-topic --topic {t} --replica-assignment 3:1",
                    Produce("{t}", 6),
                    "consume --topic {t} --group {g} --from-beginning --max-messages 4",
                    "describe-group {g}",
                    "consume --topic {t} --offset 5 --partition 0 --max-messages 1")),
    ((K,), scenario("records.log-dirs",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    Produce("{t}", 5, keyed=True),
                    "describe-log-dirs --topic {t}",
                    "describe-log-dirs --broker-list 2 --topic {t}")),
    # Records of one produce may share a millisecond (which of them max-timestamp names is then
    # timing): each record is sent by its own shell, so their timestamps increase.
    ((K,), scenario("records.max-timestamp",
                    "create-topic --topic {t} --replica-assignment 1:2",
                    "produce --topic {t} x", "produce --topic {t} y", "produce --topic {t} z",
                    "get-offsets --topic {t} --time max-timestamp",
                    "get-offsets --topic {t} --time latest --partitions 0")),

    # -- SCRAM users and quotas -----------------------------------------------------------------
    ((K,), scenario("scram.add-describe-delete",
                    As("admin", "alter-user-scram-credentials --add {t}-user --mechanism SCRAM-SHA-512 --password-env CONFORMANCE_PW"),
                    "alter-user-scram-credentials --add {t}-user --mechanism SCRAM-SHA-256 --iterations 8192 --password-env CONFORMANCE_PW",
                    "describe-user-scram-credentials --user {t}-user",
                    "alter-user-scram-credentials --delete {t}-user --mechanism SCRAM-SHA-256",
                    "describe-user-scram-credentials --user {t}-user",
                    "alter-user-scram-credentials --delete {t}-user --mechanism SCRAM-SHA-512",
                    "describe-user-scram-credentials --user {t}-user")),
    ((K, Z), scenario("quotas.user-client",
                      "alter-client-quotas --entity-type users --entity-name {t}-u "
                      "--add-config producer_byte_rate=1048576,consumer_byte_rate=2097152",
                      "alter-client-quotas --entity-type users --entity-name {t}-u --entity-type clients --entity-name c1 "
                      "--add-config request_percentage=50",
                      "alter-client-quotas --entity-default clients --add-config producer_byte_rate=4096",
                      "describe-client-quotas --entity-type users --entity-name {t}-u",
                      "describe-client-quotas --entity-default clients",
                      "alter-client-quotas --entity-default clients --delete-config producer_byte_rate",
                      "describe-client-quotas --entity-default clients")),
    ((K,), scenario("quotas.ip",
                    "alter-client-quotas --entity-type ips --entity-name 10.1.2.3 --add-config connection_creation_rate=10",
                    "describe-client-quotas --entity-type ips",
                    "alter-client-quotas --entity-type ips --entity-name 10.1.2.3 --delete-config connection_creation_rate",
                    "describe-client-quotas --entity-type ips")),

    # -- the error line of common mistakes ------------------------------------------------------
    ((K, Z), scenario("error.unknown-topic", "describe-topic --topic {t}-nosuch")),
    ((K, Z), scenario("error.replication-factor-above-brokers", "create-topic --topic {t} --replication-factor 4")),
    ((K, Z), scenario("error.bad-config-value", "create-topic --topic {t} --config retention.ms=soon")),
    ((K,), scenario("error.unknown-topic-config", "create-topic --topic {t} --config retention.msec=1000")),
    ((K,), scenario("error.topic-exists",
                    "create-topic --topic {t} --replica-assignment 1", "create-topic --topic {t} --replica-assignment 1")),
    ((K,), scenario("error.delete-unknown-topic", "delete-topic --topic {t}-nosuch --yes")),
    ((K,), scenario("error.fewer-partitions",
                    "create-topic --topic {t} --replica-assignment 1,2,3", "alter-topic --topic {t} --partitions 2")),
    ((K,), scenario("error.invalid-topic-name", "create-topic --topic 'bad name!'")),
    ((K,), scenario("error.zero-partitions", "create-topic --topic {t} --partitions 0")),
    ((K,), scenario("error.assignment-unknown-broker", "create-topic --topic {t} --replica-assignment 1:9")),
    ((K,), scenario("error.assignment-duplicate-broker", "create-topic --topic {t} --replica-assignment 2:2")),
    ((K,), scenario("error.bad-topic-config-alter",
                    "create-topic --topic {t} --replica-assignment 1",
                    "alter-configs --topic {t} --add-config cleanup.policy=shred")),
    ((K,), scenario("configs.unknown-broker-key",
                    "alter-configs --broker 1 --add-config log.cleaner.threadz=2",
                    Where("describe-configs --broker 1", "source", ("DYNAMIC_BROKER_CONFIG",)),
                    "alter-configs --broker 1 --delete-config log.cleaner.threadz")),
    ((K,), scenario("error.read-only-broker-config", "alter-configs --broker 1 --add-config broker.rack=z")),
    ((K,), scenario("error.elect-unknown-topic", "elect-leaders --election-type preferred --topic {t}-nosuch")),
    ((K,), scenario("error.reassign-unknown-broker",
                    "create-topic --topic {t} --replica-assignment 1",
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json",
                    files={"plan.json": '{{"partitions":[{{"topic":"{t}","partition":0,"replicas":[1,7]}}]}}'})),
    ((K,), scenario("error.reassign-duplicate-partition",
                    "create-topic --topic {t} --replica-assignment 1",
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json",
                    files={"plan.json": '{{"partitions":[{{"topic":"{t}","partition":0,"replicas":[2]}},'
                                        '{{"topic":"{t}","partition":0,"replicas":[3]}}]}}'})),
    ((K,), scenario("error.reassign-unknown-partition",
                    "reassign-partitions --execute --reassignment-json-file {dir}/plan.json",
                    files={"plan.json": '{{"partitions":[{{"topic":"{t}-nosuch","partition":0,"replicas":[2]}}]}}'})),
    ((K,), scenario("error.reset-active-group",
                    "create-topic --topic {t} --replica-assignment 2",
                    Join("{g}", "{t}"),
                    "reset-offsets --group {g} --topic {t} --to-latest --execute --yes",
                    "delete-group {g} --yes")),
    ((K,), scenario("error.unknown-group", "describe-group {g}-nosuch", "delete-group {g}-nosuch --yes")),
    ((K,), scenario("error.acls-without-authorizer", "describe-acls",
                    "create-acls --allow-principal User:x --operation Read --topic {t}")),
    ((K,), scenario("error.delete-records-beyond-end",
                    "create-topic --topic {t} --replica-assignment 1:2", Produce("{t}", 2),
                    "delete-records --topic {t} --partition 0 --before-offset 50 --yes")),
    ((K,), scenario("error.produce-unknown-partition",
                    "create-topic --topic {t} --replica-assignment 3", "produce --topic {t} --partition 4 x")),
    ((K,), scenario("error.get-offsets-unknown-topic", "get-offsets --topic {t}-nosuch")),
    ((K,), scenario("error.consume-unknown-topic", "consume --topic {t}-nosuch --max-messages 1 --timeout 2")),
    ((K,), scenario("error.quota-unknown-key",
                    "alter-client-quotas --entity-type users --entity-name u --add-config producer_bytes=5")),
    ((K,), scenario("error.scram-few-iterations",
                    "alter-user-scram-credentials --add {t}-u --mechanism SCRAM-SHA-256 --iterations 100 --password-env CONFORMANCE_PW")),
    ((K,), scenario("error.scram-delete-missing",
                    "alter-user-scram-credentials --delete {t}-nosuch --mechanism SCRAM-SHA-256")),
    ((Z,), scenario("error.quorum-in-zookeeper-mode", "describe-quorum")),
    ((K,), scenario("error.unknown-broker", "describe-configs --broker 9", "api-versions --broker 9")),

    # -- streams groups (KIP-1071): a Kafka Streams word count with group.protocol=streams -------
    ((K,), scenario("streams.word-count",
                    "create-topic --topic {t} --replica-assignment 1,2,3",
                    "create-topic --topic {t2} --replica-assignment 1",
                    Produce("{t}", 20, keyed=True),
                    Streams("{g}", "{t}", "{t2}"),
                    WaitFor("describe-streams-group {g}", streams_caught_up),
                    "list-streams-groups",
                    "describe-streams-group {g}",
                    "describe-streams-group {g} --members",
                    "describe-streams-group {g} --state",
                    "reset-streams-group-offsets --group {g} --all-input-topics --to-earliest",
                    "delete-streams-group {g} --yes",
                    StopStreams("{g}"),
                    WaitFor("describe-streams-group {g} --state", lambda o: streams_state(o) == "Empty"),
                    "describe-streams-group {g}",
                    "reset-streams-group-offsets --group {g} --all-input-topics --to-earliest",
                    "reset-streams-group-offsets --group {g} --input-topic {t}:0 --shift-by -2 --execute",
                    "delete-streams-group-offsets --group {g} --input-topic {t2} --yes",
                    "delete-streams-group-offsets --group {g} --all-input-topics --yes",
                    "delete-streams-group {g} --yes",
                    "list-streams-groups")),

    # -- the secured node -----------------------------------------------------------------------
    ((S,), scenario("secured.sasl-plain", As("admin", "describe-cluster"), As("admin", "list-brokers"))),
    ((S,), scenario("secured.sasl-scram", As("admin-scram", "describe-cluster"))),
    ((S,), scenario("secured.sasl-ssl", As("admin-sasl-ssl", "describe-cluster"))),
    ((S,), scenario("secured.ssl-client-certificate", As("admin-ssl", "describe-cluster"))),
    ((S,), scenario("secured.ordinary-user-sees-nothing",
                    As("admin", "create-topic --topic {t} --replica-assignment 1"),
                    As("alice", "list-topics '{t}.*'"),
                    As("alice", "describe-topic --topic {t}"),
                    As("alice-ssl", "describe-topic --topic {t}"))),
    ((S,), scenario("secured.acls-grant-revoke",
                    As("admin", "create-topic --topic {t} --replica-assignment 1"),
                    As("admin", "create-acls --allow-principal User:alice --operation Describe --operation Read --topic {t}"),
                    As("admin", "describe-acls --topic {t}"),
                    As("alice", "describe-topic --topic {t}"),
                    As("alice", "list-topics '{t}.*'"),
                    As("admin", "delete-acls --allow-principal User:alice --operation Read --topic {t} --yes"),
                    As("admin", "describe-acls --topic {t}"),
                    As("admin", "delete-acls --topic {t} --yes"),
                    As("alice", "describe-topic --topic {t}"))),
    ((S,), scenario("secured.acls-prefixed",
                    As("admin", "create-topic --topic {t}-x --replica-assignment 1"),
                    As("admin", "create-acls --allow-principal User:alice --operation Describe --topic {t}- "
                                "--resource-pattern-type PREFIXED"),
                    As("alice", "describe-topic --topic {t}-x"),
                    As("admin", "describe-acls --principal User:alice"),
                    As("admin", "delete-acls --topic {t}- --resource-pattern-type PREFIXED --yes"))),
    ((S,), scenario("secured.producer-consumer-acls",
                    As("admin", "create-topic --topic {t} --replica-assignment 1"),
                    As("admin", "create-acls --allow-principal User:alice --producer --consumer --topic {t} --group {g}"),
                    As("admin", "describe-acls --topic {t}"),
                    As("alice", "produce --topic {t} one two"),
                    As("alice", "consume --topic {t} --group {g} --from-beginning --max-messages 2"),
                    As("alice", "describe-group {g}"),
                    As("alice-ssl", "produce --topic {t} three"),
                    As("admin", "delete-acls --topic {t} --group {g} --yes"))),
    ((S,), scenario("secured.ordinary-user-denied",
                    As("alice", "create-topic --topic {t} --replica-assignment 1"),
                    As("admin", "create-topic --topic {t} --replica-assignment 1"),
                    As("alice", "alter-configs --topic {t} --add-config retention.ms=1000"),
                    As("alice", "describe-acls"),
                    As("alice", "describe-configs --broker 1"),
                    As("alice", "elect-leaders --election-type preferred --topic {t}"),
                    As("alice", "delete-topic --topic {t} --yes"),
                    As("alice", "describe-client-quotas"),
                    As("alice", "describe-user-scram-credentials"))),
    ((S,), scenario("secured.group-denied",
                    As("admin", "create-topic --topic {t} --replica-assignment 1"),
                    As("admin", "create-acls --allow-principal User:alice --operation Read --operation Describe --topic {t}"),
                    As("alice", "consume --topic {t} --group {g} --from-beginning --max-messages 1 --timeout 2"),
                    As("admin", "delete-acls --topic {t} --yes"))),
    ((S,), scenario("secured.scram-users",
                    As("admin", "describe-user-scram-credentials --user admin --user alice"),
                    As("admin", "alter-user-scram-credentials --add bob --mechanism SCRAM-SHA-512 --password-env CONFORMANCE_PW"),
                    As("bob", "list-topics '{t}.*'"),
                    As("admin", "alter-user-scram-credentials --delete bob --mechanism SCRAM-SHA-512"),
                    As("bob", "list-topics '{t}.*'"))),
    ((S,), scenario("secured.quotas-and-configs",
                    As("admin", "alter-client-quotas --entity-type users --entity-name alice --add-config producer_byte_rate=1024"),
                    As("admin", "describe-client-quotas --entity-type users --entity-name alice"),
                    As("admin", "create-topic --topic {t} --replica-assignment 1 --config retention.ms=1000"),
                    As("admin", "describe-configs --topic {t}"))),
    ((S,), scenario("secured.error-wrong-password", As("wrong-password", "list-topics"),
                    As("wrong-password-scram", "list-topics"))),
    ((S,), scenario("secured.error-unknown-user", As("unknown-user", "list-topics"))),
    ((S,), scenario("secured.error-mechanism-not-enabled", As("sha256", "list-topics"))),
    ((S,), scenario("secured.error-plaintext-at-tls", As("plaintext-at-ssl", "list-topics"))),
    ((S,), scenario("secured.error-tls-at-plaintext", As("ssl-at-sasl-plaintext", "list-topics"))),
    ((S,), scenario("secured.error-no-client-certificate", As("ssl-no-cert", "list-topics"))),
    ((S,), scenario("secured.error-unknown-ca", As("wrong-ca", "list-topics"))),
    ((S,), scenario("secured.error-plaintext-at-sasl", As("plaintext-at-sasl", "list-topics"))),
]


# Where the sandbox answers otherwise than Kafka, by cluster, scenario and compared step (see
# KnownDifference); docs/sandbox.md lists each with its scenario.
COMBINED = ("the secured Kafka node is one combined broker and controller (id 1); the sandbox has no combined "
            "node: its controller is node 100 and broker 1 is a broker only")
KNOWN_DIFFERENCES: list[KnownDifference] = [
    KnownDifference(K, "cluster.quorum", "high_watermark|log_end_offset|lag",
                    "the sandbox has no Raft log: its metadata offset counts its own changes, not Kafka's records (and an "
                    "observer's lag, by a record or two while Kafka appends its own)"),
    KnownDifference(K, "cluster.features", "epoch",
                    "the finalized features' epoch is the metadata log's offset, which counts the sandbox's own "
                    "changes, not Kafka's records (as cluster.quorum's high watermark)", steps=(0,)),
    *(KnownDifference(S, name, "controller|role", COMBINED) for name in (
        "cluster.describe", "secured.sasl-plain", "secured.sasl-scram", "secured.sasl-ssl", "secured.ssl-client-certificate")),
    KnownDifference(S, "cluster.controller", "id|port|voters", COMBINED),
    KnownDifference(S, "secured.error-no-client-certificate", "err",
                    "without a client certificate Kafka (Java's TLS) ends the handshake with a bad_certificate alert, "
                    "which the shell reports as a refused certificate; the sandbox (Python's ssl under asyncio) closes "
                    "the connection without an alert the client reads, which the shell reports as a closed TLS "
                    "connection that probably needs a client certificate"),
    KnownDifference(Z, "groups.delete", "rc|err|out",
                    "Kafka 3.9's group coordinator removes an Empty group once its last committed offset is deleted; "
                    "Kafka 4.x's keeps it, as the sandbox does", steps=(5,)),
    KnownDifference(K, "recovery.stock-path", "last_known_elr",
                    "Kafka 4.x records the last ISR member of a partition left without one in LastKnownElr (KIP-966); "
                    "the sandbox keeps LastKnownElr empty (docs/sandbox.md, replication model)"),
    KnownDifference(K, "snapshot.analyze", "topic=__consumer_offsets|bytes",
                    "committed offsets: Kafka writes them to __consumer_offsets (its log end offsets and the brokers' "
                    "bytes grow); the sandbox keeps them in memory (docs/sandbox.md, known differences: groups)"),
]


def by_cluster(kind: str) -> list[Scenario]:
    return [sc for clusters, sc in SCENARIOS if kind in clusters]


# -- the clusters compared ---------------------------------------------------------------------

def sandbox_for(cluster: RealKafka) -> Sandbox:
    """The sandbox a real cluster is compared with: its mode, brokers and racks and (the secured
    node) its listeners, users, CA and authorizer, answering as the real cluster's release does
    (without KAFKA-20098's RPCs: no --seed-apis). Its brokers' host names are the real brokers'
    (127.0.0.1), as broker-ids reads them. The one place a sandbox of the suite is made."""
    brokers = len(cluster.brokers)
    kwargs: dict[str, Any] = {}
    if cluster.tls_dir is not None:
        listeners = [cluster.primary_listener, *(n for n in cluster.listeners if n != cluster.primary_listener)]
        kwargs = {"listeners": listeners, "sasl_mechanisms": SECURED_MECHANISMS, "users": SECURED_USERS,
                  "tls_dir": str(cluster.tls_dir), "ssl_client_auth": "required", "authorizer": True,
                  "super_users": SUPER_USERS, "configs": {"delegation.token.secret.key": SECURED_TOKEN_SECRET}}
    release = ".".join(cluster.version.split(".")[:2])   # 4.4.0 -> the sandbox's "4.4"
    sandbox = Sandbox(brokers=brokers, mode=cluster.mode, racks=cluster.racks, hosts=["127.0.0.1"] * brokers,
                      kafka_version=release, **kwargs)
    sandbox.start()
    if cluster.mode == "zk":
        # ZooKeeper makes whichever broker registers first the controller; the sandbox's is moved there.
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
        controller = admin.describe_cluster(request_timeout=30).result().controller.id
        for _ in range(brokers):
            if sandbox.active_controller != controller:
                sandbox.kill_controller()
        assert sandbox.active_controller == controller
    return sandbox


def create_offsets_topic(side: Side, brokers: list[int]) -> None:
    """__consumer_offsets created alike on both sides before any group exists (as Kafka would on
    the first FindCoordinator, with its configs), so each group has the same coordinator: its
    partition's leader. Kafka places an auto-created one at random."""
    ring = brokers * 2
    assignment = [ring[i % len(brokers):i % len(brokers) + min(3, len(brokers))] for i in range(5)]
    topic = NewTopic("__consumer_offsets", num_partitions=len(assignment), replica_assignment=assignment,
                     config={"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"})
    admin = AdminClient({**side.client_config(), "log_level": 0})
    admin.create_topics([topic])["__consumer_offsets"].result(60)


def secured_profiles(tls_dir: Path, workdir: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """The ways the secured scenarios connect: name -> (listener, client properties)."""
    ca = str(tls_dir / "ca.pem")
    other_ca = tls.ensure_certificates(workdir / "other-ca") / "ca.pem"

    def sasl(user: str, mechanism: str, password: str | None = None, protocol: str = "SASL_PLAINTEXT") -> dict[str, str]:
        props = {"security.protocol": protocol, "sasl.mechanism": mechanism, "sasl.username": user,
                 "sasl.password": password if password is not None else SECURED_USERS.get(user, "bob-secret")}
        return {**props, "ssl.ca.location": ca} if protocol == "SASL_SSL" else props

    def cert(user: str, ca_file: str = ca) -> dict[str, str]:
        props = {"security.protocol": "SSL", "ssl.ca.location": ca_file}
        if user:
            props.update({"ssl.certificate.location": str(tls_dir / f"{user}.pem"), "ssl.key.location": str(tls_dir / f"{user}.key")})
        return props

    return {
        "admin": ("SASL_PLAINTEXT", sasl("admin", "PLAIN")),
        "admin-scram": ("SASL_PLAINTEXT", sasl("admin", "SCRAM-SHA-512")),
        "admin-sasl-ssl": ("SASL_SSL", sasl("admin", "SCRAM-SHA-512", protocol="SASL_SSL")),
        "admin-ssl": ("SSL", cert("admin")),
        "alice": ("SASL_PLAINTEXT", sasl("alice", "SCRAM-SHA-512")),
        "alice-ssl": ("SSL", cert("alice")),
        "bob": ("SASL_PLAINTEXT", sasl("bob", "SCRAM-SHA-512")),
        "wrong-password": ("SASL_PLAINTEXT", sasl("admin", "PLAIN", "not-the-password")),
        "wrong-password-scram": ("SASL_PLAINTEXT", sasl("alice", "SCRAM-SHA-512", "not-the-password")),
        "unknown-user": ("SASL_PLAINTEXT", sasl("mallory", "SCRAM-SHA-512", "x")),
        "sha256": ("SASL_PLAINTEXT", sasl("alice", "SCRAM-SHA-256")),
        "plaintext-at-ssl": ("SSL", {}),
        "plaintext-at-sasl": ("SASL_PLAINTEXT", {}),
        "ssl-at-sasl-plaintext": ("SASL_PLAINTEXT", {"security.protocol": "SSL", "ssl.ca.location": ca}),
        "ssl-no-cert": ("SSL", cert("")),
        "wrong-ca": ("SSL", cert("admin", str(other_ca))),
    }


def kafka_side(cluster: RealKafka, workdir: Path) -> Side:
    profiles = secured_profiles(cluster.tls_dir, workdir) if cluster.tls_dir else {}
    # The id Kafka answers with (in ZooKeeper mode Kafka makes its own, not the formatted one).
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, **cluster.client_config, "log_level": 0})
    cluster_id = admin.list_topics(timeout=30).cluster_id
    side = Side(
        name="kafka", bootstrap=cluster.bootstrap, cluster_id=cluster_id, workdir=workdir,
        node_ports={n.node_id: [p for p in (n.port, n.controller_port, *n.extra_ports.values()) if p]
                    for n in cluster.nodes.values()},
        stop_broker=lambda broker: stop_real_broker(cluster, side, broker),
        start_broker=lambda broker: cluster.start_node(broker),
        bootstrap_controllers=cluster.bootstrap_controllers if cluster.mode == "kraft" else None,
        listeners={name: cluster.bootstrap_for(name) for name in cluster.listeners},
        profiles=profiles,
        replacements={str(b.directory / "data"): f"<log-dir:{b.node_id}>" for b in cluster.brokers},
    )
    return side


def stop_real_broker(cluster: RealKafka, side: Side, broker: int) -> None:
    cluster.stop_node(broker)
    wait_brokers(side.client_config(), {b.node_id for b in cluster.brokers if b.alive})


def sandbox_side(sandbox: Sandbox, workdir: Path, profiles: dict[str, tuple[str, dict[str, str]]]) -> Side:
    c = sandbox.cluster
    return Side(
        name="sandbox", bootstrap=sandbox.bootstrap, cluster_id=c.cluster_id, workdir=workdir,
        node_ports={**{b.id: [b.port, *b.listener_ports.values()] for b in c.brokers.values()},
                    **{n.id: [n.port] for n in c.controllers.values()}},
        stop_broker=sandbox.stop_broker, start_broker=sandbox.start_broker,
        bootstrap_controllers=sandbox.bootstrap_controllers or None,
        listeners={name: sandbox.bootstrap_for(name) for name in sandbox.listeners},
        profiles=profiles,
        replacements={f"/sandbox/broker-{b}/data": f"<log-dir:{b}>" for b in c.brokers},
    )


def pair(cluster: RealKafka, root: Path) -> Iterator[tuple[Side, Side]]:
    """The real cluster's side and its sandbox's, with __consumer_offsets created alike."""
    sandbox = sandbox_for(cluster)
    try:
        (root / "kafka").mkdir(exist_ok=True)
        (root / "sandbox").mkdir(exist_ok=True)
        kafka = kafka_side(cluster, root / "kafka")
        sides = (kafka, sandbox_side(sandbox, root / "sandbox", kafka.profiles))
        for side in sides:
            create_offsets_topic(side, sorted(b.node_id for b in cluster.brokers))
        yield sides
    finally:
        sandbox.stop()


@pytest.fixture(scope="session")
def kraft4_pair(kafka4, tmp_path_factory):
    yield from pair(kafka4, tmp_path_factory.mktemp("conformance-kraft4"))


@pytest.fixture(scope="session")
def zk39_pair(kafka39_zk, tmp_path_factory):
    yield from pair(kafka39_zk, tmp_path_factory.mktemp("conformance-zk39"))


@pytest.fixture(scope="session")
def secured_pair(kafka4_secured, tmp_path_factory):
    yield from pair(kafka4_secured, tmp_path_factory.mktemp("conformance-secured"))


@pytest.fixture(autouse=True)
def scram_password(monkeypatch):
    monkeypatch.setenv("CONFORMANCE_PW", "bob-secret")


def check(kind: str, sides: tuple[Side, Side], sc: Scenario) -> None:
    kafka, sandbox = run_both(sides, sc)
    compare(sc, (sides[0], kafka), (sides[1], sandbox),
            [d for d in KNOWN_DIFFERENCES if d.cluster == kind and d.scenario == sc.name])


@pytest.mark.parametrize("sc", by_cluster(K), ids=lambda sc: sc.name)
def test_kraft4(kraft4_pair, sc):
    check(K, kraft4_pair, sc)


@pytest.mark.parametrize("sc", by_cluster(Z), ids=lambda sc: sc.name)
def test_zk39(zk39_pair, sc):
    check(Z, zk39_pair, sc)


@pytest.mark.parametrize("sc", by_cluster(S), ids=lambda sc: sc.name)
def test_secured(secured_pair, sc):
    check(S, secured_pair, sc)


def test_the_table_is_big_enough():
    """The issue's floor: 80 scenarios on Kafka 4.x, 10 in ZooKeeper mode, 15 on the secured node,
    20 common mistakes; every known difference names a scenario of its cluster, and
    docs/sandbox.md lists it."""
    assert len(by_cluster(K)) >= 80 and len(by_cluster(Z)) >= 10 and len(by_cluster(S)) >= 15
    names = [sc.name for _, sc in SCENARIOS]
    assert len(names) == len(set(names))
    assert len([n for n in names if "error" in n]) >= 20
    docs = (Path(__file__).resolve().parents[2] / "docs" / "sandbox.md").read_text()
    for d in KNOWN_DIFFERENCES:
        assert d.scenario in {sc.name for sc in by_cluster(d.cluster)}, d
        assert f"{d.cluster}/{d.scenario}" in docs, f"docs/sandbox.md does not list {d.cluster}/{d.scenario}"
