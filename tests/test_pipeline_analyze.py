"""The PySpark analysis, on real Spark (one local SparkSession for the whole test session):
its numbers against independent computations on the same files, its plans fed to the commands
that consume them (--dry-run, on the sandbox the snapshot was taken of), the rebalance's move
count against the shell's own planner, a real standalone Spark cluster giving the same results
as local mode, and the HTML report rendered by headless Chromium."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import zlib
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_shell.admin import assignment_plan as reassign_plan
from kafka_shell.pipeline import jobs, schema, synth
from kafka_shell.runner import run_line
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.session import Session, Target
from tests.output import json_tables
from tests.sandbox.wire import create, stage_offline_partition
from tests.test_oneshot import ROOT, SHELL, assert_one_line_error, shell

TABLES = ("health", "broker_load", "rack_load", "missing_brokers", "recovery", "preferred", "rebalance",
          "controller_moves", "growth", "lag_growth")


def apt_installed(program: str, package: str) -> str:
    """The path of `program`, installing Debian's `package` when it is missing (CI runs as root
    on a clean Debian machine with the package mirrors reachable)."""
    path = shutil.which(program)
    if path is None:
        install = ["apt-get", "install", "-y", "-q", package]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(install, capture_output=True, env=env).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, env=env)
            subprocess.run(install, check=True, capture_output=True, env=env)
        path = shutil.which(program)
    assert path, f"{package} did not install"
    return path


@pytest.fixture(scope="session")
def spark():
    if not os.environ.get("JAVA_HOME"):
        apt_installed("java", "openjdk-17-jre-headless")  # Spark's JVM
    session = jobs.spark_session("local[2]", {"spark.sql.shuffle.partitions": "2",
                                              "spark.default.parallelism": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    synth.generate(root, clusters=2, brokers=9, partitions=600, snapshots=4)
    return root


@pytest.fixture(scope="module")
def analysis(spark, fleet, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("analysis")
    jobs.run(fleet, out, spark=spark)
    return out


def table(out: Path, name: str) -> list[dict]:
    return json.loads((out / "tables" / f"{name}.json").read_text())


def snapshots(root: Path, name: str) -> dict[tuple[str, str], list[dict]]:
    """(cluster, taken_at ISO) -> rows of a table, read with pyarrow alone."""
    out = {}
    for m in schema.find_snapshots(root):
        rows = pq.read_table(Path(m["path"]) / f"{name}.parquet").to_pylist()
        out[(m["cluster_id"], m["taken_at"])] = rows
    return out


def latest(root: Path, name: str) -> dict[str, list[dict]]:
    by: dict[str, list[dict]] = {}
    for (cluster, _), rows in sorted(snapshots(root, name).items()):
        by[cluster] = rows
    return by


# -- numbers ------------------------------------------------------------------------------------


def test_health_counts_equal_an_independent_count(fleet, analysis):
    brokers, topics = snapshots(fleet, "brokers"), snapshots(fleet, "topics")
    expected = {}
    for key, parts in snapshots(fleet, "partitions").items():
        live = {b["broker_id"] for b in brokers[key]}
        min_isr = {t["topic"]: t["min_isr"] for t in topics[key]}
        c: Counter = Counter(partitions=len(parts))
        for p in parts:
            offline = p["leader"] < 0 or p["leader"] not in live
            c["offline"] += offline
            c["under_replicated"] += len(p["isr"]) < len(p["replicas"])
            c["under_min_isr"] += offline or len(p["isr"]) < min_isr[p["topic"]]
            c["at_min_isr"] += len(p["isr"]) == min_isr[p["topic"]]
            c["not_preferred"] += p["leader"] != p["replicas"][0]
        expected[key] = {k: c[k] for k in ("partitions", *jobs.HEALTH)}
    got = {(r["cluster_id"], r["taken_at"]): {k: r[k] for k in ("partitions", *jobs.HEALTH)}
           for r in table(analysis, "health")}
    assert got == expected
    assert any(v["offline"] for v in got.values()) and any(v["under_min_isr"] for v in got.values())


def test_broker_load_and_missing_ids(fleet, analysis):
    parts, brokers = latest(fleet, "partitions"), latest(fleet, "brokers")
    loads = {(r["cluster_id"], r["broker_id"]): r for r in table(analysis, "broker_load")}
    missing = {(r["cluster_id"], r["broker_id"]): r for r in json.loads((analysis / "missing_brokers.json").read_text())}
    expected_missing = {}
    for cluster, rows in parts.items():
        replicas = Counter(b for p in rows for b in p["replicas"])
        leaders = Counter(p["leader"] for p in rows if p["leader"] >= 0)
        live = {b["broker_id"] for b in brokers[cluster]}
        mean = sum(replicas[b] for b in live) / len(live)
        for b in live:
            assert (loads[(cluster, b)]["replicas"], loads[(cluster, b)]["leaders"]) == (replicas[b], leaders[b])
            assert loads[(cluster, b)]["replicas_skew"] == round(replicas[b] / mean - 1, 4)
        for b in set(replicas) - live:
            expected_missing[(cluster, b)] = sorted((p["topic"], p["partition"]) for p in rows if b in p["replicas"])
            assert loads[(cluster, b)]["state"] == "missing"
    assert expected_missing, "the fleet has a dead broker"
    assert {k: sorted((x["topic"], x["partition"]) for x in v["partitions"]) for k, v in missing.items()} == expected_missing
    assert all(v["affected_partitions"] == len(expected_missing[k]) for k, v in missing.items())


def test_recovery_plan_picks_highest_epoch_then_longest_log(fleet, analysis):
    parts, replicas, brokers = latest(fleet, "partitions"), latest(fleet, "replicas"), latest(fleet, "brokers")
    expected = {}
    for cluster, rows in parts.items():
        live = {b["broker_id"] for b in brokers[cluster]}
        for p in rows:
            if p["leader"] >= 0 and p["leader"] in live:
                continue
            candidates = [r for r in replicas[cluster] if (r["topic"], r["partition"]) == (p["topic"], p["partition"])
                          and r["broker_id"] in live and r["log_end_offset"] is not None]
            best = max(candidates, key=lambda r: (r["last_epoch"], r["log_end_offset"], -p["replicas"].index(r["broker_id"])))
            expected[(cluster, p["topic"], p["partition"])] = best["broker_id"]
    got = {(r["cluster_id"], r["topic"], r["partition"]): r["designated_leader"] for r in table(analysis, "recovery")}
    assert got == expected and got
    plan = json.loads((analysis / "plans" / "synth-cluster-00" / "recovery.json").read_text())
    assert {(e["topic"], e["partition"]): e["designatedLeader"] for e in plan["partitions"]} == {
        (t, p): b for (c, t, p), b in expected.items() if c == "synth-cluster-00"}


def test_trends(fleet, analysis):
    by_cluster = defaultdict(list)
    for m in schema.find_snapshots(fleet):
        by_cluster[m["cluster_id"]].append(m)
    expected = [(c, b["taken_at"], a["controller_id"], b["controller_id"]) for c, ms in sorted(by_cluster.items())
                for a, b in zip(ms, ms[1:]) if a["controller_id"] != b["controller_id"]]
    assert [(r["cluster_id"], r["when"], r["from"], r["to"]) for r in table(analysis, "controller_moves")] == expected
    assert expected
    groups, offsets = snapshots(fleet, "group_offsets"), snapshots(fleet, "offsets")
    lag: dict[tuple[str, str], list[int]] = defaultdict(list)
    for key in sorted(groups):
        end = {(o["topic"], o["partition"]): o["log_end_offset"] for o in offsets[key]}
        per_group: Counter = Counter()
        for g in groups[key]:
            if (g["topic"], g["partition"]) in end:
                per_group[g["group"]] += max(0, end[(g["topic"], g["partition"])] - g["committed_offset"])
        for g, v in per_group.items():
            lag[(key[0], g)].append(v)
    got = {(r["cluster_id"], r["group"]): r["lag_growth"] for r in table(analysis, "lag_growth")}
    assert got == {k: v[-1] - v[0] for k, v in lag.items()}
    assert all(got[(c, "slow-consumer")] > 0 for c in by_cluster)
    sizes = {key: sum(r["size"] for r in rows) for key, rows in snapshots(fleet, "replicas").items()}
    growth = {r["cluster_id"]: r["bytes_growth"] for r in table(analysis, "growth")}
    for c, ms in by_cluster.items():
        assert growth[c] == sizes[(c, ms[-1]["taken_at"])] - sizes[(c, ms[0]["taken_at"])]


def test_rebalance_moves_as_many_replicas_as_the_shells_planner(spark, tmp_path):
    """A cluster with even racks and no fault: the Spark plan and reassign_plan's planner (what
    reassign-partitions --generate runs) move the same number of replicas, and the Spark plan
    leaves every broker within one replica of its rack's mean, racks spread as before."""
    cluster = synth.Cluster(3, brokers=9, partitions=400, snapshots=1, seed=11)
    tables, manifest = cluster.snapshot(0)
    schema.write_snapshot(tmp_path / cluster.id / "s0", tables, manifest)
    fleet = jobs.Fleet(spark, schema.find_snapshots(tmp_path))
    plan = fleet.rebalance_plan()
    current = {(p["topic"], p["partition"]): p["replicas"] for p in tables["partitions"].to_pylist()}
    racks = {b["broker_id"]: b["rack"] for b in tables["brokers"].to_pylist()}
    shell_plan = reassign_plan.plan(current, sorted(racks), racks)
    assert len(plan["moves"]) == reassign_plan.moved(current, shell_plan) > 0
    proposed = {**current, **plan["plans"][cluster.id]}
    assert reassign_plan.moved(current, proposed) == len(plan["moves"])
    load = Counter(b for r in proposed.values() for b in r)
    for rack in set(racks.values()):
        members = [load[b] for b in racks if racks[b] == rack]
        assert max(members) - min(members) <= 1
    assert all(Counter(racks[b] for b in proposed[k]) == Counter(racks[b] for b in current[k]) for k in current)


# -- plans on a sandbox -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A 4-broker sandbox with work for every plan: t-0 offline (its ISR member 1 down; 2 and 3
    live, 3 wrote in a later epoch with a shorter log), p-0 led by 3 instead of its preferred 2,
    and topic r crowded on brokers 2 and 3 while 4 holds nothing."""
    with Sandbox(brokers=4) as sandbox:
        stage_offline_partition(sandbox, epochs=(0, 1))
        create(sandbox, "p", [[2, 3]])
        sandbox.stop_broker(2)
        sandbox.start_broker(2)
        create(sandbox, "r", [[2, 3]] * 6)
        root = tmp_path_factory.mktemp("sandbox-snapshots")
        session = Session(target=Target(sandbox.bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
        assert run_line(session, f"snapshot --output-dir {root}") == 0, session.stderr.getvalue()
        session.close()
        yield sandbox, root


def test_plans_from_a_sandbox_snapshot_load_into_their_commands(spark, staged, tmp_path):
    sandbox, root = staged
    jobs.run(root, tmp_path, spark=spark)
    (cluster,) = [p.name for p in (tmp_path / "plans").iterdir()]
    plans = tmp_path / "plans" / cluster
    recovery = json.loads((plans / "recovery.json").read_text())
    assert recovery == {"partitions": [{"topic": "t", "partition": 0, "designatedLeader": 3}]}  # epoch 1 beats the longer log
    assert json.loads((plans / "preferred.json").read_text()) == {"partitions": [{"topic": "p", "partition": 0}]}
    rebalance = json.loads((plans / "rebalance.json").read_text())
    moved = [e for e in rebalance["partitions"] if 4 in e["replicas"]]
    assert rebalance["version"] == 1 and len(moved) == len(rebalance["partitions"]) > 0
    for line, needle in (
            (f"elect-leaders --election-type designated --path-to-json-file {plans / 'recovery.json'} --dry-run", "Would elect"),
            (f"unclean-recovery --path-to-json-file {plans / 'recovery_partitions.json'} --show-replica-info --dry-run", ""),
            (f"elect-leaders --election-type preferred --path-to-json-file {plans / 'preferred.json'} --dry-run", "Would elect"),
            (f"reassign-partitions --execute --reassignment-json-file {plans / 'rebalance.json'} --dry-run", "Would start")):
        session = Session(target=Target(sandbox.bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
        code = run_line(session, line)
        session.close()
        assert code == 0, (line, session.stderr.getvalue())
        assert needle in session.stderr.getvalue() + session.stdout.getvalue()


def test_analyze_command_in_process(spark, fleet, tmp_path):
    session = Session(stdout=io.StringIO(), stderr=io.StringIO(), output="json")
    assert run_line(session, f"analyze --snapshots {fleet} --out {tmp_path}") == 0, session.stderr.getvalue()
    progress = [line for line in session.stderr.getvalue().splitlines() if line.startswith("analyze [")]
    assert len(progress) >= 8 and "recovery plan" in session.stderr.getvalue()
    assert (tmp_path / "report.html").exists()
    tables = json_tables(session.stdout.getvalue())   # the one json shape: tables by name
    assert list(tables) == ["summary"] and all(set(row) == {"Item", "Value"} for row in tables["summary"])


def test_bad_analyze_input_is_one_line(spark, tmp_path):  # spark: Java is there
    assert_one_line_error(shell("analyze", "--snapshots", str(tmp_path / "nope"), "--out", str(tmp_path)),
                          2, "is not a directory")
    assert_one_line_error(shell("analyze", "--snapshots", str(tmp_path), "--out", str(tmp_path / "o")),
                          2, "No snapshot under")
    assert not (tmp_path / "o").exists()
    assert_one_line_error(shell("analyze", "--snapshots", str(tmp_path), "--out", str(tmp_path / "o"),
                                env={"JAVA_HOME": str(tmp_path)}), 2, "has no bin/java")


# -- a real Spark standalone cluster ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the Spark daemon exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture
def standalone(spark, tmp_path):  # spark: Java is there
    """A Spark standalone master and one worker from the installed pyspark, on loopback."""
    import pyspark
    home = Path(pyspark.__file__).parent
    # The worker launches executors the way bin/spark-class would, which needs the Scala version
    # that load-spark-env.sh sets there (pyspark's jars are Scala 2.13 builds).
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_SCALA_VERSION": "2.13"}
    java = [shutil.which("java") or "java", "-Xmx512m", "-cp", f"{home / 'jars'}/*"]
    port = free_port()
    master = subprocess.Popen([*java, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                               "--webui-port", str(free_port())], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(tmp_path / "master.log", "w"))
    procs = [master]
    try:
        wait_for_port(port, master)
        worker_port = free_port()
        worker = subprocess.Popen([*java, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", "1",
                                   "--memory", "1g", "--work-dir", str(tmp_path / "work"), f"spark://127.0.0.1:{port}"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "worker.log", "w"))
        procs.append(worker)
        wait_for_port(worker_port, worker)
        yield f"spark://127.0.0.1:{port}", env
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_standalone_cluster_gives_the_local_results(standalone, fleet, analysis, tmp_path):
    master, env = standalone
    out = tmp_path / "out"
    proc = subprocess.run([*SHELL, "analyze", "--snapshots", str(fleet), "--out", str(out), "--spark-master", master,
                           "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.cores.max=1"],
                          capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in TABLES:
        assert table(out, name) == table(analysis, name), name
    assert json.loads((out / "summary.json").read_text())["plans"] == json.loads((analysis / "summary.json").read_text())["plans"]


# -- the report in a real browser ---------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium() -> str:
    return apt_installed("chromium", "chromium")


def headless(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", "--disable-sync",
                           f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120)


class ScriptTags(HTMLParser):
    """The page's <script> tags: their src attributes and the size of their inline code."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.sizes: list[int] = [0]
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "script":
            self.sources += [v for k, v in attrs if k == "src"]
            self._in_script = True
            self.sizes.append(0)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.sizes[-1] += len(data)


def png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the decompressed, still filtered scanlines of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_report_renders_in_headless_chromium(chromium, analysis, tmp_path):
    report = analysis / "report.html"
    scripts = ScriptTags()
    scripts.feed(report.read_text())
    assert scripts.sources == [] and max(scripts.sizes) > 1_000_000  # plotly.js inlined: no network needed
    dom = headless(chromium, tmp_path / "p1", "--virtual-time-budget=15000", "--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    for name in ("health", "broker-load", "rack-load", "lag", "controller"):
        start = dom.stdout.index(f'id="plot-{name}"')
        chunk = dom.stdout[start:start + 200_000]
        assert "main-svg" in chunk and "<path" in chunk, name  # plotly drew the chart as SVG
    shot = tmp_path / "report.png"
    blank = tmp_path / "blank.png"
    headless(chromium, tmp_path / "p2", "--virtual-time-budget=15000", "--window-size=1200,900",
             f"--screenshot={shot}", report.as_uri())
    (tmp_path / "blank.html").write_text("<html><body></body></html>")
    headless(chromium, tmp_path / "p3", "--window-size=1200,900", f"--screenshot={blank}",
             (tmp_path / "blank.html").as_uri())
    w, h, pixels = png_pixels(shot)
    assert (w, h) == (1200, 900)
    _, _, empty = png_pixels(blank)
    assert len(set(pixels)) > 20 * max(1, len(set(empty)))  # many colours, where a blank page has a few
