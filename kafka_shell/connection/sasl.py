"""The client side of SASL for the direct channel: one class per mechanism, found by name.

A mechanism gives the first token (`start`) and answers each server token (`respond`) until it
returns None: the login is complete. The channel sends each token in a SaslAuthenticate request
after SaslHandshake v1 (KIP-152), as Kafka's clients do. Add a mechanism by registering a factory
in CLIENT_MECHANISMS; `kafka_shell.connection.client_config.check_client_config` and the channel both
accept exactly the mechanisms listed there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from typing import Protocol

from kafka_shell.connection.client_config import sasl_credentials
from kafka_shell.protocol.codes import Error
from kafka_shell.base.errors import KafkaCallError, UsageError

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ClientMechanism(Protocol):
    def start(self) -> bytes:
        """The first token the client sends."""

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token for the server's answer; None when the login is complete."""


def _credentials(mechanism: str, props: dict[str, str]) -> tuple[str, str]:
    user, password = sasl_credentials(props)
    if user is None or password is None:
        raise UsageError(f"SASL {mechanism} needs sasl.username and sasl.password "
                         "(or sasl.jaas.config with username and password).")
    return user, password


def plain_message(user: str, password: str) -> bytes:
    """RFC 4616: authzid NUL authcid NUL passwd (empty authzid)."""
    return b"\0" + user.encode() + b"\0" + password.encode()


class PlainClient:
    def __init__(self, props: dict[str, str], host: str):
        self._token = plain_message(*_credentials("PLAIN", props))

    def start(self) -> bytes:
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        return None


class ScramClient:
    """The client side of SCRAM (RFC 5802) without channel binding, as Kafka uses it."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None,
                 hash_name: str | None = None):
        self.hash_name = hash_name or SCRAM_HASHES[mechanism]
        self._password = password.encode()
        self._nonce = nonce or base64.b64encode(os.urandom(24)).decode()
        name = user.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={name},r={self._nonce}"
        self._server_signature = b""
        self._step = 0

    @classmethod
    def from_properties(cls, mechanism: str) -> Callable[[dict[str, str], str], ScramClient]:
        return lambda props, host: cls(mechanism, *_credentials(mechanism, props))

    def start(self) -> bytes:
        return self.first_message()

    def respond(self, challenge: bytes) -> bytes | None:
        self._step += 1
        if self._step == 1:
            return self.final_message(challenge)
        self.verify(challenge)
        return None

    def first_message(self) -> bytes:
        return ("n,," + self._client_first_bare).encode()

    def final_message(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = _scram_attributes(text)
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), attrs.get("i")
        if not nonce.startswith(self._nonce) or salt is None or iterations is None:
            raise KafkaCallError("SCRAM: the broker's first message is invalid (nonce, salt or "
                                 "iteration count missing).", code=Error.sasl_authentication_failed)
        salted = hashlib.pbkdf2_hmac(self.hash_name, self._password, base64.b64decode(salt), int(iterations))
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        without_proof = f"c=biws,r={nonce}"  # biws = base64("n,,"): no channel binding
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _scram_attributes(server_final.decode())
        if "e" in attrs:
            raise KafkaCallError(f"SCRAM authentication failed: {attrs['e']}", code=Error.sasl_authentication_failed)
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), self._server_signature):
            raise KafkaCallError("SCRAM: the broker's signature is wrong (it does not know the "
                                 "password); not trusting it.", code=Error.sasl_authentication_failed)

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash_name).digest()


def _scram_attributes(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(",") if "=" in part)


def _gssapi(props: dict[str, str], host: str) -> ClientMechanism:
    from kafka_shell.connection.sasl_gssapi import GssapiClient  # imports the gssapi package
    return GssapiClient(props, host)


def _oauthbearer(props: dict[str, str], host: str) -> ClientMechanism:
    from kafka_shell.connection.sasl_oauthbearer import OAuthBearerClient  # imports urllib (token fetch)
    return OAuthBearerClient(props, host)


# name -> factory(properties, broker host) -> mechanism
CLIENT_MECHANISMS: dict[str, Callable[[dict[str, str], str], ClientMechanism]] = {
    "PLAIN": PlainClient,
    "SCRAM-SHA-256": ScramClient.from_properties("SCRAM-SHA-256"),
    "SCRAM-SHA-512": ScramClient.from_properties("SCRAM-SHA-512"),
    "GSSAPI": _gssapi,
    "OAUTHBEARER": _oauthbearer,
}
