"""The sandbox's TLS: a CA of its own and a broker certificate, kept in a directory.

`ensure_certificates(dir)` writes what is missing (files 0600 in a 0700 directory): `ca.pem` (what clients trust: ssl.ca.location),
`ca.key`, and `broker.pem` / `broker.key` (subject CN=sandbox-broker, SAN 127.0.0.1 and
localhost), so a directory that already holds a CA keeps it across restarts (a test may also put
its own broker certificate there first, e.g. an expired one). `issue_certificate` signs more
(client certificates for mutual TLS). `peer_principal` is Kafka's default principal builder for
an SSL connection: `User:` and the client certificate's subject as X500Principal.getName()
gives it (RFC 2253: "CN=alice,OU=ops,O=example").
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_FILE, CA_KEY_FILE = "ca.pem", "ca.key"
BROKER_CERT_FILE, BROKER_KEY_FILE = "broker.pem", "broker.key"
DEFAULT_SANS = ("127.0.0.1", "localhost")
CLIENT_AUTH = ("none", "requested", "required")   # Kafka's ssl.client.auth
VALID_DAYS = 365


def ensure_certificates(tls_dir: str | Path) -> Path:
    """The CA and the broker certificate in `tls_dir` (created when missing). Returns the dir."""
    d = Path(tls_dir)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not (d / CA_FILE).exists() or not (d / CA_KEY_FILE).exists():
        key = ec.generate_private_key(ec.SECP256R1())
        # A name of its own: two sandboxes' CAs are told apart (an unknown CA is not taken for one).
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kafka-shell sandbox CA {os.urandom(4).hex()}")])
        now = _now()
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=VALID_DAYS * 10))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        _write(d / CA_KEY_FILE, _key_pem(key))
        _write(d / CA_FILE, cert.public_bytes(serialization.Encoding.PEM))
        for stale in (BROKER_CERT_FILE, BROKER_KEY_FILE):  # signed by a CA that is gone
            (d / stale).unlink(missing_ok=True)
    if not (d / BROKER_CERT_FILE).exists() or not (d / BROKER_KEY_FILE).exists():
        issue_certificate(d, "CN=sandbox-broker", "broker")
    return d


def issue_certificate(tls_dir: str | Path, subject: str, name: str, sans: tuple[str, ...] = DEFAULT_SANS,
                      valid_days: float = VALID_DAYS, expired: bool = False) -> tuple[Path, Path]:
    """A certificate for `subject` (RFC 4514 text, e.g. "CN=alice,O=example") signed by the
    directory's CA, written as NAME.pem and NAME.key; `expired` makes one that ended yesterday.
    Returns (certificate path, key path)."""
    d = Path(tls_dir)
    ca_key = serialization.load_pem_private_key((d / CA_KEY_FILE).read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate((d / CA_FILE).read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    start, end = ((now - datetime.timedelta(days=2), now - datetime.timedelta(days=1)) if expired
                  else (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=valid_days)))
    alt_names: list[x509.GeneralName] = []
    for san in sans:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            alt_names.append(x509.DNSName(san))
    builder = (x509.CertificateBuilder().subject_name(x509.Name.from_rfc4514_string(subject))
               .issuer_name(ca.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    cert_path, key_path = d / f"{name}.pem", d / f"{name}.key"
    _write(key_path, _key_pem(key))
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def server_context(tls_dir: str | Path, client_auth: str = "none") -> ssl.SSLContext:
    """A broker's TLS context: its certificate, and client certificates checked against the CA
    as ssl.client.auth says (required: no certificate, no connection)."""
    d = Path(tls_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(d / BROKER_CERT_FILE, d / BROKER_KEY_FILE)
    if client_auth != "none":
        ctx.load_verify_locations(cafile=str(d / CA_FILE))
        ctx.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def peer_principal(ssl_object: ssl.SSLObject | None) -> str | None:
    """`User:<subject DN>` of the client's certificate, None without one."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return None
    return "User:" + x500_name(x509.load_der_x509_certificate(der).subject)


# The attribute keywords X500Principal.getName() writes (RFC 2253); others are written as the
# OID and the value's DER encoding in hex ("1.2.840.113549.1.9.1=#1611...").
RFC2253_KEYWORDS = {NameOID.COMMON_NAME, NameOID.COUNTRY_NAME, NameOID.LOCALITY_NAME,
                    NameOID.STATE_OR_PROVINCE_NAME, NameOID.ORGANIZATION_NAME,
                    NameOID.ORGANIZATIONAL_UNIT_NAME, NameOID.STREET_ADDRESS, NameOID.DOMAIN_COMPONENT,
                    NameOID.USER_ID}
_STRING_CODECS = {30: "utf-16-be", 28: "utf-32-be"}  # BMPString, UniversalString; others UTF-8/ASCII


def x500_name(name: x509.Name) -> str:
    """The distinguished name as Java's X500Principal.getName() gives it: RFC 2253, the last RDN
    first, multi-valued RDNs joined by "+"."""
    def attribute(a: x509.NameAttribute) -> str:
        if a.oid in RFC2253_KEYWORDS:
            return a.rfc4514_string()
        tag = getattr(getattr(a, "_type", None), "value", 12)  # 12: UTF8String
        value = a.value if isinstance(a.value, bytes) else a.value.encode(_STRING_CODECS.get(tag, "utf-8"))
        return f"{a.oid.dotted_string}=#{_der(tag, value).hex()}"
    return ",".join("+".join(attribute(a) for a in rdn) for rdn in reversed(name.rdns))


def _der(tag: int, value: bytes) -> bytes:
    n = len(value)
    if n < 0x80:
        return bytes([tag, n]) + value
    size = (n.bit_length() + 7) // 8
    return bytes([tag, 0x80 | size]) + n.to_bytes(size, "big") + value


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes) -> None:
    """Its owner's alone, certificates too: clients of the same user read ca.pem."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
