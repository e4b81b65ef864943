"""The broker side of SASL GSSAPI (Kerberos V5), as Kafka runs Java's GssKrb5Server, through the
`gssapi` package.

`Sandbox(kerberos_keytab=PATH, kerberos_principal="kafka/localhost@REALM")` is the broker's
JAAS login (useKeyTab, principal); without a principal any key in the keytab is accepted. The
Kerberos configuration (realm, KDC) is the process's: KRB5_CONFIG, as for Java's krb5.conf.

The exchange (RFC 4752): GSS tokens until the context is established; then the client sends an
empty token and the broker offers its security layers in a wrapped 4-byte message (Kafka: no
security layer only, maximum buffer 65536); the client's wrapped answer picks one and may name
an authorization id, which must be the authenticated name (Kafka's SaslServerCallbackHandler).
The principal is the authenticated name shortened by sasl.kerberos.principal.to.local.rules'
DEFAULT rule: "client@REALM" or "client/host@REALM" in the default realm is User:client. Every
failure answers Kafka's generic message (the GSS detail stays in the broker's log).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from kafka_shell.sandbox.security import SaslFailure, invalid_credentials

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

MECHANISM = "GSSAPI"
NO_SECURITY_LAYER = 1
MAX_BUFFER = 65536   # Java's default javax.security.sasl.maxbuffer
_KERBEROS_NAME = re.compile(r"([^/@]*)(?:/([^/@]*))?@([^/@]*)")   # Kafka's KerberosName.parse
log = logging.getLogger("kafka_shell.sandbox.kerberos")


class GssapiServer:
    def __init__(self, sandbox: Sandbox):
        import gssapi
        self._gssapi = gssapi
        keytab = getattr(sandbox, "kerberos_keytab", None)
        if not keytab:
            raise invalid_credentials(MECHANISM)  # a broker without a Kerberos login takes no GSSAPI
        principal = getattr(sandbox, "kerberos_principal", None)
        name = gssapi.Name(principal, gssapi.NameType.kerberos_principal) if principal else None
        try:
            creds = gssapi.Credentials(name=name, usage="accept", store={"keytab": str(keytab)})
        except gssapi.exceptions.GSSError as exc:
            log.warning("GSSAPI: no acceptor credentials from keytab %s: %s", keytab, exc)
            raise invalid_credentials(MECHANISM) from None
        self._context = gssapi.SecurityContext(creds=creds, usage="accept")
        self._stage = 0   # 0: GSS tokens, 1: offer the layers, 2: read the client's choice
        self.complete = False
        self.principal = ""
        self.lifetime_ms: int | None = None   # Kafka sets no credential lifetime for GSSAPI

    def step(self, token: bytes) -> bytes:
        try:
            if self._stage == 0:
                answer = self._context.step(token)
                if self._context.complete:
                    self._stage = 1
                return answer or b""
            if self._stage == 1:
                if token:
                    raise SaslFailure("Handshake expecting no response data from server")
                self._stage = 2
                offer = bytes([NO_SECURITY_LAYER]) + MAX_BUFFER.to_bytes(3, "big")
                return self._context.wrap(offer, encrypt=False).message
            return self._finish(self._context.unwrap(token).message)
        except (self._gssapi.exceptions.GSSError, SaslFailure) as exc:
            log.info("GSSAPI login refused: %s", exc)
            raise invalid_credentials(MECHANISM) from None

    def _finish(self, choice: bytes) -> bytes:
        if len(choice) < 4 or not choice[0] & NO_SECURITY_LAYER:
            raise SaslFailure(f"Client selected unsupported protection: {choice[:1].hex()}")
        peer = str(self._context.initiator_name)
        authzid = choice[4:].decode() or peer
        if authzid != peer:
            raise SaslFailure(f"{peer} is not authorized to connect as {authzid}")
        self.principal = f"User:{short_name(peer, default_realm(self._gssapi))}"
        self.complete = True
        return b""


def short_name(name: str, realm: str) -> str:
    """sasl.kerberos.principal.to.local.rules=DEFAULT (Kafka's KerberosShortNamer): the first
    component of a name in the default realm; a name with no realm stays as it is."""
    match = _KERBEROS_NAME.fullmatch(name)
    if match is None:
        return name
    if match[3] != realm:
        raise SaslFailure(f"No rules apply to {name}, rules [DEFAULT]")
    return match[1]


def default_realm(gssapi: Any) -> str:
    """The Kerberos library's default realm (a name without one gets it when canonicalized)."""
    name = gssapi.Name("kafka-shell-realm-probe", gssapi.NameType.kerberos_principal)
    return str(name.canonicalize(gssapi.MechType.kerberos)).rpartition("@")[2]
