"""The client table's scenarios (tests/test_client_table.py) done with kafka-python: 3.x from the
test venv, or 2.x from the directory the table installs it into (PYTHONPATH). Run as a script:
`python kafka_python_client.py SCENARIO JSON-ARGS`; the last line printed is the JSON result.

Each client's defaults are kept unless the scenario says otherwise (3.x producers are idempotent
by default, 2.x ones are not)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ConfigResource, ConfigResourceType, NewPartitions, \
    NewTopic, ResourcePatternFilter, ResourceType
from kafka.admin import ACLResourcePatternType

from answers import first_code

V3 = int(kafka.__version__.split(".")[0]) >= 3
# The table runs 2.x as a client of Kafka 2.0 (KAFKA_PYTHON_API_VERSION=2.0): the older request
# versions (Fetch v8, ListOffsets v3, Metadata v6, ...) that Kafka 4.x brokers still serve.
PINNED = {"api_version": tuple(int(x) for x in os.environ["KAFKA_PYTHON_API_VERSION"].split("."))} \
    if os.environ.get("KAFKA_PYTHON_API_VERSION") else {}
CODECS = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
ACKS = {"0": 0, "1": 1, "all": "all"}


def error_code(call) -> int | None:
    """The Kafka error code a call ends with: its exception's, else the first non-zero code of
    its answer (2.x returns raw answers), else 0; None when the client cannot send the request
    to a broker of the version it speaks."""
    try:
        result = call()
    except kafka.errors.IncompatibleBrokerVersion:
        return None
    except kafka.errors.KafkaError as exc:
        return getattr(exc, "errno", None) or -1
    return first_code(result, _leaf)


def _leaf(value):
    """kafka-python's answers: structs (2.x), response objects (3.x), error classes or their
    names (3.x's delete_groups)."""
    if isinstance(value, type) and issubclass(value, kafka.errors.KafkaError):
        return value.errno or 0
    if isinstance(value, kafka.errors.KafkaError):
        return value.errno or 0
    if isinstance(value, str):
        error = getattr(kafka.errors, value, None)
        return (error.errno or 0) if isinstance(error, type) and issubclass(error, kafka.errors.KafkaError) else 0
    if hasattr(value, "__slots__") and not isinstance(value, type):
        return {k: getattr(value, k, None) for k in value.__slots__}
    return value


def admin(bootstrap: str, topic: str) -> dict:
    a = KafkaAdminClient(bootstrap_servers=bootstrap, **PINNED)
    out: dict = {}
    code = error_code(lambda: a.create_topics([NewTopic(topic, 3, 2, topic_configs={"retention.ms": "3600000"})]))
    out["created"] = code
    deadline = time.monotonic() + 30
    while topic not in a.list_topics() and time.monotonic() < deadline:
        time.sleep(0.1)
    out["listed"] = topic in a.list_topics()
    out["described"] = describe_config(a, topic, "retention.ms")
    out["altered"] = error_code(lambda: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                                        configs={"retention.ms": "7200000"})]))
    out["described after"] = describe_config(a, topic, "retention.ms")
    out["partitions added"] = error_code(lambda: a.create_partitions({topic: NewPartitions(4)}))
    out["brokers"] = len(a.describe_cluster()["brokers"])
    out["deleted"] = error_code(lambda: a.delete_topics([topic]))
    a.close()
    return out


def describe_config(a: KafkaAdminClient, topic: str, key: str) -> str | None:
    answer = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: None})])
    if V3:   # {"topic": {name: {key: {"value": ...}}}}
        entry = answer.get("topic", {}).get(topic, {}).get(key)
        return entry["value"] if entry else None
    for response in answer:   # 2.x: raw DescribeConfigs answers
        for resource in response.to_object()["resources"]:
            for entry in resource["config_entries"]:
                if entry["config_names"] == key:
                    return entry["config_value"]
    return None


def produce(bootstrap: str, topic: str, combos: list) -> dict:
    out = {}
    ends = KafkaConsumer(bootstrap_servers=bootstrap, **PINNED)
    tp = TopicPartition(topic, 0)
    for codec, acks in combos:
        before = ends.end_offsets([tp])[tp]
        p = KafkaProducer(bootstrap_servers=bootstrap, **PINNED, compression_type=CODECS[codec], acks=ACKS[acks])
        futures = [p.send(topic, key=f"{codec}-{acks}-{i}".encode(), value=b"value %d " % i * 20) for i in range(5)]
        p.flush()
        out[f"{codec}-{acks}"] = [f.get(30).offset for f in futures]
        if acks == "0":
            # Nothing says an acks=0 request was written: kafka-python 2.x drops what its socket has
            # not sent when it closes (on Kafka too), so wait until the records are in.
            deadline = time.monotonic() + 30
            while ends.end_offsets([tp])[tp] < before + 5 and time.monotonic() < deadline:
                time.sleep(0.05)
        p.close()
    ends.close()
    return out


def idempotent(bootstrap: str, topic: str) -> dict:
    settings = {} if V3 else {"enable_idempotence": True}   # 3.x: on by default
    p = KafkaProducer(bootstrap_servers=bootstrap, **PINNED, **settings)
    offsets = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(30).offset for i in range(10)]
    p.close()
    return {"offsets": offsets}


def transactional(bootstrap: str, topic: str) -> dict:
    p = KafkaProducer(bootstrap_servers=bootstrap, **PINNED, transactional_id="kp-" + topic)
    p.init_transactions()
    p.begin_transaction()
    for i in range(5):
        p.send(topic, key=b"c%d" % i, value=b"c%d" % i)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(5):
        p.send(topic, key=b"a%d" % i, value=b"a%d" % i)
    p.abort_transaction()
    p.close()
    return {}


def read_committed(bootstrap: str, topic: str, count: int) -> dict:
    c = KafkaConsumer(bootstrap_servers=bootstrap, **PINNED, isolation_level="read_committed", enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=30000)
    c.assign([TopicPartition(topic, 0)])
    values = []
    for m in c:
        values.append(m.value.decode())
        if len(values) == count:
            break
    c.close()
    return {"values": values}


def group(bootstrap: str, topic: str, group_id: str) -> dict:
    def consumer() -> KafkaConsumer:
        c = KafkaConsumer(bootstrap_servers=bootstrap, **PINNED, group_id=group_id, enable_auto_commit=False)
        c.subscribe([topic])
        return c

    def wait(consumers, condition):
        # Each consumer polls in a thread of its own, as applications run them. Taking turns in
        # one thread does not work with kafka-python 3.0.12: a join that completes while the other
        # consumer is polling is dropped and a new JoinGroup sent, so the group never settles.
        deadline = time.monotonic() + 60

        def keep_polling(c) -> None:
            while not condition() and time.monotonic() < deadline:
                c.poll(timeout_ms=500)

        threads = [threading.Thread(target=keep_polling, args=(c,)) for c in consumers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert condition(), "no assignment"

    first = consumer()
    wait([first], lambda: len(first.assignment()) == 4)
    out = {"first": sorted(tp.partition for tp in first.assignment())}
    second = consumer()
    wait([first, second], lambda: first.assignment() and second.assignment()
         and len(first.assignment() | second.assignment()) == 4 and not first.assignment() & second.assignment())
    out["after"] = sorted(sorted(tp.partition for tp in c.assignment()) for c in (first, second))
    first.close()
    second.close()
    return out


def seek(bootstrap: str, topic: str, at: int) -> dict:
    c = KafkaConsumer(bootstrap_servers=bootstrap, **PINNED, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    beginning = first_record(c).offset
    c.seek_to_end(tp)
    end = c.position(tp)
    found = c.offsets_for_times({tp: at})[tp]
    c.close()
    return {"beginning": beginning, "end": end, "time": found.offset}


def first_record(c: KafkaConsumer):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for records in c.poll(timeout_ms=200).values():
            return records[0]
    raise AssertionError("nothing read")


def errors(bootstrap: str, existing: str, compacted: str, small: str) -> dict:
    a = KafkaAdminClient(bootstrap_servers=bootstrap, **PINNED)
    out = {
        "topic exists": error_code(lambda: a.create_topics([NewTopic(existing, 1, 1)])),
        "replication factor": error_code(lambda: a.create_topics([NewTopic(existing + "-rf", 1, 4)])),
        "invalid config": error_code(lambda: a.create_topics([NewTopic(existing + "-cfg", 1, 1,
                                                                       topic_configs={"cleanup.policy": "nope"})])),
        "fewer partitions": error_code(lambda: a.create_partitions({existing: NewPartitions(1)})),
        "unknown topic": error_code(lambda: a.delete_topics([existing + "-none"])),
        "unknown group": error_code(lambda: (a.delete_groups if V3 else a.delete_consumer_groups)(["no-such-group"])),
        "acls without an authorizer": error_code(lambda: a.describe_acls(ACLFilter(
            None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY)))),
        "preferred leader already": error_code(lambda: (a.elect_leaders if V3 else a.perform_leader_election)(
            0, {existing: [0]})),
    }
    a.close()
    p = KafkaProducer(bootstrap_servers=bootstrap, **PINNED, retries=0)
    out["keyless on a compacted topic"] = error_code(lambda: p.send(compacted, value=b"no key").get(30))
    out["record too large"] = error_code(lambda: p.send(small, key=b"k", value=b"x" * 2000).get(30))
    p.close()
    return {k: v for k, v in out.items() if v is not None}


if __name__ == "__main__":
    result = globals()[sys.argv[1]](**json.loads(sys.argv[2]))
    print(json.dumps(result))
