"""Frames are validated before kio's native reader sees them: a length that claims more than the
frame holds is a ProtocolError, never an allocation that aborts the process. On the client side,
a broker's malformed answer fails that command with one line."""

from __future__ import annotations

import random
import signal
import socket
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_shell.protocol import codec, frames
from kafka_shell.connection.channel import Channel, MalformedAnswer
from kafka_shell.protocol.codes import ApiKey
from tests import frame_fuzz
from tests.test_oneshot import shell
from tests.loopback import LoopbackServer

API_KEYS = sorted({k for k, _ in frame_fuzz.all_versions()})
FRAMES_PER_EXAMPLE = 100
EXAMPLES = 10  # 1,000 requests and 1,000 responses per API version


def test_the_21_byte_metadata_frame_is_refused():
    body = frame_fuzz.METADATA_V12_HOSTILE[4:]
    with pytest.raises(codec.ProtocolError, match="topics: an array of 4294967294 elements"):
        codec.decode_request(body)


@pytest.mark.parametrize("api_key, version", [(ApiKey.DELETE_TOPICS, 6), (ApiKey.CREATE_TOPICS, 7),
                                              (ApiKey.METADATA, 12), (ApiKey.METADATA, 3)])
def test_a_huge_array_length_right_after_the_header_is_refused(api_key, version):
    cls = codec.request_schema(api_key, version)
    header = codec.serialize(codec.build(cls.__header_schema__, {
        "request_api_key": api_key, "request_api_version": version, "correlation_id": 1,
        "client_id": "x"}))
    length = b"\xff\xff\xff\xff\x0f" if cls.__flexible__ else struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(codec.ProtocolError, match="an array of"):
        codec.decode_request(header + length)


def test_every_valid_message_passes_validation():
    for api_key, version in frame_fuzz.all_versions():
        header, entity = codec.decode_request(frame_fuzz.sample_request(api_key, version))
        assert header.request_api_version == version  # type: ignore[attr-defined]
        cls = codec.response_schema(api_key, version)
        correlation_id, answer = codec.decode_response(cls, frame_fuzz.sample_response(api_key, version))
        assert correlation_id == 7 and isinstance(answer, cls)


def test_the_validator_ends_where_kio_ends():
    """The walk reads each message exactly as kio does: same end, for every schema."""
    for api_key, version in frame_fuzz.all_versions():
        for cls, body in ((codec.request_schema(api_key, version), frame_fuzz.sample_request(api_key, version)),
                          (codec.response_schema(api_key, version), frame_fuzz.sample_response(api_key, version))):
            header_end = frames.check(cls.__header_schema__, body, 0)
            assert header_end == codec._reader(cls.__header_schema__)(body, 0)[1], cls
            end = frames.check(cls, body, header_end)
            assert end == header_end + codec._reader(cls)(body, header_end)[1] == len(body), cls


def test_tagged_field_must_fill_its_declared_size():
    cls = codec.response_schema(ApiKey.API_VERSIONS, 3)
    body = bytearray(frame_fuzz.sample_response(ApiKey.API_VERSIONS, 3))
    # The response ends with its tagged-field count (0): claim one tagged field, tag 0
    # (supported_features), of 1 byte, holding an array that says 2^32 - 2 elements.
    assert body[-1] == 0
    body[-1:] = b"\x01\x00\x01\xff\xff\xff\xff\x0f"
    with pytest.raises(codec.ProtocolError):
        codec.decode_response(cls, bytes(body))


def test_min_size_of_metadata_partition():
    cls = codec.response_schema(ApiKey.METADATA, 12)
    partition = codec.element_class(codec.element_class(cls, "topics"), "partitions")
    # error_code 2 + partition_index 4 + leader_id 4 + leader_epoch 4 + 3 empty arrays + tags
    assert frames.min_size(partition) == 2 + 4 + 4 + 4 + 3 + 1


def _fuzz(decode, base: bytes, seed: int, keep: int) -> int:
    """Decode FRAMES_PER_EXAMPLE mutations of `base`; each is decoded or refused, nothing else
    (an abort would end the whole test process). Returns how many were refused."""
    rnd = random.Random(seed)
    refused = 0
    for _ in range(FRAMES_PER_EXAMPLE):
        try:
            decode(frame_fuzz.mutate(base, rnd, keep))
        except codec.ProtocolError:
            refused += 1
    return refused


@pytest.mark.parametrize("api_key", API_KEYS)
@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(seed=st.integers(0, 2**64 - 1))
def test_client_decoder_survives_hostile_answers(api_key, seed):
    refused = 0
    for version in codec.kio_versions(api_key):
        cls = codec.response_schema(api_key, version)
        refused += _fuzz(lambda body, c=cls: codec.decode_response(c, body),
                         frame_fuzz.sample_response(api_key, version), seed, keep=0)
    assert refused > 0  # the mutations do produce frames that must be refused


@pytest.mark.parametrize("api_key", API_KEYS)
@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(seed=st.integers(0, 2**64 - 1))
def test_broker_decoder_survives_hostile_requests(api_key, seed):
    refused = 0
    for version in codec.kio_versions(api_key):
        refused += _fuzz(codec.decode_request, frame_fuzz.sample_request(api_key, version), seed, keep=4)
    assert refused > 0


# -- the shell against a hostile broker ----------------------------------------------------------


def huge_api_keys(correlation_id: int) -> bytes:
    """ApiVersions answer (header v0, error_code 0) whose api_keys array claims 2^32 - 2 elements:
    the client-side twin of the 21-byte frame."""
    return struct.pack(">ih", correlation_id, 0) + b"\xff\xff\xff\xff\x0f"


def truncated(correlation_id: int) -> bytes:
    """An answer holding nothing but its correlation id."""
    return struct.pack(">i", correlation_id)


class HostileBroker(LoopbackServer):
    """Answers every request with `answer(correlation_id)`."""

    def __init__(self, answer) -> None:
        self.answer = answer
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    head = conn.recv(4, socket.MSG_WAITALL)
                    if len(head) < 4:
                        return
                    body = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                    (correlation_id,) = struct.unpack_from(">i", body, 4)
                    conn.sendall(codec.frame(self.answer(correlation_id)))
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("answer, what", [(huge_api_keys, "an array of 4294967294 elements"),
                                          (truncated, "ends early")])
def test_channel_fails_the_request_with_one_line(answer, what):
    broker = HostileBroker(answer)
    host, port = broker.address.split(":")
    try:
        with pytest.raises(MalformedAnswer) as caught:
            Channel(host, int(port), timeout_s=5)
    finally:
        broker.close()
    message = str(caught.value)
    assert message.startswith(f"Malformed answer from {broker.address} (")  # no broker id is known yet
    assert what in message and "\n" not in message


@pytest.mark.parametrize("answer", [huge_api_keys, truncated])
def test_shell_survives_a_hostile_api_versions_answer(answer):
    broker = HostileBroker(answer)
    try:
        p = shell("--bootstrap-server", broker.address, "--timeout", "2", "--command", "list-topics")
    finally:
        broker.close()
    assert p.returncode != -signal.SIGABRT
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr and "Internal error" not in p.stderr
    assert lines[0].startswith(f"Malformed answer from {broker.address} (")  # at once: waiting changes nothing
