"""The sandbox's security seams, shared by its SASL listeners and its admin APIs.

- `ServerMechanism`: the broker side of one SASL mechanism. A listener that takes SASL creates
  one per login (`SERVER_MECHANISMS[name](sandbox)`) and feeds it each SaslAuthenticate token
  until `complete`; then `principal` is the connection's Kafka principal ("User:alice").
  A failed login raises `SaslFailure` with the message Kafka would send.
- SCRAM credentials, kept as Kafka keeps them (ScramCredential: salt, StoredKey, ServerKey,
  iterations; never the password), per user and mechanism, on `cluster.scram_credentials`
  (see `scram_store`). They change by UserScramCredentialRecords and
  RemoveUserScramCredentialRecords (Kafka's ScramControlManager): AlterUserScramCredentials and
  the users a sandbox starts with write them; the SCRAM mechanism reads them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kafka_shell.sandbox import replay, tokens
from kafka_shell.sandbox.records import RemoveUserScramCredentialRecord, ReplayError, UserScramCredentialRecord

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState
    from kafka_shell.sandbox.server import Sandbox

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_MIN_ITERATIONS = 4096     # Kafka's ScramMechanism.minIterations
SCRAM_MAX_ITERATIONS = 16384    # Kafka's AlterUserScramCredentials limit


class SaslFailure(Exception):
    """A refused login: the message goes in SaslAuthenticate's error_message."""


def invalid_credentials(mechanism: str) -> SaslFailure:
    """Kafka's answer to any failure but a SaslAuthenticationException: the detail stays on the
    broker, since it may tell whether a user exists (SaslServerAuthenticator.handleSaslToken)."""
    return SaslInvalidCredentials("Authentication failed during authentication due to invalid credentials "
                       f"with SASL mechanism {mechanism}")


class ServerMechanism(Protocol):
    complete: bool
    principal: str              # valid once complete
    # When the credential expires (OAUTHBEARER token expiry), in ms since the epoch, as Kafka's
    # CREDENTIAL_LIFETIME_MS negotiated property; None: it does not.
    lifetime_ms: int | None

    def step(self, token: bytes) -> bytes:
        """Take the client's token, give the server's answer (b"" when there is none)."""


def _gssapi(sandbox: Sandbox) -> ServerMechanism:
    from kafka_shell.sandbox.kerberos import GssapiServer  # needs the gssapi package
    return GssapiServer(sandbox)


def _oauthbearer(sandbox: Sandbox) -> ServerMechanism:
    from kafka_shell.sandbox.oauthbearer import OAuthBearerServer
    return OAuthBearerServer(sandbox)


# name -> factory(sandbox) -> a new login's mechanism
SERVER_MECHANISMS: dict[str, Callable[[Sandbox], ServerMechanism]] = {
    "GSSAPI": _gssapi,
    "OAUTHBEARER": _oauthbearer,
}


@dataclass(frozen=True)
class ScramCredential:
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(cls, mechanism: str, salted_password: bytes, salt: bytes,
                             iterations: int) -> ScramCredential:
        """As AlterUserScramCredentials sends it (the client salts; the broker derives the keys)."""
        hash_name = SCRAM_HASHES[mechanism]
        client_key = hmac.new(salted_password, b"Client Key", hash_name).digest()
        return cls(mechanism, salt, iterations, hashlib.new(hash_name, client_key).digest(),
                   hmac.new(salted_password, b"Server Key", hash_name).digest())

    @classmethod
    def from_password(cls, mechanism: str, password: str, iterations: int = SCRAM_MIN_ITERATIONS,
                      salt: bytes | None = None) -> ScramCredential:
        salt = salt if salt is not None else os.urandom(32)
        salted = hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password.encode(), salt, iterations)
        return cls.from_salted_password(mechanism, salted, salt, iterations)


def scram_store(cluster: ClusterState) -> dict[str, dict[str, ScramCredential]]:
    """user -> mechanism -> credential."""
    return cluster.scram_credentials


def credential_record(user: str, c: ScramCredential) -> UserScramCredentialRecord:
    return UserScramCredentialRecord(user, c.mechanism, c.salt, c.stored_key, c.server_key, c.iterations)


def replay_credential(cluster: ClusterState, record: UserScramCredentialRecord) -> None:
    if record.mechanism not in SCRAM_HASHES:
        raise ReplayError(f"holds a credential of mechanism {record.mechanism!r}, which is not SCRAM's")
    cluster.scram_credentials.setdefault(record.name, {})[record.mechanism] = ScramCredential(
        record.mechanism, record.salt, record.iterations, record.stored_key, record.server_key)


def replay_remove_credential(cluster: ClusterState, record: RemoveUserScramCredentialRecord) -> None:
    creds = cluster.scram_credentials.get(record.name, {})
    if creds.pop(record.mechanism, None) is None:
        raise ReplayError(f"removes a {record.mechanism} credential of {record.name!r}, which it does not have")
    if not creds:
        del cluster.scram_credentials[record.name]


def snapshot(cluster: ClusterState) -> list[UserScramCredentialRecord]:
    return [credential_record(user, c) for user, creds in cluster.scram_credentials.items() for c in creds.values()]


REPLAY = {UserScramCredentialRecord: replay_credential, RemoveUserScramCredentialRecord: replay_remove_credential}


class SaslInvalidCredentials(SaslFailure):
    """A refused login whose detail must not reach the client (Kafka's SaslException): the
    authenticator answers Kafka's generic "due to invalid credentials" message instead."""


class PlainServer:
    """Kafka's PlainSaslServer, checking the sandbox's users (its JAAS `user_NAME="password"`)."""

    def __init__(self, sandbox: Sandbox):
        self._users = sandbox.users
        self.complete = False
        self.principal = ""
        self.lifetime_ms: int | None = None

    def step(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
        authzid, user, password = parts
        if not user:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is "
                              "different from username")
        self.principal, self.complete = f"User:{user}", True
        return b""


class ScramServer:
    """Kafka's ScramSaslServer (RFC 5802 without channel binding) over `scram_store`."""

    def __init__(self, mechanism: str, sandbox: Sandbox):
        self.mechanism = mechanism
        self._hash = SCRAM_HASHES[mechanism]
        self._store = scram_store(sandbox.cluster)
        self._cluster = sandbox.cluster
        self.token_authenticated = False
        self._credential: ScramCredential | None = None
        self._client_first_bare = self._server_first = self._nonce = self._gs2 = ""
        self.complete = False
        self.principal = ""
        self.lifetime_ms: int | None = None

    @classmethod
    def factory(cls, mechanism: str) -> Callable[[Sandbox], ScramServer]:
        return lambda sandbox: cls(mechanism, sandbox)

    def step(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        if self._credential is None:
            return self._first(text)
        if not self.complete:
            return self._final(text)
        raise SaslFailure(f"Unexpected challenge in Sasl server state {self.mechanism} COMPLETE")

    def _first(self, text: str) -> bytes:
        gs2_flag, authzid, bare = (text.split(",", 2) + ["", ""])[:3]
        attrs = _attributes(bare)
        if gs2_flag not in ("n", "y") or "n" not in attrs or "r" not in attrs:
            raise SaslInvalidCredentials("Invalid SCRAM client first message")
        user = attrs["n"].replace("=2C", ",").replace("=3D", "=")
        if attrs.get("tokenauth") == "true":
            # A delegation token: its id as the user name, its owner as the principal (sandbox.tokens).
            token = tokens.tokens(self._cluster).get(user)
            credential = tokens.scram_credential(self._cluster, user, self.mechanism)
            if token is None or credential is None:
                raise SaslInvalidCredentials("Authentication failed: Invalid user credentials")
            self.token_authenticated = True
            self._gs2 = f"{gs2_flag},{authzid},"
            self._credential, self._client_first_bare, self.principal = credential, bare, token.owner
            return self._server_first_message(credential, attrs["r"])
        credential = self._store.get(user, {}).get(self.mechanism)
        if credential is None or credential.iterations < SCRAM_MIN_ITERATIONS:
            raise SaslInvalidCredentials("Authentication failed: Invalid user credentials")
        if authzid and authzid.removeprefix("a=") != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is "
                              "different from username")
        self._gs2 = f"{gs2_flag},{authzid},"
        self._credential, self._client_first_bare, self.principal = credential, bare, f"User:{user}"
        return self._server_first_message(credential, attrs["r"])

    def _server_first_message(self, credential: ScramCredential, client_nonce: str) -> bytes:
        self._nonce = client_nonce + base64.b64encode(os.urandom(18)).decode()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._credential is not None
        without_proof, _, proof_attr = text.rpartition(",p=")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise SaslInvalidCredentials("Invalid client nonce in the final client message.")
        if attrs.get("c") != base64.b64encode(self._gs2.encode()).decode():
            raise SaslInvalidCredentials("Authentication failed: Invalid client final message")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(self._credential.stored_key, auth_message, self._hash).digest()
        try:
            proof = base64.b64decode(proof_attr, validate=True)
        except ValueError:
            raise SaslInvalidCredentials("Authentication failed: Invalid client final message") from None
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if len(proof) != len(signature) or not hmac.compare_digest(
                hashlib.new(self._hash, client_key).digest(), self._credential.stored_key):
            raise SaslInvalidCredentials("Invalid client credentials")
        self.complete = True
        server_signature = hmac.new(self._credential.server_key, auth_message, self._hash).digest()
        return f"v={base64.b64encode(server_signature).decode()}".encode()


def _attributes(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)


def add_user(sandbox: Sandbox, user: str, password: str) -> None:
    """A user who logs in with PLAIN and both SCRAM mechanisms (as `kafka-storage format
    --add-scram` and a JAAS `user_NAME` entry would set up)."""
    sandbox.users[user] = password
    replay.apply_all(sandbox.cluster, [credential_record(user, ScramCredential.from_password(mechanism, password))
                                       for mechanism in SCRAM_HASHES])


SERVER_MECHANISMS.update({
    "PLAIN": PlainServer,
    "SCRAM-SHA-256": ScramServer.factory("SCRAM-SHA-256"),
    "SCRAM-SHA-512": ScramServer.factory("SCRAM-SHA-512"),
})
