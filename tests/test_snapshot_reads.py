"""What a snapshot reads when a broker has just stopped: every read goes through the admin layer,
so a broker that does not answer is left out (and recorded as down in the manifest) instead of
holding the snapshot until --timeout: on the sandbox ten times in a row, each time right after
a stop, and on real Apache Kafka, whose Metadata still lists a stopped broker for a while."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from kafka_shell.pipeline import schema
from tests.test_oneshot import run, shell


def latest(root: Path) -> Path:
    return Path(schema.find_snapshots(root)[-1]["path"])


def read(directory: Path, name: str) -> list[dict]:
    return pq.read_table(directory / f"{name}.parquet").to_pylist()


def setup(bootstrap: str) -> None:
    """A topic with a replica on every broker, and groups whose coordinators are spread over them."""
    script = ["create-topic --topic spread --partitions 6 --replication-factor 2",
              *(f"reset-offsets --group g{i} --topic spread --to-latest --execute --yes" for i in range(6))]
    for line in script:
        p = shell("--bootstrap-server", bootstrap, "--command", line)
        assert p.returncode == 0, p.stderr


def test_a_snapshot_right_after_a_broker_stops_completes_ten_times_in_a_row(sandbox, tmp_path):
    setup(sandbox.bootstrap)
    for n in range(10):
        stopped = n % 3 + 1
        sandbox.stop_broker(stopped)
        p = run(sandbox, f"snapshot --output-dir {tmp_path}", "--timeout", "10")
        assert p.returncode == 0, p.stderr
        d = latest(tmp_path)
        manifest = json.loads((d / schema.MANIFEST).read_text())
        assert str(stopped) in manifest["brokers_down"], manifest
        assert f"Broker {stopped} is down" in p.stderr
        assert stopped not in {b["broker_id"] for b in read(d, "brokers")}
        assert {r["group"] for r in read(d, "group_offsets")} == {f"g{i}" for i in range(6)}  # coordinators moved
        sandbox.start_broker(stopped)


def test_a_snapshot_of_real_kafka_right_after_a_broker_stops(kafka4, tmp_path):
    setup(kafka4.bootstrap)
    with kafka4.restored():
        kafka4.stop_node(3)
        p = shell("--bootstrap-server", kafka4.bootstrap, "--timeout", "10", "--command",
                  f"snapshot --output-dir {tmp_path}")
        assert p.returncode == 0, p.stderr
        manifest = json.loads((latest(tmp_path) / schema.MANIFEST).read_text())
        assert "3" in manifest["brokers_down"], manifest


def test_a_snapshot_with_a_hung_broker_is_partial_and_says_what_is_missing(sandbox, tmp_path):
    """A broker that is up but does not answer is no stopped broker: the snapshot keeps what the
    others answered, lists what is missing, and exits 1 (issue 31)."""
    setup(sandbox.bootstrap)
    sandbox.delay(3, 60_000)
    p = run(sandbox, f"snapshot --output-dir {tmp_path}", "--timeout", "2")
    assert p.returncode == 1, p.stderr
    assert "Broker 3 did not answer DescribeLogDirs" in p.stderr and "The snapshot is partial" in p.stderr
    manifest = json.loads((latest(tmp_path) / schema.MANIFEST).read_text())
    assert manifest["brokers_down"] == {} and any("Broker 3" in line for line in manifest["left_out"]), manifest
    assert {r["broker_id"] for r in read(latest(tmp_path), "log_dirs")} == {1, 2}
