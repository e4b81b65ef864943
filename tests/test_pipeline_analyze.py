"""The PySpark analysis, on real Spark (one local SparkSession for the whole test session):
its numbers against independent computations on the same files, its forecasts against the
growth the synthetic fleet was built with, its plans checked by the exact commands the
summary gives (on the sandbox the snapshot was taken of), the rebalance's move count against
the shell's own planner, a real standalone Spark cluster and a real Spark Connect server giving
the same results as local mode, and the HTML report rendered by headless Chromium."""

from __future__ import annotations

import datetime
import io
import json
import os
import re
import shlex
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
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.output import json_tables
from tests.sandbox.wire import create, stage_offline_partition
from tests.test_oneshot import ROOT, SHELL, assert_one_line_error, shell

TABLES = ("health", "broker_load", "rack_load", "missing_brokers", "recovery", "preferred", "rebalance",
          "controller_moves", "controller_churn", "growth", "lag_growth", "disk_forecast")


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


def test_recovery_plan_picks_an_eligible_leader_then_highest_epoch_then_longest_log(fleet, analysis):
    parts, replicas, brokers = latest(fleet, "partitions"), latest(fleet, "replicas"), latest(fleet, "brokers")
    expected = {}
    for cluster, rows in parts.items():
        live = {b["broker_id"] for b in brokers[cluster]}
        for p in rows:
            if p["leader"] >= 0 and p["leader"] in live:
                continue
            candidates = [r for r in replicas[cluster] if (r["topic"], r["partition"]) == (p["topic"], p["partition"])
                          and r["broker_id"] in live and r["log_end_offset"] is not None]
            best = max(candidates, key=lambda r: (r["broker_id"] in (p["elr"] or ()), r["last_epoch"], r["log_end_offset"],
                                                  -p["replicas"].index(r["broker_id"])))
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
    small = fleet.small_tables()
    load = fleet.load(small["brokers"], fleet.log_dir_bytes(small["log_dirs"]))
    plan = fleet.rebalance_plan(load["broker_load"])
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
    and topic r crowded on brokers 2 and 3 while 4 holds nothing. With the seeds' APIs: the
    recovery plan weighs each replica's last epoch (GetReplicaLogInfo) and is a designated election."""
    with Sandbox(brokers=4, seed_apis=True) as sandbox:
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
    summary = jobs.run(root, tmp_path, spark=spark)
    (cluster,) = [p.name for p in (tmp_path / "plans").iterdir()]
    plans = tmp_path / "plans" / cluster
    recovery = json.loads((plans / "recovery.json").read_text())
    assert recovery == {"partitions": [{"topic": "t", "partition": 0, "designatedLeader": 3}]}  # epoch 1 beats the longer log
    assert json.loads((plans / "preferred.json").read_text()) == {"partitions": [{"topic": "p", "partition": 0}]}
    rebalance = json.loads((plans / "rebalance.json").read_text())
    moved = [e for e in rebalance["partitions"] if 4 in e["replicas"]]
    assert rebalance["version"] == 1 and len(moved) == len(rebalance["partitions"]) > 0
    # The lines the summary (and the report) give, run as they are: bootstrapped from a broker of
    # the snapshot, they check each plan against the cluster without changing it.
    commands = summary["commands"][cluster]
    assert sorted(commands) == sorted(jobs.PLAN_COMMANDS)
    needles = {"recovery.json": "Would elect", "recovery_partitions.json": "", "preferred.json": "Would elect",
               "rebalance.json": "Would start"}
    for name, lines in commands.items():
        argv = shlex.split(lines["check"])
        assert argv[:2] == ["kafka-shell", "--bootstrap-server"] and str(plans / name) in argv, argv
        proc = subprocess.run([*SHELL, *argv[1:]], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert proc.returncode == 0, (lines["check"], proc.stderr)
        assert needles[name] in proc.stderr + proc.stdout
    before = json.loads((plans / "rebalance.json").read_text())
    assert before == rebalance  # checking changed nothing on disk either


def test_analyze_command_in_process(spark, fleet, tmp_path):
    session = Session(stdout=io.StringIO(), stderr=io.StringIO(), output="json")
    assert run_line(session, f"analyze --snapshots {fleet} --out {tmp_path}") == 0, session.stderr.getvalue()
    progress = [line for line in session.stderr.getvalue().splitlines() if line.startswith("analyze [")]
    assert len(progress) >= 10 and "recovery plan" in session.stderr.getvalue()
    # Each stage says the Spark jobs it ran and its CPU; the scans are few (a regression shows here first).
    jobs_per_stage = {re.sub(r"^analyze \[\d+/\d+\] ", "", line).split(":")[0]: int(m.group(1))
                      for line in progress if (m := re.search(r", (\d+) Spark jobs?, CPU [\d.]+ s JVM \+ [\d.]+ s Python$", line))}
    assert len(jobs_per_stage) == len(progress) - 1 and sum(jobs_per_stage.values()) <= 16, jobs_per_stage  # -1: the reused session
    assert jobs_per_stage["snapshot tables (cluster, brokers, log dirs)"] == 1
    # Counts from int columns; log ends read apart (one filtered scan of the latest replicas).
    assert jobs_per_stage["health per cluster and snapshot"] <= 2, jobs_per_stage
    assert jobs_per_stage["bytes per broker and log dir"] <= 2 and jobs_per_stage["recovery plan"] == 1, jobs_per_stage
    assert (tmp_path / "report.html").exists()
    tables = json_tables(session.stdout.getvalue())   # the one json shape: tables by name
    assert list(tables) == ["summary", "clusters"] and all(set(row) == {"Item", "Value"} for row in tables["summary"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["Cluster"] for r in tables["clusters"]] == [h["cluster_id"] for h in summary["headline"]]


def test_format_2_snapshots_beside_format_3_give_the_same_analysis(spark, fleet, analysis, tmp_path):
    """Snapshots taken before format 3 (partitions without their counts) still analyze: every
    other snapshot of a copy of the fleet is rewritten as format 2; the tables stay the same."""
    root = tmp_path / "fleet"
    shutil.copytree(fleet, root)
    rewritten = schema.find_snapshots(root)[::2]
    for m in rewritten:
        path = Path(m["path"])
        parts = pq.read_table(path / "partitions.parquet")
        pq.write_table(parts.drop_columns(list(schema.DERIVED_PARTITION_COLUMNS)), path / "partitions.parquet")
        manifest = json.loads((path / schema.MANIFEST).read_text())
        (path / schema.MANIFEST).write_text(json.dumps({**manifest, "format": 2}))
    assert {m["format"] for m in schema.find_snapshots(root)} == {2, schema.FORMAT}
    out = tmp_path / "out"
    jobs.run(root, out, spark=spark)
    assert_same_analysis(out, analysis)


def test_lag_skips_the_offsets_outside_the_committed_topics_and_equals_an_independent_count(spark, tmp_path):
    # 70,000 partitions: two row groups of offsets per snapshot, the second beyond the topics
    # the groups commit to (the first 30), so the scan's topic range leaves it out.
    root = tmp_path / "fleet"
    synth.generate(root, clusters=1, brokers=3, partitions=70_000, snapshots=2)
    snaps = schema.find_snapshots(root)
    committed_topics = {r["topic"] for m in snaps
                        for r in pq.read_table(Path(m["path"]) / "group_offsets.parquet", columns=["topic"]).to_pylist()}
    low, high = schema.value_range(snaps[0], "group_offsets", "topic")
    assert (low, high) == (min(committed_topics), max(committed_topics)) and len(committed_topics) == 30
    offsets_meta = pq.ParquetFile(Path(snaps[0]["path"]) / "offsets.parquet").metadata
    assert offsets_meta.num_row_groups == 2 and offsets_meta.row_group(1).column(2).statistics.min > high
    jobs.run(root, tmp_path / "out", spark=spark)
    expected: dict[tuple[str, str, str], list[int]] = {}
    for (cluster, at), rows in snapshots(root, "group_offsets").items():
        ends = {(r["topic"], r["partition"]): r["log_end_offset"] for r in snapshots(root, "offsets")[(cluster, at)]}
        for r in rows:
            if (r["topic"], r["partition"]) in ends:
                e = expected.setdefault((cluster, at, r["group"]), [0, 0])
                e[0] += max(ends[(r["topic"], r["partition"])] - r["committed_offset"], 0)
                e[1] += 1
    got = {(r["cluster_id"], r["taken_at"], r["group"]): [r["lag"], r["partitions"]] for r in table(tmp_path / "out", "lag_over_time")}
    assert got == {(c, _iso(at), g): v for (c, at, g), v in expected.items()} and len(got) == 2 * len(synth.GROUPS)


def _iso(at: object) -> str:
    return at.astimezone(datetime.UTC).isoformat() if isinstance(at, datetime.datetime) else str(at)


def test_the_first_local_run_writes_sparks_class_archive_and_later_runs_map_it(spark, fleet, tmp_path):  # spark: Java is there
    env = {**os.environ, "KAFKA_SHELL_CACHE": str(tmp_path / "cache")}
    runs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        proc = subprocess.run([*SHELL, "analyze", "--snapshots", str(fleet), "--out", str(out), "--spark-master", "local[1]"],
                              capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(proc.stderr)
    archives = list((tmp_path / "cache" / "spark-cds").iterdir())
    # The first run says it wrote the archive (after a clean exit of its JVM: no part file is left).
    assert "class archive for later runs (once)" in runs[0] and [p.suffix for p in archives] == [".jsa"], archives
    assert "class archive" not in runs[1]
    # The second JVM mapped it: no CDS complaint in its log, and the same analysis.
    assert "unable to use shared archive" not in (tmp_path / "out2" / "spark.log").read_text().lower()
    assert_same_analysis(tmp_path / "out2", tmp_path / "out1")


def test_a_reused_out_is_refused_or_replaced_whole(spark, fleet, tmp_path):
    out = tmp_path / "out"
    session = Session(stdout=io.StringIO(), stderr=io.StringIO())
    assert run_line(session, f"analyze --snapshots {fleet} --out {out}") == 0, session.stderr.getvalue()
    stale = out / "plans" / "a-cluster-gone-since" / "rebalance.json"
    stale.parent.mkdir()
    stale.write_text("{}")
    session = Session(stdout=io.StringIO(), stderr=io.StringIO())
    assert run_line(session, f"analyze --snapshots {fleet} --out {out}") == 2
    assert "add --overwrite" in session.stderr.getvalue() and stale.exists()
    assert run_line(session, f"analyze --snapshots {fleet} --out {out} --overwrite") == 0, session.stderr.getvalue()
    assert not stale.parent.exists() and (out / "summary.json").exists()
    (out / "notes.txt").write_text("mine")
    session = Session(stdout=io.StringIO(), stderr=io.StringIO())
    assert run_line(session, f"analyze --snapshots {fleet} --out {out} --overwrite") == 2
    assert "not an analysis (notes.txt)" in session.stderr.getvalue() and (out / "notes.txt").exists()


def test_forecasts_match_the_growth_the_fleet_was_built_with(fleet, analysis):
    """Cluster 01 of the synthetic fleet loses no broker, so its disks and lag grow exactly as
    built: each log dir's growth per day and days until full, the slow consumer's lag per hour;
    the other groups hold still. Controller moves per day are the synthetic schedule's."""
    built = synth.Cluster(1, brokers=9, partitions=600, snapshots=4, seed=7)
    disks = [d for d in table(analysis, "disk_forecast") if d["cluster_id"] == built.id]
    assert len(disks) == 9 * len(synth.LOG_DIRS)
    for d in disks:
        assert d["growth_bytes_per_day"] == pytest.approx(built.disk_growth_per_day(d["broker_id"], d["log_dir"]), abs=1)
        assert d["days_to_full"] == pytest.approx(built.days_left(d["broker_id"], d["log_dir"]), abs=0.001)
    soonest = min(disks, key=lambda d: d["days_to_full"])
    assert (soonest["broker_id"], soonest["log_dir"], soonest["days_to_full"]) == (1, synth.LOG_DIRS[0], 1.5)
    for cluster in (0, 1):
        built = synth.Cluster(cluster, brokers=9, partitions=600, snapshots=4, seed=7)
        lag = {g["group"]: g for g in table(analysis, "lag_growth") if g["cluster_id"] == built.id}
        assert {g for g, row in lag.items() if row["growing"]} == {synth.SLOW_GROUP}
        if built.dead is None:
            assert lag[synth.SLOW_GROUP]["lag_per_hour"] == built.lag_growth_per_hour(synth.SLOW_GROUP)
        moves: Counter = Counter()
        for s in range(1, 4):
            if built.controller(s)[0] != built.controller(s - 1)[0]:
                moves[(synth.START + datetime.timedelta(hours=s)).date().isoformat()] += 1
        churn = {r["day"]: r["moves"] for r in table(analysis, "controller_churn") if r["cluster_id"] == built.id}
        assert churn == {day: moves[day] for day in churn} and sum(churn.values()) == sum(moves.values())
    summary = json.loads((analysis / "summary.json").read_text())
    heads = {h["cluster_id"]: h for h in summary["headline"]}
    assert heads["synth-cluster-01"]["min_days_to_full"] == 1.5 and heads["synth-cluster-00"]["lag_growing"] == 1
    assert heads["synth-cluster-00"]["severity"] == "critical"  # offline partitions
    assert [h["severity"] for h in summary["headline"]] == sorted((h["severity"] for h in summary["headline"]),
                                                                  key=("critical", "warning", "ok").index)


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
            terminate(p, 10)


def terminate(proc: subprocess.Popen, seconds: float) -> None:
    """Stop a daemon we started: SIGTERM, then SIGKILL after `seconds`."""
    proc.terminate()
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_standalone_cluster_gives_the_local_results(standalone, fleet, analysis, tmp_path):
    master, env = standalone
    out = tmp_path / "out"
    proc = subprocess.run([*SHELL, "analyze", "--snapshots", str(fleet), "--out", str(out), "--spark-master", master,
                           "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.cores.max=1"],
                          capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_analysis(out, analysis)
    # Spark's own output (log4j, Hadoop's NativeCodeLoader, JVM notices) goes to spark.log, not the terminal.
    assert all(line.startswith("analyze [") for line in proc.stderr.splitlines()[:-1]), proc.stderr[:2000]
    assert "NativeCodeLoader" in (out / "spark.log").read_text()


def assert_same_analysis(out: Path, analysis: Path) -> None:
    for name in TABLES:
        assert table(out, name) == table(analysis, name), name
    mine, local = (json.loads((d / "summary.json").read_text()) for d in (out, analysis))
    assert mine["plans"] == local["plans"] and mine["headline"] == local["headline"]


@pytest.fixture
def connect_server(spark, tmp_path):  # spark: Java is there
    """A Spark Connect server from the installed pyspark's own distribution (its jars hold
    spark-connect), local[1], gRPC on a free loopback port; stopped at the end."""
    import pyspark
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    port = free_port()
    server = subprocess.Popen(
        [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
         "--master", "local[1]", "--driver-memory", "768m", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "connect.log", "w"))
    try:
        wait_for_port(port, server, seconds=180)
        yield f"sc://127.0.0.1:{port}"
    finally:
        terminate(server, 30)


def test_spark_connect_gives_the_local_results(connect_server, fleet, analysis, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([*SHELL, "analyze", "--snapshots", str(fleet), "--out", str(out), "--spark-remote", connect_server],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_analysis(out, analysis)
    progress = [line for line in proc.stderr.splitlines() if line.startswith("analyze [")]
    assert progress and all(re.search(r", \d+ Spark stages?, CPU [\d.]+ s Python$", line) for line in progress[1:]), progress
    assert proc.stderr.count("\n") == len(progress) + 1  # the progress and the closing line: no Spark noise


def test_spark_connect_refuses_a_bad_address(tmp_path):
    assert_one_line_error(shell("analyze", "--snapshots", str(tmp_path), "--out", str(tmp_path / "o"),
                                "--spark-remote", "http://spark:15002"), 2, "a Spark Connect address like sc://host:15002")
    assert_one_line_error(shell("analyze", "--snapshots", str(tmp_path), "--out", str(tmp_path / "o"),
                                "--spark-remote", "sc://h:1", "--spark-master", "local[1]"), 2, "not both")


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


class Headline(HTMLParser):
    """The rendered headline cards: (cluster, field) -> (data-value, shown text), and each
    card's severity."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[tuple[str, str], tuple[str, str]] = {}
        self.severity: dict[str, str] = {}
        self.order: list[str] = []
        self._cluster = ""
        self._field: tuple[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if "card" in (a.get("class") or "").split():
            self._cluster = a["data-cluster"]
            self.severity[self._cluster] = a["data-severity"]
            self.order.append(self._cluster)
        elif "data-field" in a and self._cluster:
            self._field = (a["data-field"], a.get("data-value") or "")

    def handle_data(self, data: str) -> None:
        if self._field is not None:
            self.figures[(self._cluster, self._field[0])] = (self._field[1], data.strip())
            self._field = None


def test_report_renders_in_headless_chromium(chromium, analysis, tmp_path):
    report = analysis / "report.html"
    scripts = ScriptTags()
    scripts.feed(report.read_text())
    assert scripts.sources == [] and max(scripts.sizes) > 1_000_000  # plotly.js inlined: no network needed
    summary = json.loads((analysis / "summary.json").read_text())
    heads = {h["cluster_id"]: h for h in summary["headline"]}
    for n, tab in enumerate(["fleet", *heads]):
        dom = headless(chromium, tmp_path / f"p{n}", "--virtual-time-budget=20000", "--enable-logging=stderr", "--v=0",
                       "--dump-dom", f"{report.as_uri()}#{tab}")
        assert dom.returncode == 0, dom.stderr[-2000:]
        page = dom.stdout
        assert 'data-ready="1"' in page and 'data-errors="0"' in page, page[:500]
        assert not [line for line in dom.stderr.splitlines() if "CONSOLE" in line and "rror" in line], dom.stderr[-2000:]
        active = page[page.index(f'id="tab-{tab}"'):]
        active = active[:active.index("</section>")]
        charts = len(re.findall(r'class="chart(?! empty)[^"]*"', active))   # an empty one says why instead
        assert charts >= 4 and active.count("main-svg") >= charts, (tab, charts)  # plotly drew each chart as SVG
        shown = Headline()
        shown.feed(page)
        assert shown.order == [h["cluster_id"] for h in summary["headline"]]  # most severe first
        for cluster, h in heads.items():
            assert shown.severity[cluster] == h["severity"]
            for field in ("offline", "under_min_isr", "missing_broker_ids", "controller_moves", "lag_growing"):
                value, text = shown.figures[(cluster, field)]
                assert int(value) == int(re.sub(r"[^0-9]", "", text)) == h[field], (cluster, field)
            value, text = shown.figures[(cluster, "min_days_to_full")]
            assert float(value) == h["min_days_to_full"] and text == f"{h['min_days_to_full']:.1f} days"
        if tab != "fleet":
            plans = re.findall(r'<div class="plan" data-plan="([^"]+)">', active)
            assert plans == list(summary["commands"].get(tab, {}))
            for lines in summary["commands"].get(tab, {}).values():
                assert html_text(lines["apply"]) in active and html_text(lines["check"]) in active
    shot = tmp_path / "report.png"
    blank = tmp_path / "blank.png"
    headless(chromium, tmp_path / "s1", "--virtual-time-budget=20000", "--window-size=1200,900",
             f"--screenshot={shot}", report.as_uri())
    (tmp_path / "blank.html").write_text("<html><body></body></html>")
    headless(chromium, tmp_path / "s2", "--window-size=1200,900", f"--screenshot={blank}",
             (tmp_path / "blank.html").as_uri())
    w, h, pixels = png_pixels(shot)
    assert (w, h) == (1200, 900)
    _, _, empty = png_pixels(blank)
    assert len(set(pixels)) > 20 * max(1, len(set(empty)))  # many colours, where a blank page has a few


def html_text(text: str) -> str:
    import html
    return html.escape(text, quote=False)  # how Chromium serializes text nodes


class ChartText(HTMLParser):
    """Per chart of a rendered page: the text of its title, axis titles and tick labels (from
    plotly's SVG), or the sentence an empty chart shows; the header cells of each table."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: list[dict[str, list[str]]] = []
        self.tables: list[list[str]] = []
        self._depth = 0          # div nesting inside the current chart
        self._field: str | None = None
        self._th = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "div" and "chart" in classes and not self._depth:
            self.charts.append({"empty": [], "gtitle": [], "xtitle": [], "ytitle": [], "xtick": [], "ytick": [],
                                "why": [], "title": []})
            self._depth = 1
            self.charts[-1]["empty"] = ["1"] if "empty" in classes else []
            return
        if self._depth and tag == "div":
            self._depth += 1
        if self._depth:
            found = [c for c in ("gtitle", "xtitle", "ytitle", "why", "title") if c in classes]
            if found:
                self._field = found[0]
            elif tag == "g" and ("xtick" in classes or "ytick" in classes):
                self._field = "xtick" if "xtick" in classes else "ytick"
        if tag == "table":
            self.tables.append([])
        if tag == "th":
            self._th = True

    def handle_endtag(self, tag: str) -> None:
        if self._depth and tag == "div":
            self._depth -= 1
        if tag in ("text", "div"):
            self._field = None if tag == "div" or self._field not in ("xtick", "ytick") else self._field
        if tag == "g":
            self._field = None
        if tag == "th":
            self._th = False

    def handle_data(self, data: str) -> None:
        if self._depth and self._field and data.strip():
            self.charts[-1][self._field].append(data.strip())
        if self._th and data.strip() and data.strip() not in "▲▼↕":
            self.tables[-1].append(data.strip())


def rendered(chromium: str, report: Path, tab: str, profile: Path) -> str:
    dom = headless(chromium, profile, "--virtual-time-budget=20000", "--window-size=1400,900", "--dump-dom",
                   f"{report.as_uri()}#{tab}")
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    assert 'data-ready="1"' in page and 'data-errors="0"' in page, page[:500]
    active = page[page.index(f'id="tab-{tab}"'):]
    return page, active[:active.index("</section>")]


UNITS = {"count", "B", "KiB", "MiB", "GiB", "TiB", "PiB", "messages behind", "node id", "UTC"}
CATEGORIES = {"broker id", "rack", "cluster", "log dir"}


def has_unit(title: str) -> bool:
    """An axis title that says its unit: `partitions (count)`, `bytes used (MiB)`, `snapshot time
    (Europe/Paris)`, `days until full ...`, or a category axis (`broker id`)."""
    inner = re.findall(r"\(([^()]+)\)", title)
    return title in CATEGORIES or title.startswith("days ") or any(u in UNITS or "/" in u for u in inner)


def test_the_report_reads_well_at_1400_pixels(chromium, analysis, tmp_path):
    """Every chart has a title and a titled axis each, with its unit; no tick reads like 40μ;
    times are 24-hour; each table's columns have distinct names and fit the page; a cluster's
    tab shows the balance goals before and after its rebalance plan."""
    report = analysis / "report.html"
    summary = json.loads((analysis / "summary.json").read_text())
    goals = table(analysis, "balance_goals")
    for n, tab in enumerate(["fleet", *[h["cluster_id"] for h in summary["headline"]]]):
        page, active = rendered(chromium, report, tab, tmp_path / f"w{n}")
        assert 'data-overflow="0"' in page, tab   # no table wider than 1400 px lets it be
        shown = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", page, flags=re.S))
        assert not re.search(r"\b(AM|PM)\b", shown), tab   # one time format: 24-hour
        text = ChartText()
        text.feed(active)
        assert len(text.charts) >= 4
        for chart in text.charts:
            if chart["empty"]:
                assert chart["title"] and chart["why"] and len(chart["why"][0]) > 20, chart
                continue
            assert chart["gtitle"], chart
            assert chart["xtitle"] and chart["ytitle"], chart
            for axis in ("xtitle", "ytitle"):
                assert has_unit(chart[axis][0]), (tab, chart["gtitle"], chart[axis])
            assert not [t for t in chart["xtick"] + chart["ytick"] if re.search(r"[0-9][μmkMG]$", t)], chart
            assert not [t for t in chart["xtick"] if re.search(r"\d\d:\d\d:\d\d\.\d", t)], chart["xtick"]
        for headers in text.tables:
            assert len(headers) == len(set(headers)), headers
        if tab != "fleet":
            assert "Balance goals: before and after the rebalance plan" in active
            mine = [g for g in goals if g["cluster_id"] == tab]
            assert {g["goal"] for g in mine} == {"replicas", "leaders", "disk"}
            assert all(g["after_skew"] <= g["before_skew"] + 1e-9 for g in mine if g["goal"] == "replicas")


def test_an_idle_fleet_shows_why_its_charts_are_empty_and_nothing_to_apply(chromium, analysis, tmp_path):
    """Nothing filling, no lag, no moves: each such chart says so; a plan without moves offers
    no command to apply."""
    from kafka_shell.pipeline import report
    tables = {p.stem: json.loads(p.read_text()) for p in (analysis / "tables").glob("*.json")}
    for name in ("disk_forecast", "lag_growth", "lag_over_time", "rebalance", "controller_churn"):
        tables[name] = []
    summary = json.loads((analysis / "summary.json").read_text())
    cluster = summary["headline"][0]["cluster_id"]
    summary["commands"][cluster]["rebalance.json"] = {"check": "kafka-shell --check-it", "apply": "kafka-shell --apply-it"}
    out = tmp_path / "idle.html"
    report.write(out, tables, summary)
    page, active = rendered(chromium, out, cluster, tmp_path / "idle")
    text = ChartText()
    text.feed(active)
    empty = {c["title"][0]: c["why"][0] for c in text.charts if c["empty"]}
    assert empty["Days until each log dir is full (the 15 soonest)"].startswith("Nothing is filling")
    assert "No consumer group" in empty["Consumer lag per group (the 10 largest; growing ones first)"]
    assert "did not move" in empty["Controller moves per day (UTC days)"]
    assert "--apply-it" not in active and 'data-plan="rebalance.json"' not in active
