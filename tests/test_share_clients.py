"""Share groups served to Kafka's own Java share consumer (ConsoleShareConsumer, from the Kafka
4.4 jars): the same scenarios on the sandbox and on real Kafka 4.4 give the same facts. Records
accepted (the consumer's implicit acknowledgement), released (each delivered again until
share.delivery.count.limit, then archived) and rejected; the start offsets and lag the shell
describes afterwards; the group's state; delete-share-group."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client
from tests.test_consumer_groups_cmd import rows, wait_for
from tests.test_transactions_cmd import sh

RECORDS, PARTITIONS = 10, 2
DELIVERY_LIMIT = 5   # share.delivery.count.limit's default
COORDINATOR_MOVED = (14, 15, 16)   # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(brokers=3) as s:
        yield s


@pytest.fixture(params=["sandbox", "kafka4"])
def bootstrap(request) -> str:
    return request.getfixturevalue(request.param).bootstrap


def _topic(bootstrap: str) -> str:
    topic = "sq-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(RECORDS):
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    producer.flush(30)
    return topic


def _group(bootstrap: str) -> str:
    group = "sq-" + uuid.uuid4().hex[:8]
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                                 "--add-config share.auto.offset.reset=earliest")
    assert code == 0, err
    return group


def _consume(bootstrap: str, topic: str, group: str, count: int, *flags: str) -> list[int]:
    """Kafka's console share consumer until it has printed `count` records (each delivery once)."""
    done = subprocess.run(java_client.command("consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                                              "--topic", topic, "--group", group, "--max-messages", str(count),
                                              "--timeout-ms", "60000", *flags),
                          capture_output=True, text=True, timeout=180)
    assert f"Processed a total of {count} messages" in done.stderr, done.stderr[-2000:]
    return [int(v) for v in done.stdout.split()]


def _offsets(bootstrap: str, group: str, partitions: int = PARTITIONS) -> list[tuple[int, int, int]]:
    """(partition, start offset, lag) once every record of every partition is done with (lag 0).
    The start offset is what the share coordinator last had written: Kafka writes new record
    states with the start offset from before they moved it, so it may trail (0 after one write
    that acknowledged everything) while the lag, which counts the records done with, is 0."""
    found = wait_for(lambda: sorted((r["partition"], r["start_offset"], r["lag"])
                                    for r in rows(bootstrap, f"describe-share-group {group}")),
                     lambda r: len(r) == partitions and all(lag == 0 for _, _, lag in r))
    assert all(0 <= start <= RECORDS // PARTITIONS for _, start, _ in found), found
    return found


def _rows_once_there(bootstrap: str, line: str) -> list[dict]:
    """The command's rows; none while the group does not exist yet (its members are joining)."""
    code, _, err = sh(bootstrap, line)
    if code == 1 and "does not exist" in err:
        return []
    return rows(bootstrap, line)


@pytest.mark.parametrize("how", ["accept", "release", "reject"])
def test_share_consumer_deliveries(bootstrap, how):
    topic, group = _topic(bootstrap), _group(bootstrap)
    flags = {"accept": (), "release": ("--release",), "reject": ("--reject",)}[how]
    # Released records come back until they were delivered DELIVERY_LIMIT times; then archived.
    count = RECORDS * DELIVERY_LIMIT if how == "release" else RECORDS
    delivered = Counter(_consume(bootstrap, topic, group, count, *flags))
    assert delivered == Counter({i: count // RECORDS for i in range(RECORDS)})
    # Every record is done with (acknowledged or archived); one write acknowledged (or rejected)
    # each partition's batch at once, so the written start offset is still 0, on Kafka as here.
    offsets = _offsets(bootstrap, group)
    if how != "release":
        assert offsets == [(p, 0, 0) for p in range(PARTITIONS)]
    state = wait_for(lambda: rows(bootstrap, f"describe-share-group {group} --state --verbose"),
                     lambda r: r and r[0]["members"] == 0)[0]
    assert (state["state"], state["assignor"]) == ("Empty", "simple")
    assert sh(bootstrap, f"delete-share-group {group} --yes")[0::2] == (0, f"Deleted share group '{group}'.\n")


def test_a_second_consumer_shares_the_partitions(bootstrap):
    """Two members of one group: the simple assignor gives each its partitions, every record is
    delivered once between them, and describe shows both members while they run."""
    topic, group = _topic(bootstrap), _group(bootstrap)
    command = java_client.command("consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                                  "--topic", topic, "--group", group)
    consumers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for _ in range(2)]
    try:
        members = wait_for(lambda: _rows_once_there(bootstrap, f"describe-share-group {group} --members --verbose"),
                           lambda r: len(r) == 2 and sum(m["partitions"] for m in r) == PARTITIONS
                           and len({m["member_epoch"] for m in r}) == 1)
        assert all(m["subscription"] == [topic] for m in members)
        _offsets(bootstrap, group)
    finally:
        for c in consumers:
            c.terminate()
        outs = [c.communicate(timeout=60)[0] for c in consumers]
    assert sorted(int(v) for out in outs for v in out.split()) == list(range(RECORDS))


def test_reset_and_delete_share_group_offsets(bootstrap):
    """reset-share-group-offsets plans, then --execute moves the start offsets (the records are
    delivered again); delete-share-group-offsets drops the group's state of the topic."""
    topic, group = _topic(bootstrap), _group(bootstrap)
    _consume(bootstrap, topic, group, RECORDS)
    _offsets(bootstrap, group)
    code, out, err = sh(bootstrap, f"reset-share-group-offsets --group {group} --topic {topic} --to-earliest -o json")
    assert code == 0 and "Dry run" in err, err
    code, _, err = sh(bootstrap, f"reset-share-group-offsets --group {group} --all-topics --to-offset 2 --execute")
    assert (code, err) == (0, f"Reset {PARTITIONS} start offset(s) of share group '{group}'.\n")
    assert sorted((r["partition"], r["start_offset"]) for r in rows(bootstrap, f"describe-share-group {group}")) == \
        [(p, 2) for p in range(PARTITIONS)]
    again = _consume(bootstrap, topic, group, RECORDS - 2 * PARTITIONS)
    assert sorted(again) == list(range(2 * PARTITIONS, RECORDS))
    wait_for(lambda: rows(bootstrap, f"describe-share-group {group} --state")[0]["members"], lambda n: n == 0)
    code, _, err = sh(bootstrap, f"delete-share-group-offsets --group {group} --topic {topic}")
    assert code == 2 and "--yes" in err
    code, _, err = sh(bootstrap, f"delete-share-group-offsets --group {group} --topic {topic} --yes")
    assert (code, err) == (0, f"Deleted the offsets of 1 topic(s) of share group '{group}'.\n")
    assert rows(bootstrap, f"describe-share-group {group}") == []


def test_records_come_back_when_their_lock_expires(bootstrap):
    """A member that holds records without acknowledging them loses them when their acquisition
    lock expires (share.record.lock.duration.ms, here its minimum, 15 s): another member of the
    group gets each again with delivery count 2 while the first is still a member."""
    topic = "sq-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "linger.ms": 100})
    for i in range(6):
        producer.produce(topic, str(i).encode())
    producer.flush(30)
    group = _group(bootstrap)
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                                 "--add-config share.record.lock.duration.ms=15000")
    assert code == 0, err
    holder = subprocess.Popen(java_client.share_probe(bootstrap, topic, group, "hold", 6),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        held = [holder.stdout.readline().split() for _ in range(7)]
        assert held[-1] == ["holding"], (held, holder.stderr.read() if holder.poll() is not None else "")
        assert [(int(o), int(c)) for o, c, _ in held[:-1]] == [(i, 1) for i in range(6)]
        done = subprocess.run(java_client.share_probe(bootstrap, topic, group, "accept", 6),
                              capture_output=True, text=True, timeout=180)
        again = [line.split() for line in done.stdout.splitlines()]
        assert [(int(o), int(c), v) for o, c, v in again] == [(i, 2, str(i)) for i in range(6)], done.stderr[-2000:]
        assert len(rows(bootstrap, f"describe-share-group {group} --members")) == 1   # the holder is still in
    finally:
        holder.kill()
        holder.wait(30)
    assert _offsets(bootstrap, group, partitions=1) == [(0, 0, 0)]


def _protocol_facts(bootstrap: str) -> dict:
    """Raw share group requests with the usual mistakes, answers reduced to what must agree."""
    from kafka_shell.connection.channel import Channel
    from kafka_shell.protocol.codes import ApiKey
    from tests.k848_scenarios import coordinator
    topic, group = _topic(bootstrap), _group(bootstrap)
    channels = [coordinator(bootstrap, group)]
    member = uuid.uuid4().hex[:22]
    out: dict = {}

    def ask(api_key: int, body: dict, version: int | None = None, code=lambda a: a["error_code"]) -> dict:
        """At the group's coordinator, found again while Kafka says it moved or is loading."""
        deadline = time.monotonic() + 60
        while True:
            answer = channels[-1].request(api_key, body, version)
            if code(answer) not in COORDINATOR_MOVED or time.monotonic() > deadline:
                return answer
            channels[-1].close()
            channels.append(coordinator(bootstrap, group))
            time.sleep(0.2)

    def heartbeat(member_id: str, epoch: int, topics: list[str] | None) -> dict:
        a = ask(ApiKey.SHARE_GROUP_HEARTBEAT, {"group_id": group, "member_id": member_id, "member_epoch": epoch,
                                               "rack_id": None, "subscribed_topic_names": topics})
        message = a.get("error_message")
        if message and member_id:
            message = message.replace(group, "G").replace(member_id, "M")
        return {"error": a["error_code"], "message": message, "epoch": a["member_epoch"] > 0}
    out["no member id"] = heartbeat("", 0, [topic])
    out["no topics"] = heartbeat(member, 0, None)
    out["bad epoch"] = heartbeat(member, -2, None)
    out["unknown group"] = heartbeat(member, 3, None)
    joined = ask(ApiKey.SHARE_GROUP_HEARTBEAT, {"group_id": group, "member_id": member, "member_epoch": 0,
                                                 "rack_id": None, "subscribed_topic_names": [topic]})
    out["join"] = (joined["error_code"], joined["member_epoch"] >= 1)
    epoch = joined["member_epoch"]
    out["epochs"] = [(epoch, len((joined.get("assignment") or {}).get("topic_partitions") or []))]
    deadline = time.monotonic() + 60
    while not (joined.get("assignment") or {}).get("topic_partitions"):
        # Kafka assigns a topic's partitions once the share coordinator initialized their state.
        assert time.monotonic() < deadline, joined
        time.sleep(0.3)
        joined = ask(ApiKey.SHARE_GROUP_HEARTBEAT, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                                     "rack_id": None, "subscribed_topic_names": [topic]})
        epoch = joined["member_epoch"]
        step = (epoch, len((joined.get("assignment") or {}).get("topic_partitions") or []))
        if step != out["epochs"][-1]:   # how many heartbeats it takes is Kafka's timing
            out["epochs"].append(step)
    out["assigned"] = sorted(p for t in joined["assignment"]["topic_partitions"] for p in t["partitions"])
    out["future epoch"] = heartbeat(member, epoch + 5, None)
    out["unknown member"] = heartbeat("x" + member, 4, None)
    topic_id = ask(ApiKey.METADATA, {"topics": [{"name": topic, "topic_id": None}]}, 12,
                   code=lambda a: a["topics"][0]["error_code"])["topics"][0]["topic_id"]
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    broker = Channel(host, int(port))
    try:
        def fetch(epoch: int, acks: bool = False) -> int:
            body = {"group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait": 0, "min_bytes": 1,
                    "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10, "forgotten_topics_data": [],
                    "topics": [{"topic_id": topic_id, "partitions": [
                        {"partition_index": 0, "acknowledgement_batches": [
                            {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}] if acks else []}]}]}
            return broker.request(ApiKey.SHARE_FETCH, body)["error_code"]
        out["fetch unknown session"] = fetch(7)
        out["fetch new session with acks"] = fetch(0, acks=True)
        out["fetch new session"] = fetch(0)
        out["fetch wrong epoch"] = fetch(9)

        def acknowledge(epoch: int) -> int:
            return broker.request(ApiKey.SHARE_ACKNOWLEDGE, {"group_id": group, "member_id": member,
                                                              "share_session_epoch": epoch, "topics": []})["error_code"]
        out["acknowledge epoch 0"] = acknowledge(0)
        out["acknowledge wrong epoch"] = acknowledge(9)
    finally:
        broker.close()
    offsets = ask(ApiKey.OFFSET_FETCH, {"groups": [{"group_id": group, "topics": None}]}, 9,
                  code=lambda a: a["groups"][0]["error_code"])
    out["offset fetch"] = offsets["groups"][0]["error_code"]
    altered = ask(ApiKey.ALTER_SHARE_GROUP_OFFSETS, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
    out["alter while active"] = (altered["error_code"], altered.get("error_message"))
    deleted = ask(ApiKey.DELETE_GROUPS, {"groups_names": [group]}, code=lambda a: a["results"][0]["error_code"])
    out["delete while active"] = deleted["results"][0]["error_code"]
    described = ask(ApiKey.DESCRIBE_GROUPS, {"groups": [group], "include_authorized_operations": False}, 6,
                    code=lambda a: a["groups"][0]["error_code"])
    out["describe groups"] = (described["groups"][0]["error_code"],
                              (described["groups"][0].get("error_message") or "").replace(group, "G"))
    left = ask(ApiKey.SHARE_GROUP_HEARTBEAT, {"group_id": group, "member_id": member, "member_epoch": -1,
                                                      "rack_id": None, "subscribed_topic_names": None})
    out["leave"] = (left["error_code"], left["member_epoch"])
    unknown = ask(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, {"groups": [{"group_id": group, "topics": None}]},
                  code=lambda a: a["groups"][0]["error_code"])
    out["offsets after leaving"] = [(t["topic_name"] == topic, [p["partition_index"] for p in t["partitions"]])
                                    for t in unknown["groups"][0]["topics"]]
    channels[-1].close()
    return out


def test_share_protocol_answers_alike(sandbox, kafka4):
    ours, theirs = _protocol_facts(sandbox.bootstrap), _protocol_facts(kafka4.bootstrap)
    assert ours == theirs, "\n".join(f"{k}: {ours.get(k)} | {theirs.get(k)}" for k in theirs if ours.get(k) != theirs.get(k))


def _state_facts(bootstrap: str) -> dict:
    """The share coordinator's state RPCs as a broker's persister sends them (each to the
    coordinator FindCoordinator names for its key), with the usual mistakes; the answers
    reduced to what must agree (not which broker coordinates)."""
    import base64

    from kafka_shell.connection.channel import Channel
    from kafka_shell.protocol.codes import ApiKey
    from tests.k848_scenarios import retry
    topic, group = _topic(bootstrap), "st-" + uuid.uuid4().hex[:8]
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    any_broker = Channel(host, int(port))
    out: dict = {}
    try:
        topic_id = any_broker.request(ApiKey.METADATA, {"topics": [{"name": topic, "topic_id": None}]}, 12)["topics"][0]["topic_id"]

        def find(key: str) -> dict:
            return any_broker.request(ApiKey.FIND_COORDINATOR, {"key_type": 2, "coordinator_keys": [key]}, 6)["coordinators"][0]
        for name, key in {"no partition": f"{group}:x", "bad topic id": f"{group}:nonsense:0",
                          "bad partition": f"{group}:{topic_id}:p", "empty group": f" :{topic_id}:0"}.items():
            out[f"find, {name}"] = find(key.replace(str(topic_id), base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")))["error_code"]

        brokers = any_broker.request(ApiKey.METADATA, {"topics": []}, 12)["brokers"]

        def ask(api_key: int, partition: int, fields: dict, of=None, elsewhere: bool = False) -> tuple:
            """One partition's answer (error, message and the fields asked for) from its coordinator."""
            tid = of or topic_id
            key = f"{group}:{base64.urlsafe_b64encode(tid.bytes).decode().rstrip('=')}:{partition}"
            body = {"group_id": group, "topics": [{"topic_id": tid, "partitions": [{"partition": partition, **fields}]}]}
            deadline = time.monotonic() + 60
            while True:   # as a persister: find the coordinator again while it moves or loads
                found = retry(lambda: find(key))
                if elsewhere:
                    found = next(b for b in brokers if b["node_id"] != found["node_id"])
                coordinator = Channel(found["host"], found["port"])
                try:
                    p = coordinator.request(api_key, body)["results"][0]["partitions"][0]
                finally:
                    coordinator.close()
                if elsewhere or p["error_code"] not in COORDINATOR_MOVED or time.monotonic() > deadline:
                    return (p["error_code"], p.get("error_message"),
                            *(p[k] for k in ("start_offset", "state_epoch", "leader_epoch") if k in p))
                time.sleep(0.2)
        batches = [{"first_offset": 0, "last_offset": 2**62, "delivery_state": 0, "delivery_count": 1}]
        write = {"state_epoch": 1, "leader_epoch": 0, "start_offset": 0, "state_batches": batches}
        out["read at another broker"] = ask(ApiKey.READ_SHARE_GROUP_STATE, 0, {"leader_epoch": 0}, elsewhere=True)
        out["write before initialize"] = ask(ApiKey.WRITE_SHARE_GROUP_STATE, 0, write)
        out["read before initialize"] = ask(ApiKey.READ_SHARE_GROUP_STATE, 0, {"leader_epoch": 0})
        out["summary before initialize"] = ask(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, {"leader_epoch": 0})
        out["initialize unknown topic"] = ask(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, {"state_epoch": 1, "start_offset": 0},
                                              of=uuid.uuid4())
        out["initialize past the partitions"] = ask(ApiKey.INITIALIZE_SHARE_GROUP_STATE, PARTITIONS,
                                                    {"state_epoch": 1, "start_offset": 0})
        out["initialize negative partition"] = ask(ApiKey.INITIALIZE_SHARE_GROUP_STATE, -1, {"state_epoch": 1, "start_offset": 0})
        out["initialize"] = ask(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, {"state_epoch": 1, "start_offset": 0})
        out["write 2^62 offsets"] = ask(ApiKey.WRITE_SHARE_GROUP_STATE, 0, write)
        out["write older state epoch"] = ask(ApiKey.WRITE_SHARE_GROUP_STATE, 0, {**write, "state_epoch": 0})
        out["write newer leader epoch"] = ask(ApiKey.WRITE_SHARE_GROUP_STATE, 0, {**write, "leader_epoch": 3})
        out["write older leader epoch"] = ask(ApiKey.WRITE_SHARE_GROUP_STATE, 0, {**write, "leader_epoch": 1})
        out["read older leader epoch"] = ask(ApiKey.READ_SHARE_GROUP_STATE, 0, {"leader_epoch": 2})
        out["read"] = ask(ApiKey.READ_SHARE_GROUP_STATE, 0, {"leader_epoch": 3})
        out["summary"] = ask(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, {"leader_epoch": 3})
        out["initialize older state epoch"] = ask(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, {"state_epoch": 0, "start_offset": 0})
        out["delete"] = ask(ApiKey.DELETE_SHARE_GROUP_STATE, 0, {})
        out["delete again"] = ask(ApiKey.DELETE_SHARE_GROUP_STATE, 0, {})
        out["read after delete"] = ask(ApiKey.READ_SHARE_GROUP_STATE, 0, {"leader_epoch": 3})
    finally:
        any_broker.close()
    return out


def test_share_state_rpcs_answer_alike(sandbox, kafka4):
    ours, theirs = _state_facts(sandbox.bootstrap), _state_facts(kafka4.bootstrap)
    assert ours == theirs, "\n".join(f"{k}: {ours.get(k)} | {theirs.get(k)}" for k in theirs if ours.get(k) != theirs.get(k))


def test_data_dir_keeps_share_groups(tmp_path):
    """--data-dir keeps a share group and its share-partitions' state: after a restart the group
    is described alike, and a consumer gets only the records the group had not yet taken."""
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        topic, group = _topic(s.bootstrap), _group(s.bootstrap)
        assert sorted(_consume(s.bootstrap, topic, group, RECORDS)) == list(range(RECORDS))
        before = _offsets(s.bootstrap, group)
        state = rows(s.bootstrap, f"describe-share-group {group} --state --verbose")
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        assert sorted((r["partition"], r["start_offset"], r["lag"])
                      for r in rows(s.bootstrap, f"describe-share-group {group}")) == before
        assert rows(s.bootstrap, f"describe-share-group {group} --state --verbose") == state
        producer = Producer({"bootstrap.servers": s.bootstrap, "log_level": 0})
        for i in range(RECORDS, RECORDS + 2):
            producer.produce(topic, str(i).encode(), partition=0)
        producer.flush(30)
        assert _consume(s.bootstrap, topic, group, 2) == [RECORDS, RECORDS + 1]


def _session_facts(bootstrap: str, transactions: bool = False) -> dict:
    """A member's share session as a closing consumer uses it: a ShareFetch whose max_bytes
    fits one batch acquires that batch only (the next fetch gets the rest); after the member
    leaves the group, its final ShareAcknowledge (epoch -1) on the same connection still
    acknowledges what it holds, and only then is the session gone. With `transactions` (the
    sandbox alone), the group reads committed and an aborted transaction follows the batches."""
    from kafka_shell.connection.channel import Channel
    from kafka_shell.protocol.codes import ApiKey
    from tests.k848_scenarios import coordinator
    topic, group = "sq-" + uuid.uuid4().hex[:8], _group(bootstrap)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "linger.ms": 0})
    for i in range(3):   # three batches, one record each: offsets 0-2
        producer.produce(topic, str(i).encode())
        producer.flush(30)
    if transactions:
        assert sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                             "--add-config share.isolation.level=read_committed")[0] == 0
        txn = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "transactional.id": topic})
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce(topic, b"a0")
        txn.produce(topic, b"a1")
        txn.flush(30)                 # written, then aborted: 3-4, marker 5
        txn.abort_transaction(30)
        producer.produce(topic, b"3")   # 6
        producer.flush(30)
    coord = coordinator(bootstrap, group)
    member, out = uuid.uuid4().hex[:22], {}
    try:
        def heartbeat(epoch: int) -> dict:
            return coord.request(ApiKey.SHARE_GROUP_HEARTBEAT, {"group_id": group, "member_id": member,
                                                                "member_epoch": epoch, "rack_id": None,
                                                                "subscribed_topic_names": [topic] if epoch == 0 else None})
        joined = heartbeat(0)
        deadline = time.monotonic() + 60
        while not (joined.get("assignment") or {}).get("topic_partitions"):
            assert time.monotonic() < deadline, joined
            time.sleep(0.3)
            joined = heartbeat(joined["member_epoch"])
        md = coord.request(ApiKey.METADATA, {"topics": [{"name": topic, "topic_id": None}]}, 12)["topics"][0]
        leader = next(b for b in coord.request(ApiKey.METADATA, {"topics": []}, 12)["brokers"]
                      if b["node_id"] == md["partitions"][0]["leader_id"])
        broker = Channel(leader["host"], leader["port"])
        try:
            def fetch(epoch: int, max_bytes: int) -> tuple:
                a = broker.request(ApiKey.SHARE_FETCH, {
                    "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait": 2000,
                    "min_bytes": 1, "max_bytes": max_bytes, "max_records": 100, "batch_size": 100,
                    "forgotten_topics_data": [], "topics": [{"topic_id": md["topic_id"], "partitions": [
                        {"partition_index": 0, "acknowledgement_batches": []}]}]})
                parts = [p for t in a["responses"] for p in t["partitions"]]
                return a["error_code"], [(r["first_offset"], r["last_offset"]) for p in parts for r in p["acquired_records"]]
            out["fetch 1 byte"] = fetch(0, 1)
            out["fetch the rest"] = fetch(1, 1 << 20)
            left = heartbeat(-1)
            out["leave"] = left["error_code"]
            acked = broker.request(ApiKey.SHARE_ACKNOWLEDGE, {
                "group_id": group, "member_id": member, "share_session_epoch": -1, "topics": [
                    {"topic_id": md["topic_id"], "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                        {"first_offset": first, "last_offset": last, "acknowledge_types": [1]}
                        for first, last in out["fetch 1 byte"][1] + out["fetch the rest"][1]]}]}]})
            out["final acknowledge"] = (acked["error_code"], [p["error_code"] for t in acked["responses"]
                                                              for p in t["partitions"]])
            out["after the final epoch"] = fetch(2, 1 << 20)[0]
        finally:
            broker.close()
    finally:
        coord.close()
    return out


def test_share_sessions_and_acquisition_as_kafka(sandbox, kafka4):
    ours, theirs = _session_facts(sandbox.bootstrap), _session_facts(kafka4.bootstrap)
    assert ours["fetch 1 byte"] == (0, [(0, 0)]) and ours["final acknowledge"] == (0, [0])
    assert ours == theirs, "\n".join(f"{k}: {ours.get(k)} | {theirs.get(k)}" for k in theirs if ours.get(k) != theirs.get(k))


def test_read_committed_share_groups_archive_aborted_records(sandbox):
    """SharePartition.filterAbortedTransactionalAcquiredRecords: under read_committed the records
    of an aborted transaction are archived, never acquired (nor the markers)."""
    facts = _session_facts(sandbox.bootstrap, transactions=True)
    assert facts["fetch the rest"] == (0, [(1, 2), (6, 6)])
    topic_states = sandbox.call(lambda: [(o, r.state) for sp in sandbox.cluster.share_partitions.values()
                                         for o, r in sorted(sp.records.items())])
    assert topic_states == [] or all(state != 1 for _, state in topic_states)   # nothing left acquired


@pytest.mark.parametrize("fetch_max_bytes", [1, 200])
def test_librdkafka_share_consumer_drains_with_small_fetches(bootstrap, fetch_max_bytes):
    """librdkafka's share consumer (confluent-kafka's ShareConsumer) with a fetch.max.bytes below
    a batch: each ShareFetch acquires only what it returns, so the group drains every record
    (the sandbox used to lock the records it could not send until their locks expired), and its
    acknowledgements leave nothing to deliver."""
    from confluent_kafka import ShareConsumer
    topic, group = "sq-" + uuid.uuid4().hex[:8], _group(bootstrap)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "linger.ms": 0})
    for i in range(RECORDS):   # a batch each
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
        producer.flush(30)
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "fetch.max.bytes": fetch_max_bytes,
                              "log_level": 0})
    seen: list[int] = []
    try:
        consumer.subscribe([topic])
        # Within the records' lock (30 s): records locked but not sent would come back only after it.
        deadline = time.monotonic() + 25
        while len(set(seen)) < RECORDS and time.monotonic() < deadline:
            for message in consumer.poll(1.0) or []:
                if message.error() is None:
                    seen.append(int(message.value()))
        consumer.commit_sync()   # implicit mode: accepts what the last poll returned
    finally:
        consumer.close()
    assert sorted(set(seen)) == list(range(RECORDS)), seen
    assert all(lag == 0 for _, _, lag in _offsets(bootstrap, group))   # every record acknowledged
