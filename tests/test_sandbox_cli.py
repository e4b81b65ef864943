"""`kafka-shell sandbox`: serves a cluster until stopped, prints its bootstrap servers, bootstrap
controllers and control endpoint, takes fault commands from another kafka-shell through that
endpoint, and with --data-dir keeps its topics (and mode) across runs."""

from __future__ import annotations

import signal
import subprocess

from confluent_kafka.admin import AdminClient, NewTopic

from tests.output import json_documents, json_rows
from tests.test_oneshot import SHELL, shell


def serve_all(*args: str) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start a server; its three announced lines (bootstrap.servers, bootstrap.controllers, control)."""
    proc = subprocess.Popen([*SHELL, "sandbox", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = [proc.stdout.readline().strip() for _ in range(3)]
    assert all("=" in line for line in lines), proc.stderr.read() if proc.poll() is not None else lines
    announced = dict(line.split("=", 1) for line in lines)
    assert list(announced) == ["bootstrap.servers", "bootstrap.controllers", "control"]
    return proc, announced


def serve(*args: str) -> tuple[subprocess.Popen, str]:
    proc, announced = serve_all(*args)
    assert announced["bootstrap.servers"].count("127.0.0.1:") >= 1
    return proc, announced["bootstrap.servers"]


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)
    return proc.wait(15)


def test_serves_brokers_with_racks_until_interrupted():
    proc, bootstrap = serve("--brokers", "2", "--rack", "a,b")
    try:
        assert len(bootstrap.split(",")) == 2
        p = shell("--bootstrap-server", bootstrap, "--output", "json", "--command", "list-brokers")
        assert p.returncode == 0, p.stderr
        assert '"rack": "a"' in p.stdout and '"rack": "b"' in p.stdout
    finally:
        assert stop(proc) == 0


def test_data_dir_keeps_topics_across_runs(tmp_path):
    proc, bootstrap = serve("--brokers", "1", "--data-dir", str(tmp_path))
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("kept", 2, 1)])["kept"].result(10)
    finally:
        assert stop(proc) == 0
    proc, bootstrap = serve("--brokers", "1", "--data-dir", str(tmp_path))
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert len(md.topics["kept"].partitions) == 2
    finally:
        assert stop(proc) == 0


def test_bad_arguments_are_one_line_usage_errors():
    for args, message in (
            (["--brokers", "3", "--rack", "a,b"], "Cannot start the sandbox: --rack needs one rack or 3 racks, got 2"),
            (["--rack", "a,,b"], "--rack expects rack ids separated by commas, not a,,b (e.g. --rack a,b,c)"),
            (["--broker-config", "num.partitions"],
             "--broker-config expects KEY=VALUE, not num.partitions (e.g. --broker-config num.partitions=4)"),
            (["--broker-config", "num.partitions=many"],
             "Cannot start the sandbox: Invalid value many for configuration num.partitions: Not a number of type INT"),
            (["--broker-config", "num.partitions=0"],
             "Cannot start the sandbox: Invalid value 0 for configuration num.partitions: Value must be at least 1"),
            (["--broker-config", "num.partitons=4"],
             "Cannot start the sandbox: unknown broker config num.partitons: Kafka 4.4 has no such key"),
            (["--broker-config", "broker.rack=r1"],
             "Cannot start the sandbox: broker.rack is set by the sandbox itself: use --rack"),
            (["--log-dirs-per-broker", "0"], "Cannot start the sandbox: --log-dirs-per-broker takes 1 to 64, not 0"),
            (["--mode", "zk", "--kafka-version", "4.4"],
             "Cannot start the sandbox: Kafka 4.4 has no ZooKeeper mode (4.0 removed it): use --kafka-version 3.9 "
             "with --mode zk, or drop --mode zk")):
        p = subprocess.run([*SHELL, "sandbox", *args], capture_output=True, text=True, timeout=30)
        assert (p.returncode, p.stderr.strip()) == (2, message), args
    p = subprocess.run([*SHELL, "sandbox", "--kafka-version", "2.8"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "invalid choice: '2.8' (choose from '4.4', '3.9')" in p.stderr


def test_static_broker_configs_racks_and_the_kafka_version():
    """--broker-config is Kafka's server.properties: created topics take num.partitions and
    default.replication.factor, DescribeConfigs says they are static; --rack gives each broker its
    rack; --kafka-version 3.9 answers as 3.9 does (3.9-only topic configs, its API versions)."""
    proc, bootstrap = serve("--brokers", "3", "--rack", "r1,r2,r3", "--kafka-version", "3.9",
                            "--broker-config", "num.partitions=4", "--broker-config", "default.replication.factor=3")
    try:
        assert shell("--bootstrap-server", bootstrap, "--command", "create-topic --topic t").returncode == 0
        p = shell("--bootstrap-server", bootstrap, "-o", "json", "--command", "describe-topic --topic t")
        rows = json_rows(p.stdout, "partitions")
        assert len(rows) == 4 and all(len(r["replicas"]) == 3 for r in rows), p.stdout
        p = shell("--bootstrap-server", bootstrap, "-o", "json", "--command", "describe-configs --broker 2")
        configs = {r["name"]: (r["value"], r["source"]) for r in json_rows(p.stdout)}
        assert configs["num.partitions"] == ("4", "STATIC_BROKER_CONFIG")
        assert configs["default.replication.factor"] == ("3", "STATIC_BROKER_CONFIG")
        assert configs["broker.rack"] == ("r2", "STATIC_BROKER_CONFIG")
        p = shell("--bootstrap-server", bootstrap, "--command", "alter-configs --topic t --add-config message.format.version=3.0")
        assert p.returncode == 0, p.stderr   # deprecated, still a topic config in 3.9
        p = shell("--bootstrap-server", bootstrap, "-o", "json", "--command", "api-versions")
        assert p.returncode == 0, p.stderr
        versions = {r["api"]: r for r in json_rows(p.stdout)}
        assert versions["Produce"]["max_version"] == 11 and "GetReplicaLogInfo" not in versions
    finally:
        assert stop(proc) == 0


def test_seed_apis_are_served_only_when_asked():
    proc, bootstrap = serve("--brokers", "1", "--seed-apis")
    try:
        p = shell("--bootstrap-server", bootstrap, "-o", "json", "--command", "api-versions")
        versions = {r["api"]: r for r in json_rows(p.stdout)}
        assert versions["GetReplicaLogInfo"]["max_version"] == 0 and versions["ElectLeaders"]["max_version"] == 3
    finally:
        assert stop(proc) == 0


def test_announces_controllers_and_takes_fault_commands_from_another_shell():
    proc, announced = serve_all("--brokers", "3", "--controllers", "3")
    bootstrap = announced["bootstrap.servers"]
    try:
        assert len(announced["bootstrap.controllers"].split(",")) == 3
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox stop-broker 2")
        assert (p.returncode, p.stderr.strip()) == (0, "Broker 2 stopped.")  # messages go to stderr
        # Done when the command returns: the cluster already says so.
        md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 3]
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox kill-controller")
        assert p.stderr.strip() == ("Active controller 100 (epoch 1) killed; active controller now "
                                    "101 (epoch 2).")
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox stop-controller 101")
        assert p.stderr.strip() == "Controller 101 stopped; active controller now 102 (epoch 3)."
        p = shell("--bootstrap-server", bootstrap, "--output", "json", "--command", "sandbox status")
        assert p.returncode == 0, p.stderr
        assert '"role": "controller"' in p.stdout and p.stdout.count('"state": "down"') == 2
        p = shell("--bootstrap-server", bootstrap, "--output", "json", "--command",
                  "sandbox lag-metadata 3 1500; sandbox status")
        assert p.returncode == 0 and p.stderr.startswith("Broker 3's metadata trails the controller's by 1500 ms."), p.stderr
        nodes = json_documents(p.stdout)[-1]["nodes"]
        assert [n["metadata_lag_ms"] for n in nodes if n["role"] == "broker"] == [0, 0, 1500]
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox heal")
        assert p.stderr.strip() == "Delays, metadata lags and injected errors removed."
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox start-controller 7")
        assert (p.returncode, p.stderr.strip()) == (
            2, "no controller 7 in the sandbox (controllers: 100, 101, 102)")
        # Every broker down: the control endpoint, named in the environment, still answers.
        for broker in (1, 3):
            assert shell("--bootstrap-server", bootstrap, "--command", f"sandbox stop-broker {broker}").returncode == 0
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox start-broker 1")
        assert p.returncode == 2 and "KAFKA_SHELL_SANDBOX_CONTROL" in p.stderr
        p = shell("--bootstrap-server", bootstrap, "--command", "sandbox start-broker 1",
                  env={"KAFKA_SHELL_SANDBOX_CONTROL": announced["control"]})
        assert (p.returncode, p.stderr.strip()) == (0, "Broker 1 started.")
    finally:
        assert stop(proc) == 0


def test_zk_mode_server_has_no_controllers():
    proc, announced = serve_all("--brokers", "2", "--mode", "zk")
    try:
        assert announced["bootstrap.controllers"] == ""
        p = shell("--bootstrap-server", announced["bootstrap.servers"], "--command", "sandbox stop-controller 100")
        assert p.returncode == 2 and "zk-mode sandbox has no controller quorum" in p.stderr
    finally:
        assert stop(proc) == 0


def test_help_explains_every_option():
    p = subprocess.run([*SHELL, "sandbox", "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0
    for option in ("--brokers", "--mode", "--controllers", "--port-base", "--rack", "--data-dir", "--kafka-version",
                   "--broker-config", "--seed-apis", "--log-dirs-per-broker",
                   "--listen", "control", "sandbox stop-broker 2", "SIGTERM or SIGHUP", "survives"):
        assert option in p.stdout
    p = subprocess.run([*SHELL, "sandbox", "--mode", "zk", "--controllers", "2"], capture_output=True,
                       text=True, timeout=30)
    assert (p.returncode, p.stderr.strip()) == (2, "--controllers needs --mode kraft (a zk-mode controller is a broker)")


def test_the_in_process_sandbox_takes_the_same_options(tmp_path):
    script = tmp_path / "s.ksh"
    script.write_text("create-topic --topic t\ndescribe-topic --topic t\napi-versions\n")
    p = shell("--sandbox", "--kafka-version", "3.9", "--broker-config", "num.partitions=4", "--rack", "a,b,c",
              "--seed-apis", "--file", str(script), "-q", "-o", "json")
    assert p.returncode == 0, p.stderr
    documents = [d for d in json_documents(p.stdout) if d]
    topic, versions = documents[-2], {r["api"]: r for r in documents[-1]["api_versions"]}
    assert len(topic["partitions"]) == 4
    assert versions["Produce"]["max_version"] == 11 and versions["GetReplicaLogInfo"]["max_version"] == 0
    p = shell("--sandbox", "--command", "list-brokers", "-o", "json", "--rack", "r1")
    assert {r["rack"] for r in json_rows(p.stdout)} == {"r1"}


def test_in_process_sandbox_options_need_the_sandbox():
    for args in (["--broker-config", "num.partitions=4"], ["--kafka-version", "3.9"], ["--rack", "a"], ["--seed-apis"]):
        p = shell("--bootstrap-server", "127.0.0.1:9", *args, "--command", "list-topics")
        assert p.returncode == 2, args
        assert p.stderr.strip() == (f"{args[0]} configures the in-process sandbox: add --sandbox "
                                    "(or give it to kafka-shell sandbox)")
    p = shell("--sandbox", "--broker-config", "num.partitions=0", "--command", "list-topics")
    assert (p.returncode, p.stderr.strip()) == (
        2, "Cannot start the sandbox: Invalid value 0 for configuration num.partitions: Value must be at least 1")
