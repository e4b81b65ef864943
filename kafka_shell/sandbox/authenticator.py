"""A SASL listener's login, per connection: Kafka's SaslServerAuthenticator (KIP-43, KIP-152,
KIP-368) on top of the mechanisms in `security.SERVER_MECHANISMS`. After SaslHandshake v0 the
tokens come as bare frames (the answer too; a failure just closes), after v1 in
SaslAuthenticate requests.

Before the login completes only ApiVersions and SaslHandshake are served; any other request
closes the connection (ILLEGAL_SASL_STATE). SaslHandshake names the mechanism
(UNSUPPORTED_SASL_MECHANISM with the enabled list, then close); SaslAuthenticate requests carry
its tokens (SASL_AUTHENTICATION_FAILED with Kafka's message, then close). With
`connections.max.reauth.ms` the session has a lifetime, sent in SaslAuthenticate v1+: a
SaslHandshake on the open connection starts a re-authentication (same mechanism, same
principal), and a request that arrives after the session expired closes the connection.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox.security import SERVER_MECHANISMS, SaslFailure, SaslInvalidCredentials, ServerMechanism

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

HANDSHAKE_OR_VERSIONS, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = (
    "HANDSHAKE_OR_VERSIONS_REQUEST", "HANDSHAKE_REQUEST", "AUTHENTICATE", "COMPLETE", "FAILED")


@dataclass
class Answer:
    """What the authenticator does with a request: `response` (bytes to write, or None) and
    whether the connection closes after it."""
    response: bytes | None
    close: bool = False


class SaslAuthenticator:
    def __init__(self, sandbox: Sandbox, broker_id: int, mechanisms: list[str]):
        self.sandbox = sandbox
        self.broker_id = broker_id
        self.enabled = mechanisms
        self.state = HANDSHAKE_OR_VERSIONS
        self.mechanism_name: str | None = None
        self.login: ServerMechanism | None = None
        self.principal: str | None = None        # once authenticated
        self.expires_at: float | None = None     # time.monotonic() when the session ends
        self.reauthenticating = False
        self.bad_mechanism: str | None = None    # why the re-authentication under way fails
        # After SaslHandshake v0 the tokens come as bare size-prefixed frames, not requests.
        self.raw_tokens = False

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    @property
    def token_authenticated(self) -> bool:
        """Logged in with a delegation token (SCRAM with tokenauth=true)."""
        return self.complete and bool(getattr(self.login, "token_authenticated", False))

    def receive(self, body: bytes) -> Answer | None:
        """None: the request goes to the broker (authenticated, or ApiVersions before the
        handshake). Else the authenticator's own answer."""
        if self.raw_tokens and self.state == AUTHENTICATE:
            return self._raw_token(body)
        api_key, version, correlation_id = codec.peek_header(body)
        if self.state == COMPLETE:
            if api_key == ApiKey.SASL_HANDSHAKE and self.expires_at is not None:
                self.state, self.reauthenticating = HANDSHAKE, True   # KIP-368
                return self._handshake(body, correlation_id)
            if self.expires_at is not None and time.monotonic() > self.expires_at:
                return Answer(None, close=True)  # SocketServer: expired session, connection killed
            return None
        if self.state in (HANDSHAKE_OR_VERSIONS, HANDSHAKE):
            if api_key == ApiKey.API_VERSIONS and self.state == HANDSHAKE_OR_VERSIONS:
                self.state = HANDSHAKE
                return None
            if api_key == ApiKey.SASL_HANDSHAKE:
                return self._handshake(body, correlation_id)
            # "Unexpected Kafka request of type X during SASL handshake.": closed, no answer.
            return Answer(None, close=True)
        if self.state == AUTHENTICATE:
            if api_key != ApiKey.SASL_AUTHENTICATE:
                # "Unexpected Kafka request of type X during SASL authentication.": closed.
                return Answer(None, close=True)
            return self._authenticate(body, version, correlation_id)
        return Answer(None, close=True)

    def _handshake(self, body: bytes, correlation_id: int) -> Answer:
        _, request = codec.decode_request(body)
        wanted = request.mechanism  # type: ignore[attr-defined]
        version = codec.peek_header(body)[1]
        if self.reauthenticating and wanted != self.mechanism_name:
            # REAUTH_BAD_MECHANISM: the handshake succeeds, the SaslAuthenticate after it fails.
            self.state = AUTHENTICATE
            self.bad_mechanism = (f"SASL mechanism '{wanted}' requested by client is not supported for "
                                  f"re-authentication of mechanism '{self.mechanism_name}'")
            return self._respond(ApiKey.SASL_HANDSHAKE, version, correlation_id,
                                 {"error_code": Error.none, "mechanisms": self.enabled})
        if wanted not in self.enabled:
            return Answer(self._encode(ApiKey.SASL_HANDSHAKE, version, correlation_id,
                                       {"error_code": Error.unsupported_sasl_mechanism,
                                        "mechanisms": self.enabled}), close=True)
        self.mechanism_name, self.state = wanted, AUTHENTICATE
        self.raw_tokens = version == 0   # KIP-152: v1 wraps the tokens in SaslAuthenticate
        self.login = SERVER_MECHANISMS[wanted](self.sandbox)
        return self._respond(ApiKey.SASL_HANDSHAKE, version, correlation_id,
                             {"error_code": Error.none, "mechanisms": self.enabled})

    def _authenticate(self, body: bytes, version: int, correlation_id: int) -> Answer:
        if self.bad_mechanism is not None:
            return self._auth_failed(version, correlation_id, self.bad_mechanism)
        assert self.login is not None
        _, request = codec.decode_request(body)
        try:
            token = self.login.step(bytes(request.auth_bytes))  # type: ignore[attr-defined]
            if self.login.complete and self.reauthenticating and self.login.principal != self.principal:
                before, after = (p.replace(":", ".", 1) for p in (self.principal or "", self.login.principal))
                raise SaslFailure(f"Cannot change principals during re-authentication from {before}: {after}")
        except SaslInvalidCredentials:
            return self._auth_failed(version, correlation_id,
                                     f"Authentication failed during {self._what()} due to invalid "
                                     f"credentials with SASL mechanism {self.mechanism_name}")
        except SaslFailure as exc:
            return self._auth_failed(version, correlation_id, str(exc))
        lifetime_ms = 0
        if self.login.complete:
            lifetime_ms = self._session_lifetime_ms()
            self.principal, self.state = self.login.principal, COMPLETE
            self.expires_at = time.monotonic() + lifetime_ms / 1000 if lifetime_ms else None
        # Kafka's SaslAuthenticateResponseData answers "" where there is no error.
        return self._respond(ApiKey.SASL_AUTHENTICATE, version, correlation_id,
                             {"error_code": Error.none, "error_message": "", "auth_bytes": token,
                              "session_lifetime": lifetime_ms})

    def _raw_token(self, token: bytes) -> Answer:
        """A SASL token of a v0 handshake: the answer is a bare frame; a failure can only close
        the connection (no error can be sent)."""
        assert self.login is not None
        try:
            answer = self.login.step(token)
        except SaslFailure:
            self.state = FAILED
            return Answer(None, close=True)
        if self.login.complete:
            self.principal, self.state = self.login.principal, COMPLETE
            lifetime_ms = self._session_lifetime_ms()
            self.expires_at = time.monotonic() + lifetime_ms / 1000 if lifetime_ms else None
        return Answer(codec.frame(answer))

    def _session_lifetime_ms(self) -> int:
        """Kafka's calcCompletionTimesAndReturnSessionLifetimeMs: the smaller of
        connections.max.reauth.ms and the credential's remaining lifetime (0: no limit)."""
        from kafka_shell.sandbox import configs
        max_reauth = int(configs.broker_value(self.sandbox.cluster, self.broker_id,
                                              "connections.max.reauth.ms") or 0)
        credential = self.login.lifetime_ms if self.login is not None else None
        if credential is None:
            return max(max_reauth, 0)
        left = credential - int(time.time() * 1000)
        return max(min(left, max_reauth) if max_reauth > 0 else left, 0)

    def _auth_failed(self, version: int, correlation_id: int, message: str) -> Answer:
        self.state = FAILED
        return Answer(self._encode(ApiKey.SASL_AUTHENTICATE, version, correlation_id,
                                   {"error_code": Error.sasl_authentication_failed,
                                    "error_message": message, "auth_bytes": b""}), close=True)

    def _what(self) -> str:
        return "re-authentication" if self.reauthenticating else "authentication"

    def _respond(self, api_key: int, version: int, correlation_id: int, body: dict) -> Answer:
        return Answer(self._encode(api_key, version, correlation_id, body))

    @staticmethod
    def _encode(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
        cls = codec.response_schema(api_key, version)
        return codec.encode_response(codec.build(cls, body), correlation_id)

