"""Bad input never takes a broker down: after garbage on one connection, the broker still
answers real requests on a new one."""

from __future__ import annotations

import logging
import random
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from confluent_kafka.admin import AdminClient

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox.server import Sandbox
from tests import frame_fuzz
from tests.sandbox.wire import API_VERSIONS_BODY, request

API_VERSIONS, METADATA = 18, 3


def send_garbage(sandbox, payload: bytes, broker: int = 1) -> None:
    """Send bytes and end the stream, then read until the broker closes the connection."""
    with socket.create_connection(sandbox.address(broker), timeout=5) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except ConnectionError:
            pass


def assert_serving(sandbox, caplog, broker: int = 1) -> None:
    """The broker answers real requests, and no handler crashed on the input."""
    crashes = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not crashes, crashes[0].getMessage()
    assert request(sandbox, broker, API_VERSIONS, API_VERSIONS_BODY)["error_code"] == 0
    md = request(sandbox, broker, METADATA, {"topics": None})
    assert sorted(b["node_id"] for b in md["brokers"]) == sorted(sandbox.cluster.brokers)


def header(api_key: int, version: int, correlation: int = 1) -> bytes:
    return struct.pack(">hhi", api_key, version, correlation)


@pytest.mark.parametrize("payload", [
    pytest.param(struct.pack(">i", 2**31 - 1), id="2GiB-length"),
    pytest.param(struct.pack(">i", -5) + b"abc", id="negative-length"),
    pytest.param(struct.pack(">i", 3) + b"abc", id="shorter-than-header"),
    pytest.param(codec.frame(header(999, 0)), id="unknown-api-key"),
    pytest.param(codec.frame(header(3, 99) + b"\x00\x00"), id="unknown-version"),
    pytest.param(codec.frame(header(3, 12) + b"\xff" * 40), id="garbage-body"),
    pytest.param(codec.frame(header(43, 2) + b"\x00\x01")[:-1], id="truncated-frame"),
    pytest.param(struct.pack(">i", 100) + header(18, 3), id="length-beyond-data"),
    pytest.param(codec.frame(header(1000, 0) + b"\x00" * 3), id="get-replica-log-info-garbage"),
    pytest.param(codec.frame(header(45, 1) + b"\x00\xff\xff\xff\x7f"), id="huge-array-count"),
])
def test_malformed_frames_close_only_their_connection(sandbox, caplog, payload):
    send_garbage(sandbox, payload)
    assert_serving(sandbox, caplog)


def test_a_valid_request_after_garbage_on_another_connection(sandbox, caplog):
    with socket.create_connection(sandbox.address(1), timeout=2) as hanging:
        hanging.sendall(struct.pack(">i", 1000) + b"partial")  # left waiting for its body
        assert_serving(sandbox, caplog)


@pytest.fixture(scope="module")
def shared_sandbox():
    with Sandbox(brokers=1) as s:
        yield s


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(
    st.binary(max_size=300),
    st.builds(lambda key, version, body: codec.frame(header(key, version) + body),
              st.sampled_from([0, 1, 3, 18, 19, 32, 35, 43, 44, 45, 46, 55, 1000]),
              st.integers(-1, 20), st.binary(max_size=200)),
))
def test_random_bytes_never_take_the_broker_down(shared_sandbox, caplog, data):
    send_garbage(shared_sandbox, data)
    assert_serving(shared_sandbox, caplog)


# -- a sandbox in a process of its own: a native abort would show as a dead process -------------

FRAMES_PER_VERSION = 10  # per example, for every request version kio knows (bench/fuzz_long.py runs longer)


@pytest.fixture(scope="module")
def sandbox_process():
    proc, bootstrap = frame_fuzz.spawn_sandbox(brokers=1)
    yield proc, bootstrap
    frame_fuzz.stop_sandbox(proc)


def assert_process_serves(proc, bootstrap: str) -> None:
    assert proc.poll() is None, f"the sandbox process died (exit {proc.returncode})"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    assert admin.list_topics(timeout=10).brokers


def test_the_21_byte_frame_leaves_the_process_serving(sandbox_process):
    proc, bootstrap = sandbox_process
    frame_fuzz.send_frames(bootstrap, [frame_fuzz.METADATA_V12_HOSTILE] * 3)
    hostile = [frame_fuzz.METADATA_V12_HOSTILE[:4] + codec.serialize(codec.build(
        codec.request_schema(key, version).__header_schema__,
        {"request_api_key": key, "request_api_version": version, "correlation_id": 1, "client_id": "x"}))
        + b"\xff\xff\xff\xff\x0f" for key, version in ((ApiKey.DELETE_TOPICS, 6), (ApiKey.CREATE_TOPICS, 7))]
    frame_fuzz.send_frames(bootstrap, [struct.pack(">i", len(f) - 4) + f[4:] for f in hostile])
    assert_process_serves(proc, bootstrap)


@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**64 - 1))
def test_hostile_frames_of_every_api_version_leave_the_process_serving(sandbox_process, seed):
    proc, bootstrap = sandbox_process
    rnd = random.Random(seed)
    frames = [f for key, version in frame_fuzz.all_versions()
              for f in frame_fuzz.request_frames(key, version, rnd, FRAMES_PER_VERSION)]
    frame_fuzz.send_frames(bootstrap, frames, wait_s=0.3)
    assert_process_serves(proc, bootstrap)
