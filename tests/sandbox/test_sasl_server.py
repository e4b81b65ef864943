"""The sandbox's SASL listeners as Kafka's SaslServerAuthenticator serves them, seen on the wire
through the shell's channel: what is allowed before the login, the mechanisms, the credentials
kept as Kafka keeps them, and the rules of re-authentication (KIP-368)."""

from __future__ import annotations

import socket
import struct

import pytest

from kafka_shell.protocol import codec

from kafka_shell.connection.channel import Channel, ConnectionLost
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.errors import KafkaCallError
from kafka_shell.sandbox.security import SCRAM_MIN_ITERATIONS, scram_store
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import read_exactly

USERS = {"alice": "alice-pw", "bob": "bob-pw"}


@pytest.fixture(scope="module")
def sb():
    with Sandbox(brokers=1, listeners=["PLAINTEXT", "SASL_PLAINTEXT"], users=USERS, reauth_ms=60000) as s:
        yield s


def sasl_port(sb: Sandbox) -> int:
    return int(sb.bootstrap_for("SASL_PLAINTEXT").split(":")[1])


def login(sb: Sandbox, mechanism: str, user: str = "alice") -> Channel:
    return Channel("127.0.0.1", sasl_port(sb), {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                                                "sasl.username": user, "sasl.password": USERS[user]}, timeout_s=10)


def test_before_the_login_only_api_versions_and_the_handshake_are_served(sb):
    ch = Channel("127.0.0.1", sasl_port(sb), {}, timeout_s=10)   # ApiVersions was answered
    ch._answered = True  # the raw protocol here, without the shell's diagnosis of the close
    answer = ch.request(ApiKey.SASL_HANDSHAKE, {"mechanism": "GSSAPI"}, version=1)
    assert answer["error_code"] == Error.unsupported_sasl_mechanism
    assert answer["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    with pytest.raises(ConnectionLost):                          # then the broker closes
        ch.request(ApiKey.METADATA, {"topics": []})
    ch = Channel("127.0.0.1", sasl_port(sb), {}, timeout_s=10)
    ch._answered = True
    with pytest.raises(ConnectionLost):                          # no answer to Metadata: closed
        ch.request(ApiKey.METADATA, {"topics": []})


def test_a_plaintext_listener_refuses_sasl_as_kafkaapis_does(sb):
    ch = Channel("127.0.0.1", int(sb.bootstrap.split(":")[1]), {}, timeout_s=10)
    assert ch.request(ApiKey.SASL_HANDSHAKE, {"mechanism": "PLAIN"}, version=1)["error_code"] == Error.illegal_sasl_state
    ch.close()


def test_scram_credentials_are_kept_as_kafka_keeps_them(sb):
    stored = sb.call(lambda: scram_store(sb.cluster)["alice"]["SCRAM-SHA-512"])
    assert stored.iterations == SCRAM_MIN_ITERATIONS and len(stored.salt) == 32
    assert b"alice-pw" not in stored.stored_key + stored.server_key + stored.salt
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        ch = login(sb, mechanism)
        assert ch.request(ApiKey.METADATA, {"topics": []})["brokers"]
        ch.close()


def test_an_unknown_scram_user_gets_kafkas_generic_message(sb):
    with pytest.raises(KafkaCallError) as failure:
        Channel("127.0.0.1", sasl_port(sb), {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                                             "sasl.username": "mallory", "sasl.password": "x"}, timeout_s=10)
    assert str(failure.value).endswith("Authentication failed during authentication due to invalid credentials "
                                       "with SASL mechanism SCRAM-SHA-256")
    assert failure.value.code == Error.sasl_authentication_failed


def test_re_authentication_keeps_the_mechanism_and_the_principal(sb):
    ch = login(sb, "PLAIN")
    ch._session_ends = 0.0          # due now: the next request logs in again first
    assert ch.request(ApiKey.METADATA, {"topics": []})["brokers"]
    ch._mechanism, ch._session_ends = "SCRAM-SHA-256", 0.0
    with pytest.raises(KafkaCallError, match="SASL mechanism 'SCRAM-SHA-256' requested by client is not "
                                             "supported for re-authentication of mechanism 'PLAIN'"):
        ch.request(ApiKey.METADATA, {"topics": []})
    ch = login(sb, "PLAIN")
    ch._props.update({"sasl.username": "bob", "sasl.password": USERS["bob"]})
    ch._session_ends = 0.0
    with pytest.raises(KafkaCallError, match="Cannot change principals during re-authentication from "
                                             "User.alice: User.bob"):
        ch.request(ApiKey.METADATA, {"topics": []})


def _send(sock: socket.socket, payload: bytes) -> bytes:
    """Write one size-prefixed frame, read one back."""
    sock.sendall(codec.frame(payload))
    size = struct.unpack(">i", read_exactly(sock, 4))[0]
    return read_exactly(sock, size)


def _request(api_key: int, version: int, body: dict) -> bytes:
    entity = codec.build(codec.request_schema(api_key, version), body)
    return codec.encode_request(entity, 7, "test")[4:]


def test_a_v0_handshake_takes_bare_tokens(sb):
    """SaslHandshake v0 (before KIP-152): the tokens that follow are bare frames, not
    SaslAuthenticate requests; after the login the connection serves requests as usual."""
    with socket.create_connection(("127.0.0.1", sasl_port(sb)), timeout=10) as sock:
        answer = _send(sock, _request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}))
        _, handshake = codec.decode_response(codec.response_schema(ApiKey.SASL_HANDSHAKE, 0), answer)
        assert handshake.error_code == Error.none  # type: ignore[attr-defined]
        assert _send(sock, b"\0alice\0alice-pw") == b""             # PLAIN: an empty answer
        answer = _send(sock, _request(ApiKey.METADATA, 12, {"topics": None}))
        _, metadata = codec.decode_response(codec.response_schema(ApiKey.METADATA, 12), answer)
        assert [b.node_id for b in metadata.brokers] == [1]  # type: ignore[attr-defined]
    with socket.create_connection(("127.0.0.1", sasl_port(sb)), timeout=10) as sock:
        _send(sock, _request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}))
        sock.sendall(codec.frame(b"\0alice\0wrong"))              # a refused login: closed
        assert sock.recv(1) == b""
