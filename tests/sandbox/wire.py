"""Test helpers shared by the replication tests: raw requests to one broker, real produces."""

from __future__ import annotations

from confluent_kafka import Producer

from kafka_shell.channel import Channel


def request(sandbox, broker_id: int, api_key: int, body: dict, version: int | None = None) -> dict:
    """One request to one broker over a real socket (the shell's direct channel)."""
    channel = Channel(*sandbox.address(broker_id), timeout_s=5)
    try:
        return channel.request(api_key, body, version)
    finally:
        channel.close()


def produce(sandbox, topic: str, partition: int, batches: int, size: int) -> None:
    """Write `batches` record batches of one `size`-byte record each with a real producer."""
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 0, "acks": "all",
                         "log_level": 0})
    for _ in range(batches):
        producer.produce(topic, b"x" * size, partition=partition)
        producer.flush(10)  # one batch per record
    assert producer.flush(10) == 0
