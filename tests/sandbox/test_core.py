"""Broker core: ApiVersions negotiation, Metadata, controller moves, seen by real clients."""

from __future__ import annotations

import socket
import struct
import time

from kafka_shell.protocol import codec
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from tests.conftest import BOTH_MODES, ZK_MODE


@BOTH_MODES
def test_metadata_lists_brokers_controller_and_topics(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "orders", 3, 2)
    md = admin.list_topics(timeout=5)
    assert sorted(md.brokers) == [1, 2, 3]
    if sandbox.mode == "zk":
        assert md.controller_id == sandbox.cluster.controller_id
    else:  # KRaft brokers name a random live broker, never the controller (100)
        assert md.controller_id in (1, 2, 3) and sandbox.active_controller == 100
    assert md.cluster_id == sandbox.cluster.cluster_id
    assert sorted(md.topics["orders"].partitions) == [0, 1, 2]
    for p in md.topics["orders"].partitions.values():
        assert len(p.replicas) == 2 and p.leader == p.replicas[0]


@ZK_MODE  # in KRaft mode Metadata never names the controller (test_kraft.py)
def test_kill_controller_reports_new_controller_within_a_second(sandbox, admin):
    old = admin.list_topics(timeout=5).controller_id
    new = sandbox.kill_controller()
    assert new != old
    deadline = time.monotonic() + 1.0
    while admin.list_topics(timeout=1).controller_id != new:
        assert time.monotonic() < deadline, "new controller not reported within 1 s"
        time.sleep(0.05)


def test_stopped_isr_makes_partition_offline_until_a_replica_returns(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2, [[1, 2]])
    sandbox.stop_broker(1)
    sandbox.stop_broker(2)
    p = admin.list_topics(timeout=5).topics["t"].partitions[0]
    assert p.leader == -1
    sandbox.start_broker(2)
    p = admin.list_topics(timeout=5).topics["t"].partitions[0]
    assert p.leader == 2


def _raw(sandbox, payload: bytes) -> bytes:
    with socket.create_connection(sandbox.address(1), timeout=3) as s:
        s.sendall(payload)
        try:
            return s.recv(65536)
        except (TimeoutError, ConnectionResetError):
            return b""


def test_unknown_api_key_and_huge_frame_close_the_connection_only(sandbox, admin):
    unknown = struct.pack(">hhi", 999, 0, 1) + b"\x00\x00"
    assert _raw(sandbox, codec.frame(unknown)) == b""
    assert _raw(sandbox, struct.pack(">i", 2**31 - 1) + b"x" * 10) == b""
    assert admin.list_topics(timeout=5).brokers  # still serving


def test_api_versions_unsupported_version_gets_v0_error_answer(sandbox):
    req = struct.pack(">hhi", 18, 99, 42) + struct.pack(">h", -1)
    body = _raw(sandbox, codec.frame(req))
    size, corr, err = struct.unpack_from(">iih", body)
    assert corr == 42 and err == 35  # UNSUPPORTED_VERSION
