"""Secured listeners end to end: the shell's commands over PLAINTEXT, SASL_PLAINTEXT (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512), SASL_SSL and SSL with client certificates against the sandbox,
each connection mistake told precisely (with --timeout 30: the message itself proves the shell
did not wait for the timeout), KIP-368 re-authentication in the REPL, and confluent-kafka's own
producer and consumer logging in over SASL_SSL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from confluent_kafka import Consumer, Producer

from kafka_shell.connection.channel import Channel, ConnectionLost
from kafka_shell.protocol.codes import AlterConfigOp, ApiKey, ResourceType
from kafka_shell.connection.manager import ConnectionManager
from kafka_shell.sandbox import tls
from kafka_shell.sandbox.server import Sandbox

ROOT = Path(__file__).resolve().parent.parent
SHELL = str(Path(sys.executable).parent / "kafka-shell")
USER, PASSWORD = "alice", "alice-secret"
CLIENT_DN = "CN=carol,OU=ops,O=example"
LISTENERS = ["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """One cluster with every listener; SSL asks for client certificates (required)."""
    tls_dir = tmp_path_factory.mktemp("tls")
    with Sandbox(brokers=3, listeners=LISTENERS, users={USER: PASSWORD}, tls_dir=str(tls_dir),
                 ssl_client_auth="required") as sb:
        cert, key = tls.issue_certificate(tls_dir, CLIENT_DN, "carol")
        sb.client_cert = (str(cert), str(key))  # type: ignore[attr-defined]
        yield sb


def sasl(mechanism: str, protocol: str = "SASL_PLAINTEXT", password: str = PASSWORD) -> dict[str, str]:
    return {"security.protocol": protocol, "sasl.mechanism": mechanism, "sasl.username": USER,
            "sasl.password": password}


def setups(sb: Sandbox) -> dict[str, tuple[str, dict[str, str]]]:
    """name -> (listener, client properties)."""
    ca = f"{sb.tls_dir}/ca.pem"
    cert, key = sb.client_cert  # type: ignore[attr-defined]
    return {
        "plaintext": ("PLAINTEXT", {}),
        "sasl-plain": ("SASL_PLAINTEXT", sasl("PLAIN")),
        "sasl-scram-256": ("SASL_PLAINTEXT", sasl("SCRAM-SHA-256")),
        "sasl-scram-512": ("SASL_PLAINTEXT", sasl("SCRAM-SHA-512")),
        "sasl-ssl": ("SASL_SSL", {**sasl("SCRAM-SHA-512", "SASL_SSL"), "ssl.ca.location": ca}),
        "ssl-client-cert": ("SSL", {"security.protocol": "SSL", "ssl.ca.location": ca,
                                    "ssl.certificate.location": cert, "ssl.key.location": key}),
    }


def write_config(path: Path, props: dict[str, str]) -> str:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    path.chmod(0o600)
    return str(path)


def shell(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([SHELL, *args], input=stdin, capture_output=True, text=True, timeout=90,
                          stdin=None if stdin is not None else subprocess.DEVNULL, cwd=ROOT)


def connect(sb: Sandbox, listener: str, props: dict[str, str], tmp_path: Path, script: str,
            *extra: str) -> subprocess.CompletedProcess:
    config = write_config(tmp_path / "client.properties", props)
    return shell("--bootstrap-server", sb.bootstrap_for(listener), "--command-config", config,
                 "--timeout", "30", *extra, "--file", "-", "--quiet", stdin=script)


SETUPS = ["plaintext", "sasl-plain", "sasl-scram-256", "sasl-scram-512", "sasl-ssl", "ssl-client-cert"]


@pytest.mark.parametrize("setup", SETUPS)
def test_the_command_set_works_over_each_listener(secured, tmp_path, setup):
    listener, props = setups(secured)[setup]
    topic = f"orders-{setup}"
    script = "\n".join([
        f"create-topic --topic {topic} --partitions 2 --replication-factor 3",
        "list-topics",
        f"describe-topic --topic {topic}",
        f"alter-configs --topic {topic} --add-config retention.ms=3600000",
        f"describe-configs --topic {topic}",
        "describe-cluster",
        "list-brokers",
        f"elect-leaders --election-type preferred --topic {topic}",
        "describe-log-dirs",
    ]) + "\n"
    proc = connect(secured, listener, props, tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    assert f"Created topic {topic}." in proc.stderr
    assert "Valid replica already elected for partitions" in proc.stderr
    assert proc.stdout.count(topic) >= 4           # listed, described, configs, log dirs
    assert "retention.ms" in proc.stdout and "3600000" in proc.stdout
    assert "Traceback" not in proc.stderr
    # The brokers' ports the shell shows are this listener's (Metadata advertises the endpoints
    # of the listener the client came in on).
    ports = {addr.rsplit(":", 1)[1] for addr in secured.bootstrap_for(listener).split(",")}
    others = {addr.rsplit(":", 1)[1] for other in LISTENERS if other != listener
              for addr in secured.bootstrap_for(other).split(",")}
    shown_ports = set(re.findall(r"^\d+\s+127\.0\.0\.1\s+(\d+)\s", proc.stdout, re.MULTILINE))
    assert shown_ports and shown_ports <= ports and not shown_ports & others


def test_principals_are_kafkas(secured):
    """SASL logins are User:NAME; a client certificate on the SSL listener is its full DN."""
    listeners = setups(secured)
    host, port = secured.bootstrap_for("SSL").split(",")[0].split(":")
    by_cert = Channel(host, int(port), listeners["ssl-client-cert"][1], timeout_s=10)
    host, port = secured.bootstrap_for("SASL_SSL").split(",")[0].split(":")
    by_sasl = Channel(host, int(port), listeners["sasl-ssl"][1], timeout_s=10)
    try:
        for ch in (by_cert, by_sasl):
            ch.request(ApiKey.METADATA, {"topics": []})
        principals = set(secured.principals())
        assert ("SSL", f"User:{CLIENT_DN}") in principals
        assert ("SASL_SSL", f"User:{USER}") in principals
    finally:
        by_cert.close()
        by_sasl.close()


def test_a_distinguished_name_reads_as_javas_x500principal():
    """RFC 2253 keywords by name, any other attribute as its OID and DER value in hex."""
    name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example, Inc."),
                      x509.NameAttribute(NameOID.COMMON_NAME, "carol"),
                      x509.NameAttribute(NameOID.EMAIL_ADDRESS, "carol@example.com")])
    assert tls.x500_name(name) == ("1.2.840.113549.1.9.1=#16116361726f6c406578616d706c652e636f6d,"
                                   "CN=carol,O=Example\\, Inc.,C=DE")


# -- each connection mistake, told at once ------------------------------------------------------


def mistake(sb: Sandbox, listener: str, props: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    config = write_config(tmp_path / "client.properties", props)
    return shell("--bootstrap-server", sb.bootstrap_for(listener), "--command-config", config,
                 "--timeout", "30", "--command", "list-topics")


def assert_says(proc: subprocess.CompletedProcess, code: int, *texts: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for text in texts:
        assert text in proc.stderr, proc.stderr
    assert "within 30 s" not in proc.stderr and "Internal error" not in proc.stderr


def test_plaintext_client_at_a_tls_listener(secured, tmp_path):
    port = secured.bootstrap_for("SSL").split(",")[0]
    assert_says(mistake(secured, "SSL", {}, tmp_path), 1,
                f"{port} speaks TLS; set security.protocol=SSL or SASL_SSL")


def test_tls_client_at_a_plaintext_listener(secured, tmp_path):
    props = {"security.protocol": "SSL", "ssl.ca.location": f"{secured.tls_dir}/ca.pem"}
    assert_says(mistake(secured, "PLAINTEXT", props, tmp_path), 1,
                "does not speak TLS; set security.protocol=PLAINTEXT")


def test_plaintext_client_at_a_sasl_listener(secured, tmp_path):
    assert_says(mistake(secured, "SASL_PLAINTEXT", {}, tmp_path), 1,
                "this listener needs SASL: set security.protocol=SASL_PLAINTEXT or SASL_SSL",
                "it offers PLAIN, SCRAM-SHA-256, SCRAM-SHA-512")


def test_sasl_client_at_a_plaintext_listener(secured, tmp_path):
    assert_says(mistake(secured, "PLAINTEXT", sasl("PLAIN"), tmp_path), 1,
                "this listener does not use SASL: set security.protocol=PLAINTEXT")


def test_a_mechanism_the_listener_does_not_enable(tmp_path):
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], sasl_mechanisms=["PLAIN"], users={USER: PASSWORD}) as sb:
        assert_says(mistake(sb, "SASL_PLAINTEXT", sasl("SCRAM-SHA-512"), tmp_path), 1,
                    "does not enable SASL mechanism SCRAM-SHA-512 (it offers PLAIN)")


@pytest.mark.parametrize("mechanism, message", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with "
                      "SASL mechanism SCRAM-SHA-256"),
])
def test_a_wrong_password_is_told_as_kafka_says_it(secured, tmp_path, mechanism, message):
    proc = mistake(secured, "SASL_PLAINTEXT", sasl(mechanism, password="not-the-password"), tmp_path)
    assert_says(proc, 1, message)
    assert "not-the-password" not in proc.stderr


def test_a_certificate_from_an_unknown_ca(secured, tmp_path):
    other_ca = tls.ensure_certificates(tmp_path / "other") / tls.CA_FILE
    props = {"security.protocol": "SSL", "ssl.ca.location": str(other_ca),
             "ssl.certificate.location": secured.client_cert[0],  # type: ignore[attr-defined]
             "ssl.key.location": secured.client_cert[1]}  # type: ignore[attr-defined]
    assert_says(mistake(secured, "SSL", props, tmp_path), 1,
                "the broker's certificate is not trusted: ",
                "set ssl.ca.location to the CA that signed the broker's certificate")


@pytest.mark.parametrize("problem, message", [
    ("host-name", "IP address mismatch, certificate is not valid for '127.0.0.1'"),
    ("expired", "certificate has expired"),
])
def test_a_broker_certificate_that_does_not_fit(tmp_path, problem, message):
    tls_dir = tls.ensure_certificates(tmp_path / "tls")
    if problem == "host-name":
        tls.issue_certificate(tls_dir, "CN=elsewhere", "broker", sans=("kafka.elsewhere.example",))
    else:
        tls.issue_certificate(tls_dir, "CN=sandbox-broker", "broker", expired=True)
    with Sandbox(brokers=1, listeners=["SSL"], tls_dir=str(tls_dir)) as sb:
        props = {"security.protocol": "SSL", "ssl.ca.location": str(tls_dir / tls.CA_FILE)}
        assert_says(mistake(sb, "SSL", props, tmp_path), 1, message)
        if problem == "host-name":  # Java's empty ssl.endpoint.identification.algorithm: no check
            props["ssl.endpoint.identification.algorithm"] = ""
            proc = mistake(sb, "SSL", props, tmp_path)
            assert proc.returncode == 0, proc.stderr


def test_mutual_tls_without_an_accepted_client_certificate(secured, tmp_path):
    ca = f"{secured.tls_dir}/ca.pem"
    assert_says(mistake(secured, "SSL", {"security.protocol": "SSL", "ssl.ca.location": ca}, tmp_path), 1,
                "closed the TLS connection at once: it probably requires a client certificate "
                "(ssl.client.auth=required): set ssl.certificate.location and ssl.key.location")
    other = tls.ensure_certificates(tmp_path / "other")            # a certificate of another CA
    cert, key = tls.issue_certificate(other, CLIENT_DN, "carol")
    props = {"security.protocol": "SSL", "ssl.ca.location": ca, "ssl.certificate.location": str(cert),
             "ssl.key.location": str(key)}
    assert_says(mistake(secured, "SSL", props, tmp_path), 1,
                "closed the TLS connection at once: it probably does not accept the client certificate")


def test_a_missing_ca_file_is_named(secured, tmp_path):
    missing = str(tmp_path / "nowhere" / "ca.pem")
    proc = mistake(secured, "SSL", {"security.protocol": "SSL", "ssl.ca.location": missing}, tmp_path)
    assert_says(proc, 2, f"ssl.ca.location: file {missing} does not exist")


def test_a_secret_typed_without_equals_is_not_echoed(secured):
    proc = shell("--bootstrap-server", secured.bootstrap, "-X", "sasl.password:hunter22",
                 "--command", "list-topics")
    assert proc.returncode == 2
    assert "hunter22" not in proc.stderr and "sasl.password" in proc.stderr


# -- KIP-368 and librdkafka ----------------------------------------------------------------------


def test_the_repl_logs_in_again_after_the_session_lifetime(tmp_path):
    """A REPL idle past connections.max.reauth.ms: the next mutation succeeds."""
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], users={USER: PASSWORD}, reauth_ms=3000) as sb:
        config = write_config(tmp_path / "client.properties", sasl("SCRAM-SHA-256"))
        env = dict(os.environ, KAFKA_SHELL_DATA_DIR=str(tmp_path / "data"), TERM="dumb")
        child = pexpect.spawn(SHELL, ["--bootstrap-server", sb.bootstrap, "--command-config", config],
                              env=env, encoding="utf-8", timeout=30, dimensions=(30, 160))
        try:
            child.expect("Connected to cluster")
            child.sendline("create-topic --topic before-idle --partitions 1 --replication-factor 1")
            child.expect_exact("Created topic before-idle.")
            child.expect(pexpect.TIMEOUT, timeout=4)   # idle past the 3 s session
            # A broker's config change goes to that broker on the shell's own connection, and is
            # never resent blindly: without a new login the broker would close the connection on
            # it and the shell could only say "may or may not have taken effect".
            child.sendline("alter-configs --broker 1 --add-config leader.replication.throttled.rate=1000000")
            child.sendline("alter-topic --topic before-idle --partitions 2")
            child.sendline("create-topic --topic after-idle --partitions 1 --replication-factor 1")
            child.expect_exact("Created topic after-idle.")
            assert "may or may not" not in child.before and "rror" not in child.before, child.before
            child.sendline("exit")
            child.expect(pexpect.EOF)
        finally:
            child.terminate(force=True)
        assert sb.call(lambda: len(sb.cluster.topics["before-idle"].partitions)) == 2
        assert sb.call(lambda: sb.cluster.brokers[1].configs.get("leader.replication.throttled.rate")) == "1000000"


def test_the_broker_ends_a_session_that_is_not_renewed():
    """KIP-368 on the broker side: past connections.max.reauth.ms a request without a new login
    closes the connection; a SaslHandshake on the open connection logs in again."""
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], users={USER: PASSWORD}, reauth_ms=400) as sb:
        host, port = sb.bootstrap.split(":")
        renewed = Channel(host, int(port), sasl("SCRAM-SHA-512"), timeout_s=10)
        stale = Channel(host, int(port), sasl("PLAIN"), timeout_s=10)
        stale._session_ends = None  # a client that never logs in again
        time.sleep(0.6)
        assert renewed.request(ApiKey.METADATA, {"topics": []})["brokers"]
        with pytest.raises(ConnectionLost):
            stale.request(ApiKey.METADATA, {"topics": []})
        renewed.close()


def test_a_broker_config_change_after_the_session_lifetime_goes_through():
    """The issue's case: a config change sent to a broker on a connection idle past its SASL
    session is not lost as "outcome unknown": the channel logs in again first."""
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], users={USER: PASSWORD}, reauth_ms=400) as sb:
        conn = ConnectionManager(sb.bootstrap, sasl("SCRAM-SHA-256"), timeout_s=30)
        try:
            conn.read()
            time.sleep(0.6)
            body = {"resources": [{"resource_type": ResourceType.BROKER, "resource_name": "1", "configs": [
                {"name": "leader.replication.throttled.rate", "config_operation": AlterConfigOp.SET,
                 "value": "5000"}]}], "validate_only": False}
            answer = conn.broker_request(1, ApiKey.INCREMENTAL_ALTER_CONFIGS, body, mutation=True)
            assert [r.error_code for r in answer.responses] == [0]
        finally:
            conn.close()
        assert sb.call(lambda: sb.cluster.brokers[1].configs.get("leader.replication.throttled.rate")) == "5000"


def test_confluent_kafka_clients_log_in_over_sasl_ssl(secured):
    conf = {"bootstrap.servers": secured.bootstrap_for("SASL_SSL"), "log_level": 0,
            **sasl("SCRAM-SHA-256", "SASL_SSL"), "ssl.ca.location": f"{secured.tls_dir}/ca.pem"}
    producer = Producer(conf)
    producer.produce("logins", b"hello over SASL_SSL")
    assert producer.flush(20) == 0
    consumer = Consumer({**conf, "group.id": "secured", "auto.offset.reset": "earliest"})
    consumer.subscribe(["logins"])
    try:
        message = None
        for _ in range(30):
            message = consumer.poll(1)
            if message is not None and not message.error():
                break
        assert message is not None and message.value() == b"hello over SASL_SSL"
    finally:
        consumer.close()


def test_debug_shows_librdkafkas_logs_without_secrets(secured, tmp_path):
    """--debug with -X debug=...: librdkafka's own log lines come out (the producer is polled for
    them; admin requests go over the shell's own channel), and the password is in none of them."""
    proc = connect(secured, "SASL_PLAINTEXT", {**sasl("PLAIN"), "debug": "broker,security,conf"}, tmp_path,
                   "create-topic --topic debugged --partitions 1 --replication-factor 1\n"
                   "produce --topic debugged hello\n", "--debug")
    assert proc.returncode == 0, proc.stderr
    assert "debug: kafka_shell.librdkafka: " in proc.stderr
    assert "Created topic debugged." in proc.stderr
    assert PASSWORD not in proc.stderr + proc.stdout


def test_kafka_shell_sandbox_serves_secured_listeners(tmp_path):
    """`kafka-shell sandbox --listeners ... --user ... --tls-dir`: the banner's per-listener
    bootstrap lists and CA are what a client needs to log in."""
    proc = subprocess.Popen([SHELL, "sandbox", "--brokers", "1", "--listeners", "PLAINTEXT,SASL_SSL",
                             "--user", f"{USER}:{PASSWORD}", "--tls-dir", str(tmp_path / "tls"),
                             "--connections-max-reauth-ms", "60000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = dict(proc.stdout.readline().strip().split("=", 1) for _ in range(6))  # type: ignore[union-attr]
        assert list(banner) == ["bootstrap.servers", "bootstrap.controllers", "control",
                                "bootstrap.servers.PLAINTEXT", "bootstrap.servers.SASL_SSL", "ssl.ca.location"]
        assert banner["ssl.ca.location"] == str(tmp_path / "tls" / "ca.pem")
        props = {**sasl("SCRAM-SHA-512", "SASL_SSL"), "ssl.ca.location": banner["ssl.ca.location"]}
        config = write_config(tmp_path / "client.properties", props)
        done = shell("--bootstrap-server", banner["bootstrap.servers.SASL_SSL"], "--command-config", config,
                     "--command", "list-brokers")
        assert done.returncode == 0, done.stderr
        assert banner["bootstrap.servers.SASL_SSL"].split(":")[1] in done.stdout
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0
