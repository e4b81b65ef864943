"""The client side of SASL GSSAPI (Kerberos V5, RFC 4752) for the direct channel, through the
`gssapi` package (MIT or Heimdal libraries), with librdkafka's properties:

- the service is `sasl.kerberos.service.name` (default kafka) at the broker's host name, as
  librdkafka names it ("kafka@broker1.example.com"; the Kerberos library canonicalizes it).
- a Java client's `sasl.jaas.config` with Krb5LoginModule (useKeyTab, keyTab, principal) stands
  for `sasl.kerberos.keytab` and `sasl.kerberos.principal` when those are not set.
- credentials: when `sasl.kerberos.kinit.cmd` is set, that command runs once per process (as
  librdkafka runs it, `%{property}` replaced) and the default ticket cache is used; else, with
  `sasl.kerberos.keytab`, tickets for `sasl.kerberos.principal` (default kafkaclient) come from
  the keytab into a private in-memory cache (the user's own cache is left alone); else the
  default ticket cache (after the user's `kinit`).

After the GSS context is established (with mutual authentication) the broker offers security
layers in a wrapped 4-byte message; Kafka offers only "none", which the client takes, with no
authorization id (the broker uses the authenticated name).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import threading
from typing import Any

from kafka_shell.connection.client_config import jaas_options
from kafka_shell.base.errors import KafkaCallError, NotSupported, UsageError, shown
from kafka_shell.protocol.codes import Error

NO_SECURITY_LAYER = 1   # RFC 4752 section 3.3: bit 0 of the first octet
DEFAULT_SERVICE = "kafka"
DEFAULT_PRINCIPAL = "kafkaclient"
_PROPERTY_REF = re.compile(r"%\{([^}]*)\}")

log = logging.getLogger("kafka_shell.kerberos")
_kinit_done: set[str] = set()      # commands already run in this process
_lock = threading.Lock()


def load_gssapi(hint: str = "") -> Any:
    try:
        import gssapi
    except ImportError:
        raise NotSupported(
            "SASL GSSAPI needs the Python package gssapi: pip install 'kafka-shell[kerberos]' "
            f"(it builds against the Kerberos libraries: Debian libkrb5-dev, Red Hat krb5-devel){hint}") from None
    return gssapi


def unset_mechanism_hint(props: dict[str, str]) -> str:
    """Said when GSSAPI came from librdkafka's default rather than from the user."""
    if props.get("sasl.mechanism") or props.get("sasl.mechanisms"):
        return ""
    return ". sasl.mechanism is not set, and GSSAPI is librdkafka's default: set it if you meant PLAIN, SCRAM or OAUTHBEARER"


def _failed(what: str, exc: Exception, hint: str = "") -> KafkaCallError:
    return KafkaCallError(f"Kerberos: {what}: {exc}{hint}", code=Error.sasl_authentication_failed)


def with_java_login(props: dict[str, str]) -> dict[str, str]:
    """librdkafka's keytab and principal taken from a Java client's Krb5LoginModule (`useKeyTab=true
    keyTab="..." principal="..."`) where librdkafka's own keys are not set."""
    jaas = props.get("sasl.jaas.config", "")
    if "Krb5LoginModule" not in jaas or not re.search(r'useKeyTab\s*=\s*"?true', jaas):
        return props
    options = jaas_options(jaas)
    java = {"sasl.kerberos.keytab": options.get("keyTab"), "sasl.kerberos.principal": options.get("principal")}
    return {**{k: v for k, v in java.items() if v}, **props}


class GssapiClient:
    def __init__(self, props: dict[str, str], host: str):
        props = with_java_login(props)
        self._hint = unset_mechanism_hint(props)
        gssapi = self._gssapi = load_gssapi(self._hint)
        service = props.get("sasl.kerberos.service.name", DEFAULT_SERVICE)
        self._target = gssapi.Name(f"{service}@{host}", gssapi.NameType.hostbased_service)
        creds = credentials(props, self._hint)
        flags = [gssapi.RequirementFlag.mutual_authentication, gssapi.RequirementFlag.out_of_sequence_detection]
        try:
            self._context = gssapi.SecurityContext(name=self._target, creds=creds, usage="initiate",
                                                   mech=gssapi.MechType.kerberos, flags=flags)
        except gssapi.exceptions.GSSError as exc:
            raise _failed(f"cannot start a context for {service}@{host}", exc, self._hint) from None
        self._layer_chosen = False

    def start(self) -> bytes:
        return self._step(None)

    def respond(self, challenge: bytes) -> bytes | None:
        if not self._context.complete:
            return self._step(challenge)
        if self._layer_chosen:
            return None  # the broker accepted our choice: logged in
        return self._choose_layer(challenge)

    def _step(self, token: bytes | None) -> bytes:
        try:
            return self._context.step(token) or b""
        except self._gssapi.exceptions.GSSError as exc:
            raise _failed(f"cannot log in to {self._target} (run kinit, or set sasl.kerberos.keytab "
                          "and sasl.kerberos.principal)", exc, self._hint) from None

    def _choose_layer(self, challenge: bytes) -> bytes:
        """Take "no security layer" from the broker's wrapped offer (RFC 4752 3.1)."""
        try:
            offer = self._context.unwrap(challenge).message
        except self._gssapi.exceptions.GSSError as exc:
            raise _failed("the broker's security-layer offer is invalid", exc) from None
        if len(offer) != 4 or not offer[0] & NO_SECURITY_LAYER:
            raise KafkaCallError("Kerberos: the broker does not offer SASL GSSAPI without a security layer, "
                                 "which is all Kafka clients use.", code=Error.sasl_authentication_failed)
        self._layer_chosen = True
        # Chosen layer, then a maximum buffer size of 0 (no layer), no authorization id.
        return self._context.wrap(bytes([NO_SECURITY_LAYER, 0, 0, 0]), encrypt=False).message


def credentials(props: dict[str, str], hint: str = "") -> Any:
    """The initiator's credentials by the rules in the module's docstring."""
    gssapi = load_gssapi(hint)
    command = props.get("sasl.kerberos.kinit.cmd")
    relogin = props.get("sasl.kerberos.min.time.before.relogin", "60000").strip()
    keytab = props.get("sasl.kerberos.keytab")
    principal = props.get("sasl.kerberos.principal", DEFAULT_PRINCIPAL)
    if command and relogin != "0":
        _run_kinit(_render(command, props))
        return None  # the default ticket cache
    if not keytab:
        return None
    try:
        name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
        # One in-memory cache per login identity: a cache holds one principal's tickets.
        identity = hashlib.sha1(f"{principal}\0{keytab}".encode()).hexdigest()[:12]
        store = {"client_keytab": keytab, "ccache": f"MEMORY:kafka-shell-{os.getpid()}-{identity}"}
        return gssapi.Credentials(name=name, usage="initiate", store=store)
    except gssapi.exceptions.GSSError as exc:
        raise _failed(f"cannot get tickets for {shown(principal)} from keytab {shown(keytab)}", exc, hint) from None


def _render(template: str, props: dict[str, str]) -> str:
    """librdkafka's `%{property}` substitution (its defaults for the kerberos properties)."""
    defaults = {"sasl.kerberos.principal": DEFAULT_PRINCIPAL, "sasl.kerberos.service.name": DEFAULT_SERVICE}
    return _PROPERTY_REF.sub(lambda m: props.get(m.group(1), defaults.get(m.group(1), "")), template)


def _run_kinit(command: str) -> None:
    with _lock:
        if command in _kinit_done:
            return
        try:
            done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            raise UsageError("sasl.kerberos.kinit.cmd did not finish within 30 s") from None
        if done.returncode != 0:
            # librdkafka goes on after a failed kinit (the cache may hold a ticket); so do we,
            # but say why a login that follows may fail.
            detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            log.warning("sasl.kerberos.kinit.cmd failed: %s", detail[0])
        _kinit_done.add(command)
