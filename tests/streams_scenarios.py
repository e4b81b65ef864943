"""Streams groups (KIP-1071) as raw StreamsGroupHeartbeat and StreamsGroupDescribe requests, sent
alike to any cluster (the sandbox or real Apache Kafka 4.4), answers reduced to what must agree:
error codes and messages, status codes and details, states, the topology as described, tasks.
tests/test_streams_groups_cmd.py runs them on both and compares."""

from __future__ import annotations

import json
import re
import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.protocol.codes import ApiKey
from tests.k848_scenarios import coordinator
from tests.txn_scenarios import retry

VERSION = 1


def _topology(source: str, app: str, changelog_partitions: int = 0) -> dict:
    """A word count's topology, as Kafka Streams sends it: subtopology 0 reads `source` and writes
    the repartition topic, subtopology 1 reads it and keeps a store with a changelog."""
    info = {"replication_factor": 0, "topic_configs": []}
    return {"epoch": 0, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
         "state_changelog_topics": [], "repartition_sink_topics": [f"{app}-counts-repartition"],
         "repartition_source_topics": [], "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
         "state_changelog_topics": [{"name": f"{app}-counts-changelog", "partitions": changelog_partitions, **info}],
         "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": f"{app}-counts-repartition", "partitions": 0, **info}],
         "copartition_groups": []}]}


def _join(app: str, member: str, topology: dict | None, **extra) -> dict:
    return {"group_id": app, "member_id": member, "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout": 30000, "topology": topology,
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": str(uuid.uuid4()),
            "user_endpoint": None, "client_tags": [], "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": False, **extra}


def _beat(app: str, member: str, epoch: int, active: list | None = None) -> dict:
    return {"group_id": app, "member_id": member, "member_epoch": epoch, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout": -1, "topology": None,
            "active_tasks": active, "standby_tasks": None if active is None else [],
            "warmup_tasks": None if active is None else [], "process_id": None, "user_endpoint": None,
            "client_tags": None, "task_offsets": None, "task_end_offsets": None, "shutdown_application": False}


def _names_sorted(detail: str) -> str:
    """A status naming missing internal topics, its names sorted (Kafka lists them in its
    HashMap's order)."""
    head, colon, names = detail.partition(": ")
    return f"{head}{colon}{', '.join(sorted(names.split(', ')))}" if head == "Internal topics are missing" else detail


def _reduced(answer: dict) -> dict:
    """Codes, messages (epochs left out: the two count them alike but not equally), statuses and
    active tasks."""
    tasks = {t["subtopology_id"]: t["partitions"] for t in answer.get("active_tasks") or []}
    message = answer.get("error_message")
    return {"error": answer["error_code"], "message": message and re.sub(r"\(\d+\)", "(N)", message),
            "status": sorted((s["status_code"], _names_sorted(s["status_detail"])) for s in answer.get("status") or []),
            "active": tasks}


def lifecycle(bootstrap: str) -> dict:
    """Invalid heartbeats; a join whose source topic is missing; one whose internal topics are
    missing (the broker creates them); the member's tasks once they exist; fencing; leaving."""
    tag = uuid.uuid4().hex[:8]
    app, source = f"sg-{tag}", f"sg-in-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    channel = coordinator(bootstrap, app)
    out: dict = {}
    # Two fresh groups, each joined at once: the initial rebalance delay runs alike on both sides.
    early = f"sg-early-{tag}"
    channels = {app: channel, early: coordinator(bootstrap, early)}

    def beat(body: dict) -> dict:   # a coordinator still loading its partition is asked again
        return retry(lambda: channels[body["group_id"]].request(ApiKey.STREAMS_GROUP_HEARTBEAT, body, VERSION))

    def describe(group: str) -> dict:
        [g] = retry(lambda: channels[group].request(
            ApiKey.STREAMS_GROUP_DESCRIBE, {"group_ids": [group], "include_authorized_operations": False,
                                            "include_topology_description": False}, VERSION)["groups"][0]),
        topology = g["topology"] or {"subtopologies": []}
        return {"error": g["error_code"], "state": g["group_state"], "members": len(g["members"]),
                "topology": [(s["subtopology_id"], s["source_topics"], s["repartition_sink_topics"],
                              [(t["name"], t["partitions"]) for t in s["repartition_source_topics"]],
                              [(t["name"], t["partitions"]) for t in s["state_changelog_topics"]])
                             for s in topology["subtopologies"]]}
    try:
        member = uuid.uuid4().hex
        out["empty member id"] = _reduced(beat(_join(early, "", _topology(source, app))))
        out["join without topology"] = _reduced(beat(_join(early, member, None)))
        out["changelog partitions set"] = _reduced(beat(_join(early, member, _topology(source, app, 4))))
        out["unknown group"] = _reduced(beat(_beat(early, member, 3)))
        out["missing source"] = _reduced(beat(_join(early, member, _topology(source, app))))
        out["describe not ready"] = describe(early)
        out["leave not ready"] = _reduced(beat(_beat(early, member, -1)))
        admin.create_topics([NewTopic(source, 3, 1)])[source].result(30)
        time.sleep(1)   # the coordinator's metadata image has the topic
        member = uuid.uuid4().hex
        joined = beat(_join(app, member, _topology(source, app)))
        out["missing internal topics"] = _reduced(joined)
        epoch = joined["member_epoch"]
        deadline = time.monotonic() + 60
        tasks = None
        while True:   # the broker creates the internal topics; after the initial delay the member gets its tasks
            answer = beat(_beat(app, member, epoch))
            epoch = answer["member_epoch"]
            tasks = answer["active_tasks"] if answer.get("active_tasks") is not None else tasks
            if not answer.get("status") and tasks:
                break
            assert time.monotonic() < deadline, f"no tasks: {answer}"
            time.sleep(0.5)
        out["tasks"] = _reduced({**answer, "active_tasks": tasks})
        out["describe stable"] = describe(app)
        update = {"group_id": app, "member_id": member, "topology_epoch": 0,
                  "topology_description": {"subtopologies": [], "global_stores": []}}
        out["topology description update"] = _reduced(retry(lambda: channel.request(
            ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, update, 0)))
        out["fenced: greater epoch"] = _reduced(beat(_beat(app, member, epoch + 5)))
        out["unknown member"] = _reduced(beat(_beat(app, uuid.uuid4().hex, epoch)))
        out["topology after joining"] = _reduced(beat({**_beat(app, member, epoch), "topology": _topology(source, app)}))
        out["leave"] = _reduced(beat(_beat(app, member, -1)))
        out["describe empty"] = describe(app)
    finally:
        for c in channels.values():
            c.close()
    # Names each run makes: the group's and topics' tag, the member ids.
    return json.loads(re.sub(r"\b[0-9a-f]{32}\b", "<member>", json.dumps(out).replace(tag, "<tag>")))
