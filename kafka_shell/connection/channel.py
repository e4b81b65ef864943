"""The shell's own channel: one blocking connection to one broker, speaking kio message types.

Every admin request goes over it (the connection manager routes them: connection.py). At
connect it negotiates ApiVersions and, when the security protocol says so, wraps the socket in
TLS and authenticates with SASL (kafka_shell/connection/sasl.py: its mechanisms, over Kafka's SaslHandshake
v1 + SaslAuthenticate). Settings are the same librdkafka properties the Producer and Consumer
get. One request is in flight at a time; a lock makes each call thread-safe.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Any

from kafka_shell import __version__
from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.deadline import Deadline
from kafka_shell.connection.client_config import librdkafka_properties, sasl_mechanism
from kafka_shell.base.errors import KafkaCallError, NotSupported, ShellError, UsageError
from kafka_shell.base.limits import MAX_FRAME_BYTES

if TYPE_CHECKING:
    import ssl

CLIENT_ID = "kafka-shell"
REAUTH_FRACTION = 0.85  # of the broker's session lifetime, when the channel logs in again
SECURITY_PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")


def _client_mechanisms() -> dict[str, Any]:
    """The SASL logins the channel does (kafka_shell/connection/sasl.py), loaded by the first
    SASL connection only: a plaintext one-shot start does without their hashing modules."""
    from kafka_shell.connection.sasl import CLIENT_MECHANISMS
    return CLIENT_MECHANISMS


class ConnectionLost(ShellError):
    """The connection failed or broke. `sent` tells whether the request had been fully written:
    if so, the broker may have acted on it (the caller decides whether resending is safe)."""

    def __init__(self, message: str, sent: bool = False):
        super().__init__(message)
        self.sent = sent


class NoAnswer(ConnectionLost):
    """The peer did not answer before the deadline (it may be slow, stuck or trickling)."""

    def __init__(self, message: str, peer: str, sent: bool = False):
        super().__init__(message, sent)
        self.peer = peer   # how messages name it: "broker 2 at h:p"


class ConnectionRefused(ConnectionLost):
    """Nothing listens at the address: reported at once, not retried until a deadline."""


class Unresolvable(ConnectionLost):
    """The host name does not resolve (the resolver says no such name, not "try again"):
    reported at once, like a refused connection."""


# getaddrinfo's answers that waiting will not change (EAI_AGAIN, a resolver that did not
# answer, is not one of them).
_NO_SUCH_NAME = {getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA", "EAI_FAIL", "EAI_ADDRFAMILY")
                 if hasattr(socket, n)}


class SecuritySetupError(ShellError):
    """The connection cannot work as the settings say (TLS verification failed, the listener
    speaks another security protocol): said at once, never retried. Nothing reached the broker
    (the broker's security layer refused it before any request was served)."""

class MalformedAnswer(ConnectionLost):
    """The broker's answer is not a valid message of the expected type (checked before kio's
    native reader sees it); the connection is closed."""


class Channel:
    """One connection to one broker; `request` picks the newest version both sides have."""

    def __init__(self, host: str, port: int, properties: dict | None = None, timeout_s: float = 10.0,
                 name: str | None = None):
        self.host, self.port = host, int(port)
        self.name = name or self.address  # how messages name the peer ("broker 2 at h:p")
        self.timeout_s = timeout_s
        self._props = librdkafka_properties(dict(properties or {}))  # Java stores as PEM, ...
        self._lock = threading.Lock()
        self._correlation = itertools.count(1)
        self._sock: socket.socket | None = None
        self._versions: dict[int, range] = {}
        self._answered = False  # a request past ApiVersions (and the login) was answered
        self._mechanism: str | None = None
        self._session_ends: float | None = None  # KIP-368: log in again before this (monotonic)
        # The shell reached only controllers (--bootstrap-controller alone): an API this
        # listener lacks is one a broker serves, which is what its refusal says.
        self.controllers_only = False
        security = self._props.get("security.protocol", "plaintext").lower()
        self._security = security
        if security not in SECURITY_PROTOCOLS:
            raise UsageError(f"Unknown security.protocol {security!r}; use one of "
                             + ", ".join(p.upper() for p in SECURITY_PROTOCOLS))
        mechanism = sasl_mechanism(self._props) if security.startswith("sasl") else None
        if mechanism is not None and mechanism not in _client_mechanisms():
            # Checked before connecting: nothing is sent when we could not finish the login.
            raise NotSupported(
                f"kafka-shell cannot log in with SASL mechanism {mechanism} (it does "
                f"{', '.join(_client_mechanisms())}): every command reads the cluster through its "
                "own connection, so none works with this setting.")
        deadline = Deadline(timeout_s).at
        self._sock = self._open(security, deadline)
        try:
            try:
                self._versions = self._negotiate_versions(deadline)
            except ConnectionLost as lost:
                if not security.endswith("ssl"):
                    self._diagnose_tls(deadline)  # a TLS listener closes on plaintext bytes
                elif security == "ssl" and not isinstance(lost, NoAnswer):
                    # A broker whose TLS alert did not come through (or that sends none) closes a
                    # connection without a certificate it accepts right after the handshake.
                    raise SecuritySetupError(f"{self.address} closed the TLS connection at once: " + (
                        "it probably does not accept the client certificate (is it signed by a CA the "
                        "broker trusts, and valid now?)" if _client_certificate(self._props) else
                        "it probably requires a client certificate (ssl.client.auth=required): set "
                        "ssl.certificate.location and ssl.key.location (or ssl.keystore.location)")) from None
                raise
            self._mechanism = mechanism
            if mechanism is not None:
                self._authenticate(mechanism, deadline)
        except BaseException:
            self.close()
            raise

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def _where(self) -> tuple[Any, int]:   # typeshed types the host str (getaddrinfo takes bytes too)
        """The address to connect to: an ASCII host name as bytes, which getaddrinfo takes as
        it is (a str it encodes with the idna codec, whose import costs ~2 ms of a one-shot)."""
        return (self.host.encode("ascii") if self.host.isascii() else self.host), self.port

    @property
    def closed(self) -> bool:
        return self._sock is None

    def versions(self) -> dict[int, range]:
        return dict(self._versions)

    def pick_version(self, api_key: int, version: int | None = None, max_version: int | None = None) -> int:
        """`version` if both sides have it, else the newest common one (up to `max_version`);
        NotSupported if none."""
        ours = codec.kio_versions(api_key)
        theirs = self._versions.get(api_key, range(0))
        common = [v for v in theirs if v in ours and (max_version is None or v <= max_version)]
        if version is not None and version in common:
            return version
        if version is None and common:
            return max(common)
        name = codec.api_name(api_key)
        if self.controllers_only and not theirs:
            raise NotSupported(needs_broker(name))
        wanted = f"v{version}" if version is not None else _span(ours)
        offered = _span(theirs) if theirs else "none"
        raise NotSupported(f"Broker {self.address} does not support {name} {wanted} "
                           f"(it offers {offered}).")

    def request(self, api_key: int, body: dict, version: int | None = None,
                deadline: Deadline | None = None) -> dict:
        """Send one request and return its response as plain data (`protocol.to_dict`)."""
        return codec.to_dict(self.request_entity(api_key, body, version, deadline))

    def request_entity(self, api_key: int, body: dict, version: int | None = None,
                       deadline: Deadline | None = None, max_version: int | None = None) -> Any:
        """Send one request and return its answer, the kio entity. `deadline` bounds the
        whole exchange; by default the channel's timeout plus the broker's own operation
        timeout from the body."""
        v = self.pick_version(api_key, version, max_version)
        entity = codec.build_request(api_key, v, body)
        at = (deadline or Deadline(self.timeout_s, operation_seconds(body))).at
        self._reauthenticate_if_due(at)
        try:
            raw = self._roundtrip(entity, at)
        except ConnectionLost as lost:
            if not self._answered and self._mechanism is None and not isinstance(lost, NoAnswer):
                self._diagnose_sasl(at)  # a SASL listener closes on a request before login
            raise
        self._answered = True
        return self._decode(codec.client_response_schema(api_key, v), raw)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    # -- connection set-up -------------------------------------------------------------------

    def _open(self, security: str, deadline: float) -> socket.socket:
        try:
            sock = socket.create_connection(self._where, timeout=_left(deadline))
        except ConnectionRefusedError:
            raise ConnectionRefused(f"{self.name} refused the connection (nothing listens on "
                                    f"{self.address})") from None
        except socket.gaierror as exc:
            kind = Unresolvable if exc.errno in _NO_SUCH_NAME else ConnectionLost
            raise kind(f"Cannot connect to {self.name}: {_reason(exc)}") from None
        except OSError as exc:
            raise ConnectionLost(f"Cannot connect to {self.name}: {_reason(exc)}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if security.endswith("ssl"):
            import ssl  # only TLS connections pay for its import (~15 ms of a one-shot start)
            context = _ssl_context(self._props)
            try:
                sock.settimeout(_left(deadline))
                sock = context.wrap_socket(sock, server_hostname=self.host)
            except ssl.SSLCertVerificationError as exc:
                sock.close()
                raise SecuritySetupError(
                    f"TLS handshake with {self.address} failed: the broker's certificate is not "
                    f"trusted: {exc.verify_message} ({_tls_advice(exc.verify_message)})") from None
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                if not isinstance(exc, TimeoutError) and self._speaks_plaintext(deadline):
                    plain = "SASL_PLAINTEXT" if security.startswith("sasl") else "PLAINTEXT"
                    raise SecuritySetupError(f"{self.address} does not speak TLS; set security.protocol="
                                             f"{plain}, or use the broker's TLS listener") from None
                reason = (getattr(exc, "reason", None) or str(exc)) if isinstance(exc, ssl.SSLError) else _reason(exc)
                raise _tls_alert_error(self.address, reason) or ConnectionLost(
                    f"TLS handshake with {self.address} failed: {reason}") from None
        return sock

    # -- telling a listener's security protocol, when a connection fails the way a mismatch does

    def _diagnose_tls(self, deadline: float) -> None:
        """Raise SecuritySetupError if the listener speaks TLS (a plaintext client's bytes are
        no TLS record: the broker closes the connection)."""
        import ssl
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        probe.check_hostname, probe.verify_mode = False, ssl.CERT_NONE
        try:
            with socket.create_connection(self._where, timeout=_left(deadline)) as raw, \
                    probe.wrap_socket(raw, server_hostname=self.host):
                pass
        except (OSError, ValueError):
            return
        sasl = "SASL_SSL" if self._security.startswith("sasl") else "SSL"
        raise SecuritySetupError(f"{self.address} speaks TLS; set security.protocol=SSL or SASL_SSL "
                                 f"(probably {sasl}) and ssl.ca.location")

    def _speaks_plaintext(self, deadline: float) -> bool:
        """Whether the listener answers a plaintext ApiVersions."""
        try:
            Channel(self.host, self.port, {}, max(_left(deadline), 0.5)).close()
        except (ShellError, OSError):
            return False
        return True

    def _diagnose_sasl(self, deadline: float) -> None:
        """Raise SecuritySetupError if the listener takes SASL (it closes the connection on any
        request but ApiVersions and SaslHandshake until the client logs in)."""
        try:
            probe = Channel(self.host, self.port, {**self._props, "security.protocol": self._security},
                            max(_left(deadline), 0.5))
        except (ShellError, OSError):
            return
        probe._answered = True  # its own failure needs no diagnosis
        try:
            answer = probe._request_raw(ApiKey.SASL_HANDSHAKE, {"mechanism": "PLAIN"}, deadline, version=1)
        except (ShellError, OSError):
            return
        finally:
            probe.close()
        if answer["error_code"] in (Error.none, Error.unsupported_sasl_mechanism):
            sasl = "SASL_SSL" if self._security.endswith("ssl") else "SASL_PLAINTEXT"
            offered = ", ".join(answer["mechanisms"]) or "none"
            raise SecuritySetupError(
                f"{self.address}: this listener needs SASL: set security.protocol=SASL_PLAINTEXT or "
                f"SASL_SSL (here {sasl}), sasl.mechanism (it offers {offered}), sasl.username and "
                "sasl.password")

    def _negotiate_versions(self, deadline: float) -> dict[int, range]:
        """ApiVersions with our newest version; a broker that lacks it answers in v0 with its
        ApiVersions range, and we ask again with the newest version it has."""
        version = codec.kio_versions(ApiKey.API_VERSIONS).stop - 1
        for _ in range(2):
            cls = codec.request_schema(ApiKey.API_VERSIONS, version)
            entity = codec.build(cls, {"client_software_name": CLIENT_ID,
                                          "client_software_version": __version__})
            raw = self._roundtrip(entity, deadline)
            error = self._api_versions_error(raw)
            if error == Error.unsupported_version:
                answer = self._decode(codec.response_schema(ApiKey.API_VERSIONS, 0), raw)
                theirs = {k.api_key: k.max_version for k in answer.api_keys}
                version = min(theirs.get(ApiKey.API_VERSIONS, 0), version)
                continue
            answer = self._decode(codec.response_schema(ApiKey.API_VERSIONS, version), raw)
            if answer.error_code:
                raise KafkaCallError(f"Broker {self.address} refused ApiVersions "
                                     f"(error {int(answer.error_code)})", code=int(answer.error_code))
            return {k.api_key: range(k.min_version, k.max_version + 1)
                    for k in answer.api_keys}
        raise NotSupported(f"Broker {self.address} and the shell share no ApiVersions version.")

    def _authenticate(self, mechanism: str, deadline: float) -> None:
        """SaslHandshake v1 and the mechanism's SaslAuthenticate exchange; also how the channel
        logs in again on an open connection (KIP-368). The session lifetime the broker gives
        (v1+) sets when that is due."""
        handshake = self._request_raw(ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism}, deadline, version=1)
        if handshake["error_code"] == Error.illegal_sasl_state:
            plain = "SSL" if self._security.endswith("ssl") else "PLAINTEXT"
            raise SecuritySetupError(f"{self.address}: this listener does not use SASL: set "
                                     f"security.protocol={plain} (or use the broker's SASL listener)")
        if handshake["error_code"] == Error.unsupported_sasl_mechanism:
            offered = ", ".join(handshake["mechanisms"]) or "none"
            raise KafkaCallError(f"Broker {self.address} does not enable SASL mechanism "
                                 f"{mechanism} (it offers {offered}).", code=Error.unsupported_sasl_mechanism)
        if handshake["error_code"]:
            raise KafkaCallError(f"SASL handshake with {self.address} failed (error "
                                 f"{handshake['error_code']}).", code=handshake["error_code"])
        login = _client_mechanisms()[mechanism](self._props, self.host)
        token: bytes | None = login.start()
        lifetime_ms = 0
        while token is not None:
            answer = self._request_raw(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token}, deadline)
            if answer["error_code"]:
                detail = answer.get("error_message") or "authentication failed"
                raise KafkaCallError(f"SASL authentication with {self.address} failed: {detail}",
                                     code=answer["error_code"])
            lifetime_ms = answer.get("session_lifetime") or 0
            token = login.respond(answer["auth_bytes"] or b"")
        # Log in again well before the session ends (Kafka's clients pick 85-95% of it).
        self._session_ends = time.monotonic() + lifetime_ms * REAUTH_FRACTION / 1000 if lifetime_ms else None

    def _reauthenticate_if_due(self, deadline: float) -> None:
        """KIP-368: past most of the session lifetime, log in again on this connection before
        the request, so the broker does not close it; nothing of the request was sent yet."""
        if self._mechanism is None or self._session_ends is None or time.monotonic() < self._session_ends:
            return
        try:
            self._authenticate(self._mechanism, deadline)
        except ConnectionLost as lost:
            lost.sent = False  # the request itself never left the client: safe to send again
            raise

    def _request_raw(self, api_key: int, body: dict, deadline: float, version: int | None = None) -> dict:
        v = self.pick_version(api_key, version)
        entity = codec.build_request(api_key, v, body)
        return codec.to_dict(self._decode(codec.response_schema(api_key, v),
                                             self._roundtrip(entity, deadline)))

    # -- framing -----------------------------------------------------------------------------

    def _roundtrip(self, entity: Any, deadline: float) -> bytes:
        """Write one request and read its response body (header included), all before
        `deadline`, however slowly the broker trickles bytes; ConnectionLost (NoAnswer when the
        deadline passed) on any failure, after which this channel is closed."""
        with self._lock:
            sock = self._sock
            if sock is None:
                raise ConnectionLost(f"The connection to {self.name} is closed.")
            correlation_id = next(self._correlation)
            data = codec.encode_request(entity, correlation_id, CLIENT_ID)
            sent = False
            closed = _closed_by_peer(sock)
            if closed is not None:
                # A broker sends nothing unasked: bytes, a TLS alert or an end of stream on an
                # idle connection mean it closed it (idle, session expiry, a refused client
                # certificate). Nothing was sent.
                self.close()
                raise _tls_alert_error(self.address, closed) or ConnectionLost(
                    f"{_capital(self.name)} had closed the connection ({closed}) before the request", sent=False)
            try:
                sock.settimeout(_left(deadline))
                sock.sendall(data)
                sent = True
                (size,) = struct.unpack(">i", _read_exactly(sock, 4, deadline))
                if not 4 <= size <= MAX_FRAME_BYTES:
                    raise codec.ProtocolError(f"response frame size {size}")
                body = _read_exactly(sock, size, deadline)
                (got,) = struct.unpack_from(">i", body)
                if got != correlation_id:
                    raise codec.ProtocolError(f"correlation id {got}, expected {correlation_id}")
                return body
            except (TimeoutError, _Late):
                self.close()
                what = codec.api_name(type(entity).__api_key__)
                raise NoAnswer(f"{_capital(self.name)} did not answer {what} in time", self.name, sent=sent) from None
            except (OSError, codec.ProtocolError) as exc:
                self.close()
                alert = _tls_alert_error(self.address, getattr(exc, "reason", None) or str(exc))
                if alert is not None:  # the broker refused our certificate: nothing was served
                    raise alert from None
                what = "sending to" if not sent else "waiting for an answer from"
                raise ConnectionLost(f"Connection lost while {what} {self.name}: {_reason(exc)}",
                                     sent=sent) from None

    def _decode(self, cls: type, raw: bytes) -> Any:
        try:
            return codec.decode_response(cls, raw)[1]
        except codec.ProtocolError as exc:  # validated before kio reads it: never an abort
            raise self._malformed(str(exc)) from None

    def _api_versions_error(self, raw: bytes) -> int:
        """The error code of an ApiVersions answer, read before picking the version to decode
        it with (its header is v0 in every version)."""
        if len(raw) < 6:
            raise self._malformed("ApiVersionsResponse ends early: the frame is truncated")
        return struct.unpack_from(">h", raw, 4)[0]

    def _malformed(self, what: str) -> MalformedAnswer:
        """Close this connection; the error that fails the request."""
        self.close()
        return MalformedAnswer(f"Malformed answer from {self.name} ({what})", sent=True)


def needs_broker(what: str) -> str:
    """The one line for a request only a broker serves, when the shell reached only controllers."""
    return (f"{what} needs a broker, and the shell reached only the controllers (--bootstrap-controller): "
            "add --bootstrap-server HOST:PORT.")


class _Late(Exception):
    """The deadline passed between two reads."""


def _closed_by_peer(sock: socket.socket) -> str | None:
    """Why an idle connection is over (the broker closed it, sent something unasked or a TLS
    alert), None while it is fine. A TLS connection may be readable for records that hold no
    data (TLS 1.3 session tickets)."""
    import select
    try:
        if not select.select([sock], [], [], 0)[0]:
            return None
        sock.settimeout(0)
        return "idle" if not sock.recv(1) else "unexpected bytes"
    except (BlockingIOError, InterruptedError):
        return None
    except OSError as exc:
        if type(exc).__name__ in ("SSLWantReadError", "SSLWantWriteError"):
            return None
        return getattr(exc, "reason", None) or _reason(exc)
    except ValueError:
        return "closed"


def _client_certificate(props: dict) -> bool:
    return bool(props.get("ssl.certificate.location") or props.get("ssl.certificate.pem"))


# TLS alerts a broker sends about the client's own certificate (by OpenSSL's reason names).
_CLIENT_CERTIFICATE_ALERTS = ("CERTIFICATE_REQUIRED", "UNKNOWN_CA", "BAD_CERTIFICATE", "CERTIFICATE_EXPIRED",
                              "CERTIFICATE_UNKNOWN", "CERTIFICATE_REVOKED", "UNSUPPORTED_CERTIFICATE")


def _tls_alert_error(address: str, reason: str) -> SecuritySetupError | None:
    """The error for a broker that refused the client's certificate (mutual TLS), else None."""
    upper = reason.upper()
    if "CERTIFICATE_REQUIRED" in upper:
        return SecuritySetupError(f"{address} requires a client certificate (ssl.client.auth): set "
                                  "ssl.certificate.location and ssl.key.location (or ssl.keystore.location)")
    if any(alert in upper for alert in _CLIENT_CERTIFICATE_ALERTS) and "ALERT" in upper:
        return SecuritySetupError(f"{address} refused the client certificate ({reason}): use one signed "
                                  "by a CA the broker trusts, and valid now")
    return None


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _read_exactly(sock: socket.socket, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Late()
        sock.settimeout(left)
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionResetError("closed by the broker")
        buf += chunk
    return bytes(buf)


def operation_seconds(body: dict | None) -> float:
    """The broker's own operation timeout a request body carries (timeout_ms or timeout), so a
    deadline waits past it and its answer is not cut off; 0 when it carries none."""
    ms = body.get("timeout_ms", body.get("timeout")) if isinstance(body, dict) else None
    return ms / 1000 if isinstance(ms, (int, float)) and ms > 0 else 0.0


def _ssl_context(props: dict) -> ssl.SSLContext:
    """The client's TLS context from librdkafka's properties (Java keystores already converted
    to PEM by `client_config.librdkafka_properties`); a file that cannot be used is named."""
    import ssl
    ctx = ssl.create_default_context()
    ca = props.get("ssl.ca.location")
    try:
        if ca and ca != "probe":
            _check_readable("ssl.ca.location", ca)
            ctx.load_verify_locations(cafile=ca if os.path.isfile(ca) else None,
                                      capath=ca if os.path.isdir(ca) else None)
        if props.get("ssl.ca.pem"):
            ctx.load_verify_locations(cadata=props["ssl.ca.pem"])
        if props.get("ssl.certificate.location"):
            _check_readable("ssl.certificate.location", props["ssl.certificate.location"])
            if props.get("ssl.key.location"):
                _check_readable("ssl.key.location", props["ssl.key.location"])
            ctx.load_cert_chain(props["ssl.certificate.location"], props.get("ssl.key.location"),
                                password=props.get("ssl.key.password"))
        elif props.get("ssl.certificate.pem"):
            _load_pem_chain(ctx, props["ssl.certificate.pem"], props.get("ssl.key.pem", ""),
                            props.get("ssl.key.password"))
    except ssl.SSLError as exc:
        raise UsageError(f"Cannot use the TLS settings (ssl.ca.location, ssl.certificate.*, "
                         f"ssl.key.*): {exc.reason or exc}: check the files and ssl.key.password") from None
    if props.get("ssl.endpoint.identification.algorithm", "https").strip().lower() in ("", "none"):
        ctx.check_hostname = False
    if props.get("enable.ssl.certificate.verification", "true").lower() == "false":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _check_readable(key: str, path: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"{key}: file {path} does not exist: fix the path (-X, --command-config "
                         "or clusters.json)")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{key}: file {path} is not readable by this user: fix its permissions")


def _load_pem_chain(ctx: ssl.SSLContext, certificate: str, key: str, password: str | None) -> None:
    """A certificate and key given as PEM text (from a Java keystore), loaded through an
    anonymous in-memory file: the key is never written to disk."""
    fd = os.memfd_create("kafka-shell-client-cert", os.MFD_CLOEXEC)
    try:
        os.write(fd, (certificate.rstrip("\n") + "\n" + key).encode())
        path = f"/proc/self/fd/{fd}"
        ctx.load_cert_chain(path, path, password=password)
    finally:
        os.close(fd)


def _tls_advice(verify_message: str) -> str:
    """What to do about a certificate the client does not trust."""
    message = verify_message.lower()
    if "hostname" in message or "ip address mismatch" in message:
        return ("connect with a name the certificate lists, or set ssl.endpoint.identification.algorithm="
                "none to skip the host-name check")
    if "expired" in message or "not yet valid" in message:
        return "the broker needs a new certificate (or check this machine's clock)"
    return "set ssl.ca.location to the CA that signed the broker's certificate"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _span(r: range) -> str:
    return f"v{r.start}" if len(r) == 1 else f"v{r.start}-v{r.stop - 1}"
