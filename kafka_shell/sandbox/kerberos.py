"""The broker side of SASL GSSAPI (Kerberos V5), as Kafka runs Java's GssKrb5Server, through the
`gssapi` package.

`Sandbox(kerberos_keytab=PATH, kerberos_principal="kafka/localhost@REALM")` is the broker's
JAAS login (useKeyTab, principal); without a principal any key in the keytab is accepted. The
Kerberos configuration (realm, KDC) is the process's: KRB5_CONFIG, as for Java's krb5.conf.

The exchange (RFC 4752): GSS tokens until the context is established; then the client sends an
empty token and the broker offers its security layers in a wrapped 4-byte message (Kafka: no
security layer only, maximum buffer 65536); the client's wrapped answer picks one and may name
an authorization id, which must be the authenticated name (Kafka's SaslServerCallbackHandler).
The principal is the authenticated name shortened by sasl.kerberos.principal.to.local.rules
(a broker config: `Sandbox(configs={...})`; Kafka's rule syntax, default DEFAULT: "client@REALM"
or "client/host@REALM" in the default realm is User:client). Every failure answers Kafka's
generic message (the GSS detail stays in the broker's log).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_shell.sandbox import configs
from kafka_shell.sandbox.security import SaslFailure, invalid_credentials

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

MECHANISM = "GSSAPI"
NO_SECURITY_LAYER = 1
MAX_BUFFER = 65536   # Java's default javax.security.sasl.maxbuffer
_KERBEROS_NAME = re.compile(r"([^/@]*)(?:/([^/@]*))?@([^/@]*)")   # Kafka's KerberosName.parse
_RULE = re.compile(r"((DEFAULT)|((RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))")
RULES_CONFIG = "sasl.kerberos.principal.to.local.rules"
log = logging.getLogger("kafka_shell.sandbox.kerberos")


class GssapiServer:
    def __init__(self, sandbox: Sandbox):
        self.complete = False
        self.principal = ""
        self.lifetime_ms: int | None = None   # Kafka sets no credential lifetime for GSSAPI
        self._cluster = sandbox.cluster
        self._stage = 0   # 0: GSS tokens, 1: offer the layers, 2: read the client's choice
        # None: this broker cannot take GSSAPI logins; each login then fails at its first step
        # (a mechanism is made at SaslHandshake, which must still be answered).
        self._context: Any = None
        try:
            import gssapi
        except ImportError:
            log.warning("GSSAPI logins need the Python package gssapi")
            return
        self._gssapi = gssapi
        keytab = getattr(sandbox, "kerberos_keytab", None)
        if not keytab:
            log.warning("GSSAPI logins need the sandbox's kerberos_keytab")
            return
        principal = getattr(sandbox, "kerberos_principal", None)
        try:
            name = gssapi.Name(principal, gssapi.NameType.kerberos_principal) if principal else None
            creds = gssapi.Credentials(name=name, usage="accept", store={"keytab": str(keytab)})
            self._context = gssapi.SecurityContext(creds=creds, usage="accept")
        except gssapi.exceptions.GSSError as exc:
            log.warning("GSSAPI: no acceptor credentials from keytab %s: %s", keytab, exc)

    def step(self, token: bytes) -> bytes:
        if self._context is None:
            raise invalid_credentials(MECHANISM)
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
        except (self._gssapi.exceptions.GSSError, SaslFailure, ValueError) as exc:  # ValueError: bad rules
            log.info("GSSAPI login refused: %s", exc)
            raise invalid_credentials(MECHANISM) from None

    def _finish(self, choice: bytes) -> bytes:
        if len(choice) < 4 or not choice[0] & NO_SECURITY_LAYER:
            raise SaslFailure(f"Client selected unsupported protection: {choice[:1].hex()}")
        peer = str(self._context.initiator_name)
        authzid = choice[4:].decode() or peer
        if authzid != peer:
            raise SaslFailure(f"{peer} is not authorized to connect as {authzid}")
        rules = parse_rules(configs.broker_value(self._cluster, None, RULES_CONFIG))
        self.principal = f"User:{short_name(peer, default_realm(self._gssapi), rules)}"
        self.complete = True
        return b""


@dataclass(frozen=True)
class Rule:
    """One rule of sasl.kerberos.principal.to.local.rules (Kafka's KerberosRule)."""
    text: str
    components: int = -1                     # -1: the DEFAULT rule
    format: str = ""
    match: re.Pattern[str] | None = None
    replace_from: re.Pattern[str] | None = None
    replace_to: str = ""
    repeat: bool = False
    case: str = ""                           # "L" lower, "U" upper, "" as is

    def apply(self, params: list[str], realm: str) -> str | None:
        result: str | None = None
        if self.components < 0:
            result = params[1] if params[0] == realm else None
        elif len(params) - 1 == self.components:
            base = _replace_parameters(self.format, params)
            if self.match is None or self.match.fullmatch(base):
                result = base if self.replace_from is None else \
                    self.replace_from.sub(self.replace_to, base, count=0 if self.repeat else 1)
        if result is not None and re.search("[/@]", result):
            raise SaslFailure(f"Non-simple name {result} after auth_to_local rule {self.text}")
        return result.lower() if result and self.case == "L" else result.upper() if result and self.case == "U" else result


DEFAULT_RULES = [Rule("DEFAULT")]


def parse_rules(text: str | None) -> list[Rule]:
    """Kafka's KerberosShortNamer.parseRules of the (comma-separated) config value."""
    rules = []
    for item in [r.strip() for r in (text or "DEFAULT").split(",") if r.strip()]:
        m = _RULE.fullmatch(item)
        if m is None:
            raise ValueError(f"Invalid rule: {item}")
        if m[2]:
            rules.append(Rule(item))
            continue
        to = re.sub(r"\$(\d+)", r"\\g<\1>", m[11] or "")  # Java's $1 is Python's \g<1>
        rules.append(Rule(item, int(m[5]), m[6], re.compile(m[8]) if m[8] is not None else None,
                          re.compile(m[10]) if m[10] is not None else None, to, m[12] == "g", m[13] or ""))
    return rules


def short_name(name: str, realm: str, rules: list[Rule] = DEFAULT_RULES) -> str:
    """Kafka's KerberosShortNamer: the first rule that gives a name; a name with no realm stays
    as it is."""
    match = _KERBEROS_NAME.fullmatch(name)
    if match is None:
        return name
    params = [match[3], match[1]] + ([match[2]] if match[2] is not None else [])
    for rule in rules:
        result = rule.apply(params, realm)
        if result is not None:
            return result
    raise SaslFailure(f"No rules apply to {name}, rules [{', '.join(r.text for r in rules)}]")


def _replace_parameters(format: str, params: list[str]) -> str:
    """$0 (the realm), $1, $2 (the name's components) in a rule's format."""
    def param(m: re.Match[str]) -> str:
        number = int(m[1])
        if number >= len(params):
            raise SaslFailure(f"index {number} from {format} is outside of the valid range 0 to {len(params) - 1}")
        return params[number]
    return re.sub(r"\$(\d+)", param, format)


def default_realm(gssapi: Any) -> str:
    """The Kerberos library's default realm (a name without one gets it when canonicalized)."""
    name = gssapi.Name("kafka-shell-realm-probe", gssapi.NameType.kerberos_principal)
    return str(name.canonicalize(gssapi.MechType.kerberos)).rpartition("@")[2]
