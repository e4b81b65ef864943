"""A one-broker SASL endpoint on 127.0.0.1 that logs clients in with the sandbox's own server
mechanisms (`SERVER_MECHANISMS[name](sandbox)`, the code a sandbox SASL listener runs), then
answers Metadata naming itself. It lets the GSSAPI and OAUTHBEARER tests drive the shell's
direct channel and librdkafka's own clients over real sockets while the sandbox has no SASL
listener yet; the tests over a sandbox SASL listener are in the same test modules.

As Kafka's SaslServerAuthenticator: before login only ApiVersions, SaslHandshake and
SaslAuthenticate are served (anything else closes the connection); a failed login is answered
with SASL_AUTHENTICATION_FAILED and the mechanism's message, then the connection is closed.
"""

from __future__ import annotations

import socket

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox.security import SERVER_MECHANISMS, SaslFailure, ServerMechanism
from kafka_shell.sandbox.server import Sandbox
from tests.loopback import LoopbackServer

VERSIONS = {ApiKey.API_VERSIONS: (0, 3), ApiKey.SASL_HANDSHAKE: (0, 1),
            ApiKey.SASL_AUTHENTICATE: (0, 2), ApiKey.METADATA: (0, 12)}


class SaslTestBroker(LoopbackServer):
    __test__ = False

    def __init__(self, sandbox: Sandbox, mechanisms: list[str]):
        self.sandbox, self.mechanisms = sandbox, mechanisms
        self.principals: list[str] = []        # each completed login's principal
        self.lifetimes: list[int | None] = []  # and its credential expiry (ms since the epoch)
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        login: ServerMechanism | None = None
        try:
            while True:
                body = self.read_request(conn)
                if body is None:
                    return
                api_key, version, correlation_id = codec.peek_header(body)
                if api_key == ApiKey.API_VERSIONS and version > VERSIONS[api_key][1]:
                    reply = {"error_code": Error.unsupported_version,
                             "api_keys": [{"api_key": api_key, "min_version": 0, "max_version": 3}]}
                    version = 0
                elif api_key == ApiKey.API_VERSIONS:
                    reply = {"error_code": Error.none, "api_keys": [
                        {"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in VERSIONS.items()]}
                elif api_key == ApiKey.SASL_HANDSHAKE:
                    mechanism = codec.decode_request(body)[1].mechanism  # type: ignore[attr-defined]
                    known = mechanism in self.mechanisms
                    login = SERVER_MECHANISMS[mechanism](self.sandbox) if known else None
                    reply = {"error_code": Error.none if known else Error.unsupported_sasl_mechanism,
                             "mechanisms": self.mechanisms}
                elif api_key == ApiKey.SASL_AUTHENTICATE and login is not None and not login.complete:
                    token = bytes(codec.decode_request(body)[1].auth_bytes)  # type: ignore[attr-defined]
                    try:
                        answer = login.step(token)
                    except SaslFailure as exc:
                        reply = {"error_code": Error.sasl_authentication_failed, "error_message": str(exc),
                                 "auth_bytes": b""}
                        _send(conn, api_key, version, correlation_id, reply)
                        return  # Kafka closes the connection after a failed login
                    if login.complete:
                        self.principals.append(login.principal)
                        self.lifetimes.append(login.lifetime_ms)
                    reply = {"error_code": Error.none, "auth_bytes": answer, "session_lifetime_ms": 0}
                elif api_key == ApiKey.METADATA and login is not None and login.complete:
                    reply = {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port}],
                             "cluster_id": "sasl-test", "controller_id": 1, "topics": []}
                else:
                    return  # not served before a login (Kafka closes the connection)
                _send(conn, api_key, version, correlation_id, reply)
        except OSError:
            pass
        finally:
            conn.close()


def _send(conn: socket.socket, api_key: int, version: int, correlation_id: int, reply: dict) -> None:
    entity = codec.build(codec.response_schema(api_key, version), reply)
    conn.sendall(codec.encode_response(entity, correlation_id))
