"""The sandbox's security seams, shared by its SASL listeners and its admin APIs.

- `ServerMechanism`: the broker side of one SASL mechanism. A listener that takes SASL creates
  one per login (`SERVER_MECHANISMS[name](sandbox)`) and feeds it each SaslAuthenticate token
  until `complete`; then `principal` is the connection's Kafka principal ("User:alice").
  A failed login raises `SaslFailure` with the message Kafka would send.
- SCRAM credentials, kept as Kafka keeps them (ScramCredential: salt, StoredKey, ServerKey,
  iterations; never the password), per user and mechanism, on `cluster.scram_credentials`
  (see `scram_store`). AlterUserScramCredentials writes them; the SCRAM mechanism reads them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import Cluster
    from kafka_shell.sandbox.server import Sandbox

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_MIN_ITERATIONS = 4096     # Kafka's ScramMechanism.minIterations
SCRAM_MAX_ITERATIONS = 16384    # Kafka's AlterUserScramCredentials limit


class SaslFailure(Exception):
    """A refused login: the message goes in SaslAuthenticate's error_message."""


def invalid_credentials(mechanism: str) -> SaslFailure:
    """Kafka's answer to any failure but a SaslAuthenticationException: the detail stays on the
    broker, since it may tell whether a user exists (SaslServerAuthenticator.handleSaslToken)."""
    return SaslFailure("Authentication failed during authentication due to invalid credentials "
                       f"with SASL mechanism {mechanism}")


class ServerMechanism(Protocol):
    complete: bool
    principal: str              # valid once complete
    lifetime_ms: int | None     # credential lifetime (OAUTHBEARER token expiry), else None

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


def scram_store(cluster: Cluster) -> dict[str, dict[str, ScramCredential]]:
    """user -> mechanism -> credential (created empty on first use)."""
    return cluster.extras.setdefault("scram_credentials", {})  # type: ignore[return-value]
