"""broker-ids (KIP-426): missing ids, the host -> id mapping topic, and the KIP's procedure for
a broker starting without an id, run as a real process against a sandbox."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.conftest import BOTH_MODES
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import API_VERSIONS_BODY, create, produce, request
from tests.test_oneshot import assert_one_line_error, run, shell
from tests.output import json_documents
from tests.output import json_data

pytestmark = BOTH_MODES


def tables(p) -> dict:
    assert p.returncode == 0, p.stderr
    return json_data(p.stdout)


def test_missing_names_a_stopped_broker_and_what_its_partitions_lost(sandbox):
    create(sandbox, "t", [[1, 2, 3], [2, 3, 1], [3, 1, 2]], **{"min.insync.replicas": "3"})
    create(sandbox, "u", [[1, 2]])   # names no lost id: not listed
    assert tables(run(sandbox, "broker-ids missing -o json")) == {"missing": [], "partitions": []}
    sandbox.stop_broker(3)
    p = run(sandbox, "broker-ids missing -o json")
    got = tables(p)
    assert got["missing"] == [{"broker_id": 3, **stopped(sandbox), "partitions": 3,
                               "under_replicated": 3, "under_min_isr": 3, "offline": 0}]
    assert got["partitions"] == [{"broker_id": 3, "topic": "t", "partitions": [0, 1, 2], "under_replicated": 3,
                                  "under_min_isr": 3, "offline": 0}]
    assert "Missing broker id(s): 3." in p.stderr


def stopped(sandbox) -> dict:
    """How a stopped broker shows: KRaft keeps it registered and fenced (DescribeCluster v2 lists
    it); Kafka 3.9 in ZooKeeper mode forgets it (its znode was ephemeral; no DescribeCluster v2)."""
    if sandbox.mode == "kraft":
        return {"state": "fenced", "last_host": "127.0.0.1"}
    return {"state": "not registered", "last_host": None}


def unregister(sandbox, broker_id: int) -> None:
    """UnregisterBroker (a KRaft broker forwards it). ZooKeeper-era Kafka has no such API: a
    stopped broker's registration (an ephemeral znode) is gone already."""
    if sandbox.mode == "kraft":
        assert request(sandbox, 1, ApiKey.UNREGISTER_BROKER, {"broker_id": broker_id})["error_code"] == 0


def test_missing_counts_offline_partitions_and_unregistered_ids(sandbox):
    create(sandbox, "solo", [[2]])
    create(sandbox, "pair", [[1, 3]])
    sandbox.stop_broker(2)
    sandbox.stop_broker(3)
    unregister(sandbox, 3)
    got = tables(run(sandbox, "broker-ids missing -o json"))
    by_id = {r["broker_id"]: r for r in got["missing"]}
    assert by_id[2]["offline"] == 1 and by_id[2]["partitions"] == 1
    assert by_id[3] == {"broker_id": 3, "state": "not registered", "last_host": None, "partitions": 1,
                        "under_replicated": 1, "under_min_isr": 0, "offline": 0}


def test_missing_csv_and_table(sandbox):
    create(sandbox, "t", [[1, 3]])
    sandbox.stop_broker(3)
    p = run(sandbox, "broker-ids missing -o csv")
    assert p.returncode == 0, p.stderr
    state = stopped(sandbox)
    assert p.stdout.splitlines()[:2] == ["broker_id,state,last_host,partitions,under_replicated,under_min_isr,offline",
                                         f"3,{state['state']},{state['last_host'] or ''},1,1,0,0"]
    p = run(sandbox, "broker-ids missing")
    assert p.returncode == 0 and state["state"] in p.stdout.splitlines()[2]


def test_bad_options_are_one_line(sandbox):
    assert_one_line_error(run(sandbox, "broker-ids missing --host h"), 2, "--host is for broker-ids suggest")
    assert_one_line_error(run(sandbox, "broker-ids suggest"), 2, "needs --host")
    assert_one_line_error(run(sandbox, "broker-ids hosts --yes"), 2, "record and gc")


# -- the mapping topic and KIP-426's procedure ---------------------------------------------------


def mapping(sandbox) -> list[dict]:
    return tables(run(sandbox, "broker-ids hosts -o json"))


def suggest(sandbox, host: str):
    return run(sandbox, f"broker-ids suggest --host {host} -o json")


def test_record_writes_only_what_changed_and_hosts_shows_states(sandbox):
    p = run(sandbox, "broker-ids record --dry-run -o json")
    assert [r["host"] for r in tables(p)] == ["broker-1.sandbox", "broker-2.sandbox", "broker-3.sandbox"]
    assert "__broker_hosts" not in sandbox.cluster.topics  # a dry run creates nothing
    assert "Recorded 3 host(s)" in run(sandbox, "broker-ids record").stderr
    topic = sandbox.cluster.topics["__broker_hosts"]
    assert topic.configs["cleanup.policy"] == "compact" and len(topic.partitions[0].replicas) == 3
    assert mapping(sandbox) == [{"host": f"broker-{i}.sandbox", "broker_id": i, "state": "live"} for i in (1, 2, 3)]
    p = run(sandbox, "broker-ids record -o json")
    assert tables(p) == [] and "up to date (3 host(s))" in p.stderr
    sandbox.replace_broker(2, "rack2-node7", lose_disk=False)  # same id, new machine name: recorded by the broker
    sandbox.stop_broker(3)
    assert mapping(sandbox) == [{"host": "broker-1.sandbox", "broker_id": 1, "state": "live"},
                                {"host": "broker-2.sandbox", "broker_id": 2, "state": "garbage"},
                                {"host": "broker-3.sandbox", "broker_id": 3, "state": "missing"},
                                {"host": "rack2-node7", "broker_id": 2, "state": "live"}]


def test_suggest_follows_each_branch_of_the_procedure(sandbox):
    create(sandbox, "t", [[1, 2, 3]])
    run(sandbox, "broker-ids record")
    # No id missing: a new one.
    assert tables(suggest(sandbox, "fresh.sandbox")) == [{"host": "fresh.sandbox", "broker_id": 4, "reason": "new id"}]
    sandbox.stop_broker(3)
    # The mapping names the host's id and no live broker holds it.
    assert tables(suggest(sandbox, "broker-3.sandbox"))[0]["reason"] == "mapping"
    # Another host: the one missing id.
    assert tables(suggest(sandbox, "fresh.sandbox")) == [{"host": "fresh.sandbox", "broker_id": 3,
                                                         "reason": "only missing id"}]
    # The mapping points at a live id: that entry is garbage, the missing id is taken.
    p = suggest(sandbox, "broker-2.sandbox")
    assert tables(p)[0]["broker_id"] == 3 and "id 2 is live on broker-2.sandbox: that entry is garbage" in p.stderr
    # Several ids missing: a human decides.
    sandbox.stop_broker(2)
    assert_one_line_error(suggest(sandbox, "fresh.sandbox"), 1, "Several ids are missing (2, 3)", "human decision")
    assert tables(suggest(sandbox, "broker-2.sandbox"))[0] == {"host": "broker-2.sandbox", "broker_id": 2,
                                                              "reason": "mapping"}


@pytest.fixture
def served(sandbox_mode):
    """A sandbox with its control endpoint, for `sandbox replace-broker` from the shell."""
    with Sandbox(brokers=3, mode=sandbox_mode, serve_control=True) as s:
        yield s


def test_replace_broker_takes_its_id_by_the_procedure(served):
    sandbox = served
    create(sandbox, "t", [[1, 2, 3]])
    run(sandbox, "broker-ids record")
    sandbox.stop_broker(2)
    sandbox.stop_broker(3)
    p = run(sandbox, "sandbox replace-broker 3 --lose-disk --host elsewhere.sandbox")
    assert_one_line_error(p, 2, "several ids are missing (2, 3)", "human decision")
    assert sandbox.replace_broker(3, "broker-3.sandbox", lose_disk=True) == (3, "mapping")
    assert sandbox.replace_broker(2, "elsewhere.sandbox", lose_disk=True) == (2, "only missing id")
    assert {r["host"]: r["state"] for r in mapping(sandbox)}["broker-2.sandbox"] == "garbage"
    p = run(sandbox, "sandbox replace-broker 1 --keep-id --lose-disk")
    assert_one_line_error(p, 2, "--keep-id", "--lose-disk")


def test_gc_removes_garbage_with_tombstones_after_confirmation(sandbox):
    run(sandbox, "broker-ids record")
    sandbox.replace_broker(1, "moved.sandbox")
    p = run(sandbox, "broker-ids gc --dry-run -o json")
    assert tables(p) == [{"host": "broker-1.sandbox", "broker_id": 1, "live_on": "moved.sandbox"}]
    assert_one_line_error(run(sandbox, "broker-ids gc"), 2, "add --yes to confirm")
    assert {r["host"] for r in mapping(sandbox)} == {"broker-1.sandbox", "broker-2.sandbox", "broker-3.sandbox",
                                                     "moved.sandbox"}
    p = run(sandbox, "broker-ids gc --yes")
    assert p.returncode == 0 and "Removed 1 garbage mapping entry" in p.stderr
    assert {r["host"]: r["state"] for r in mapping(sandbox)} == {
        "broker-2.sandbox": "live", "broker-3.sandbox": "live", "moved.sandbox": "live"}
    assert "No garbage" in run(sandbox, "broker-ids gc --yes").stderr


def test_missing_gives_the_mapping_host_of_an_unregistered_id(sandbox):
    create(sandbox, "t", [[1, 3]])
    run(sandbox, "broker-ids record")
    sandbox.stop_broker(3)
    unregister(sandbox, 3)
    got = tables(run(sandbox, "broker-ids missing -o json"))
    assert got["missing"][0]["broker_id"] == 3 and got["missing"][0]["last_host"] == "broker-3.sandbox"
    assert got["missing"][0]["state"] == "not registered"


def test_docs_replay_a_broker_lost_its_disk(served):
    """docs/broker-lost-disk.ksh, the issue's "done when": 3 is missing, comes back as 3
    through the mapping with an empty disk, and the partitions return to full ISR."""
    script = Path(__file__).resolve().parent.parent / "docs" / "broker-lost-disk.ksh"
    p = shell("--bootstrap-server", served.bootstrap, "--file", str(script), "-o", "json")
    assert p.returncode == 0, p.stderr
    docs = [d for d in json_documents(p.stdout) if d]   # {} is a line without tables
    missing_before, suggested, missing_after, under = docs[-4:]
    assert [r["broker_id"] for r in missing_before["missing"]] == [3]
    assert missing_before["missing"][0]["partitions"] >= 6
    assert {"broker_id": 3, "topic": "orders", "partitions": [0, 1, 2, 3, 4, 5], "under_replicated": 6,
            "under_min_isr": 0, "offline": 0} in missing_before["partitions"]
    assert suggested == {"suggestion": [{"host": "broker-3.sandbox", "broker_id": 3, "reason": "mapping"}]}
    assert "Broker 3 replaced: it started with an empty disk as broker 3 (mapping)." in p.stderr
    assert missing_after == {"missing": [], "partitions": []}
    assert under == {"partitions": []}
    isr = served.call(lambda c: [sorted(q.isr) for q in c.topics["orders"].partitions], served.cluster)
    assert isr == [[1, 2, 3]] * 6


def test_replace_broker_with_a_new_id_adds_a_broker_and_records_it(served):
    """No mapping entry for the host and no missing id (broker 3 was unregistered and names no
    replica): KIP-426 ends at a new id. The sandbox starts a new broker (never a voter) under
    it; id 3 stays stopped."""
    sandbox = served
    create(sandbox, "t", [[1, 2]])
    sandbox.stop_broker(3)
    unregister(sandbox, 3)
    assert run(sandbox, "broker-ids record").returncode == 0   # the mapping topic on brokers 1 and 2
    p = run(sandbox, "sandbox replace-broker 3 --lose-disk --host fresh.sandbox")
    assert p.returncode == 0, p.stderr
    assert "as broker 4 (new id)" in p.stderr and "Id 3 is not taken again" in p.stderr
    assert sandbox.controller_ids == ([100] if sandbox.mode == "kraft" else [])
    status = {b["id"]: b for b in sandbox.status()["brokers"]}
    assert status[4]["alive"] and not status[4]["fenced"] and not status[3]["alive"]
    assert {r["host"]: (r["broker_id"], r["state"]) for r in mapping(sandbox)}["fresh.sandbox"] == (4, "live")
    # The new broker serves clients on its own listener (the bootstrap now names it).
    assert sandbox.bootstrap.count(",") == 3 and request(sandbox, 4, ApiKey.API_VERSIONS, API_VERSIONS_BODY)["error_code"] == 0


def test_an_added_broker_is_kept_by_the_data_dir(sandbox_mode, tmp_path):
    data = str(tmp_path / "data")
    with Sandbox(brokers=2, mode=sandbox_mode, data_dir=data) as first:
        assert first.add_broker(host_name="extra.sandbox") == 3
        port = first.address(3)[1]
        with pytest.raises(ValueError, match="id is taken"):
            first.add_broker(1)
    with Sandbox(data_dir=data, mode=sandbox_mode) as again:
        assert sorted(again.cluster.brokers) == [1, 2, 3] and again.address(3)[1] == port
        assert again.status()["brokers"][2]["alive"]


def test_a_lost_disk_loses_what_only_it_held(sandbox_mode):
    """A partition whose one replica lost its disk: Kafka 4.4 (ELR) takes the empty disk for an
    unclean shutdown and keeps the partition offline; Kafka 3.9 lets the broker lead it again
    with an empty log, which ListOffsets, Fetch and retention all agree on."""
    retention = {"log.retention.check.interval.ms": "100", "log.cleaner.backoff.ms": "100"}
    with Sandbox(brokers=3, mode=sandbox_mode, configs=retention) as s:
        create(s, "solo", [[3]], **{"segment.ms": "50", "retention.ms": "300"})
        produce(s, "solo", 0, batches=4, size=10)
        s.replace_broker(3, lose_disk=True)
        state = s.call(lambda: (lambda p: (p.leader, p.log_start_offset, p.high_watermark, len(p.batches)))(
            s.cluster.topics["solo"].partitions[0]))
        if sandbox_mode == "kraft":
            assert state[0] == -1, "an unclean shutdown leaves no eligible leader"
            return
        assert state == (3, 0, 0, 0)
        offsets = request(s, 3, ApiKey.LIST_OFFSETS, {"replica_id": -1, "topics": [
            {"name": "solo", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        assert offsets["topics"][0]["partitions"][0]["offset"] == 0
        consumer = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "lost", "log_level": 0,
                             "auto.offset.reset": "error", "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("solo", 0, 0)])
            produce(s, "solo", 0, batches=3, size=10)
            got = [m for m in (consumer.poll(1) for _ in range(20)) if m is not None]
            assert [(m.error(), m.offset()) for m in got[:3]] == [(None, 0), (None, 1), (None, 2)]
        finally:
            consumer.close()
        # Retention goes on after the lost disk: every closed segment past retention.ms goes.
        deadline = time.monotonic() + 30
        while s.call(lambda: s.cluster.topics["solo"].partitions[0].log_start_offset) < 2:
            assert time.monotonic() < deadline, "retention stopped after the lost disk"
            time.sleep(0.1)
