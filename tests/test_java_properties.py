"""Java client properties the shell honours as Kafka's own tools do: JAAS escapes, trust and
key stores (JKS and PKCS12) converted in memory for librdkafka and the direct channel, checked
against the sandbox's SSL listener with client certificates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jks
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption, Encoding, NoEncryption, PrivateFormat, load_pem_private_key, pkcs12)

from kafka_shell.connection.client_config import librdkafka_properties, sasl_credentials
from kafka_shell.sandbox import tls
from kafka_shell.sandbox.server import Sandbox

SHELL = str(Path(sys.executable).parent / "kafka-shell")
DN = "CN=dave,O=example"


def test_jaas_values_are_decoded_as_java_does():
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="a\\\\lice" password="p\\"w\\\\d\\tx";')
    assert sasl_credentials({"sasl.jaas.config": jaas}) == ("a\\lice", 'p"w\\d\tx')


def test_empty_endpoint_identification_means_no_host_name_check():
    props = librdkafka_properties({"ssl.endpoint.identification.algorithm": ""})
    assert props["ssl.endpoint.identification.algorithm"] == "none"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A sandbox SSL listener that requires client certificates, and the client's CA and
    certificate in a JKS truststore, a JKS keystore and a PKCS12 keystore."""
    d = tmp_path_factory.mktemp("stores")
    tls_dir = tls.ensure_certificates(d / "tls")
    cert_path, key_path = tls.issue_certificate(tls_dir, DN, "dave")
    ca = x509.load_pem_x509_certificate((tls_dir / tls.CA_FILE).read_bytes())
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = load_pem_private_key(key_path.read_bytes(), password=None)
    jks.KeyStore.new("jks", [jks.TrustedCertEntry.new("ca", ca.public_bytes(Encoding.DER))]).save(
        str(d / "truststore.jks"), "trust-pw")
    pkcs8 = key.private_bytes(Encoding.DER, PrivateFormat.PKCS8, NoEncryption())
    entry = jks.PrivateKeyEntry.new("dave", [cert.public_bytes(Encoding.DER)], pkcs8, "pkcs8")
    entry.encrypt("key-pw")
    jks.KeyStore.new("jks", [entry]).save(str(d / "keystore.jks"), "store-pw")
    (d / "keystore.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"dave", key, cert, None, BestAvailableEncryption(b"p12-pw")))  # type: ignore[arg-type]
    with Sandbox(brokers=1, listeners=["SSL"], tls_dir=str(tls_dir), ssl_client_auth="required") as sb:
        yield sb, d


@pytest.mark.parametrize("keystore", ["jks", "pkcs12"])
def test_java_stores_log_in_over_mutual_tls(stores, tmp_path, keystore):
    sb, d = stores
    props = {"security.protocol": "SSL", "ssl.truststore.location": str(d / "truststore.jks"),
             "ssl.truststore.password": "trust-pw"}
    if keystore == "jks":
        props.update({"ssl.keystore.location": str(d / "keystore.jks"), "ssl.keystore.password": "store-pw",
                      "ssl.key.password": "key-pw"})
    else:
        props.update({"ssl.keystore.location": str(d / "keystore.p12"), "ssl.keystore.password": "p12-pw",
                      "ssl.keystore.type": "PKCS12"})
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    # list-brokers goes through the direct channel, create-topic through librdkafka.
    proc = subprocess.run([SHELL, "--bootstrap-server", sb.bootstrap, "--command-config", str(config),
                           "--timeout", "30", "--file", "-", "--quiet"],
                          input=f"list-brokers\ncreate-topic --topic by-{keystore} --partitions 1 "
                                "--replication-factor 1\n", capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert f"Created topic by-{keystore}." in proc.stderr
    assert "store-pw" not in proc.stderr + proc.stdout


def test_a_wrong_store_password_is_one_line(stores, tmp_path):
    sb, d = stores
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SSL\nssl.truststore.location={d / 'truststore.jks'}\n"
                      "ssl.truststore.password=wrong-pw\n")
    config.chmod(0o600)  # it holds a password: readable by others, a warning would come first
    proc = subprocess.run([SHELL, "--bootstrap-server", sb.bootstrap, "--command-config", str(config),
                           "--command", "list-brokers"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "ssl.truststore.password does not open the truststore (JKS): check it"
