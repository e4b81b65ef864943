"""Bounded resources, as Kafka bounds them with its socket-server configs: request size, queued
request bytes, connections in total and per address, idle connections, work left behind by a
client that leaves, and accept errors at the fd limit."""

from __future__ import annotations

import os
import resource
import socket
import struct
import time

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import listeners, quorum
from kafka_shell.sandbox.server import Sandbox
from tests import frame_fuzz
from tests.sandbox.wire import API_VERSIONS_BODY, create, produce, request

MiB = 1024 * 1024
IDLE_CONNECTIONS = 2000
PARTIAL_FRAMES = 10
PARTIAL_FRAME_BYTES = 99 * MiB  # of a declared 100 MiB frame
QUEUED_LIMIT = 8 * MiB  # below the default (100 MiB) to keep the test quick
RSS_BOUND = 160 * MiB  # the process, with 2,000 connections and 10 stalled 99 MiB frames (~60 MiB seen)


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def assert_admin_served(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    assert admin.list_topics(timeout=10).brokers


def closed_by_peer(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """True when the other side closes the connection (within a generous timeout)."""
    sock.settimeout(timeout_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def api_versions_frame(correlation_id: int = 1) -> bytes:
    cls = codec.request_schema(ApiKey.API_VERSIONS, 0)
    return codec.encode_request(codec.build(cls, {}), correlation_id, "test")


def answers(sock: socket.socket) -> bool:
    sock.settimeout(10)
    sock.sendall(api_versions_frame())
    try:
        head = sock.recv(4, socket.MSG_WAITALL)
    except ConnectionResetError:
        return False
    return len(head) == 4


@pytest.fixture
def more_file_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 2 * IDLE_CONNECTIONS + 1000) if hard != resource.RLIM_INFINITY else 2 * IDLE_CONNECTIONS + 1000
    assert wanted >= 2 * IDLE_CONNECTIONS + 200, f"RLIMIT_NOFILE hard limit {hard} is too low for this test"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def send_what_is_taken(socks: list[socket.socket], total: int, stall_s: float = 1.0) -> int:
    """Send up to `total` bytes on each non-blocking socket until none takes more for stall_s;
    returns the bytes sent over all."""
    chunk = b"\0" * MiB
    sent = dict.fromkeys(socks, 0)
    open_ = set(socks)
    last_progress = time.monotonic()
    while time.monotonic() - last_progress < stall_s:
        progress = False
        for s in socks:
            if s in open_ and sent[s] < total:
                try:
                    n = s.send(chunk[:total - sent[s]])
                except BlockingIOError:
                    continue
                except ConnectionError:  # closed by the broker (e.g. idle): nothing more to send
                    open_.discard(s)
                    continue
                sent[s] += n
                progress = progress or n > 0
        if progress:
            last_progress = time.monotonic()
        else:
            time.sleep(0.01)
    return sum(sent.values())


def test_idle_connections_and_partial_frames_stay_bounded(more_file_descriptors):
    proc, bootstrap = frame_fuzz.spawn_sandbox(brokers=1, configs={
        "queued.max.request.bytes": str(QUEUED_LIMIT)})
    host, port = bootstrap.rsplit(":", 1)
    socks: list[socket.socket] = []
    try:
        assert_admin_served(bootstrap)
        for _ in range(IDLE_CONNECTIONS):
            socks.append(socket.create_connection((host, int(port))))
        assert_admin_served(bootstrap)

        partial = [socket.create_connection((host, int(port))) for _ in range(PARTIAL_FRAMES)]
        socks += partial
        for s in partial:
            s.sendall(struct.pack(">i", 100 * MiB))  # declared: 100 MiB, socket.request.max.bytes
            s.setblocking(False)
        sent = send_what_is_taken(partial, PARTIAL_FRAME_BYTES)
        assert sent >= QUEUED_LIMIT  # the process did take up to its limit

        assert_admin_served(bootstrap)
        used = rss(proc.pid)
        print(f"sandbox RSS {used / MiB:.0f} MiB with {IDLE_CONNECTIONS} idle connections and "
              f"{PARTIAL_FRAMES} partial frames ({sent / MiB:.0f} MiB sent); bound {RSS_BOUND / MiB:.0f} MiB")
        assert used < RSS_BOUND
        assert proc.poll() is None
    finally:
        for s in socks:
            s.close()
        stderr = frame_fuzz.stop_sandbox(proc)
    assert "Traceback" not in stderr, stderr


def test_queued_request_bytes_bound_stalled_frames_and_are_released():
    limit, read = MiB, 256 * 1024  # asyncio reads at most 256 KiB at a time
    with Sandbox(brokers=1, configs={"queued.max.request.bytes": str(limit)}) as sandbox:
        memory = listeners.request_memory(sandbox)
        stalled = [socket.create_connection(sandbox.address(1)) for _ in range(3)]
        for s in stalled:
            s.sendall(struct.pack(">i", 50 * MiB))
            s.setblocking(False)
        send_what_is_taken(stalled, 10 * MiB, stall_s=0.5)
        held = sandbox.call(lambda: memory.used)
        assert limit <= held <= limit + len(stalled) * read  # over by one read per connection at most
        assert request(sandbox, 1, ApiKey.API_VERSIONS, API_VERSIONS_BODY)["error_code"] == 0  # others still served
        for s in stalled:  # reset: a stalled connection sees that without reading
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        assert wait_for(lambda: sandbox.call(lambda: memory.used) == 0)


def test_stalled_connections_are_closed_when_idle():
    """A client that leaves a stalled frame with a plain close: its FIN waits behind the bytes the
    broker does not read, so only connections.max.idle.ms ends it (as in Kafka)."""
    with Sandbox(brokers=1, configs={"queued.max.request.bytes": str(MiB),
                                     "connections.max.idle.ms": "300"}) as sandbox:
        memory = listeners.request_memory(sandbox)
        stalled = [socket.create_connection(sandbox.address(1)) for _ in range(2)]
        for s in stalled:
            s.sendall(struct.pack(">i", 50 * MiB))
            s.setblocking(False)
        send_what_is_taken(stalled, 10 * MiB, stall_s=0.5)
        for s in stalled:
            s.close()
        assert wait_for(lambda: sandbox.call(lambda: memory.used) == 0)


def test_idle_connections_are_closed():
    with Sandbox(brokers=1, configs={"connections.max.idle.ms": "200"}) as sandbox:
        with socket.create_connection(sandbox.address(1)) as idle:
            assert closed_by_peer(idle)
        assert request(sandbox, 1, ApiKey.API_VERSIONS, API_VERSIONS_BODY)["error_code"] == 0


def test_max_connections_per_ip():
    with Sandbox(brokers=1, configs={"max.connections.per.ip": "3"}) as sandbox:
        first = [socket.create_connection(sandbox.address(1)) for _ in range(3)]
        try:
            assert all(answers(s) for s in first)
            with socket.create_connection(sandbox.address(1)) as over:
                assert closed_by_peer(over)
            first.pop().close()
            time.sleep(0.2)  # let the broker see the close before the next connection
            with socket.create_connection(sandbox.address(1)) as again:
                assert answers(again)
        finally:
            for s in first:
                s.close()


def test_max_connections():
    with Sandbox(brokers=1, configs={"max.connections": "2"}) as sandbox:
        with socket.create_connection(sandbox.address(1)) as a, socket.create_connection(sandbox.address(1)) as b:
            assert answers(a) and answers(b)
            with socket.create_connection(sandbox.address(1)) as over:
                assert closed_by_peer(over)


def test_a_frame_over_socket_request_max_bytes_closes_before_its_body():
    with Sandbox(brokers=1, configs={"socket.request.max.bytes": "1000"}) as sandbox:
        with socket.create_connection(sandbox.address(1)) as s:
            s.sendall(struct.pack(">i", 1001))  # no body follows: the header alone closes it
            assert closed_by_peer(s)
        with socket.create_connection(sandbox.address(1)) as s:
            assert answers(s)


def test_a_long_poll_fetch_ends_when_its_client_leaves():
    with Sandbox(brokers=1) as sandbox:
        create(sandbox, "t", [[1]])
        cls = codec.request_schema(ApiKey.FETCH, 12)
        fetch = codec.build(cls, {
            "replica_id": -1, "max_wait": 2**31 - 1, "min_bytes": 1, "max_bytes": MiB,
            "session_epoch": -1, "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": 0, "current_leader_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": MiB}]}]})
        clients = [socket.create_connection(sandbox.address(1)) for _ in range(20)]
        for s in clients:
            s.sendall(codec.encode_request(fetch, 1, "test"))
        assert wait_for(lambda: connections(sandbox) == 20)
        for s in clients:
            s.close()
        assert wait_for(lambda: connections(sandbox) == 0)


def connections(sandbox: Sandbox) -> int:
    """Connections the broker still holds, counting only those whose task is still running."""
    server = sandbox._servers[1]
    return sandbox.call(lambda: sum(not t.done() for t in server.connections.values()))  # type: ignore[return-value]


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_accept_errors_at_the_fd_limit_are_logged_once_a_second():
    proc, bootstrap = frame_fuzz.spawn_sandbox(brokers=1, fd_limit=64)
    host, port = bootstrap.rsplit(":", 1)
    socks = []
    try:
        for _ in range(100):
            socks.append(socket.create_connection((host, int(port))))
        time.sleep(2.5)
        for s in socks:
            s.close()
        socks = []
        assert wait_for(lambda: _serves(bootstrap))
        assert proc.poll() is None
    finally:
        for s in socks:
            s.close()
        stderr = frame_fuzz.stop_sandbox(proc)
    reports = [line for line in stderr.splitlines() if "cannot accept connections" in line]
    assert 1 <= len(reports) <= 4, stderr  # 2.5 s at the limit: a message a second at most
    assert "Traceback" not in stderr


def _serves(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2) as s:
            return answers(s)
    except OSError:
        return False


# -- the share coordinator's state: ranges of offsets -------------------------------------------------


def _share_state(sandbox, api_key: int, topic_id, **partition) -> dict:
    """The one partition result of a share-state request for group g."""
    answer = request(sandbox, 1, api_key, {"group_id": "g", "topics": [
        {"topic_id": topic_id, "partitions": [{"partition": 0, **partition}]}]})
    return answer["results"][0]["partitions"][0]


def test_a_written_share_state_range_of_2_62_offsets_is_kept_within_the_log():
    """WriteShareGroupState names ranges of offsets (ShareCoordinatorShard keeps them as ranges);
    a stranger's range of 2^62 offsets is accepted without taking the process' memory, and the
    records the log has take its state. Kafka's refusals come first: a Write before any
    Initialize."""
    with Sandbox(brokers=1) as s:
        create(s, "t", [[1]])
        produce(s, "t", 0, 3, 10)
        topic_id = s.cluster.topics["t"].id
        key = f"g:{quorum.kafka_uuid(topic_id)}:0"   # the share coordinator (the only broker) makes its topic
        found = request(s, 1, ApiKey.FIND_COORDINATOR, {"key_type": 2, "coordinator_keys": [key]}, 6)
        assert (found["coordinators"][0]["error_code"], found["coordinators"][0]["node_id"]) == (0, 1)
        hostile = [{"first_offset": 0, "last_offset": 2**62, "delivery_state": 0, "delivery_count": 1}]
        refused = _share_state(s, ApiKey.WRITE_SHARE_GROUP_STATE, topic_id, state_epoch=0, leader_epoch=-1, start_offset=0,
                               state_batches=hostile)
        assert (refused["error_code"], refused["error_message"]) == (
            ErrorCode.invalid_request, "Write operation on uninitialized share partition not allowed.")
        assert _share_state(s, ApiKey.INITIALIZE_SHARE_GROUP_STATE, topic_id, state_epoch=0, start_offset=0)["error_code"] == 0
        written = _share_state(s, ApiKey.WRITE_SHARE_GROUP_STATE, topic_id, state_epoch=0, leader_epoch=-1, start_offset=0,
                               state_batches=hostile)
        assert written["error_code"] == 0
        read = _share_state(s, ApiKey.READ_SHARE_GROUP_STATE, topic_id, leader_epoch=0)
        assert (read["error_code"], read["start_offset"]) == (0, 0)
        assert [(b["first_offset"], b["last_offset"], b["delivery_count"]) for b in read["state_batches"]] == [(0, 2, 1)]
        assert rss(os.getpid()) < 2 * 1024 * MiB


def test_a_stop_ends_every_connection_task_inside_the_loop(caplog):
    """Connections still in their TLS handshake when the sandbox stops: each one's task ends
    inside the loop (none collected pending, no cleanup run without a loop)."""
    import gc
    with Sandbox(brokers=1, listeners=["SSL"]) as s:
        waiting = [socket.create_connection(s.address(1), timeout=5) for _ in range(30)]
        deadline = time.monotonic() + 10
        while len(s.principals()) < len(waiting):   # each accepted, its handshake pending
            assert time.monotonic() < deadline, "the connections were not accepted"
            time.sleep(0.05)
    gc.collect()
    for sock in waiting:
        sock.close()
    problems = [r.getMessage() for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert problems == []
