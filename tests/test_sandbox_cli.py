"""`kafka-shell sandbox`: serves a cluster until stopped, prints its bootstrap servers, bootstrap
controllers and control endpoint, takes fault commands from another kafka-shell through that
endpoint, and with --data-dir keeps its topics (and mode) across runs."""

from __future__ import annotations

import signal
import subprocess

from confluent_kafka.admin import AdminClient, NewTopic

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
    proc, bootstrap = serve("--brokers", "2", "--racks", "a,b")
    try:
        assert len(bootstrap.split(",")) == 2
        p = shell("--bootstrap-server", bootstrap, "--output", "json", "--command", "list-brokers")
        assert p.returncode == 0, p.stderr
        assert '"Rack": "a"' in p.stdout and '"Rack": "b"' in p.stdout
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
    p = subprocess.run([*SHELL, "sandbox", "--brokers", "3", "--racks", "a,b"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.strip() == "Cannot start the sandbox: --racks needs one rack or 3 racks, got 2"


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
        assert '"Role": "controller"' in p.stdout and p.stdout.count('"State": "down"') == 2
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
    for option in ("--brokers", "--mode", "--controllers", "--port-base", "--racks", "--data-dir",
                   "--listen", "control", "sandbox stop-broker 2", "SIGTERM or SIGHUP", "survives"):
        assert option in p.stdout
    p = subprocess.run([*SHELL, "sandbox", "--mode", "zk", "--controllers", "2"], capture_output=True,
                       text=True, timeout=30)
    assert (p.returncode, p.stderr.strip()) == (2, "--controllers needs --mode kraft (a zk-mode controller is a broker)")
