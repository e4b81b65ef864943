"""Consumer group commands on a sandbox with real confluent-kafka consumers in groups: lag as the
consumers committed it, every reset specifier against offsets computed here from the produced
timestamps, the refusals Kafka makes (active members, non-empty groups), coordinator retries and
exit codes on partial failure."""

from __future__ import annotations

import dataclasses
import io
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.declarations.registry import load_commands
from kafka_shell.face.repl.suggest import Group, suggest
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import classic_groups as sandbox_groups
from kafka_shell.sandbox import replay
from kafka_shell.sandbox.records import RemoveTopicRecord
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows
from tests.test_oneshot import run

SPACING_MS = 10_000   # records of the timestamped topic are 10 s apart...
AGE_MS = 200_000      # ...the first one 200 s old


def sh(sandbox, line: str, timeout_s: float = 10.0, interactive: bool = False) -> tuple[int, str, str]:
    """Run one line in-process (the runner every mode uses): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(sandbox.bootstrap, timeout_s=timeout_s), sandbox=sandbox, stdout=out,
                      stderr=err, interactive=interactive)
    try:
        return run_line(session, line), out.getvalue(), err.getvalue()
    finally:
        session.close()


def ok(sandbox, line: str) -> tuple[str, str]:
    code, out, err = sh(sandbox, line)
    assert code == 0, err
    return out, err


def create(sandbox, name: str, partitions: int, rf: int = 2) -> None:
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, name, partitions, rf)


def produce(sandbox, topic: str, per_partition: list[int], timestamps: bool = False) -> dict[tuple[int, int], int]:
    """`per_partition[p]` records into partition p; with `timestamps`, record i of a partition is
    stamped AGE_MS ago + i * SPACING_MS. Returns (partition, offset) -> timestamp."""
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    base = int(time.time() * 1000) - AGE_MS
    stamps = {}
    for p, count in enumerate(per_partition):
        for i in range(count):
            extra = {"timestamp": base + i * SPACING_MS} if timestamps else {}
            producer.produce(topic, value=f"{p}-{i}".encode(), partition=p, **extra)
            stamps[(p, i)] = base + i * SPACING_MS
    assert producer.flush(10) == 0
    return stamps


def members(sandbox, group: str, topic: str, n: int = 1) -> list[Consumer]:
    """`n` real consumers that joined `group` and each hold an assignment (polled together: a
    rebalance waits for every member to rejoin)."""
    consumers = [Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": group,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "session.timeout.ms": 6000, "heartbeat.interval.ms": 100, "log_level": 3})
                 for _ in range(n)]
    for c in consumers:
        c.subscribe([topic])
    deadline = time.monotonic() + 20
    while not all(c.assignment() for c in consumers):
        assert time.monotonic() < deadline, "the consumers never got their assignments"
        for c in consumers:
            c.poll(0.02)
    return consumers


def member(sandbox, group: str, topic: str) -> Consumer:
    return members(sandbox, group, topic)[0]


def commit(sandbox, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit offsets as a group member, then leave (the group is Empty after)."""
    c = member(sandbox, group, topic)
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    c.close()


def committed(sandbox, group: str) -> dict[int, int]:
    """The group's committed offsets, read with the real AdminClient."""
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {tp.partition: tp.offset for tp in future.result(10).topic_partitions}


# -- list and describe -------------------------------------------------------------------------


def test_lag_matches_what_the_consumer_committed(sandbox):
    create(sandbox, "t", 3)
    produce(sandbox, "t", [5, 7, 2])
    c = member(sandbox, "app", "t")
    c.commit(offsets=[TopicPartition("t", 0, 3), TopicPartition("t", 1, 7)], asynchronous=False)
    out, _ = ok(sandbox, "describe-group app -o json")
    rows = json_rows(out, "offsets")
    assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"]) for r in rows] == [
        (0, 3, 5, 2), (1, 7, 7, 0), (2, None, 2, None)]
    assert {r["consumer_id"] for r in rows} == {c.memberid()}
    assert json_rows(out, "topic_totals") == [{"group": "app", "topic": "t", "partitions": 3, "lag": 2}]
    assert json_rows(out, "group_totals") == [
        {"group": "app", "state": "Stable", "members": 1, "partitions": 3, "lag": 2}]

    out, _ = ok(sandbox, "describe-group app --members -o json")
    assert [(r["consumer_id"], r["partitions"], r["assignment"]) for r in json_rows(out)] == [
        (c.memberid(), 3, [{"topic": "t", "partitions": [0, 1, 2]}])]
    out, _ = ok(sandbox, "describe-group app --state -o json")
    assert [(r["state"], r["members"], r["assignment_strategy"]) for r in json_rows(out)] == [("Stable", 1, "range")]
    out, _ = ok(sandbox, "list-groups -o json")
    assert json_rows(out) == [{"group": "app", "state": "Stable", "type": "classic", "protocol_type": "consumer",
                               "members": 1}]
    out, _ = ok(sandbox, "list-groups --state empty,dead -o json")
    assert json_rows(out) == []
    c.close()
    out, _ = ok(sandbox, "list-groups --state Empty -o json")
    assert [r["group"] for r in json_rows(out)] == ["app"]
    # The topic filter (the REPL's context topic fills it): a topic the group has nothing of.
    create(sandbox, "other", 1)
    out, _ = ok(sandbox, "describe-group app --topic other -o json")
    assert json_rows(out, "offsets") == []


def test_describe_reports_every_missing_group_and_exits_1(sandbox):
    create(sandbox, "t", 1)
    commit(sandbox, "real", "t", {0: 0})
    code, out, err = sh(sandbox, "describe-group real ghost -o json")
    assert code == 1
    assert [r["group"] for r in json_rows(out, "offsets")] == ["real"]
    assert "Consumer group 'ghost' does not exist (see list-groups)." in err.splitlines()
    assert sh(sandbox, "list-groups --state Bogus")[0] == 2


# -- reset-offsets -----------------------------------------------------------------------------


@pytest.fixture
def stamped(sandbox):
    """Topic t: 10 records in partition 0 and 5 in partition 1, 10 s apart from 200 s ago;
    partition 1's first 2 records deleted; group g committed 4 and 3, then left."""
    create(sandbox, "t", 2)
    stamps = produce(sandbox, "t", [10, 5], timestamps=True)
    ok(sandbox, "delete-records --topic t --partition 1 --before-offset 2 --yes")
    commit(sandbox, "g", "t", {0: 4, 1: 3})
    return stamps


def first_at_or_after(stamps: dict, partition: int, when_ms: int) -> int | None:
    hits = [o for (p, o), ts in stamps.items() if p == partition and ts >= when_ms and o >= (2 if partition else 0)]
    return min(hits) if hits else None


def plan(sandbox, specifier: str, scope: str = "--topic t") -> tuple[dict[int, int], str]:
    out, err = ok(sandbox, f"reset-offsets --group g {scope} {specifier} -o json")
    return {r["partition"]: r["new_offset"] for r in json_rows(out, "offsets")}, err


def test_every_reset_specifier_moves_offsets_where_kafka_would(sandbox, stamped):
    ends, starts = {0: 10, 1: 5}, {0: 0, 1: 2}
    assert plan(sandbox, "--to-earliest")[0] == starts
    assert plan(sandbox, "--to-latest")[0] == ends
    assert plan(sandbox, "--to-current")[0] == {0: 4, 1: 3}
    new, notes = plan(sandbox, "--to-offset 7")
    assert new == {0: 7, 1: 5}  # clamped to the log end, with Kafka's note
    assert "New offset (7) is higher than latest offset for topic partition t-1. Value will be set to 5" in notes
    new, notes = plan(sandbox, "--shift-by -2")
    assert new == {0: 2, 1: 2}  # 3 - 2 = 1 is before the log start 2
    assert "New offset (1) is lower than earliest offset for topic partition t-1. Value will be set to 2" in notes
    assert plan(sandbox, "--shift-by 100")[0] == ends

    # --to-datetime: the first record at or after the time; none there: the log end, with a warning.
    at = min(stamped.values()) + 4 * SPACING_MS + 500
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at // 1000)) + f".{at % 1000:03d}"
    new, notes = plan(sandbox, f"--to-datetime {iso}")
    assert new == {0: first_at_or_after(stamped, 0, at), 1: ends[1]} == {0: 5, 1: 5}
    assert "Warn: Partition 1 from topic t is empty. Falling back to latest known offset." in notes
    new, _ = plan(sandbox, f"--to-datetime {iso}+00:00")
    assert new[0] == 5
    # --by-duration PT155S: now - 155 s falls between records 4 and 5 of partition 0 (they are
    # 10 s apart, so the few ms this takes cannot cross one).
    before = int(time.time() * 1000)
    new, _ = plan(sandbox, "--by-duration PT2M35S")
    assert new[0] == first_at_or_after(stamped, 0, before - 155_000) == 5
    assert first_at_or_after(stamped, 1, before - 155_000) is None and new[1] == ends[1]  # all older: the end
    new, _ = plan(sandbox, "--by-duration P1D")  # before everything: the first offset
    assert new == starts

    # Nothing moved: the plan is a dry run unless --execute.
    assert committed(sandbox, "g") == {0: 4, 1: 3}
    # Outside the REPL --execute, Kafka's own opt-in, is enough (issue 22: it needed --yes too).
    out, err = ok(sandbox, "reset-offsets --group g --topic t:1 --to-latest --execute")
    assert "Reset 1 offset(s) of group 'g'." in err
    assert committed(sandbox, "g") == {0: 4, 1: 5}
    out, err = ok(sandbox, "reset-offsets --group g --all-topics --to-offset 6 --execute --yes --dry-run")
    assert committed(sandbox, "g") == {0: 4, 1: 5}  # --dry-run wins, as in Kafka


def test_export_and_from_file_round_trip(sandbox, stamped, tmp_path: Path):
    out, _ = ok(sandbox, "reset-offsets --group g --all-topics --to-offset 3 --export")
    assert out == "t,0,3\nt,1,3\n"  # Kafka's CSV for one group
    plan_file = tmp_path / "plan.csv"
    plan_file.write_text(out.replace("t,1,3", "t,1,99"))
    out, err = ok(sandbox, f"reset-offsets --group g --from-file {plan_file} --execute --yes")
    assert "Value will be set to 5" in err
    assert committed(sandbox, "g") == {0: 3, 1: 5}
    commit(sandbox, "h", "t", {0: 1})
    out, _ = ok(sandbox, "reset-offsets --group g --group h --topic t:0 --to-earliest --export")
    assert out == "g,t,0,0\nh,t,0,0\n"  # several groups: the group comes first
    assert ok(sandbox, "reset-offsets --all-groups --topic t:0 --to-earliest --export")[0] == out
    out, _ = ok(sandbox, "describe-group --all-groups --state -o json")
    assert [r["group"] for r in json_rows(out)] == ["g", "h"]
    plan_file.write_text("g,t,0,2\nh,t,0,8\n")
    ok(sandbox, f"reset-offsets --group g --group h --from-file {plan_file} --execute --yes")
    assert committed(sandbox, "g")[0] == 2 and committed(sandbox, "h") == {0: 8}
    plan_file.write_text("t,zero,1\n")
    code, out, err = sh(sandbox, f"reset-offsets --group g --from-file {plan_file}")
    assert code == 2 and len(err.splitlines()) == 1 and "partition and offset must be integers" in err


def test_a_plan_naming_a_partition_the_topic_lacks_is_refused_whole(sandbox, stamped, tmp_path: Path):
    plan_file = tmp_path / "plan.csv"
    plan_file.write_text("t,0,1\nt,7,1\n")
    code, out, err = sh(sandbox, f"reset-offsets --group g --from-file {plan_file} --execute --yes")
    assert (code, out, err) == (1, "", 'Topic "t" has no partition 7 (it has 2)\n')
    assert committed(sandbox, "g") == {0: 4, 1: 3}   # partition 0 was not reset either


def test_a_share_group_is_named_as_one_by_the_consumer_group_commands(sandbox):
    create(sandbox, "t", 1)
    consumer = ShareConsumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "share-g", "log_level": 0})
    consumer.subscribe(["t"])
    deadline = time.monotonic() + 30
    while "share-g" not in sandbox.call(lambda c: list(sandbox_groups.all_groups(c)), sandbox.cluster):
        assert time.monotonic() < deadline, "the share consumer made no group"
        consumer.poll(0.1)
    consumer.close()
    said = "'share-g' is a share group, not a consumer group: see describe-share-group and delete-share-group.\n"
    for line in ("delete-group share-g --yes", "describe-group share-g", "reset-offsets --group share-g --topic t "
                 "--to-earliest --execute --yes"):
        assert sh(sandbox, line)[0::2] == (1, said), line
    assert "share-g" in sandbox.call(lambda c: list(sandbox_groups.all_groups(c)), sandbox.cluster)


def test_reset_refused_while_the_group_has_active_members(sandbox, stamped):
    c = member(sandbox, "g", "t")
    code, out, err = sh(sandbox, "reset-offsets --group g --topic t --to-earliest --execute --yes")
    assert code == 1
    assert err.strip() == "Assignments can only be reset if the group 'g' is inactive, but the current state is Stable."
    assert committed(sandbox, "g") == {0: 4, 1: 3}
    c.close()
    ok(sandbox, "reset-offsets --group g --topic t --to-earliest --execute --yes")
    assert committed(sandbox, "g") == {0: 0, 1: 2}


def test_reset_of_a_new_group_and_bad_specifiers(sandbox, stamped):
    # A group that does not exist yet is Dead for Kafka's tool: its offsets may be set.
    ok(sandbox, "reset-offsets --group fresh --topic t --to-latest --execute --yes")
    assert committed(sandbox, "fresh") == {0: 10, 1: 5}
    for bad in ("--to-datetime yesterday", "--to-datetime 2020-01-01", "--by-duration 5m", "--to-offset -1"):
        code, out, err = sh(sandbox, f"reset-offsets --group g --topic t {bad}")
        assert code == 2 and out == "" and len(err.splitlines()) == 1, (bad, err)
    # A share group's reset reads --to-datetime as Kafka's tools do: a date alone is not a time.
    code, out, err = sh(sandbox, "reset-share-group-offsets --group g --topic t --to-datetime 2020-01-01")
    assert (code, out) == (2, "") and "2024-01-31T12:00:00.000" in err and len(err.splitlines()) == 1, err
    code, _, err = sh(sandbox, "reset-offsets --group g --topic t")
    assert code == 2 and "--to-earliest" in err
    code, _, err = sh(sandbox, "reset-offsets --group nothing --topic t --shift-by 1")
    assert code == 2 and "no current committed offset" in err
    code, _, err = sh(sandbox, "reset-offsets --group g --topic t:7 --to-earliest")
    assert code == 2 and err.strip() == 'Topic "t" has no partition 7 (it has 2)'
    code, _, err = sh(sandbox, "reset-offsets --group g --topic nope --to-earliest")
    assert code == 1 and err.strip() == 'Topic "nope" does not exist (check the name with list-topics).'


# -- deleting ----------------------------------------------------------------------------------


def test_delete_group_refused_when_not_empty_and_partial_failure_exits_1(sandbox):
    create(sandbox, "t", 2)
    produce(sandbox, "t", [1, 1])
    c1, c2 = members(sandbox, "busy", "t", 2)
    commit(sandbox, "idle", "t", {0: 1})
    code, out, err = sh(sandbox, "delete-group busy idle ghost --yes")
    assert code == 1
    assert err.splitlines() == [
        "Deleted consumer group 'idle'.",
        "Consumer group 'busy' has 2 active member(s): stop its consumers first (it was not deleted).",
        "Consumer group 'ghost' does not exist (see list-groups)."]
    assert set(sandbox.call(lambda c: sorted(sandbox_groups.all_groups(c)), sandbox.cluster)) == {"busy"}
    code, _, err = sh(sandbox, "delete-group busy")  # nothing it could delete: nothing to ask, one line why
    assert code == 1 and "active member(s)" in err
    code, _, err = sh(sandbox, "delete-group busy idle2")
    assert code == 1 and "active member(s)" in err
    c1.close()
    c2.close()
    _, err = ok(sandbox, "delete-group busy --dry-run")
    assert err.strip() == "Would delete consumer group 'busy' (dry run)."
    ok(sandbox, "delete-group busy --yes")
    assert sandbox.call(lambda c: list(sandbox_groups.all_groups(c)), sandbox.cluster) == []


def test_delete_offsets_refused_for_a_subscribed_topic(sandbox):
    create(sandbox, "t", 2)
    create(sandbox, "old", 1)
    produce(sandbox, "t", [1, 1])
    c = member(sandbox, "g", "t")
    c.commit(offsets=[TopicPartition("t", 0, 1), TopicPartition("old", 0, 0)], asynchronous=False)
    code, out, err = sh(sandbox, "delete-offsets --group g --topic t:0 --topic old --yes -o json")
    assert code == 1
    assert json_rows(out) == [{"topic": "old", "partition": 0, "status": "Successful"},
                              {"topic": "t", "partition": 0, "status": "Error"}]
    assert err.strip().startswith("t-0: Consumer group 'g' is subscribed to the topic")
    c.close()
    assert committed(sandbox, "g") == {0: 1}  # old's offset went, t's stayed
    ok(sandbox, "delete-offsets --group g --topic t --yes")
    assert committed(sandbox, "g") == {}
    # Offsets of a deleted topic: shown without a log end, not a failure (as Kafka's tool). Kafka's
    # coordinator drops them moments after the deletion; this is the state of those moments.
    commit(sandbox, "g", "old", {0: 0})
    # The topic's record removed, before the coordinator drops its offsets.
    sandbox.call(replay.apply, sandbox.cluster, RemoveTopicRecord(sandbox.cluster.topics["old"].id))
    out, err = ok(sandbox, "describe-group g -o json")
    assert [(r["topic"], r["log_end_offset"]) for r in json_rows(out, "offsets")] == [("old", None)]
    assert "Topic old no longer exists: group 'g' still has offsets for it" in err


# -- coordinators ------------------------------------------------------------------------------


def coordinator_of(sandbox, group: str) -> int:
    return sandbox.call(sandbox_groups.coordinator_of, sandbox.cluster, group)


def test_coordinator_errors_are_retried_within_the_timeout(sandbox):
    create(sandbox, "t", 1)
    commit(sandbox, "g", "t", {0: 0})
    node = coordinator_of(sandbox, "g")
    sandbox.fail(node, "DescribeGroups", "COORDINATOR_LOAD_IN_PROGRESS")
    healer = threading.Timer(0.5, sandbox.heal)
    healer.start()
    try:
        out, _ = ok(sandbox, "describe-group g --state -o json")
    finally:
        healer.join()
    assert json_rows(out)[0]["coordinator"] == node
    # A coordinator that keeps refusing: one line when the timeout is spent, exit 1.
    sandbox.fail(node, "DescribeGroups", "NOT_COORDINATOR")
    code, out, err = sh(sandbox, "describe-group g", timeout_s=1)
    assert code == 1 and err.strip() == "The coordinator of group 'g' moved and did not settle in time: retry."


def test_a_moved_coordinator_is_found_again(sandbox):
    create(sandbox, "t", 1)
    commit(sandbox, "g", "t", {0: 0})
    old = coordinator_of(sandbox, "g")
    sandbox.stop_broker(old)
    out, _ = ok(sandbox, "describe-group g --state -o json")
    assert json_rows(out)[0]["coordinator"] not in (old, -1)


def test_completion_offers_group_ids_from_one_list_per_broker(sandbox, monkeypatch):
    create(sandbox, "t", 1)
    for group in ("a-group", "b-group", "c-group"):
        commit(sandbox, group, "t", {0: 0})
    served: Counter = Counter()
    for key in (ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR):
        api = sandbox.handlers[key]
        monkeypatch.setitem(sandbox.handlers, key, dataclasses.replace(
            api, handler=lambda ctx, handler=api.handler, key=key: (served.update([key]), handler(ctx))[1]))
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO())
    try:
        assert session.conn.refresh().groups == ("a-group", "b-group", "c-group")
    finally:
        session.close()
    # The refresh the toolbar and completion live on: one ListGroups per broker, nothing per group.
    assert served == {ApiKey.LIST_GROUPS: 3}


def test_every_group_argument_completes_group_ids():
    registry = load_commands()
    for line in ("describe-group ", "delete-group a ", "reset-offsets --group ", "delete-offsets --group ",
                 "consume --topic t --group "):
        assert Group() in suggest(line, registry).suggestions, line


def test_exit_code_of_a_real_process_on_partial_failure(sandbox):
    create(sandbox, "t", 1)
    commit(sandbox, "real", "t", {0: 0})
    p = run(sandbox, "describe-group real ghost --state")
    assert p.returncode == 1 and "Consumer group 'ghost' does not exist" in p.stderr and "real" in p.stdout


def test_reset_execute_asks_in_the_repl(sandbox, stamped):
    asked: list[str] = []
    for answer, expected in ((False, {0: 4, 1: 3}), (True, {0: 10, 1: 5})):
        session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(),
                          stderr=io.StringIO(), interactive=True,
                          confirm=lambda question, answer=answer: asked.append(question) or answer)
        try:
            code = run_line(session, "reset-offsets --group g --topic t --to-latest --execute")
        finally:
            session.close()
        assert code == (0 if answer else 1)
        assert committed(sandbox, "g") == expected
    assert asked == ["Reset 2 offset(s) of group(s) g. Continue?"] * 2
