"""The client table's scenarios (tests/test_client_table.py) done with aiokafka, with its default
settings unless the scenario says otherwise (its producer is not idempotent by default). Run as a
script: `python aiokafka_client.py SCENARIO JSON-ARGS`; the last line printed is the JSON result."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError
from answers import first_code

CODECS = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
ACKS = {"0": 0, "1": 1, "all": "all"}


async def error_code(call) -> int:
    """The Kafka error code an awaited call ends with: its exception's, else the first non-zero
    code of its answer, else 0."""
    try:
        result = await call()
    except KafkaError as exc:
        return getattr(exc, "errno", None) or -1
    return first_code(result)


async def admin(bootstrap: str, topic: str) -> dict:
    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await a.start()
    out: dict = {"created": await error_code(lambda: a.create_topics(
        [NewTopic(topic, 3, 2, topic_configs={"retention.ms": "3600000"})]))}
    deadline = time.monotonic() + 30
    while topic not in await a.list_topics() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    out["listed"] = topic in await a.list_topics()
    out["described"] = await describe_config(a, topic, "retention.ms")
    out["altered"] = await error_code(lambda: a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                                              configs={"retention.ms": "7200000"})]))
    out["described after"] = await describe_config(a, topic, "retention.ms")
    out["partitions added"] = await error_code(lambda: a.create_partitions({topic: NewPartitions(4)}))
    out["brokers"] = len((await a.describe_cluster())["brokers"])
    out["deleted"] = await error_code(lambda: a.delete_topics([topic]))
    await a.close()
    return out


async def describe_config(a: AIOKafkaAdminClient, topic: str, key: str) -> str | None:
    for response in await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: None})]):
        for resource in response.to_object()["resources"]:
            for entry in resource["config_entries"]:
                if entry["config_names"] == key:
                    return entry["config_value"]
    return None


async def produce(bootstrap: str, topic: str, combos: list) -> dict:
    out = {}
    for codec, acks in combos:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=CODECS[codec], acks=ACKS[acks])
        await p.start()
        sent = [await p.send(topic, key=f"{codec}-{acks}-{i}".encode(), value=b"value %d " % i * 20) for i in range(5)]
        out[f"{codec}-{acks}"] = [-1 if (m := await f) is None else m.offset for f in sent]   # acks=0: None
        await p.stop()
    return out


async def idempotent(bootstrap: str, topic: str) -> dict:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)   # off by default
    await p.start()
    offsets = [(await p.send_and_wait(topic, key=b"k%d" % i, value=b"v%d" % i)).offset for i in range(10)]
    await p.stop()
    return {"offsets": offsets}


async def transactional(bootstrap: str, topic: str) -> dict:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-" + topic)
    await p.start()
    async with p.transaction():
        for i in range(5):
            await p.send(topic, key=b"c%d" % i, value=b"c%d" % i)
    await p.begin_transaction()
    for i in range(5):
        await p.send(topic, key=b"a%d" % i, value=b"a%d" % i)
    await p.abort_transaction()
    await p.stop()
    return {}


async def read_committed(bootstrap: str, topic: str, count: int) -> dict:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False,
                         auto_offset_reset="earliest")
    await c.start()
    c.assign([TopicPartition(topic, 0)])
    values: list[str] = []
    while len(values) < count:
        m = await asyncio.wait_for(c.getone(), 30)
        values.append(m.value.decode())
    await c.stop()
    return {"values": values}


async def group(bootstrap: str, topic: str, group_id: str) -> dict:
    async def consumer() -> AIOKafkaConsumer:
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False)
        await c.start()
        return c

    async def wait(consumers, condition) -> None:
        deadline = time.monotonic() + 60
        while not condition():
            assert time.monotonic() < deadline, "no assignment"
            await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))

    first = await consumer()
    await wait([first], lambda: len(first.assignment()) == 4)
    out = {"first": sorted(tp.partition for tp in first.assignment())}
    second = await consumer()
    await wait([first, second], lambda: first.assignment() and second.assignment()
               and len(first.assignment() | second.assignment()) == 4 and not first.assignment() & second.assignment())
    out["after"] = sorted(sorted(tp.partition for tp in c.assignment()) for c in (first, second))
    await first.stop()
    await second.stop()
    return out


async def seek(bootstrap: str, topic: str, at: int) -> dict:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await c.start()
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    await c.seek_to_beginning(tp)
    beginning = (await asyncio.wait_for(c.getone(), 30)).offset
    await c.seek_to_end(tp)
    end = await c.position(tp)
    found = (await c.offsets_for_times({tp: at}))[tp]
    await c.stop()
    return {"beginning": beginning, "end": end, "time": found.offset}


async def errors(bootstrap: str, existing: str, compacted: str, small: str) -> dict:
    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await a.start()
    out = {
        "topic exists": await error_code(lambda: a.create_topics([NewTopic(existing, 1, 1)])),
        "replication factor": await error_code(lambda: a.create_topics([NewTopic(existing + "-rf", 1, 4)])),
        "invalid config": await error_code(lambda: a.create_topics([NewTopic(
            existing + "-cfg", 1, 1, topic_configs={"cleanup.policy": "nope"})])),
        "fewer partitions": await error_code(lambda: a.create_partitions({existing: NewPartitions(1)})),
        "unknown topic": await error_code(lambda: a.delete_topics([existing + "-none"])),
    }
    await a.close()
    p = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await p.start()
    out["keyless on a compacted topic"] = await error_code(lambda: p.send_and_wait(compacted, value=b"no key"))
    out["record too large"] = await error_code(lambda: p.send_and_wait(small, key=b"k", value=b"x" * 2000))
    await p.stop()
    return out


if __name__ == "__main__":
    result = asyncio.run(globals()[sys.argv[1]](**json.loads(sys.argv[2])))
    print(json.dumps(result))
