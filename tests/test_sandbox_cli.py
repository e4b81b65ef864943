"""`kafka-shell sandbox`: serves a cluster until stopped, prints its bootstrap address, and with
--data-dir keeps its topics across runs."""

from __future__ import annotations

import signal
import subprocess

from confluent_kafka.admin import AdminClient, NewTopic

from tests.test_oneshot import SHELL, shell


def serve(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([*SHELL, "sandbox", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    bootstrap = proc.stdout.readline().strip()  # the first line is the bootstrap address
    assert bootstrap.count("127.0.0.1:") >= 1, proc.stderr.read() if proc.poll() is not None else bootstrap
    return proc, bootstrap


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
