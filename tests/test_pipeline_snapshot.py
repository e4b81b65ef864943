"""Snapshots (no Spark): `snapshot` against a real sandbox read back with pyarrow, the
synthetic fleet's format and faults, and bad input."""

from __future__ import annotations

import io
import json
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_shell.pipeline import schema, synth
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows
from tests.sandbox.wire import create, produce, stage_offline_partition
from tests.test_oneshot import ROOT, SHELL, assert_one_line_error, run, shell


def read(directory: Path, name: str) -> list[dict]:
    return pq.read_table(directory / f"{name}.parquet").to_pylist()


def one_snapshot(root: Path) -> Path:
    (manifest,) = schema.find_snapshots(root)
    return Path(manifest["path"])


def test_snapshot_of_a_sandbox_holds_what_the_cluster_holds(sandbox, tmp_path):
    create(sandbox, "orders", [[1, 2, 3], [2, 3, 1]], **{"min.insync.replicas": "2"})
    produce(sandbox, "orders", 0, 4, 100)
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "billing", "log_level": 0})
    consumer.commit(offsets=[TopicPartition("orders", 0, 3)], asynchronous=False)
    consumer.close()
    sandbox.stop_broker(3)
    proc = run(sandbox, f"snapshot --output-dir {tmp_path}", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json_rows(proc.stdout, "snapshots")
    d = one_snapshot(tmp_path)
    manifest = json.loads((d / schema.MANIFEST).read_text())
    assert row["directory"] == str(d) and row["partitions"] == manifest["rows"]["partitions"]
    assert manifest["mode"] == "KRaft" and manifest["controller_id"] == sandbox.active_controller
    (cluster,) = read(d, "cluster")
    assert (cluster["controller_id"], cluster["controller_epoch"]) == (sandbox.active_controller, sandbox.controller_epoch)
    assert sorted(b["broker_id"] for b in read(d, "brokers")) == [1, 2]  # 3 is down: Metadata lists live brokers
    (topic,) = [t for t in read(d, "topics") if t["topic"] == "orders"]
    assert (topic["topic"], topic["partitions"], topic["replication_factor"], topic["min_isr"]) == ("orders", 2, 3, 2)
    assert dict(topic["configs"])["min.insync.replicas"] == "2"
    parts = {p["partition"]: p for p in read(d, "partitions") if p["topic"] == "orders"}
    assert parts[0]["replicas"] == [1, 2, 3] and 3 not in parts[0]["isr"] and parts[0]["leader"] == 1
    assert parts[0]["offline_replicas"] == [3]
    offsets = {o["partition"]: o for o in read(d, "offsets") if o["topic"] == "orders"}
    assert (offsets[0]["log_start_offset"], offsets[0]["log_end_offset"]) == (0, 4)
    replicas = {(r["partition"], r["broker_id"]): r for r in read(d, "replicas") if r["topic"] == "orders"}
    assert set(replicas) == {(0, 1), (0, 2), (1, 1), (1, 2)}  # broker 3 answers nothing
    assert replicas[(0, 1)]["size"] > 0 and replicas[(0, 1)]["size"] == replicas[(0, 2)]["size"]
    (group,) = read(d, "group_offsets")
    assert (group["group"], group["topic"], group["partition"], group["committed_offset"]) == ("billing", "orders", 0, 3)
    assert all(r["cluster_id"] == manifest["cluster_id"] for r in read(d, "partitions"))


@pytest.mark.parametrize("seed_apis, epochs", [
    (True, {2: 0, 3: 1}),   # GetReplicaLogInfo: the epoch of each replica's last record
    (False, {2: 1, 3: 1}),  # stock Kafka's ListOffsets replica -2: the partition's current epoch
], ids=["seed-apis", "stock"])
def test_offline_partitions_carry_each_live_replicas_log_end_and_epoch(seed_apis, epochs, tmp_path):
    with Sandbox(brokers=3, seed_apis=seed_apis) as sandbox:
        stage_offline_partition(sandbox, epochs=(0, 1))
        session = Session(target=Target(sandbox.bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
        assert run_line(session, f"snapshot --output-dir {tmp_path}") == 0
        session.close()
    d = one_snapshot(tmp_path)
    (p,) = read(d, "partitions")
    assert p["leader"] == -1
    ends = {r["broker_id"]: (r["log_end_offset"], r["last_epoch"]) for r in read(d, "replicas")}
    assert ends == {2: (6, epochs[2]), 3: (4, epochs[3])}


def test_a_series_with_every_and_count(sandbox, tmp_path):
    proc = run(sandbox, f"snapshot --output-dir {tmp_path} --every 100ms --count 2", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert len(json_rows(proc.stdout, "snapshots")) == 2 and len(schema.find_snapshots(tmp_path)) == 2
    assert "Snapshot 2/2" in proc.stderr


def test_a_series_goes_on_past_a_failed_round(sandbox, tmp_path):
    """`snapshot --every` without --count runs until Ctrl-C. With every broker down a round
    fails: a manifest says why, one line on stderr says so, and the next rounds come; once the
    brokers are back they succeed again. Ctrl-C ends the series, exit 1 since a round failed."""
    proc = subprocess.Popen([*SHELL, "--bootstrap-server", sandbox.bootstrap, "--timeout", "3", "--output", "json",
                             "--command", f"snapshot --output-dir {tmp_path} --every 200ms"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True)  # type: ignore[union-attr]
    reader.start()
    seen: list[str] = []

    def wait_for(needle: str) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                assert proc.poll() is None, "".join(seen)
                continue
            seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"no {needle!r} in {''.join(seen)}")

    try:
        wait_for("Snapshot 1: ")
        for broker in (1, 2, 3):
            sandbox.stop_broker(broker)
        failure = wait_for(" failed: ")
        for broker in (1, 2, 3):
            sandbox.start_broker(broker)
        while " failed: " in wait_for("Snapshot "):
            pass  # rounds may fail until the brokers answer again
        proc.send_signal(signal.SIGINT)
        out = proc.stdout.read()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get())
    rest = "".join(seen)
    assert proc.returncode == 1, rest
    assert "the series goes on" in failure and "Stopped after" in rest
    rows = json_rows(out, "snapshots")
    statuses = [r["status"] for r in rows]
    first_failure = next(i for i, s in enumerate(statuses) if s.startswith("failed: "))
    assert statuses[0] == "ok" and "ok" in statuses[first_failure:], statuses
    failed = [m for m in schema.read_manifests(tmp_path) if "failed" in m]
    assert len(failed) == sum(s.startswith("failed: ") for s in statuses)
    assert all(m["cluster_id"] == rows[0]["cluster"] and m["failed"] for m in failed)
    assert len(schema.find_snapshots(tmp_path)) == statuses.count("ok")  # failed rounds are no snapshots


def test_snapshot_with_the_global_sandbox_flag(tmp_path):
    proc = shell("snapshot", "--output-dir", str(tmp_path), "--sandbox")
    assert proc.returncode == 0, proc.stderr
    assert schema.find_snapshots(tmp_path)[0]["rows"]["brokers"] == 3


@pytest.mark.parametrize("args, needle", [
    (["--every", "soon"], "an interval like 60s"),
    (["--count", "3"], "--count above 1 needs --every"),
    (["--count", "0"], "a positive integer"),
])
def test_bad_snapshot_input_is_one_line(sandbox, tmp_path, args, needle):
    proc = run(sandbox, " ".join(["snapshot", "--output-dir", str(tmp_path), *args]))
    assert_one_line_error(proc, 2, needle)
    assert not any(tmp_path.iterdir())


def test_output_dir_that_is_a_file(sandbox, tmp_path):
    (tmp_path / "f").write_text("")
    assert_one_line_error(run(sandbox, f"snapshot --output-dir {tmp_path / 'f'}"), 2, "is not a directory")


def test_synthetic_fleet_format_and_faults(tmp_path):
    assert synth.main(["--clusters", "2", "--brokers", "6", "--partitions", "500", "--snapshots", "4",
                       "--out", str(tmp_path)]) == 0
    manifests = schema.find_snapshots(tmp_path)
    assert len(manifests) == 8
    for m in manifests:
        for name, expected in schema.SCHEMAS.items():
            table = pq.read_table(Path(m["path"]) / f"{name}.parquet")
            assert table.schema.equals(expected, check_metadata=False), name
            assert table.num_rows == m["rows"][name]
    first, last = (Path(m["path"]) for m in (manifests[0], manifests[3]))  # cluster 00: a broker dies mid-series
    assert len(read(first, "brokers")) == 6 and len(read(last, "brokers")) == 5
    dead = ({6} - {b["broker_id"] for b in read(last, "brokers")}).pop()
    parts = read(last, "partitions")
    offline = [p for p in parts if p["leader"] < 0]
    assert offline and all(p["isr"] == [dead] for p in offline)
    assert all(dead not in p["isr"] for p in parts if p["leader"] >= 0)
    assert any(p["leader"] != p["replicas"][0] for p in parts if p["leader"] >= 0)
    ends = [r for r in read(last, "replicas") if r["log_end_offset"] is not None]
    assert {(r["topic"], r["partition"]) for r in ends} == {(p["topic"], p["partition"]) for p in offline}
    assert len({(r["last_epoch"], r["log_end_offset"]) for r in ends}) > 1  # divergent logs
    controllers = [m["controller_id"] for m in manifests[:4]]
    assert len(set(controllers)) > 1  # the controller moved


def test_synth_refuses_an_existing_fleet(tmp_path, capsys):
    synth.main(["--clusters", "1", "--partitions", "10", "--snapshots", "1", "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as exit_:
        synth.main(["--clusters", "1", "--partitions", "10", "--snapshots", "1", "--out", str(tmp_path)])
    assert exit_.value.code == 2 and "already exists" in capsys.readouterr().err
