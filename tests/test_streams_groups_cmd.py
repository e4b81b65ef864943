"""Streams groups (KIP-1071) on real Kafka 4.4 with a real Kafka Streams application (a word
count on Kafka's kafka-streams jar, two instances, `group.protocol=streams`, one standby replica):
list-streams-groups and describe-streams-group (offsets, --members, --state, --verbose) give the
facts Kafka's own kafka-streams-groups (StreamsGroupCommand from the same jars) gives at the same
moment; reset-streams-group-offsets plans what Kafka's tool plans and --execute resets the
offsets and deletes the internal topics; delete-streams-group-offsets and delete-streams-group
finish the group. The same application runs on the sandbox, with the same checks (Kafka's tool
included)."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client
from tests import streams_scenarios
from tests.clients.streams_app import WordCount, compiled
from tests.test_consumer_groups_cmd import rows, wait_for
from tests.test_transactions_cmd import sh

PARTITIONS = 3      # records go to partitions 0 and 1 only: partition 2 is never committed


def streams_tool(bootstrap: str, *args: str) -> list[str]:
    done = java_client.run("streams.StreamsGroupCommand", "--bootstrap-server", bootstrap, *args)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip()]


def _tasks(text: str) -> dict[str, set[tuple[str, int]]]:
    """Kafka's ASSIGNMENTS column (`ACTIVE: 0:[0,1]; 1:[2]; TARGET-ACTIVE: ...`) by kind."""
    out: dict[str, set[tuple[str, int]]] = {}
    for kind, body in re.findall(r"([A-Z-]+): ((?:\S+:\[[\d,]*\]; )+)", text + " "):
        out[kind] = {(sub, int(p)) for sub, ps in re.findall(r"(\S+):\[([\d,]*)\]", body) for p in ps.split(",") if p}
    return out


def _ours(tasks: list[dict]) -> set[tuple[str, int]]:
    """The shell's tasks ([{"subtopology": "0", "partitions": [0, 1]}]) as (subtopology, partition) pairs."""
    return {(t["subtopology"], p) for t in tasks for p in t["partitions"]}


def _members_both(b: str, group: str) -> tuple[list, list]:
    ours = sorted((m["member"], m["process"], m["client_id"], m["member_epoch"], m["member_protocol"],
                   {"ACTIVE": _ours(m["active_tasks"]), "STANDBY": _ours(m["standby_tasks"]),
                    "WARMUP": _ours(m["warmup_tasks"]), "TARGET-ACTIVE": _ours(m["target_active_tasks"]),
                    "TARGET-STANDBY": _ours(m["target_standby_tasks"]),
                    "TARGET-WARMUP": _ours(m["target_warmup_tasks"])})
                  for m in rows(b, f"describe-streams-group {group} --members --verbose"))
    lines = streams_tool(b, "--describe", "--group", group, "--members", "--verbose")
    theirs = []
    for line in lines[1:]:
        words = line.split()
        kinds = _tasks(" ".join(words[8:]))
        theirs.append((words[3], words[6], words[7], int(words[5]), words[4],
                       {k: kinds.get(k, set()) for k in ("ACTIVE", "STANDBY", "WARMUP", "TARGET-ACTIVE",
                                                          "TARGET-STANDBY", "TARGET-WARMUP")}))
    return ours, sorted(theirs)


def _offsets_both(b: str, group: str) -> tuple[list, list]:
    ours = sorted((o["topic"], o["partition"], o["current_offset"], o["log_end_offset"], o["lag"])
                  for o in rows(b, f"describe-streams-group {group}"))
    lines = streams_tool(b, "--describe", "--group", group, "--verbose")
    theirs = sorted((w[1], int(w[2]), None if w[3] == "-" else int(w[3]), int(w[5]), int(w[6]))
                    for w in (line.split() for line in lines[1:]))
    return ours, theirs


def _settled(members: list) -> bool:
    """Two members, each at its target, the active tasks covering both subtopologies."""
    if len(members) != 2:
        return False
    actives = set().union(*(m[5]["ACTIVE"] for m in members))
    return (all(m[5]["ACTIVE"] == m[5]["TARGET-ACTIVE"] and m[5]["STANDBY"] == m[5]["TARGET-STANDBY"]
                and not m[5]["WARMUP"] for m in members)
            and actives == {(s, p) for s in ("0", "1") for p in range(PARTITIONS)})


def test_streams_group_on_kafka(kafka4, tmp_path):
    scenario(kafka4.bootstrap, tmp_path)


def test_streams_group_on_the_sandbox(tmp_path):
    """The same application and the same checks on the sandbox (which serves streams groups)."""
    with Sandbox(brokers=3) as s:
        scenario(s.bootstrap, tmp_path)


def scenario(b: str, tmp_path: Path) -> None:
    app = f"wc-{uuid.uuid4().hex[:8]}"
    try:
        word_count(b, app, tmp_path)
    finally:   # the session's cluster lists a group with configs as a config resource: leave none
        sh(b, f"alter-configs --entity-type groups --entity-name {app} --delete-config streams.num.standby.replicas")


def word_count(b: str, app: str, tmp_path: Path) -> None:
    source, sink = f"{app}-in", f"{app}-out"
    admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
    for topic in admin.create_topics([NewTopic(source, PARTITIONS, 1), NewTopic(sink, 1, 1)]).values():
        topic.result(30)
    code, _, err = sh(b, f"alter-configs --entity-type groups --entity-name {app} "
                         "--add-config streams.num.standby.replicas=1")
    assert code == 0, err
    producer = Producer({"bootstrap.servers": b, "log_level": 0})
    for i in range(20):
        producer.produce(source, f"the quick brown fox {i % 4}".encode(), key=str(i).encode(), partition=i % 2)
    producer.flush(30)
    classes = compiled(tmp_path / "classes")
    instances = [WordCount(classes, b, app, source, sink, tmp_path / f"state-{n}") for n in range(2)]
    try:
        for instance in instances:
            instance.wait_state("RUNNING")
        ours, theirs = wait_for(lambda: _members_both(b, app), lambda pair: pair[0] == pair[1] and _settled(pair[0]),
                                timeout_s=180)
        assert {m[4] for m in ours} == {"streams"}
        assert any(m[5]["STANDBY"] for m in ours), "one standby replica: the counts' store has standby tasks"

        assert [g["group"] for g in rows(b, "list-streams-groups") if g["group"] == app] == [app]
        assert app in streams_tool(b, "--list")
        listed = {g["group"]: g["state"] for g in rows(b, "list-streams-groups --state Stable")}
        assert listed.get(app) == "Stable"

        [state] = rows(b, f"describe-streams-group {app} --state --verbose")
        theirs_state = streams_tool(b, "--describe", "--group", app, "--state", "--verbose")[1].split()
        # GROUP COORDINATOR (ID) ASSIGNOR STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
        assert (f"({state['coordinator']})", state["assignor"], state["state"], state["group_epoch"],
                state["target_assignment_epoch"], state["members"]) == (
            theirs_state[2], theirs_state[3], theirs_state[4], int(theirs_state[5]), int(theirs_state[6]),
            int(theirs_state[7]))
        subs = {s["subtopology"]: s for s in rows(b, f"describe-streams-group {app} --state", "subtopologies")}
        assert subs["0"]["source_topics"] == [source] and subs["0"]["repartition_sink_topics"] == [f"{app}-counts-repartition"]
        assert subs["1"]["repartition_source_topics"] == [f"{app}-counts-repartition"]
        assert subs["1"]["changelog_topics"] == [f"{app}-counts-changelog"]

        # Both subtopologies commit (the repartition topic's offsets may come a commit later).
        committed = {source, f"{app}-counts-repartition"}
        ours_o, theirs_o = wait_for(lambda: _offsets_both(b, app), lambda pair: pair[0] == pair[1] and all(
            o[4] == 0 for o in pair[0]) and {o[0] for o in pair[0]} == committed)
        assert {(t, p) for t, p, *_ in ours_o} == {(t, p) for t in (source, f"{app}-counts-repartition")
                                                  for p in range(PARTITIONS)}
        assert [o for o in ours_o if o[0] == source] == [(source, 0, 10, 10, 0), (source, 1, 10, 10, 0),
                                                         (source, 2, None, 0, 0)]

        code, _, err = sh(b, f"reset-streams-group-offsets --group {app} --all-input-topics --to-earliest --execute")
        assert (code, err.strip()) == (1, f"Assignments can only be reset if the group '{app}' is inactive, but the "
                                          "current state is Stable.")
        code, _, err = sh(b, f"delete-streams-group {app} --yes")
        assert code == 1 and "2 active member(s)" in err
    finally:
        for instance in instances:
            instance.stop()
    wait_for(lambda: rows(b, f"describe-streams-group {app} --state")[0]["state"], lambda s: s == "Empty")
    assert "Empty" in streams_tool(b, "--describe", "--group", app, "--state")[-1].split()

    # The plan, as Kafka's tool plans it (--dry-run); ours is the default.
    plan = {(r["topic"], r["partition"]): (r["current_offset"], r["new_offset"])
            for r in rows(b, f"reset-streams-group-offsets --group {app} --all-input-topics --to-earliest")}
    kafka_plan = streams_tool(b, "--reset-offsets", "--group", app, "--all-input-topics", "--to-earliest", "--dry-run")
    assert kafka_plan[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert {(w[1], int(w[2])): int(w[3]) for w in (line.split() for line in kafka_plan[1:])} == \
        {k: new for k, (_, new) in plan.items()} == {(source, 0): 0, (source, 1): 0}
    assert {k: current for k, (current, _) in plan.items()} == {(source, 0): 10, (source, 1): 10}
    code, _, err = sh(b, f"reset-streams-group-offsets --group {app} --input-topic {source} --to-earliest")
    assert code == 1 and f"has no committed offset for {source}-2" in err   # Kafka's tool refuses it too
    assert "not part of the group" in " ".join(streams_tool(b, "--reset-offsets", "--group", app, "--input-topic",
                                                            source, "--to-earliest", "--dry-run"))
    code, _, err = sh(b, f"reset-streams-group-offsets --group {app} --input-topic {source}:0 --shift-by -3")
    assert code == 0 and "Dry run" in err

    internal = {f"{app}-counts-repartition", f"{app}-counts-changelog"}
    assert internal <= set(admin.list_topics(timeout=30).topics)
    code, out, err = sh(b, f"reset-streams-group-offsets --group {app} --all-input-topics --to-earliest --execute "
                           "--delete-all-internal-topics")
    assert code == 0, err
    assert f"Reset 2 offset(s) of streams group '{app}'." in err
    assert all(f"Deleted internal topic '{t}'." in err for t in internal)
    wait_for(lambda: set(admin.list_topics(timeout=30).topics), lambda names: not internal & names)
    # Kafka's group coordinator drops the committed offsets of a deleted topic (onTopicsDeleted,
    # moments after the deletion): the repartition topic's go.
    held = wait_for(lambda: {(r["topic"], r["partition"]): (r["current_offset"], r["log_end_offset"])
                             for r in rows(b, f"describe-streams-group {app}")},
                    lambda found: {k[0] for k in found} == {source})
    assert held == {(source, 0): (0, 10), (source, 1): (0, 10)}

    # Destructive outside the REPL: --yes or nothing happens.
    code, _, err = sh(b, f"delete-streams-group-offsets --group {app} --all-input-topics")
    assert code == 2 and "--yes" in err
    code, _, err = sh(b, f"delete-streams-group-offsets --group {app} --all-input-topics --dry-run")
    assert code == 0 and f"Would delete the offset of {source}-0 for streams group '{app}' (dry run)." in err
    deleted = rows(b, f"delete-streams-group-offsets --group {app} --all-input-topics --yes")
    assert sorted((r["topic"], r["partition"], r["status"]) for r in deleted) == [
        (source, 0, "Successful"), (source, 1, "Successful")]
    assert [r for r in rows(b, f"describe-streams-group {app}") if r["topic"] == source] == []

    code, _, err = sh(b, f"delete-streams-group {app} --yes")
    assert (code, err.strip()) == (0, f"Deleted streams group '{app}'.")
    assert app not in streams_tool(b, "--list")
    code, _, err = sh(b, f"describe-streams-group {app}")
    assert code == 1 and "does not exist" in err


def test_heartbeats_answer_as_kafka(kafka4):
    """Raw StreamsGroupHeartbeat and StreamsGroupDescribe on Kafka 4.4 and the sandbox: request
    checks, missing source and internal topics (statuses, the broker creating them), the initial
    rebalance delay, the topology as described, tasks, fencing, leaving: the same answers."""
    real = streams_scenarios.lifecycle(kafka4.bootstrap)
    with Sandbox(brokers=3) as s:
        ours = streams_scenarios.lifecycle(s.bootstrap)
    assert ours["tasks"]["active"] == {"0": [0, 1, 2], "1": [0, 1, 2]}
    assert ours["describe stable"]["state"] == "Stable" and ours["describe not ready"]["state"] == "NotReady"
    differences = {k: (real[k], ours.get(k)) for k in real if real[k] != ours.get(k)}
    assert differences == {}, json.dumps(differences, indent=1)
