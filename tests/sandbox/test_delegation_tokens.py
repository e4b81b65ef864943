"""Delegation tokens on the sandbox and on real Kafka 4.4, with raw requests over SASL: create,
describe, renew and expire as the owner and a renewer, Kafka's refusals (PLAINTEXT listeners,
other owners, principal types, unknown HMACs), and a SCRAM login with the token (tokenauth)."""

from __future__ import annotations

import hashlib
import hmac
import socket
import struct
import time

import pytest

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.sasl import ScramClient, plain_message
from tests.real_kafka import SECURED_MECHANISMS, SECURED_TOKEN_SECRET, SECURED_USERS, SUPER_USERS
from tests.sandbox.wire import read_exactly

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


class Connection:
    """One connection that sends requests and reads their answers."""

    def __init__(self, address: tuple[str, int]):
        self.sock = socket.create_connection(address, timeout=15)
        self.correlation = 0

    def call(self, api_key: int, version: int, body: dict) -> dict:
        self.correlation += 1
        entity = codec.build(codec.request_schema(api_key, version), body)
        self.sock.sendall(codec.encode_request(entity, self.correlation, "kafka-shell-tests"))
        (size,) = struct.unpack(">i", read_exactly(self.sock, 4))
        data = read_exactly(self.sock, size)
        # kio cannot read the -1 times of refusals: these answers are read by hand.
        if api_key == ApiKey.CREATE_DELEGATION_TOKEN:
            return create_answer(data)
        if api_key in (ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN):
            error_code, expiry = struct.unpack_from(">hq", data, 5)   # after the header and its tags
            return {"error_code": error_code, "expiry_timestamp": expiry}
        _, answer = codec.decode_response(codec.response_schema(api_key, version), data)
        return codec.to_dict(answer)  # type: ignore[return-value]

    def close(self) -> None:
        self.sock.close()


class Session(Connection):
    """One SASL_PLAINTEXT connection, logged in (SaslHandshake v1, SaslAuthenticate v2)."""

    def __init__(self, address: tuple[str, int], mechanism: str, user: str, password: str, token: bool = False):
        super().__init__(address)
        assert self.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})["error_code"] == 0
        if mechanism == "PLAIN":
            self.login_error = self._authenticate(plain_message(user, password))[:2]
            return
        client = ScramClient(mechanism, user, password)
        if token:
            client._client_first_bare += ",tokenauth=true"   # Kafka's ScramExtensions for tokens
        code, message, challenge = self._authenticate(client.start())
        if code == 0:
            code, message, final = self._authenticate(client.respond(challenge) or b"")
            if code == 0:
                client.respond(final)
        self.login_error = (code, message)

    def _authenticate(self, token: bytes) -> tuple[int, str | None, bytes]:
        answer = self.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        return answer["error_code"], answer["error_message"], answer["auth_bytes"]


def create_answer(data: bytes) -> dict:
    """A CreateDelegationToken v3 answer (after the frame size), read by hand."""
    pos = 4

    def uvarint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    def blob() -> bytes:
        nonlocal pos
        n = uvarint() - 1
        pos += n
        return data[pos - n:pos]

    def fixed(fmt: str) -> int:
        nonlocal pos
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    uvarint()   # the header's tagged fields
    answer: dict = {"error_code": fixed(">h")}
    for name in ("principal_type", "principal_name", "token_requester_principal_type", "token_requester_principal_name"):
        answer[name] = blob().decode()
    for name in ("issue_timestamp", "expiry_timestamp", "max_timestamp"):
        answer[name] = fixed(">q")
    answer["token_id"], answer["hmac"] = blob().decode(), blob()
    return answer


def create(session: Session, renewers: list[tuple[str, str]], max_life_ms: int = -1, owner: tuple[str, str] | None = None) -> dict:
    return session.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, {
        "owner_principal_type": owner[0] if owner else None, "owner_principal_name": owner[1] if owner else None,
        "renewers": [{"principal_type": t, "principal_name": n} for t, n in renewers], "max_lifetime": max_life_ms})


def describe(session: Session, owners: list[tuple[str, str]] | None = None) -> dict:
    return session.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {
        "owners": None if owners is None else [{"principal_type": t, "principal_name": n} for t, n in owners]})


def until(ask, done, timeout_s: float = 30.0):
    """ask() until done(answer), or its answer at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not done(answer := ask()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


def epoch_ms(value) -> int:
    return int(value.timestamp() * 1000) if hasattr(value, "timestamp") else int(value)


def days(ms: int) -> float:
    return ms / DAY_MS


def created_shape(answer: dict, secret: str) -> dict:
    """A CreateDelegationToken answer with its id, HMAC and times replaced by what they must be."""
    issued, expiry, most = (epoch_ms(answer[k]) for k in ("issue_timestamp", "expiry_timestamp", "max_timestamp"))
    token_id = answer["token_id"]
    return {**{k: v for k, v in answer.items() if k not in ("token_id", "hmac", "issue_timestamp", "expiry_timestamp",
                                                            "max_timestamp", "throttle_time")},
            "token_id": len(token_id), "times": (expiry - issued, most - issued) if issued > 0 else (issued, expiry, most),
            "hmac": token_id != "" and answer["hmac"] == hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()}


def described(answer: dict) -> tuple:
    return answer["error_code"], sorted(
        (t["principal_type"], t["principal_name"], t["token_requester_principal_name"],
         sorted((r["principal_type"], r["principal_name"]) for r in t["renewers"]), t["max_timestamp"] - t["issue_timestamp"])
        for t in answer["tokens"])


def scenario(address: tuple[str, int]) -> list:
    out: list = []
    admin = Session(address, "PLAIN", "admin", SECURED_USERS["admin"])
    alice = Session(address, "SCRAM-SHA-512", "alice", SECURED_USERS["alice"])
    try:
        out.append(("logins", admin.login_error, alice.login_error))
        made = create(admin, [("User", "alice")], HOUR_MS)
        token_id, mac = made["token_id"], made["hmac"]
        out.append(("created", created_shape(made, SECURED_TOKEN_SECRET)))
        out.append(("a default one", created_shape(create(admin, [], -1), SECURED_TOKEN_SECRET)))
        out.append(("for another owner", created_shape(create(alice, [], -1, owner=("User", "admin")), SECURED_TOKEN_SECRET)))
        out.append(("a group renewer", created_shape(create(admin, [("Group", "g")]), SECURED_TOKEN_SECRET)))
        # Brokers learn tokens from the metadata log a moment after the controller made them.
        out.append(("described to the owner", described(until(lambda: describe(admin), lambda a: len(a["tokens"]) == 2))))
        out.append(("described to the renewer", described(describe(alice))))
        out.append(("no owners", described(describe(admin, []))))
        out.append(("alice's", described(describe(admin, [("User", "alice")]))))
        renewed = alice.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": mac, "renew_period": 60_000})
        out.append(("renewed", renewed["error_code"], abs(epoch_ms(renewed["expiry_timestamp"]) - time.time() * 1000 - 60_000) < 30_000))
        out.append(("renew nothing", alice.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": b"nope", "renew_period": -1})["error_code"]))
        with_token = Session(address, "SCRAM-SHA-512", token_id, __import__("base64").b64encode(mac).decode(), token=True)
        try:
            out.append(("token login", with_token.login_error, described(describe(with_token))))
            out.append(("token connection creates", created_shape(create(with_token, []), SECURED_TOKEN_SECRET)))
            cluster = with_token.call(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                                  "endpoint_type": 1})
            out.append(("token connection as the owner", cluster["error_code"]))
        finally:
            with_token.close()
        wrong = Session(address, "SCRAM-SHA-512", token_id, "not-the-hmac", token=True)
        out.append(("token login, wrong HMAC", wrong.login_error))
        wrong.close()
        expired = alice.call(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": mac, "expiry_time_period": -1})
        out.append(("expired", expired["error_code"], abs(epoch_ms(expired["expiry_timestamp"]) - time.time() * 1000) < 30_000))
        out.append(("expire again", alice.call(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": mac, "expiry_time_period": -1})["error_code"]))
        out.append(("gone", described(until(lambda: describe(alice), lambda a: not a["tokens"]))))
        gone = Session(address, "SCRAM-SHA-512", token_id, __import__("base64").b64encode(mac).decode(), token=True)
        out.append(("token login after expiry", gone.login_error))
        gone.close()
        for t in describe(admin)["tokens"]:   # what is left, for the next run on the same cluster
            admin.call(ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": t["hmac"], "expiry_time_period": -1})
    finally:
        admin.close()
        alice.close()
    return out


def secured_sandbox(cluster) -> Sandbox:
    return Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], sasl_mechanisms=SECURED_MECHANISMS, users=SECURED_USERS,
                   authorizer=True, super_users=SUPER_USERS, tls_dir=str(cluster.tls_dir),
                   configs={"delegation.token.secret.key": SECURED_TOKEN_SECRET})


def test_delegation_tokens_as_kafka_4_has_them(kafka4_secured):
    theirs = scenario(("127.0.0.1", kafka4_secured.brokers[0].port))
    with secured_sandbox(kafka4_secured) as sb:
        ours = scenario(sb.address(1))
    assert [s for s in ours if s not in theirs] == [s for s in theirs if s not in ours]
    assert dict((s[0], s[1:]) for s in theirs)["token login"][0] == (0, "")


def test_token_requests_on_plaintext_are_refused_as_kafka_4_refuses_them(kafka4):
    def refusals(address) -> list:
        out = []
        for key, version, body in (
                (ApiKey.CREATE_DELEGATION_TOKEN, 3, {"owner_principal_type": None, "owner_principal_name": None,
                                                     "renewers": [], "max_lifetime": -1}),
                (ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": b"x", "renew_period": -1}),
                (ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": b"x", "expiry_time_period": -1}),
                (ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": None})):
            connection = Connection(address)
            answer = connection.call(key, version, body)
            connection.close()
            out.append({k: v for k, v in answer.items() if k != "throttle_time"})
        return out

    theirs = refusals(("127.0.0.1", kafka4.brokers[0].port))
    with Sandbox(brokers=1) as sb:
        assert refusals(sb.address(1)) == theirs
    assert theirs[0]["error_code"] == Error.delegation_token_request_not_allowed


def test_without_a_secret_key_tokens_are_disabled():
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], users={"admin": "pw"}) as sb:
        admin = Session(sb.address(1), "PLAIN", "admin", "pw")
        try:
            assert create(admin, [])["error_code"] == Error.delegation_token_auth_disabled
            assert describe(admin)["error_code"] == Error.delegation_token_auth_disabled
        finally:
            admin.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_with_either_scram_mechanism(mechanism):
    import base64
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], users={"admin": "pw"},
                 configs={"delegation.token.secret.key": "s"}) as sb:
        admin = Session(sb.address(1), "PLAIN", "admin", "pw")
        made = create(admin, [])
        admin.close()
        session = Session(sb.address(1), mechanism, made["token_id"], base64.b64encode(made["hmac"]).decode(), token=True)
        assert session.login_error == (0, "")
        assert sorted(p for _, p in sb.principals()) == ["User:admin"]
        session.close()
