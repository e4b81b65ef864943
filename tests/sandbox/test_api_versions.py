"""ApiVersions as real Kafka answers it, and every version the sandbox lists answered.

Against real Apache Kafka (tests/real_kafka.py): each listener kind of 4.4 (KRaft), 3.9 in
ZooKeeper mode and 3.9 in KRaft mode lists exactly what the sandbox's listener of the same kind
lists plus what `sandbox.apis.UNSERVED` says the sandbox does not serve, key for key and version
for version; the features are the same; the versions Kafka 4.0 removed (KIP-896) are answered
(or the connection closed) as 4.4 does. Then, on the sandbox alone: one minimal valid request of
every listed version of every API, on every listener kind, gets an answer of that version.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.protocol.definitions import BROKER, CONTROLLER, ZK_BROKER, releases
from kafka_shell.sandbox import apis
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import API_VERSIONS_BODY, CLOSED, create, exchange, produce, read_exactly

def api_versions(address: tuple[str, int], version: int) -> dict:
    answer = exchange(address, ApiKey.API_VERSIONS, version, API_VERSIONS_BODY)
    assert isinstance(answer, dict) and answer["error_code"] == 0, answer
    return answer


def ranges(answer: dict) -> dict[int, range]:
    return {k["api_key"]: range(k["min_version"], k["max_version"] + 1) for k in answer["api_keys"]}


def features(answer: dict) -> tuple[list, list]:
    return (sorted((f["name"], f["min_version"], f["max_version"]) for f in answer["supported_features"]),
            sorted((f["name"], f["max_version_level"]) for f in answer["finalized_features"]))


# -- real clusters -------------------------------------------------------------------------------

def real_listeners(cluster) -> dict[str, tuple[str, int]]:
    """One address per listener kind of a real cluster."""
    out = {}
    for node in cluster.nodes.values():
        if node.roles == "zookeeper":
            continue
        kind = (ZK_BROKER if cluster.mode == "zk" else BROKER) if node.is_broker else CONTROLLER
        out.setdefault(kind, ("127.0.0.1", node.port))
    return out


def sandbox_listeners(sandbox) -> dict[str, tuple[str, int]]:
    out = {ZK_BROKER if sandbox.mode == "zk" else BROKER: sandbox.address(1)}
    if sandbox.controller_ids:
        out[CONTROLLER] = sandbox.address(sandbox.controller_ids[0])
    return out


def compare_with_real(real, release: str, mode: str) -> None:
    newest = min(codec.kio_versions(ApiKey.API_VERSIONS).stop - 1,
                 releases.release(release).apis[BROKER if mode == "kraft" else ZK_BROKER][ApiKey.API_VERSIONS].stop - 1)
    assert releases.release(release).version == real.version, "the pins moved: run tools/kafka_definitions.py"
    with Sandbox(brokers=1, mode=mode, kafka_version=release) as sandbox:
        theirs, ours = real_listeners(real), sandbox_listeners(sandbox)
        assert set(theirs) == set(ours)
        for kind, address in theirs.items():
            kafka = ranges(api_versions(address, newest))
            sandbox_ranges = ranges(api_versions(ours[kind], newest))
            # The committed definitions are what this release lists.
            assert releases.release(release).apis[kind] == kafka, f"{release} {kind}: run tools/kafka_definitions.py"
            # Key for key, version for version: what the sandbox lists, plus UNSERVED, is Kafka's list.
            for key, versions in sandbox_ranges.items():
                assert key in kafka and set(versions) <= set(kafka[key]), (kind, key, versions, kafka.get(key))
            missing = {(key, v) for key, versions in kafka.items() for v in versions
                       if v not in sandbox_ranges.get(key, range(0))}
            unexplained = sorted((key, v) for key, v in missing if apis.unserved(release, kind, key, v) is None)
            assert unexplained == [], f"{release} {kind}: listed by Kafka, not by the sandbox, not in UNSERVED"
            # The features, in v3 (Kafka 4.x hides those whose lowest level is 0) and the newest.
            for version in (3, newest):
                assert features(api_versions(ours[kind], version)) == features(api_versions(address, version)), (kind, version)


# Each kind of real cluster (a session fixture of tests/conftest.py), the release and mode it runs.
REAL_CLUSTERS = pytest.mark.parametrize(("cluster", "release", "mode"), [
    ("kafka4", "4.4", "kraft"), ("kafka39_zk", "3.9", "zk"), ("kafka39", "3.9", "kraft")], ids=["4.4", "3.9-zk", "3.9-kraft"])


@pytest.mark.real_kafka
@REAL_CLUSTERS
def test_kafka_lists_what_the_sandbox_lists_plus_unserved(cluster, release, mode, request):
    compare_with_real(request.getfixturevalue(cluster), release, mode)


def test_nothing_is_unserved():
    """With test_kafka_lists_what_the_sandbox_lists_plus_unserved: the sandbox lists what real
    Kafka lists, key for key and version for version, on every listener kind."""
    assert apis.UNSERVED == ()
    served = apis.handlers.load()
    for release, kind in apis.KINDS:
        for key, versions in releases.release(release).apis[kind].items():
            listed, _ = apis.versions(release, kind, key, served[key].versions, False)
            assert listed == versions, (release, kind, codec.api_name(key), listed, versions)


def removed_in_4() -> list[tuple[int, int]]:
    """(key, version) a 3.9 broker serves that a 4.4 broker does not parse (KIP-896), with the
    Produce versions 4.4 still lists but closes the connection on."""
    old, new = releases.release("3.9"), releases.release("4.4")
    out = []
    for key, versions in old.apis[BROKER].items():
        if key in new.apis[BROKER]:
            out += [(key, v) for v in versions if v not in new.valid[key] and v in codec.kio_versions(key)]
    return out


def test_versions_kafka_4_removed_are_answered_as_kafka_4_answers_them(kafka4):
    removed = removed_in_4()
    assert (ApiKey.PRODUCE, 0) in removed and (ApiKey.LIST_OFFSETS, 0) in removed and (ApiKey.FETCH, 3) in removed
    with Sandbox(brokers=1) as sandbox:
        for key, version in removed:
            body = {"acks": 1} if key == ApiKey.PRODUCE else {}
            real = exchange(("127.0.0.1", kafka4.brokers[0].port), key, version, body)
            ours = exchange(sandbox.address(1), key, version, body)
            assert (ours == CLOSED) == (real == CLOSED), (codec.api_name(key), version, real, ours)
        # An ApiVersions version no one has: the v0 answer naming ApiVersions' range, then the client retries.
        for address in (("127.0.0.1", kafka4.brokers[0].port), sandbox.address(1)):
            raw = raw_api_versions(address, 9)
            assert (raw["error_code"], raw["api_keys"]) == (
                Error.unsupported_version, [{"api_key": 18, "min_version": 0, "max_version": 5}])


def raw_api_versions(address: tuple[str, int], version: int) -> dict:
    """ApiVersions of a version kio has no schema for (a newer client): header v2, empty body."""
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, version, 5, 4) + b"test" + b"\x00"
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(struct.pack(">i", len(header) + 1) + header + b"\x00")
        data = read_exactly(s, struct.unpack(">i", read_exactly(s, 4))[0])
    return codec.to_dict(codec.decode_response(codec.response_schema(ApiKey.API_VERSIONS, 0), data)[1])  # type: ignore[return-value]


def test_api_versions_v5_checks_the_cluster_and_node_as_kafka_4_does(kafka4):
    client = AdminClient({"bootstrap.servers": kafka4.bootstrap})
    real_cluster = client.describe_cluster(request_timeout=10).result().cluster_id
    with Sandbox(brokers=1) as sandbox:
        for address, cluster_id, node in ((("127.0.0.1", kafka4.brokers[0].port), real_cluster, kafka4.brokers[0].node_id),
                                          (sandbox.address(1), sandbox.cluster.cluster_id, 1)):
            def code(address=address, **fields) -> int:
                answer = exchange(address, ApiKey.API_VERSIONS, 5, {**API_VERSIONS_BODY, **fields})
                assert isinstance(answer, dict)
                return answer["error_code"]
            assert code(cluster_id=None, node_id=-1) == Error.none
            assert code(cluster_id=cluster_id, node_id=node) == Error.none
            assert code(cluster_id=cluster_id, node_id=-1) == Error.invalid_request
            assert code(cluster_id=None, node_id=node) == Error.invalid_request
            assert code(cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=node) == Error.rebootstrap_required
            assert code(cluster_id=cluster_id, node_id=node + 50) == Error.rebootstrap_required
            assert code(client_software_name="not valid!") == Error.invalid_request


# -- the sandbox alone ------------------------------------------------------------------------------

# What a request needs beyond Kafka's defaults to be valid (the rest stays empty: no topic, no group).
MINIMAL = {
    ApiKey.API_VERSIONS: API_VERSIONS_BODY,
    ApiKey.PRODUCE: {"acks": 1},                   # acks=0 is never answered
    ApiKey.SASL_HANDSHAKE: {"mechanism": "PLAIN"},
    ApiKey.CREATE_TOPICS: {"timeout": 1000},
    ApiKey.DELETE_TOPICS: {"timeout": 1000},
    # Kafka 3.9's controller fails on a FetchSnapshot naming no topic (test_between_nodes).
    ApiKey.FETCH_SNAPSHOT: {"topics": [{"name": "__cluster_metadata", "partitions": [{"partition": 0}]}]},
}
# What a listener lists and always answers by closing the connection, as Kafka does: Envelope
# on 3.9's ZooKeeper-mode brokers, where forwarding is off (test_between_nodes compares).
CLOSES = {(ZK_BROKER, ApiKey.ENVELOPE)}

SANDBOXES = [("4.4", "kraft"), ("3.9", "kraft"), ("3.9", "zk")]
# Their refusals carry Kafka's -1 times, which kio cannot read (its timestamps are never negative).
DELEGATION_TOKEN_APIS = (ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN)


@pytest.mark.parametrize(("release", "mode"), SANDBOXES, ids=[f"{r}-{m}" for r, m in SANDBOXES])
def test_every_listed_version_of_every_api_answers(release, mode):
    with Sandbox(brokers=1, mode=mode, kafka_version=release, seed_apis=True) as sandbox:
        for kind, address in sandbox_listeners(sandbox).items():
            listed = ranges(api_versions(address, 3))
            assert listed, kind
            for key, versions in listed.items():
                accepted = apis.versions(release, kind, key, sandbox.handlers[key].versions, True)[1]
                for version in versions:
                    try:
                        answer = exchange(address, key, version, MINIMAL.get(key, {}))
                    except codec.ProtocolError as exc:   # answered, with -1 times
                        assert "negative timestamp" in str(exc) and key in DELEGATION_TOKEN_APIS, exc
                        answer = "answered"
                    if accepted is not None and version in accepted and (kind, key) not in CLOSES:
                        assert answer != CLOSED, f"{release} {kind}: {codec.api_name(key)} v{version} closed"
                    else:  # listed but not parsed, as Kafka 4.x lists Produce v0-v2
                        assert answer == CLOSED, f"{release} {kind}: {codec.api_name(key)} v{version} answered"


@pytest.mark.parametrize(("release", "mode"), SANDBOXES, ids=[f"{r}-{m}" for r, m in SANDBOXES])
def test_list_offsets_and_fetch_read_every_version(release, mode):
    """The versions before a field existed read it as Kafka's default (current_leader_epoch -1,
    isolation level 0): ListOffsets v0-v3 and Fetch v4-v8 answer like the newest."""
    with Sandbox(brokers=1, mode=mode, kafka_version=release) as sandbox:
        create(sandbox, "t", [[1]])
        produce(sandbox, "t", 0, 5, 10)
        topic_id = sandbox.cluster.topics["t"].id
        kind = BROKER if mode == "kraft" else ZK_BROKER
        listed = ranges(api_versions(sandbox.address(1), 3))
        for version in listed[ApiKey.LIST_OFFSETS]:
            for timestamp, offset in ((-2, 0), (-1, 5)):
                partition = {"partition_index": 0, "timestamp": timestamp, "max_num_offsets": 1}
                answer = exchange(sandbox.address(1), ApiKey.LIST_OFFSETS, version, {
                    "replica_id": -1, "topics": [{"name": "t", "partitions": [partition]}]})
                [p] = answer["topics"][0]["partitions"]  # type: ignore[index]
                assert p["error_code"] == 0 and p.get("offset", (p.get("old_style_offsets") or [None])[0]) == offset, (version, p)
        for version in apis.versions(release, kind, ApiKey.FETCH, sandbox.handlers[ApiKey.FETCH].versions, False)[1]:
            answer = exchange(sandbox.address(1), ApiKey.FETCH, version, {
                "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
                    {"topic": "t", "topic_id": topic_id, "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
            [p] = answer["responses"][0]["partitions"]  # type: ignore[index]
            assert (p["error_code"], p["high_watermark"]) == (0, 5) and p["records"], (version, p)


def test_the_seeds_apis_are_listed_only_when_asked():
    with Sandbox(brokers=1) as stock, Sandbox(brokers=1, seed_apis=True) as seeded:
        broker, controller = ranges(api_versions(stock.address(1), 3)), ranges(api_versions(stock.address(100), 3))
        assert ApiKey.GET_REPLICA_LOG_INFO not in broker and broker[ApiKey.ELECT_LEADERS] == range(0, 3)
        assert controller[ApiKey.ELECT_LEADERS] == range(0, 3)
        assert exchange(stock.address(1), ApiKey.GET_REPLICA_LOG_INFO, 0, {"topic_partitions": []}) == CLOSED
        assert exchange(stock.address(1), ApiKey.ELECT_LEADERS, 3, {"election_type": 0, "topic_partitions": []}) == CLOSED
        broker, controller = ranges(api_versions(seeded.address(1), 3)), ranges(api_versions(seeded.address(100), 3))
        assert broker[ApiKey.GET_REPLICA_LOG_INFO] == range(0, 1) and broker[ApiKey.ELECT_LEADERS] == range(0, 4)
        assert ApiKey.GET_REPLICA_LOG_INFO not in controller and controller[ApiKey.ELECT_LEADERS] == range(0, 4)
        answer = exchange(seeded.address(1), ApiKey.GET_REPLICA_LOG_INFO, 0, {"topic_partitions": [
            {"topic_id": uuid.uuid4(), "partitions": [0]}]})
        assert answer["topic_partition_log_info_list"][0]["partition_log_info"][0]["error_code"] == Error.unknown_topic_id  # type: ignore[index]


def test_zookeeper_mode_follows_kafka_39_and_refuses_4():
    with Sandbox(brokers=1, mode="zk") as zk:
        assert zk.cluster.kafka_version == "3.9"
    with pytest.raises(ValueError, match="has no ZooKeeper mode"):
        Sandbox(brokers=1, mode="zk", kafka_version="4.4")
    with pytest.raises(ValueError, match="unknown Kafka version"):
        Sandbox(brokers=1, kafka_version="2.8")


# -- the APIs served beyond the obvious ones, answered as Kafka answers them ---------------------

def raft_voter_answers(address) -> list:
    add = exchange(address, ApiKey.ADD_RAFT_VOTER, 0, {"cluster_id": None, "timeout": 1000, "voter_id": 5,
                                                       "voter_directory_id": uuid.uuid4(), "listeners": [
                                                           {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9}]})
    remove = exchange(address, ApiKey.REMOVE_RAFT_VOTER, 0, {"cluster_id": None, "voter_id": 100,
                                                             "voter_directory_id": uuid.uuid4()})
    return [(a["error_code"], a["error_message"]) for a in (add, remove)]  # type: ignore[index]


@pytest.mark.parametrize("release", ["4.4", "3.9"])
def test_a_static_quorum_refuses_voter_changes_as_kafka_does(release, request):
    real = request.getfixturevalue("kafka4" if release == "4.4" else "kafka39")
    with Sandbox(brokers=1, kafka_version=release) as sandbox:
        ours = sandbox_listeners(sandbox)
        for kind, address in real_listeners(real).items():
            assert raft_voter_answers(ours[kind]) == raft_voter_answers(address), (release, kind)


def config_resources(address, version: int, types: list[int]) -> list[tuple[int, str]]:
    answer = exchange(address, ApiKey.LIST_CONFIG_RESOURCES, version, {"resource_types": types})
    assert isinstance(answer, dict)
    return [(answer["error_code"], "")] + sorted((r.get("resource_type", 16), r["resource_name"]) for r in answer["config_resources"])


def test_list_config_resources_as_kafka_4_lists_them(kafka4):
    client = AdminClient({"bootstrap.servers": kafka4.bootstrap})
    real_topics = set(client.list_topics(timeout=10).topics)
    address = ("127.0.0.1", kafka4.brokers[0].port)
    with Sandbox(brokers=3) as sandbox:
        create(sandbox, "t", [[1]])
        topics = {"t"}
        for version, types in ((0, []), (1, []), (1, [4, 8]), (1, [2]), (1, [99])):
            theirs, ours = config_resources(address, version, types), config_resources(sandbox.address(1), version, types)
            # Topics and groups with configs are what earlier tests left on the shared cluster.
            assert [r for r in ours if r[0] not in (2, 32)] == [r for r in theirs if r[0] not in (2, 32)], (version, types)
            assert {n for k, n in ours if k == 2} == (topics if 2 in (types or [2]) and version else set())
            assert not [n for k, n in ours if k == 32]
            assert {n for k, n in theirs if k == 2} <= real_topics


def log_dir_of(address) -> str:
    answer = exchange(address, ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None})
    return answer["results"][0]["log_dir"]  # type: ignore[index]


def alter_log_dirs(address, path: str, topic: str, partitions: list[int]) -> list[tuple[int, int]]:
    answer = exchange(address, ApiKey.ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [
        {"path": path, "topics": [{"name": topic, "partitions": partitions}]}]})
    return sorted((p["partition_index"], p["error_code"]) for r in answer["results"] for p in r["partitions"])  # type: ignore[index]


def wait_until_known(address, topic: str, timeout_s: float = 30.0) -> None:
    """Until the broker at `address` has the new topic in its metadata (brokers learn it from the
    controller a moment after CreateTopics returns)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = exchange(address, ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        if answer["topics"][0]["error_code"] == 0 or time.monotonic() >= deadline:  # type: ignore[index]
            return
        time.sleep(0.1)


def test_alter_replica_log_dirs_as_kafka_answers_with_one_dir_per_broker(kafka4):
    """A replica moves nowhere (it is in the broker's one dir); another path is not a log dir;
    a partition the broker does not hold cannot move."""
    address = ("127.0.0.1", kafka4.brokers[0].port)
    topic = f"dirs-{uuid.uuid4().hex[:8]}"
    created = exchange(address, ApiKey.CREATE_TOPICS, 5, {"timeout": 30000, "topics": [
        {"name": topic, "num_partitions": -1, "replication_factor": -1, "assignments": [
            {"partition_index": 0, "broker_ids": [1]}, {"partition_index": 1, "broker_ids": [2]}]}]})
    assert created["topics"][0]["error_code"] == 0, created  # type: ignore[index]
    wait_until_known(address, topic)
    with Sandbox(brokers=3) as sandbox:
        create(sandbox, topic, [[1], [2]])
        ours, theirs = sandbox.address(1), address
        mine, real = log_dir_of(ours), log_dir_of(theirs)
        for name, partitions in ((topic, [0]), (topic, [1, 7]), ("missing", [0])):
            assert alter_log_dirs(ours, mine, name, partitions) == alter_log_dirs(theirs, real, name, partitions), partitions
        assert alter_log_dirs(ours, "/no/such/dir", topic, [0, 1, 7]) == alter_log_dirs(theirs, "/no/such/dir", topic, [0, 1, 7])


@pytest.mark.parametrize(("cluster", "mode"), [("kafka39", "kraft"), ("kafka39_zk", "zk")])
def test_kip_848_apis_on_39_are_refused_as_stock_39_refuses_them(cluster, mode, request):
    """Kafka 3.9 lists ConsumerGroupHeartbeat and ConsumerGroupDescribe v0 but, without the
    group.version feature its clusters start without, answers them UNSUPPORTED_VERSION."""
    real = request.getfixturevalue(cluster)
    requests = [(ApiKey.CONSUMER_GROUP_HEARTBEAT, {"group_id": "g", "member_epoch": 0, "rebalance_timeout": 1000,
                                                   "subscribed_topic_names": ["t"], "topic_partitions": []}),
                (ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": ["g", "h"]})]
    with Sandbox(brokers=1, mode=mode, kafka_version="3.9") as sandbox:
        for key, body in requests:
            theirs = exchange(("127.0.0.1", real.brokers[0].port), key, 0, body)
            ours = exchange(sandbox.address(1), key, 0, body)
            assert ours == theirs, (codec.api_name(key), theirs, ours)
            assert isinstance(theirs, dict)
            codes = {g["error_code"] for g in theirs["groups"]} if "groups" in theirs else {theirs["error_code"]}
            assert codes == {Error.unsupported_version}, theirs
