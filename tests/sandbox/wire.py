"""Test helpers shared by the replication tests: raw requests to one broker, real produces."""

from __future__ import annotations

import socket
import struct

from confluent_kafka import Producer

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.connection.channel import Channel
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin


# A valid ApiVersions request body (v3+ name the client's software, as Kafka requires).
API_VERSIONS_BODY = {"client_software_name": "kafka-shell-tests", "client_software_version": "1"}


def request(sandbox, broker_id: int, api_key: int, body: dict, version: int | None = None) -> dict:
    """One request to one broker over a real socket (the shell's direct channel)."""
    channel = Channel(*sandbox.address(broker_id), timeout_s=5)
    try:
        return channel.request(api_key, body, version)
    finally:
        channel.close()


def raw_frame(sandbox, broker_id: int, request: object, correlation_id: int, client_id: str = "test") -> bytes:
    """Send one kio request entity over a new socket; return the whole answer frame, as sent
    (for byte-level checks and for requests the channel would negotiate away)."""
    with socket.create_connection(sandbox.address(broker_id), timeout=5) as s:
        s.sendall(codec.encode_request(request, correlation_id, client_id))
        (size,) = struct.unpack(">i", read_exactly(s, 4))
        return struct.pack(">i", size) + read_exactly(s, size)


CLOSED = "closed"


def exchange(address: tuple[str, int], api_key: int, version: int, body: dict) -> object:
    """One request of that version on a new connection: the decoded answer (plain data), or
    CLOSED when the listener closes the connection instead of answering (Kafka's answer to what
    it does not serve)."""
    entity = codec.build(codec.request_schema(api_key, version), body)
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(codec.encode_request(entity, 77, "kafka-shell-tests"))
        try:
            head = s.recv(4)
        except ConnectionResetError:
            return CLOSED
        if not head:
            return CLOSED
        data = read_exactly(s, struct.unpack(">i", head)[0])
    # An ApiVersions version the listener lacks is answered in v0 (UNSUPPORTED_VERSION, 35).
    unsupported = api_key == ApiKey.API_VERSIONS and data[4:6] == b"\x00\x23"
    correlation_id, answer = codec.decode_response(codec.response_schema(api_key, 0 if unsupported else version), data)
    assert correlation_id == 77
    return codec.to_dict(answer)


def read_exactly(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "connection closed mid-answer"
        data += chunk
    return data


def produce(sandbox, topic: str, partition: int, batches: int, size: int) -> None:
    """Write `batches` record batches of one `size`-byte record each with a real producer."""
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 0, "acks": "all",
                         "log_level": 0})
    for _ in range(batches):
        producer.produce(topic, b"x" * size, partition=partition)
        producer.flush(10)  # one batch per record
    assert producer.flush(10) == 0


def create(sandbox, name: str, assignment: list[list[int]], **configs: str) -> None:
    """A topic with this exact replica assignment, straight in the sandbox's state."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, name, len(assignment),
                 len(assignment[0]), assignment, configs)


def stage_offline_partition(sandbox, epochs: tuple[int, int] = (0, 0)) -> None:
    """t-0 on [1, 2, 3] with 10 records, offline: 1 (the last ISR member) down, 2 and 3 up but
    out of sync, holding 6 and 4 records written in `epochs` (the unclean-recovery scenario of
    KAFKA-20098)."""
    create(sandbox, "t", [[1, 2, 3]])
    produce(sandbox, "t", 0, 10, 50)
    for b in (2, 3, 1):
        sandbox.stop_broker(b)
    sandbox.start_broker(2)
    sandbox.start_broker(3)
    sandbox.set_log_end_offset("t", 0, 2, 6, epoch=epochs[0])
    sandbox.set_log_end_offset("t", 0, 3, 4, epoch=epochs[1])
