"""The last loose inputs of issue 23: command lines that used to be taken in part (exit 2, one
line, nothing sent), a secret split by continuations kept out of the REPL history, add-cluster's
property names, warnings for secrets others can read, and the sandbox control endpoint's
argument types and bounds."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from kafka_shell.face.repl.history import SecretFreeHistory, is_secret
from kafka_shell.connection import sandbox_client
from kafka_shell.sandbox.server import Sandbox
from tests.test_oneshot import SHELL, shell


@pytest.fixture
def listener():
    """A port that accepts connections, to show that nothing was sent to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def _no_connection(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except BlockingIOError:
        return True
    return False


@pytest.mark.parametrize("args, expected", [
    (["--command", "list-topics", "--command", "describe-cluster"],
     "Option --command given twice: put several commands in one, separated by ;"),
    (["-c", "list-topics", "--command", "describe-cluster"], "Option -c and --command given twice"),
    (["--bootstrap-server", "{B}", "--command", "list-topics"],
     "Option --bootstrap-server given twice: list several brokers in one, separated by commas"),
    (["--broker-list", "{B}", "--command", "list-topics"], "Option --bootstrap-server and --broker-list given twice"),
    (["--command", "list-topics", "--output", "json", "-o", "csv"], "Option --output and -o given twice: give it once"),
    (["--command", "create-topic --topic a --topic a"], '--topic "a" given twice for create-topic: give each once'),
    (["--create-topic", "--topic", "a", "--topic", "b", "--topic", "a"], '--topic "a" given twice for create-topic'),
    (["--command", "describe-group g g"], 'GROUP "g" given twice for describe-group'),
])
def test_loose_command_lines_are_usage_errors(listener, args, expected):
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    p = shell("--bootstrap-server", address, *[a.replace("{B}", address) for a in args])
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == expected or p.stderr.strip().startswith(expected), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert _no_connection(listener)


def test_an_unclosed_ipv6_bracket_is_a_usage_error_at_once():
    p = shell("--bootstrap-server", "[::1", "--command", "list-topics")
    assert p.returncode == 2
    assert p.stderr.strip() == ('Bad bootstrap server "[::1" in --bootstrap-server: use host:port[,host:port...] '
                                "(ports 1 to 65535)")
    assert shell("--bootstrap-server", "[::1]:1", "--command", "output").returncode == 0  # a bracketed one is fine


# -- the REPL history ---------------------------------------------------------------------------

SPLIT_SECRET = "add-cluster p --bootstrap-server h:1 -X ss\\\n   l.keystore.pass\\\nword=hunter2"


def test_a_secret_split_by_continuations_is_seen_whole():
    assert not any(word in SPLIT_SECRET for word in ("password", "ssl.key", "sasl."))  # no piece says it
    assert is_secret(SPLIT_SECRET)
    assert not is_secret("create-topic \\\n   --topic a \\\n   --partitions 3")


def test_the_history_file_never_gets_a_split_secret(tmp_path):
    path = tmp_path / "history"
    history = SecretFreeHistory(path)
    history.append_string("list-topics")
    history.append_string(SPLIT_SECRET)
    assert "hunter2" not in path.read_text() and "list-topics" in path.read_text()
    assert list(history.get_strings()) == ["list-topics"]


# -- add-cluster's property names ----------------------------------------------------------------


@pytest.mark.parametrize("item, expected", [
    ("SASL.PASSWORD=x", 'add-cluster: unknown client property "SASL.PASSWORD" (did you mean sasl.password?)'),
    ("sasl.pasword=x", 'add-cluster: unknown client property "sasl.pasword"'),
])
def test_add_cluster_refuses_unknown_property_names(tmp_path, item, expected):
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}
    p = shell("--command", f"add-cluster c --bootstrap-server h:1 -X '{item}' --store-secret", env=env)
    assert p.returncode == 2 and p.stderr.strip().startswith(expected), p.stderr
    assert not (tmp_path / "clusters.json").exists()


def test_add_cluster_takes_librdkafkas_and_the_java_properties_the_shell_reads(tmp_path):
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}
    items = ["security.protocol=SASL_SSL", "sasl.password=${P}", "sasl.jaas.config=${JAAS}",
             "ssl.truststore.location=/t.jks", "ssl.truststore.type=JKS", "sasl.login.connect.timeout.ms=5"]
    p = shell("--command", "add-cluster c --bootstrap-server h:1 " + " ".join(f"-X '{i}'" for i in items), env=env)
    assert p.returncode == 0, p.stderr
    saved = json.loads((tmp_path / "clusters.json").read_text())["clusters"]["c"]["properties"]
    assert set(saved) == {i.split("=")[0] for i in items}


# -- secrets others can read ---------------------------------------------------------------------


def test_a_command_config_file_others_can_read_with_a_password_is_warned_of(tmp_path, listener):
    config = tmp_path / "client.properties"
    config.write_text("sasl.username=u\nsasl.password=hunter2\n")
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    os.chmod(config, 0o644)
    p = shell("--bootstrap-server", address, "--command-config", str(config), "--command", "output")
    assert p.stderr.splitlines()[0] == (f"Warning: {config} holds sasl.password and other users can read it "
                                        f"(mode 644): chmod 600 {config}, or write sasl.password=${{ENV_VAR}} there.")
    assert "hunter2" not in p.stderr
    os.chmod(config, 0o600)
    assert "Warning" not in shell("--bootstrap-server", address, "--command-config", str(config),
                                  "--command", "output").stderr
    config.write_text("sasl.username=u\nsasl.password=${PW}\n")  # a reference is no secret in the file
    os.chmod(config, 0o644)
    p = shell("--bootstrap-server", address, "--command-config", str(config), "--command", "output",
              env={"PW": "x"})
    assert "Warning" not in p.stderr


def test_a_clusters_file_others_could_read_is_made_private_and_said(tmp_path):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps({"clusters": {"prod": {"bootstrap": "h:1", "properties": {
        "sasl.username": "u", "sasl.password": "hunter2"}}}}))
    os.chmod(path, 0o644)
    p = shell("--command", "clusters", env={"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)})
    assert p.returncode == 0
    assert p.stderr.strip() == (f"Warning: {path} holds sasl.password of prod and other users could read it "
                                "(mode 644): it is 0600 now; change those secrets if others may have read them.")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert "Warning" not in shell("--command", "clusters", env={"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}).stderr


def _sandbox_stderr(*args: str, env: dict | None = None) -> str:
    proc = subprocess.Popen([*SHELL, "sandbox", "--brokers", "1", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    try:
        assert proc.stdout.readline().startswith("bootstrap.servers=")
    finally:
        proc.kill()
    return proc.communicate(10)[1]


def test_a_password_on_the_sandboxs_command_line_is_warned_of():
    err = _sandbox_stderr("--user", "alice:hunter2")
    assert ("Warning: --user alice:... puts a password on the command line, visible to other users (ps): "
            "write --user 'alice:${ALICE_PASSWORD}' and export ALICE_PASSWORD.") in err
    assert "hunter2" not in err
    assert "Warning" not in _sandbox_stderr("--user", "alice:${PW}", env={"PW": "x"})


# -- the control endpoint ------------------------------------------------------------------------


@pytest.mark.parametrize("method, args, expected", [
    ("stop_broker", [True], "stop_broker: node id must be an integer in 0..2147483647, not true"),
    ("stop_broker", ["1"], 'stop_broker: node id must be an integer in 0..2147483647, not "1"'),
    ("delay", [1, 10**30], "delay: delay in ms must be an integer in 0..2147483647, not 1000000000000000000000000000000"),
    ("delay", [1, 1.5], "delay: delay in ms must be an integer in 0..2147483647, not 1.5"),
    ("delay", [1], "delay takes 2 argument(s), got 1"),
    ("fail", [1, "Metadata", {"x": 1}], 'fail: error must be an integer in -1..32767 or a string, not {"x": 1}'),
    ("set_replication_rate", [0], "set_replication_rate: bytes per second must be an integer in 1..9223372036854775807"),
    ("replace_broker", [1, None, "yes"], 'replace_broker: lose disk must be true or false (or null), not "yes"'),
    ("start_controller", [-5], "start_controller: node id must be an integer in 0..2147483647, not -5"),
])
def test_the_control_endpoint_checks_its_arguments(method, args, expected):
    with Sandbox(brokers=2, serve_control=True) as s:
        host, _, port = s.control_address.rpartition(":")
        with pytest.raises(ValueError) as refused:
            sandbox_client._request((host, int(port)), method, args, 10)
        assert str(refused.value).startswith(expected), refused.value
        status = sandbox_client._request((host, int(port)), "status", [], 10)
        assert all(b["alive"] for b in status["brokers"])  # nothing was done
        assert s.cluster.brokers[1].delay_ms == 0
        sandbox_client._request((host, int(port)), "delay", [1, 5], 10)  # a good call still works
        assert s.cluster.brokers[1].delay_ms == 5
