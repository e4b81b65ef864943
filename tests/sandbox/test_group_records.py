"""The group coordinators change their groups only by records, as Kafka's GroupMetadataManager
and GroupCoordinatorShard.replay: an operation computes the records of the group's next state
(and its answer) without touching the group; replaying them makes that state, and the journal
(--data-dir) keeps them, so a crash loses no kind of change."""

from __future__ import annotations

import copy
import dataclasses
import shutil
import time

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from kafka_shell.sandbox import (classic_groups, consumer_groups, group_state, journal, records, replay, share_groups,
                                 streams_groups)
from kafka_shell.sandbox.model import ClusterState
from kafka_shell.sandbox.server import Sandbox
from tests import k848_scenarios, streams_scenarios, test_share_clients as share_clients
from tests.sandbox.test_kept_state import (_admin, _consumer, _groups_as_records, _share_consume, _streams_member,
                                          _subscribed)
from tests.test_transactions_cmd import sh

# A short session for the group whose member is left to expire (the broker's minimum lowered).
SHORT_SESSION = {"group.consumer.min.session.timeout.ms": "1000"}


def _as_written(cluster: ClusterState) -> None:
    """What was written of the groups (the latest record of each key, which the state file
    keeps) is what the groups are: no record of a group or member gone, none out of date."""
    def same_any_time(record: records.Record) -> records.Record:
        if isinstance(record, records.GroupMetadataRecord) and record.value is not None:
            return dataclasses.replace(record, value=dataclasses.replace(record.value, current_state_timestamp=0))
        return record
    written = {gid: {key: same_any_time(rec) for key, rec in latest.items()}
               for gid, latest in cluster.group_records.items()}
    assert written == {gid: {key: same_any_time(rec) for key, rec in group_state.records_of(cluster, g).items()}
                       for gid, g in cluster.groups.items() if not _offsets_only(cluster, gid)}


def _offsets_only(cluster: ClusterState, group_id: str) -> bool:
    """A group made by its offsets' replay alone (a simple group of a journal's commits)."""
    return group_id not in cluster.group_records and isinstance(cluster.groups[group_id], classic_groups.Group)


def _until(check, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def _group_config(bootstrap: str, group_id: str, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    res = ConfigResource(ConfigResource.Type.GROUP, group_id, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(10)


def _consumer_group_changes(bootstrap: str) -> dict:
    """Every kind of KIP-848 group change, over the wire: members joining (dynamic, static, by
    regex), reconciling to a target computed later, a static member away (-2), a member leaving
    (-1), one expiring (session), a group deleted. Returns the groups (k848_scenarios.Group)."""
    g = k848_scenarios.Group(bootstrap, partitions=4)
    m1, m2, m4 = (g.new_member() for _ in range(3))
    a = g.join(m1)
    time.sleep(k848_scenarios.ASSIGNMENT_INTERVAL_S)
    b = g.join(m2, instance="i-b")
    k848_scenarios.settle(g, {m1: [a["epoch"], a["assignment"]], m2: [b["epoch"], []]})
    assert g.heartbeat(m2, -2, instance="i-b")["error"] == 0   # away for a while
    assert g.join(m4)["error"] == 0
    assert g.heartbeat(m4, -1)["error"] == 0
    # A member subscribed by regex: resolved after its heartbeat, then a target for it.
    regexed = k848_scenarios.Group(bootstrap, partitions=2)
    assert regexed.heartbeat(regexed.new_member(), 0, owned=[], topics=[], regex=regexed.topic.replace("-", "."),
                             rebalance_ms=30000)["error"] == 0
    _until(lambda: regexed.describe()["members"][0][6], "a target for the regex's topic")
    # A group whose only member goes silent and expires.
    expiring = k848_scenarios.Group(bootstrap, partitions=1)
    _group_config(bootstrap, expiring.group_id, "consumer.session.timeout.ms", "1000")
    assert expiring.join(expiring.new_member())["error"] == 0
    _until(lambda: expiring.describe()["state"] == "Empty", "the silent member expired")
    # A group that joined, left and was deleted.
    deleted = k848_scenarios.Group(bootstrap, partitions=1)
    member = deleted.new_member()
    assert deleted.join(member)["error"] == 0
    assert deleted.heartbeat(member, -1)["error"] == 0
    assert deleted.delete() == 0
    return {"changed": g, "regexed": regexed, "expired": expiring, "deleted": deleted}


def test_a_crash_keeps_every_consumer_group_change(tmp_path):
    """After each kind of KIP-848 group change, the directory as a kill -9 leaves it (copied
    while the sandbox runs) replays to the very groups the coordinator had."""
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data), configs=SHORT_SESSION) as s:
        groups = _consumer_group_changes(s.bootstrap)
        try:
            described = {name: g.describe() for name, g in groups.items()}
            crashed = tmp_path / "crashed"
            shutil.copytree(data, crashed, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
            live = s.call(_groups_as_records, s.cluster)
            s.call(_as_written, s.cluster)
        finally:
            for g in groups.values():
                g.close()
    recovered = journal.recover(crashed)
    assert recovered is not None
    cluster = recovered[0]
    assert _groups_as_records(cluster) == live
    changed = cluster.groups[groups["changed"].group_id]
    assert isinstance(changed, consumer_groups.ConsumerGroup)
    assert described["changed"]["epoch"] == changed.epoch and len(changed.members) == 2   # m4 left
    assert [m.epoch for m in changed.members.values() if m.instance_id == "i-b"] == [consumer_groups.STATIC_LEAVE_EPOCH]
    (regexed,) = cluster.groups[groups["regexed"].group_id].members.values()
    assert regexed.topic_regex and cluster.groups[groups["regexed"].group_id].targets[regexed.member_id]
    expired = cluster.groups[groups["expired"].group_id]
    assert isinstance(expired, consumer_groups.ConsumerGroup) and not expired.members
    assert described["expired"]["epoch"] == expired.epoch
    assert groups["deleted"].group_id not in cluster.groups


def _unchanged_by_discarded_results(cluster: ClusterState, group_id: str) -> None:
    """Run the coordinator's operations on the group and throw their records away: the groups
    and the records written stay as they were. Then the records of one are applied: the group
    is then what its written records say."""
    coordinator = consumer_groups.Coordinator(cluster)
    g = cluster.groups[group_id]
    assert isinstance(g, consumer_groups.ConsumerGroup)
    groups, written = copy.deepcopy(cluster.groups), copy.deepcopy(cluster.group_records)
    first = next(iter(g.members.values()))
    joined = coordinator.heartbeat(group_id, "newcomer", 0, None, None, 30000, "c", "/127.0.0.1", [*first.topic_names],
                                   None, None, [])
    left = coordinator.heartbeat(group_id, first.member_id, consumer_groups.LEAVE_EPOCH, None, None, -1, "c",
                                 "/127.0.0.1", None, None, None, None)
    assert joined.records and left.records
    coordinator._fenced(g, first)     # a session ending
    coordinator._assign(coordinator._draft(g))
    assert cluster.groups == groups and cluster.group_records == written
    replay.commit(cluster, joined)
    assert cluster.groups[group_id] != groups[group_id]
    assert group_state.records_of(cluster, cluster.groups[group_id]) == cluster.group_records[group_id]


def test_consumer_groups_change_only_by_replay():
    with Sandbox(brokers=1) as s:
        g = k848_scenarios.Group(s.bootstrap, partitions=2)
        try:
            m = g.new_member()
            assert g.join(m)["error"] == 0
            s.call(_unchanged_by_discarded_results, s.cluster, g.group_id)
        finally:
            g.close()


def test_a_crash_keeps_every_streams_group_change(tmp_path):
    """A streams group's changes (topology, internal topics, the initial delay, tasks, fencing,
    leaving, deleting; a member with its tasks at the kill) replay to the very groups the
    coordinator had."""
    data = tmp_path / "data"
    with Sandbox(brokers=3, data_dir=str(data)) as s:
        streams_scenarios.lifecycle(s.bootstrap)
        app, member, _, tasks = _streams_member(s.bootstrap)
        crashed = tmp_path / "crashed"
        shutil.copytree(data, crashed, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
        live = s.call(_groups_as_records, s.cluster)
        s.call(_as_written, s.cluster)
        s.call(_streams_unchanged_by_discarded_results, s.cluster, app)
    recovered = journal.recover(crashed)
    assert recovered is not None and _groups_as_records(recovered[0]) == live
    g = recovered[0].groups[app]
    assert isinstance(g, streams_groups.StreamsGroup) and g.configured is not None and g.configured.tasks
    assert {s: sorted(ps) for s, ps in g.members[member].active.items()} == {
        t["subtopology_id"]: t["partitions"] for t in tasks}


def _streams_unchanged_by_discarded_results(cluster: ClusterState, group_id: str) -> None:
    coordinator = streams_groups.Coordinator(cluster)
    g = cluster.groups[group_id]
    assert isinstance(g, streams_groups.StreamsGroup)
    groups, written = copy.deepcopy(cluster.groups), copy.deepcopy(cluster.group_records)
    (member,) = g.members
    left = coordinator._leave(group_id, member, streams_groups.LEAVE_EPOCH)
    assert left.records
    coordinator._assign(coordinator._draft(g))
    assert cluster.groups == groups and cluster.group_records == written
    assert group_state.records_of(cluster, g) == cluster.group_records[group_id]


def test_a_crash_keeps_every_share_group_change(tmp_path):
    """A share group's changes (members joining and leaving, its share-partitions' state
    initialized, acquired, acknowledged, reset to the earliest offset, deleted with the group's
    offsets or with the group) replay to the very groups and share-partitions the coordinators
    had."""
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        share_clients._session_facts(s.bootstrap)     # joined, fetched, acknowledged, left
        topic = share_clients._topic(s.bootstrap)
        group, emptied, deleted = (share_clients._group(s.bootstrap) for _ in range(3))
        for g in (group, emptied, deleted):
            _share_consume(s.bootstrap, topic, g)
            share_clients._offsets(s.bootstrap, g)   # every record done with, as written
        for line in (f"reset-share-group-offsets --group {group} --topic {topic} --to-earliest --execute",
                     f"delete-share-group-offsets --group {emptied} --topic {topic} --yes",
                     f"delete-share-group {deleted} --yes"):
            code, _, err = sh(s.bootstrap, line)
            assert code == 0, (line, err)
        crashed = tmp_path / "crashed"
        shutil.copytree(data, crashed, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
        live = s.call(_groups_as_records, s.cluster)
        s.call(_as_written, s.cluster)
        written = s.call(lambda: {key: (sp.state_epoch, sp.written_start, sp.written_done, sp.written_batches)
                                  for key, sp in s.cluster.share_partitions.items()})
        s.call(_share_unchanged_by_discarded_results, s.cluster, group)
    recovered = journal.recover(crashed)
    assert recovered is not None and _groups_as_records(recovered[0]) == live
    assert {key: (sp.state_epoch, sp.written_start, sp.written_done, sp.written_batches)
            for key, sp in recovered[0].share_partitions.items()} == written
    assert sorted(sp.written_start for key, sp in recovered[0].share_partitions.items() if key[0] == group) == [0, 0]
    assert not [key for key in written if key[0] in (emptied, deleted)] and deleted not in recovered[0].groups


def _share_unchanged_by_discarded_results(cluster: ClusterState, group_id: str) -> None:
    coordinator = share_groups.Coordinator(cluster)
    g = cluster.groups[group_id]
    assert isinstance(g, share_groups.ShareGroup)
    groups, written = copy.deepcopy(cluster.groups), copy.deepcopy(cluster.group_records)
    joined = coordinator.heartbeat(group_id, "newcomer", 0, None, "c", "/127.0.0.1", ["elsewhere"])
    assert joined.records
    coordinator._assign(coordinator._draft(g))
    assert cluster.groups == groups and cluster.group_records == written
    assert group_state.records_of(cluster, g) == cluster.group_records[group_id]


def test_a_crash_keeps_every_classic_group_change(tmp_path):
    """Classic groups write their GroupMetadataRecord as they are when they become Stable or
    Empty (Kafka's storeGroup): a member joining and syncing, a member leaving (Empty), a
    simple group made by a commit of generation -1, a group deleted, an empty KIP-848 group
    giving way to a classic one; the directory
    as a kill -9 leaves it replays to the very groups the coordinator had."""
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        admin = _admin(s.bootstrap)
        admin.create_topics([NewTopic("classic", 2, 1)])["classic"].result(15)
        stays = _subscribed(s.bootstrap, "stable", "classic")
        _subscribed(s.bootstrap, "emptied", "classic").close()
        for group in ("simple", "deleted"):
            committer = _consumer(s.bootstrap, group)   # assigns itself: generation -1
            committer.commit(offsets=[TopicPartition("classic", 0, 3)], asynchronous=False)
            committer.close()
        admin.delete_consumer_groups(["deleted"])["deleted"].result(10)
        # An empty KIP-848 group gives way to a classic one.
        modern = k848_scenarios.Group(s.bootstrap, partitions=1)
        member = modern.new_member()
        assert modern.join(member)["error"] == 0 and modern.heartbeat(member, -1)["error"] == 0
        modern.close()
        converted = _subscribed(s.bootstrap, modern.group_id, modern.topic)
        crashed = tmp_path / "crashed"
        shutil.copytree(data, crashed, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
        live = s.call(_groups_as_records, s.cluster)
        s.call(_as_written, s.cluster)
        stays.close()
        converted.close()
    recovered = journal.recover(crashed)
    assert recovered is not None and _groups_as_records(recovered[0]) == live
    groups = recovered[0].groups
    assert groups["stable"].state == classic_groups.STABLE and len(groups["stable"].members) == 1
    assert groups["emptied"].state == classic_groups.EMPTY and not groups["emptied"].members
    assert groups["simple"].offsets[("classic", 0)].offset == 3 and "deleted" not in groups
    assert isinstance(groups[modern.group_id], classic_groups.Group) and groups[modern.group_id].members

