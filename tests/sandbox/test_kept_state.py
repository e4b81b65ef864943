"""--data-dir keeps everything a client was told is done, through a kill -9: committed offsets,
group state, finalized feature levels, ACLs, SCRAM users, quotas, configs, producer ids handed out,
reassignments in flight and delegation tokens. One `kafka-shell sandbox` process is given each kind
of change by real clients (and the shell), killed with SIGKILL, and started again; each test then
checks one kind. Beside them, every metadata record type is made, journaled and replayed to the
same state from the directory as a kill -9 leaves it."""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import (Consumer, ConsumerGroupState, Producer, ConsumerGroupTopicPartitions, ShareConsumer,
                             TopicPartition)
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourcePatternType, ResourceType,
                                   ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox import directories, group_state, journal, persist, quorum, records, replay, tokens
from kafka_shell.sandbox.model import ClusterState
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.test_cluster_membership import unregister
from tests.sandbox.test_data_dir import kill9, produce, serve_announced
from tests.sandbox.test_delegation_tokens import Session, epoch_ms
from tests.sandbox.test_delegation_tokens import create as create_token, describe as describe_tokens
from tests.sandbox.wire import exchange
from tests.txn_scenarios import retry
from tests.test_oneshot import shell
from tests import k848_scenarios, streams_scenarios, test_share_clients as share_clients
from tests.test_consumer_groups_cmd import rows
from tests.test_share_clients import _session_facts

TOPIC = "orders"
COMMITTED = {0: 11, 1: 22, 2: 33}
AUTHORIZER = ("--authorizer", "--allow-everyone-if-no-acl-found")  # ACLs are served with an authorizer


def _shell_ok(bootstrap: str, line: str) -> str:
    """What the shell prints on stdout for `line`, which must succeed."""
    p = shell("--bootstrap-server", bootstrap, "--command", line)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                     "session.timeout.ms": 30000, "log_level": 3})


def _features(bootstrap: str) -> dict[str, int]:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    channel = Channel(host, int(port), timeout_s=10)
    try:
        answer = channel.request(ApiKey.API_VERSIONS, {"client_software_name": "t",
                                                       "client_software_version": "1"}, 3)
    finally:
        channel.close()
    return {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}


def _idempotent_producer_id(bootstrap: str) -> int:
    """A new idempotent producer's id (InitProducerId without a transactional id)."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    channel = Channel(host, int(port), timeout_s=10)
    try:
        answer = channel.request(ApiKey.INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout": 60000,
                                                           "producer_id": -1, "producer_epoch": -1}, 5)
    finally:
        channel.close()
    assert answer["error_code"] == Error.none, answer
    return answer["producer_id"]


def _update_feature(bootstrap: str, feature: str, level: int, upgrade_type: int) -> None:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    channel = Channel(host, int(port), timeout_s=10)
    try:
        answer = channel.request(ApiKey.UPDATE_FEATURES, {"timeout": 5000, "feature_updates": [
            {"feature": feature, "max_version_level": level, "upgrade_type": upgrade_type}]}, 1)
    finally:
        channel.close()
    assert answer["error_code"] == Error.none, answer


def _subscribed(bootstrap: str, group: str, topic: str, protocol: str = "classic") -> Consumer:
    """A consumer of `group` (group.protocol `protocol`) that has its assignment of `topic`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "group.protocol": protocol, "log_level": 3,
                         **({"session.timeout.ms": 30000} if protocol == "classic" else {})})
    consumer.subscribe([topic])
    _stable(consumer)
    return consumer


def _share_consume(bootstrap: str, topic: str, group: str) -> None:
    """librdkafka's share consumer takes every record of `topic` and acknowledges them."""
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    seen: set[int] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 25   # within the records' lock
        while len(seen) < share_clients.RECORDS and time.monotonic() < deadline:
            seen |= {int(m.value()) for m in consumer.poll(1.0) or [] if m.error() is None}
        consumer.commit_sync()   # implicit mode: accepts what the polls returned
    finally:
        consumer.close()
    assert seen == set(range(share_clients.RECORDS)), seen


def _streams_beat(bootstrap: str, body: dict) -> dict:
    """A StreamsGroupHeartbeat to the group's coordinator."""
    channel = k848_scenarios.coordinator(bootstrap, body["group_id"])
    try:
        return retry(lambda: channel.request(ApiKey.STREAMS_GROUP_HEARTBEAT, body, streams_scenarios.VERSION))
    finally:
        channel.close()


def _streams_member(bootstrap: str) -> tuple[str, str, int, list]:
    """A streams group's member with its active tasks: (group, member id, epoch, tasks)."""
    tag = uuid.uuid4().hex[:8]
    app, source, member = f"kept-sg-{tag}", f"kept-sg-in-{tag}", uuid.uuid4().hex
    admin = _admin(bootstrap)
    admin.create_topics([NewTopic(source, 3, 2)])[source].result(15)
    answer = _streams_beat(bootstrap, streams_scenarios._join(app, member, streams_scenarios._topology(source, app)))
    epoch, tasks = answer["member_epoch"], None
    deadline = time.monotonic() + 60
    while answer.get("status") or not tasks:   # internal topics created, the initial delay over
        assert time.monotonic() < deadline, answer
        time.sleep(0.3)
        answer = _streams_beat(bootstrap, streams_scenarios._beat(app, member, epoch))
        epoch = answer["member_epoch"]
        tasks = answer["active_tasks"] if answer.get("active_tasks") is not None else tasks
    return app, member, epoch, tasks


def _stable(consumer: Consumer, seconds: float = 30) -> None:
    """Poll until the consumer has its assignment (the group is Stable)."""
    deadline = time.monotonic() + seconds
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment(), "no assignment"


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """The changes each test checks, made and acknowledged, then a kill -9 and a new start.
    Yields (bootstrap after the restart, what was done)."""
    data: Path = tmp_path_factory.mktemp("kept")
    proc, announced = serve_announced(data, "--brokers", "3", *AUTHORIZER)
    bootstrap = announced["bootstrap.servers"]
    done: dict = {}
    live = None
    try:
        admin = _admin(bootstrap)
        for f in admin.create_topics([NewTopic(TOPIC, 3, 2), NewTopic("moving", 1, replica_assignment=[[1]])]).values():
            f.result(15)
        produce(bootstrap, [TOPIC], 300)
        # Committed offsets of a group that is Empty now.
        billing = _consumer(bootstrap, "billing")
        billing.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()], asynchronous=False)
        billing.close()
        # Offsets committed by a transaction (TxnOffsetCommit, then EndTxn's marker).
        txn_group = _consumer(bootstrap, "txn-billing")
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "kept-txn", "log_level": 0})
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()],
                                             txn_group.consumer_group_metadata(), 15)
        producer.commit_transaction(15)
        txn_group.close()
        # A group deleted stays deleted.
        gone = _consumer(bootstrap, "gone")
        gone.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        gone.close()
        admin.delete_consumer_groups(["gone"])["gone"].result(10)
        # A Stable group with a member and its assignment, alive at the kill.
        live = _consumer(bootstrap, "live")
        live.subscribe([TOPIC])
        _stable(live)
        done["live_member"] = live.memberid()
        done["live_assignment"] = sorted((tp.topic, tp.partition) for tp in live.assignment())
        done["txn"] = rows(bootstrap, "describe-transaction --transactional-id kept-txn")
        # A KIP-848 group whose member has its assignment at the kill (its heartbeats by hand:
        # nothing heartbeats for it until the test does, after the restart).
        k848 = k848_scenarios.Group(bootstrap, partitions=3)
        member = k848.new_member()
        joined = k848.join(member)
        deadline = time.monotonic() + 30
        while not joined["assignment"]:
            assert time.monotonic() < deadline, joined
            time.sleep(0.2)
            joined = k848.heartbeat(member, joined["epoch"])
        k848.close()
        done["848"] = (k848, member, joined)
        done["streams"] = _streams_member(bootstrap)
        # A share group whose consumer acknowledged every record.
        share_topic, share_group = share_clients._topic(bootstrap), share_clients._group(bootstrap)
        _share_consume(bootstrap, share_topic, share_group)
        done["share"] = share_group, share_clients._offsets(bootstrap, share_group)
        # A finalized feature level.
        # Kafka 4.4 starts with group.version 1: a safe downgrade to 0 (which removes it) is a change.
        assert _features(bootstrap)["group.version"] == 1
        _update_feature(bootstrap, "group.version", 0, upgrade_type=2)
        # Producer ids handed out (the last one, after the transactional producer's).
        done["producer_id"] = _idempotent_producer_id(bootstrap)
        # ACLs, SCRAM users, quotas.
        acl = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
        admin.create_acls([acl])[acl].result(10)
        upsert = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw")
        admin.alter_user_scram_credentials([upsert])["bob"].result(10)
        _shell_ok(bootstrap, "alter-client-quotas --entity-type users --entity-name alice "
                             "--add-config producer_byte_rate=1024")
        # Topic and broker configs (broker 3's log dir cordoned: KIP-1066's broker config).
        for resource, key, value in ((ConfigResource.Type.TOPIC, TOPIC, ("retention.ms", "7777")),
                                     (ConfigResource.Type.BROKER, "3", ("max.connections", "9999")),
                                     (ConfigResource.Type.BROKER, "3", ("cordoned.log.dirs", "*"))):
            res = ConfigResource(resource, key, incremental_configs=[
                ConfigEntry(*value, incremental_operation=AlterConfigOpType.SET)])
            admin.incremental_alter_configs([res])[res].result(10)
        # A reassignment held in flight by a throttle (100 KB in 10 batches to copy at 1 KB/s:
        # the first fetch copies a batch, the next waits for the quota).
        for k in range(10):
            produce(bootstrap, ["moving"], 200, first=k * 200, partition=0)
        plan = data.parent / "move.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "moving", "partition": 0, "replicas": [2]}]}))
        _shell_ok(bootstrap, f"reassign-partitions --execute --reassignment-json-file {plan} --throttle 1000")
        assert "moving" in _shell_ok(bootstrap, "reassign-partitions --list")
    finally:
        kill9(proc)
    proc, announced = serve_announced(data, *AUTHORIZER)
    try:
        yield announced["bootstrap.servers"], done
    finally:
        if live is not None:
            live.close()
        kill9(proc)


@pytest.mark.parametrize("group", ["billing", "txn-billing"])
def test_committed_offsets_are_kept(kept, group):
    bootstrap, _ = kept
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p) for p in COMMITTED])
    admin = _admin(bootstrap)  # held while its futures run
    answer = admin.list_consumer_group_offsets([request])[group].result(10)
    assert {tp.partition: tp.offset for tp in answer.topic_partitions} == COMMITTED


def test_group_state_is_kept(kept):
    bootstrap, done = kept
    admin = _admin(bootstrap)
    described = admin.describe_consumer_groups(["live", "billing"])
    live = described["live"].result(10)
    assert live.state == ConsumerGroupState.STABLE
    (member,) = live.members
    assert member.member_id == done["live_member"]
    assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) == done["live_assignment"]
    assert described["billing"].result(10).state == ConsumerGroupState.EMPTY
    listed = {g.group_id for g in admin.list_consumer_groups().result(10).valid}
    assert {"live", "billing"} <= listed and "gone" not in listed


def test_a_kip_848_member_and_its_assignment_are_kept(kept):
    """The member heartbeats on after the restart at its epoch, owning its partitions: the
    coordinator knows it (UNKNOWN_MEMBER_ID had its state been lost)."""
    bootstrap, done = kept
    k848, member, joined = done["848"]
    k848.channel = k848_scenarios.coordinator(bootstrap, k848.group_id)
    try:
        again = k848.heartbeat(member, joined["epoch"], owned=joined["assignment"])
    finally:
        k848.close()
    assert (again["error"], again["epoch"]) == (0, joined["epoch"]), again
    assert again["assignment"] in (None, joined["assignment"])


def test_a_streams_member_and_its_tasks_are_kept(kept):
    bootstrap, done = kept
    app, member, epoch, tasks = done["streams"]
    again = _streams_beat(bootstrap, streams_scenarios._beat(app, member, epoch, active=tasks))
    assert (again["error_code"], again["member_epoch"]) == (0, epoch), again
    assert not again.get("status"), again


def test_share_acknowledgements_are_kept(kept):
    bootstrap, done = kept
    group, offsets = done["share"]
    assert all(lag == 0 for _, _, lag in offsets) and offsets
    assert share_clients._offsets(bootstrap, group) == offsets


def test_a_committed_transaction_is_kept(kept):
    bootstrap, done = kept
    def kept_fields(rows_: list[dict]) -> list[dict]:   # the duration moves with the clock
        return [{k: v for k, v in row.items() if k != "transaction_duration_ms"} for row in rows_]
    (before,) = kept_fields(done["txn"])
    assert before["transaction_state"] == "CompleteCommit", before
    assert kept_fields(rows(bootstrap, "describe-transaction --transactional-id kept-txn")) == [before]


def test_finalized_feature_levels_are_kept(kept):
    bootstrap, _ = kept
    finalized = _features(bootstrap)
    assert "group.version" not in finalized and finalized["transaction.version"] == 2


def test_acls_are_kept(kept):
    bootstrap, _ = kept
    wanted = AclBindingFilter(ResourceType.TOPIC, "secret", ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)
    admin = _admin(bootstrap)
    (acl,) = admin.describe_acls(wanted).result(10)
    assert (acl.principal, acl.operation, acl.permission_type) == ("User:alice", AclOperation.READ,
                                                                   AclPermissionType.ALLOW)


def test_scram_users_are_kept(kept):
    bootstrap, _ = kept
    admin = _admin(bootstrap)
    described = admin.describe_user_scram_credentials(["bob"])["bob"].result(10)
    (info,) = described.scram_credential_infos
    assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_512, 8192)


def test_quotas_are_kept(kept):
    bootstrap, _ = kept
    shown = _shell_ok(bootstrap, "describe-client-quotas -o json")
    assert "producer_byte_rate" in shown and "1024" in shown and "alice" in shown


def test_configs_are_kept(kept):
    bootstrap, _ = kept
    admin = _admin(bootstrap)
    topic = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    broker = ConfigResource(ConfigResource.Type.BROKER, "3")
    answer = admin.describe_configs([topic, broker])
    assert answer[topic].result(10)["retention.ms"].value == "7777"
    described = answer[broker].result(10)
    assert described["max.connections"].value == "9999" and described["cordoned.log.dirs"].value == "*"


def test_producer_ids_are_never_given_twice(kept):
    bootstrap, done = kept
    assert _idempotent_producer_id(bootstrap) > done["producer_id"]


def test_reassignments_in_flight_are_kept_and_go_on(kept):
    bootstrap, _ = kept
    assert "moving" in _shell_ok(bootstrap, "reassign-partitions --list")
    # Lift the throttle: the move completes, replicas as the plan said.
    _shell_ok(bootstrap, "alter-configs --entity-type brokers --entity-name 1 "
                         "--add-config leader.replication.throttled.rate=1000000000")
    _shell_ok(bootstrap, "alter-configs --entity-type brokers --entity-name 2 "
                         "--add-config follower.replication.throttled.rate=1000000000")
    deadline = time.monotonic() + 30
    while "moving" in _shell_ok(bootstrap, "reassign-partitions --list") and time.monotonic() < deadline:
        time.sleep(0.2)
    md = _admin(bootstrap).list_topics("moving", timeout=10)
    assert md.topics["moving"].partitions[0].replicas == [2]


def test_delegation_tokens_are_kept(tmp_path):
    """Tokens (on a SASL listener of their own sandbox): one created and renewed is kept with its
    new expiry and still logs in (its HMAC made again from the same secret key); one expired is gone."""
    args = ("--listeners", "SASL_PLAINTEXT", "--sasl-mechanisms", "PLAIN,SCRAM-SHA-512", "--user", "admin:pw",
            "--broker-config", "delegation.token.secret.key=kept-secret")

    def address(announced: dict[str, str]) -> tuple[str, int]:
        host, _, port = announced["bootstrap.servers"].split(",")[0].rpartition(":")
        return host, int(port)

    proc, announced = serve_announced(tmp_path, *args)
    try:
        admin = Session(address(announced), "PLAIN", "admin", "pw")
        kept, gone = create_token(admin, []), create_token(admin, [])
        renewed = admin.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": kept["hmac"], "renew_period": 60_000})
        assert renewed["error_code"] == Error.none
        expired = admin.call(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": gone["hmac"], "expiry_time_period": -1})
        assert expired["error_code"] == Error.none
        admin.close()
    finally:
        kill9(proc)
    proc, announced = serve_announced(tmp_path, *args)
    try:
        admin = Session(address(announced), "PLAIN", "admin", "pw")
        listed = describe_tokens(admin)
        admin.close()
        assert listed["error_code"] == Error.none
        assert [(t["token_id"], epoch_ms(t["expiry_timestamp"]), t["hmac"]) for t in listed["tokens"]] == [
            (kept["token_id"], renewed["expiry_timestamp"], kept["hmac"])]
        login = Session(address(announced), "SCRAM-SHA-512", kept["token_id"],
                        base64.b64encode(kept["hmac"]).decode(), token=True)
        login.close()
        assert login.login_error[0] == Error.none, login.login_error
    finally:
        kill9(proc)


def _journaled_types(data: Path) -> set[str]:
    """The record types the journals of a data directory hold."""
    seen: set[str] = set()
    for _, path in sorted(journal.journal_files(data).items()):
        for _, payload in journal.scan(path.read_bytes()).entries:
            kind, length = journal.KIND.unpack_from(payload)
            if kind == journal.RECORDS:
                seen |= {item["type"] for item in json.loads(payload[journal.KIND.size:journal.KIND.size + length])}
    return seen


def test_a_crash_keeps_every_record_type(tmp_path):
    """Every kind of change, each journaled as its record type (the metadata records, the group,
    share and transaction coordinators' records): the directory as a kill -9 leaves it (copied while the
    sandbox runs) replays to the very state the sandbox had."""
    data = tmp_path / "data"
    with Sandbox(brokers=3, dynamic_quorum=True, data_dir=str(data), authorizer=True, log_dirs_per_broker=2,
                 allow_everyone_if_no_acl_found=True, configs={"delegation.token.secret.key": "kept-secret"}) as s:
        admin = _admin(s.bootstrap)
        for f in admin.create_topics([NewTopic("kept", 3, 2), NewTopic("doomed", 1, 1)]).values():
            f.result(15)
        produce(s.bootstrap, ["kept"], 30)
        # A replica moved to the other log dir of its broker: a future replica, then the swap.
        holder, other = s.call(lambda: (lambda p: (p.replicas[0], next(
            d for d in s.cluster.brokers[p.replicas[0]].log_dirs if d != directories.dir_of(s.cluster, p, p.replicas[0])))
        )(s.cluster.partition("kept", 0)))
        moved = exchange(s.address(holder), ApiKey.ALTER_REPLICA_LOG_DIRS, 2,
                         {"dirs": [{"path": other, "topics": [{"name": "kept", "partitions": [0]}]}]})
        assert isinstance(moved, dict) and moved["results"][0]["partitions"][0]["error_code"] == Error.none, moved
        admin.delete_topics(["doomed"])["doomed"].result(15)
        res = ConfigResource(ConfigResource.Type.TOPIC, "kept", incremental_configs=[
            ConfigEntry("retention.ms", "7777", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result(10)
        # Classic and KIP-848 groups joined and left, and joined (members at the kill); a share
        # group joined, its records acquired and acknowledged, left; a streams group joined and
        # left (every group record and its tombstones).
        for protocol in ("classic", "consumer"):
            _subscribed(s.bootstrap, f"{protocol}-gone", "kept", protocol).close()
        members = [_subscribed(s.bootstrap, f"{protocol}-group", "kept", protocol) for protocol in ("classic", "consumer")]
        _session_facts(s.bootstrap)
        streams_scenarios.lifecycle(s.bootstrap)   # a streams group joined, given tasks, left
        # A transaction committed (the transaction coordinator's records).
        producer = Producer({"bootstrap.servers": s.bootstrap, "transactional.id": "kept-txn", "log_level": 0})
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce("kept", b"in a transaction")
        producer.commit_transaction(15)
        _update_feature(s.bootstrap, "group.version", 0, upgrade_type=2)
        acls = [AclBinding(ResourceType.TOPIC, name, ResourcePatternType.LITERAL, "User:alice", "*",
                           AclOperation.READ, AclPermissionType.ALLOW) for name in ("secret", "revoked")]
        for f in admin.create_acls(acls).values():
            f.result(10)
        admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "revoked", ResourcePatternType.LITERAL, None, None,
                                            AclOperation.ANY, AclPermissionType.ANY)])
        for user in ("bob", "carol"):
            upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw")
            admin.alter_user_scram_credentials([upsert])[user].result(10)
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)])[
            "carol"].result(10)
        _shell_ok(s.bootstrap, "alter-client-quotas --entity-type users --entity-name alice "
                               "--add-config producer_byte_rate=1024")
        _idempotent_producer_id(s.bootstrap)
        # Offsets committed, one deleted, and a group deleted with its offsets.
        for group in ("kept-group", "gone-group"):
            consumer = _consumer(s.bootstrap, group)
            consumer.commit(offsets=[TopicPartition("kept", p, 5) for p in range(3)], asynchronous=False)
            consumer.close()
        _shell_ok(s.bootstrap, "delete-offsets --group kept-group --topic kept:2 --yes")
        admin.delete_consumer_groups(["gone-group"])["gone-group"].result(10)
        # Tokens need a SASL listener: the controller's operations, which the token test drives over SASL.
        s.call(tokens.create, s.cluster, "User:admin", "User:admin", [], -1)
        gone = s.call(tokens.create, s.cluster, "User:admin", "User:admin", [], -1)
        s.call(tokens.expire, s.cluster, "User:admin", s.call(tokens.hmac_of, s.cluster, gone), -1)
        # Brokers fenced, unregistered and registered again; controllers registered, made voters,
        # unregistered (a live one registers again) and a new active controller.
        s.stop_broker(3)
        assert unregister(s.address(1), 3)[0] == Error.none
        s.start_broker(3)
        info = s.add_controller()
        voter = exchange(s.address(1), ApiKey.ADD_RAFT_VOTER, 1, {
            "cluster_id": None, "timeout": 30000, "voter_id": info["id"],
            "voter_directory_id": quorum.parse_directory_id(info["directory_id"]),
            "listeners": [{"name": "CONTROLLER", "host": info["host"], "port": info["port"]}],
            "ack_when_committed": True})
        assert isinstance(voter, dict) and voter["error_code"] == Error.none, voter
        gone_controller = exchange(s.address(s.active_controller), ApiKey.UNREGISTER_CONTROLLER, 0,
                                   {"controller_id": info["id"]})
        assert isinstance(gone_controller, dict) and gone_controller["error_code"] == Error.none, gone_controller
        s.kill_controller()
        crashed = tmp_path / "crashed"
        shutil.copytree(data, crashed, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
        live = s.call(persist.state_of, s.cluster)
        live_groups = s.call(_groups_as_records, s.cluster)
        for consumer in members:
            consumer.close()
    assert _journaled_types(crashed) == set(records.RECORD_TYPES)
    recovered = journal.recover(crashed)
    assert recovered is not None and persist.state_of(recovered[0]) == live
    # The groups replay made are those the coordinators had, as their records say.
    assert _groups_as_records(recovered[0]) == live_groups


def _groups_as_records(cluster: ClusterState) -> dict:
    """Each group as the records its coordinator would write for it now (a classic group's
    state timestamp left out: it is the time of writing)."""
    def same_any_time(record: records.Record) -> records.Record:
        if isinstance(record, records.GroupMetadataRecord) and record.value is not None:
            return dataclasses.replace(record, value=dataclasses.replace(record.value, current_state_timestamp=0))
        return record
    return {group_id: [same_any_time(rec) for rec in group_state.records_of(cluster, g).values()]
            for group_id, g in cluster.groups.items()}


def test_a_share_update_replaces_the_states_of_its_offsets():
    """Kafka's ShareCoordinatorShard.merge: an update's batches replace the states of their
    offsets, those wholly below its start offset go, and the state epoch stays the snapshot's."""
    b = records.StateBatch
    state = records.ShareSnapshotValue(3, 1, 0, (b(0, 9, 0, 1),))   # 0-9 available, delivered once
    update = records.ShareUpdateValue(2, 4, (b(4, 5, 2, 1), b(8, 9, 0, 2)))
    assert group_state.merged(state, update) == records.ShareSnapshotValue(
        3, 2, 4, (b(4, 5, 2, 1), b(6, 7, 0, 1), b(8, 9, 0, 2)))
    # Neighbours of one state and delivery count join.
    assert group_state.merged(state, records.ShareUpdateValue(1, -1, (b(0, 4, 0, 1),))).state_batches == (b(0, 9, 0, 1),)


def test_a_share_update_without_a_snapshot_cannot_apply():
    cluster = ClusterState("id", {})
    update = records.ShareUpdateRecord("g", uuid.uuid4(), 0, records.ShareUpdateValue(0, 0, ()))
    with pytest.raises(records.ReplayError, match="no ShareSnapshotRecord"):
        replay.apply(cluster, update)


def test_group_records_that_cannot_apply_are_replay_errors():
    """What a damaged or forged journal may hold is refused as damage, never a traceback: an
    assignment to a member no record made, epochs not one per partition, a member of a group
    no record made."""
    cluster = ClusterState("id", {})
    tid = uuid.uuid4()
    assignment = records.ConsumerGroupCurrentMemberAssignmentValue(
        3, 2, 0, (records.TopicPartitions(tid, (0, 1), (3,)),), ())
    with pytest.raises(records.ReplayError, match="which no ConsumerGroup record made"):
        replay.apply(cluster, records.ConsumerGroupCurrentMemberAssignmentRecord("g", "m", assignment))
    replay.apply(cluster, records.ConsumerGroupMetadataRecord("g", records.ConsumerGroupMetadataValue(2)))
    with pytest.raises(records.ReplayError, match="which no member record made"):
        replay.apply(cluster, records.ConsumerGroupCurrentMemberAssignmentRecord("g", "m", assignment))
    replay.apply(cluster, records.ConsumerGroupMemberMetadataRecord("g", "m", records.ConsumerGroupMemberMetadataValue(
        None, None, "c", "/127.0.0.1", ("t",), None, 30000, None)))
    with pytest.raises(records.ReplayError, match="not one per partition"):
        replay.apply(cluster, records.ConsumerGroupCurrentMemberAssignmentRecord("g", "m", assignment))
