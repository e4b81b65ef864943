"""The direct channel: version negotiation and requests against the sandbox, and TLS and SASL
(PLAIN, SCRAM) against a small test broker, since the sandbox speaks PLAINTEXT only."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import ssl
import subprocess

import pytest

from kafka_shell.protocol import codec
from kafka_shell.connection.channel import Channel, ConnectionLost, SecuritySetupError
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.connection.sasl import ScramClient
from kafka_shell.base.errors import KafkaCallError, NotSupported, UsageError
from tests.loopback import LoopbackServer


METADATA, SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE = 3, 17, 18, 36


# -- against the sandbox ---------------------------------------------------------------------------


def test_negotiates_versions_and_uses_the_newest_common_one(sandbox):
    ch = Channel(*sandbox.address(1), {}, timeout_s=5)
    try:
        theirs = ch.versions()[METADATA]
        assert ch.pick_version(METADATA) == min(theirs.stop, codec.kio_versions(METADATA).stop) - 1
        answer = ch.request(METADATA, {"topics": None})
        assert sorted(b["node_id"] for b in answer["brokers"]) == [1, 2, 3]
        assert answer["controller_id"] in (1, 2, 3)  # KRaft: a random live broker, as Kafka answers
        old = ch.request(METADATA, {"topics": None}, version=1)  # an explicit version works too
        assert old["controller_id"] in (1, 2, 3)
    finally:
        ch.close()


def test_api_the_broker_lacks_is_not_supported(sandbox):
    ch = Channel(*sandbox.address(2), {}, timeout_s=5)
    try:
        with pytest.raises(NotSupported, match=r"does not support GetReplicaLogInfo .*offers none"):
            ch.request(ApiKey.GET_REPLICA_LOG_INFO, {})  # KAFKA-20098's RPC: listed only with --seed-apis
        with pytest.raises(NotSupported, match=r"Metadata v99"):
            ch.request(METADATA, {}, version=99)
        assert not ch.closed  # nothing was sent
    finally:
        ch.close()


def test_read_timeout_closes_the_channel_and_says_the_request_was_sent(sandbox):
    ch = Channel(*sandbox.address(1), {}, timeout_s=0.2)
    sandbox.delay(1, 300)
    with pytest.raises(ConnectionLost) as err:
        ch.request(METADATA, {"topics": []})
    assert err.value.sent and ch.closed
    assert str(err.value) == "{}:{} did not answer Metadata in time".format(*sandbox.address(1))
    with pytest.raises(ConnectionLost):
        ch.request(METADATA, {"topics": []})
    sandbox.heal()


def test_connection_refused_is_connection_lost_before_sending():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionLost, match=f"127.0.0.1:{port} refused the connection") as err:
        Channel("127.0.0.1", port, {}, timeout_s=1)
    assert not err.value.sent


# -- SCRAM against the RFC test vectors ------------------------------------------------------------


def test_scram_sha1_rfc5802_vector():
    client = ScramClient("SCRAM-SHA-1", "user", "pencil", nonce="fyko+d2lbbFgONRv9qkxdawL", hash_name="sha1")
    assert client.first_message() == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    final = client.final_message(b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    assert final == b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    client.verify(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")
    with pytest.raises(KafkaCallError, match="signature is wrong"):
        client.verify(b"v=" + base64.b64encode(b"x" * 20))


def test_scram_sha256_rfc7677_vector():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.final_message(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                 b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def test_scram_escapes_user_names_and_rejects_a_foreign_nonce():
    client = ScramClient("SCRAM-SHA-512", "a=b,c", "pw", nonce="abc")
    assert client.first_message() == b"n,,n=a=3Db=2Cc,r=abc"
    with pytest.raises(KafkaCallError, match="invalid"):
        client.final_message(b"r=zzz,s=QSXCR+Q6sek8bf92,i=4096")


# -- TLS and SASL against a small test broker ----------------------------------------------------


class TestBroker(LoopbackServer):
    """A one-broker Kafka endpoint on 127.0.0.1 that does ApiVersions (v0..v2 only, so clients
    must fall back), SASL PLAIN and SCRAM-SHA-256 for one user, and Metadata; optionally TLS."""

    __test__ = False
    SALT, ITERATIONS = b"kafka-shell-salt", 4096

    def __init__(self, user: str, password: str, tls: ssl.SSLContext | None = None):
        self.user, self.password, self.tls = user, password, tls
        self.authenticated: list[str] = []
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            state: dict = {}
            while True:
                body = self.read_request(conn)
                if body is None:
                    return
                api_key, version, correlation_id = codec.peek_header(body)
                if api_key == API_VERSIONS and version > 2:
                    reply = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]}
                    version = 0
                else:
                    reply = self._answer(api_key, codec.decode_request(body)[1], state)
                entity = codec.build(codec.response_schema(api_key, version), reply)
                conn.sendall(codec.encode_response(entity, correlation_id))
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def _answer(self, api_key: int, request, state: dict) -> dict:
        if api_key == API_VERSIONS:
            keys = [(18, 0, 2), (17, 0, 1), (36, 0, 2), (3, 0, 12)]
            return {"error_code": 0, "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                                                  for k, lo, hi in keys]}
        if api_key == SASL_HANDSHAKE:
            offered = ["PLAIN", "SCRAM-SHA-256"]
            state["mechanism"] = request.mechanism
            return {"error_code": 0 if request.mechanism in offered else 33, "mechanisms": offered}
        if api_key == SASL_AUTHENTICATE:
            return self._sasl(state, bytes(request.auth_bytes))
        if api_key == METADATA:
            if self.authenticated[-1:] != [self.user]:
                raise OSError("not authenticated")  # drop the connection, as Kafka does
            return {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port}],
                    "cluster_id": "test", "controller_id": 1, "topics": []}
        raise OSError(f"unexpected api {api_key}")

    def _sasl(self, state: dict, token: bytes) -> dict:
        failed = {"error_code": 58, "error_message": "Authentication failed: Invalid credentials",
                  "auth_bytes": b""}
        if state["mechanism"] == "PLAIN":
            _, user, password = token.decode().split("\0")
            if (user, password) != (self.user, self.password):
                return failed
            self.authenticated.append(user)
            return {"error_code": 0, "auth_bytes": b""}
        salted = hashlib.pbkdf2_hmac("sha256", self.password.encode(), self.SALT, self.ITERATIONS)
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        if "first" not in state:  # client-first: n,,n=user,r=nonce
            state["first"] = token.decode()[3:]
            nonce = dict(p.split("=", 1) for p in state["first"].split(","))["r"] + "srv"
            state["server_first"] = f"r={nonce},s={base64.b64encode(self.SALT).decode()},i={self.ITERATIONS}"
            return {"error_code": 0, "auth_bytes": state["server_first"].encode()}
        final = token.decode()
        without_proof, proof = final.rsplit(",p=", 1)
        auth = f"{state['first']},{state['server_first']},{without_proof}".encode()
        signature = hmac.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
        claimed_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature))
        if hashlib.sha256(claimed_key).digest() != hashlib.sha256(client_key).digest():
            return failed
        self.authenticated.append(state["first"].split(",")[0][2:])
        server_key = hmac.new(salted, b"Server Key", "sha256").digest()
        verifier = base64.b64encode(hmac.new(server_key, auth, "sha256").digest()).decode()
        return {"error_code": 0, "auth_bytes": f"v={verifier}".encode()}


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (made with the openssl tool)."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return str(cert), str(key)


@pytest.fixture
def broker():
    b = TestBroker("alice", "alice-secret")
    yield b
    b.close()


def _sasl(mechanism: str, password: str = "alice-secret", security: str = "SASL_PLAINTEXT") -> dict:
    return {"security.protocol": security, "sasl.mechanisms": mechanism,
            "sasl.username": "alice", "sasl.password": password}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_login_then_requests(broker, mechanism):
    ch = Channel("127.0.0.1", broker.port, _sasl(mechanism), timeout_s=5)
    try:
        assert ch.versions()[API_VERSIONS] == range(0, 3)  # fell back from our v4 to v2
        assert ch.request(METADATA, {"topics": None})["cluster_id"] == "test"
    finally:
        ch.close()
    assert broker.authenticated == ["alice"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_wrong_password_fails_without_showing_it(broker, mechanism):
    with pytest.raises(KafkaCallError) as err:
        Channel("127.0.0.1", broker.port, _sasl(mechanism, password="wrong-pass"), timeout_s=5)
    assert err.value.code == 58
    assert "Invalid credentials" in str(err.value) and "wrong-pass" not in str(err.value)


def test_jaas_config_credentials_work(broker):
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
             "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                                 'required username="alice" password="alice-secret";'}
    Channel("127.0.0.1", broker.port, props, timeout_s=5).close()
    assert broker.authenticated == ["alice"]


def test_mechanism_the_broker_does_not_enable(broker):
    with pytest.raises(KafkaCallError, match="does not enable SASL mechanism SCRAM-SHA-512 "
                                             r"\(it offers PLAIN, SCRAM-SHA-256\)"):
        Channel("127.0.0.1", broker.port, _sasl("SCRAM-SHA-512"), timeout_s=5)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "NTLM"])
def test_mechanisms_the_channel_lacks_are_named_before_connecting(mechanism):
    props = {"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism}
    with pytest.raises(NotSupported) as err:
        Channel("127.0.0.1", 1, props, timeout_s=1)  # port 1: proves nothing was attempted
    assert f"cannot log in with SASL mechanism {mechanism}" in str(err.value)
    assert "none works with this setting" in str(err.value)


def test_unknown_security_protocol_is_a_usage_error():
    with pytest.raises(UsageError, match="security.protocol"):
        Channel("127.0.0.1", 1, {"security.protocol": "tls"}, timeout_s=1)


def test_ssl_with_ca_and_sasl_scram(certificate):
    cert, key = certificate
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    b = TestBroker("alice", "alice-secret", tls=server_ctx)
    try:
        props = {**_sasl("SCRAM-SHA-256", security="SASL_SSL"), "ssl.ca.location": cert}
        ch = Channel("127.0.0.1", b.port, props, timeout_s=5)
        assert ch.request(METADATA, {"topics": None})["controller_id"] == 1
        ch.close()
        assert b.authenticated == ["alice"]
        with pytest.raises(SecuritySetupError, match="TLS handshake with .* failed: the broker's "
                           "certificate is not trusted: self-signed certificate"):
            Channel("127.0.0.1", b.port, {"security.protocol": "SSL"}, timeout_s=5)  # CA unknown
        unverified = {"security.protocol": "SSL", "enable.ssl.certificate.verification": "false",
                      **_sasl("PLAIN", security="SASL_SSL")}
        Channel("127.0.0.1", b.port, unverified, timeout_s=5).close()
    finally:
        b.close()


def test_plain_message_layout():
    from kafka_shell.connection.sasl import plain_message
    assert plain_message("u", "p") == b"\0u\0p"
