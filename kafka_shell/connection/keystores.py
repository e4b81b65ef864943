"""Java trust and key stores (JKS with `pyjks`, PKCS12 with `cryptography`) as PEM text, so the
`ssl.truststore.*` / `ssl.keystore.*` properties of Kafka's Java tools work for librdkafka and
the direct channel alike. Nothing is written to disk: librdkafka takes ssl.ca.pem,
ssl.certificate.pem and ssl.key.pem, and the channel loads them from memory.
"""

from __future__ import annotations

import functools
import os

from kafka_shell.base.errors import UsageError, shown

STORE_KEYS = ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
              "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type")
JKS_MAGIC = b"\xfe\xed\xfe\xed"


def as_pem(props: dict[str, str]) -> dict[str, str]:
    """`props` with the stores replaced by PEM properties (unchanged when there are none)."""
    if not any(k in props for k in STORE_KEYS):
        return props
    out = {k: v for k, v in props.items() if k not in STORE_KEYS}
    if props.get("ssl.truststore.location"):
        out["ssl.ca.pem"] = _truststore(*_store(props, "truststore"))
    if props.get("ssl.keystore.location"):
        path, password, mtime = _store(props, "keystore")
        certificate, key = _keystore(path, password, mtime, props.get("ssl.key.password"))
        out["ssl.certificate.pem"], out["ssl.key.pem"] = certificate, key
        out.pop("ssl.key.password", None)  # the key is decrypted already
    return out


def _store(props: dict[str, str], kind: str) -> tuple[str, str, int]:
    path = props[f"ssl.{kind}.location"]
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        raise UsageError(f"ssl.{kind}.location: file {shown(path)} does not exist or cannot be read: "
                         "fix the path") from None
    return path, props.get(f"ssl.{kind}.password", ""), mtime


@functools.lru_cache(maxsize=8)
def _truststore(path: str, password: str, mtime: int) -> str:
    """Every certificate of the store, as PEM (the CAs the client trusts)."""
    data = _read(path, "truststore")
    if data.startswith(JKS_MAGIC):
        store = _load_jks(data, password, "truststore")
        return "".join(_der_to_pem(c.cert) for c in store.certs.values())
    _, certificate, extra = _load_pkcs12(data, password, "truststore")
    from cryptography.hazmat.primitives.serialization import Encoding
    certs = ([certificate] if certificate is not None else []) + list(extra)
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


@functools.lru_cache(maxsize=8)
def _keystore(path: str, password: str, mtime: int, key_password: str | None) -> tuple[str, str]:
    """(certificate chain PEM, unencrypted PKCS#8 key PEM) of the store's private key entry."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding, NoEncryption, PrivateFormat, load_der_private_key)
    data = _read(path, "keystore")
    if data.startswith(JKS_MAGIC):
        store = _load_jks(data, password, "keystore")
        entry = next(iter(store.private_keys.values()), None)
        if entry is None:
            raise UsageError(f"ssl.keystore.location: {shown(path)} holds no private key")
        if not entry.is_decrypted():
            try:
                entry.decrypt(key_password or password)
            except Exception:
                raise UsageError("ssl.key.password does not open the key in the keystore") from None
        key = load_der_private_key(entry.pkey_pkcs8, password=None)
        chain = "".join(_der_to_pem(der) for _, der in entry.cert_chain)
    else:
        key, certificate, extra = _load_pkcs12(data, password, "keystore")
        if key is None or certificate is None:
            raise UsageError(f"ssl.keystore.location: {shown(path)} holds no private key and certificate")
        chain = "".join(c.public_bytes(Encoding.PEM).decode() for c in [certificate, *extra])
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()  # type: ignore[union-attr]
    return chain, key_pem


def _read(path: str, kind: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"ssl.{kind}.location: cannot read {shown(path)}: {exc.strerror}") from None


def _load_jks(data: bytes, password: str, kind: str):  # -> jks.KeyStore (pyjks has no types)
    import jks
    try:
        return jks.KeyStore.loads(data, password)
    except Exception:  # noqa: BLE001 - pyjks raises assorted errors for a wrong password
        raise UsageError(f"ssl.{kind}.password does not open the {kind} (JKS): check it") from None


def _load_pkcs12(data: bytes, password: str, kind: str) -> tuple:
    from cryptography.hazmat.primitives.serialization import pkcs12
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError:
        raise UsageError(f"ssl.{kind}.location is no PKCS12 or JKS store that ssl.{kind}.password "
                         "opens: check both") from None


def _der_to_pem(der: bytes) -> str:
    import base64
    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"
