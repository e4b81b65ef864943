"""The fleet pipeline's figures, printed side by side:

    .venv/bin/python bench/bench_pipeline.py [--scales 0.1,1,3] [--snapshots 24] [--brokers 300]
                                             [--repeat 3] [--no-connect] [--sandbox-partitions 100000]
                                             [--work DIR]

1. `snapshot` of a sandbox cluster with --sandbox-partitions partitions (goal: under 10 s), and
   the snapshot directory's size per 100,000 partitions.
2. The issue's case: 2 clusters x 50,000 partitions x 3 snapshots (300,000 partition rows),
   `kafka-shell analyze` on local[2] (a process of its own: Spark's start included; goal: under
   12 s) beside the single-process baseline; and, unless --no-connect, the same job through a
   Spark Connect server (started once from pyspark's distribution on loopback, local[2]; goal:
   within 1.5x of local mode).
3. For each scale (millions of partitions, RF 3, one cluster of --brokers brokers, --snapshots
   snapshots): the synthetic fleet's write time, analyze on local[2] (goal at 1M x 24: under
   25 s) and the baseline (pyarrow and numpy) of the same health and plan job on the same
   files, with the ratio, and where the two lines cross.
Each analyze runs --repeat times; the median is printed with the Spark jobs per stage. The
machine's load average is printed before and after (the figures are only as quiet as it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.pipeline import schema, synth  # noqa: E402


def bench_sandbox_snapshot(partitions: int, work: Path) -> tuple[float, int, int]:
    """Seconds to snapshot a sandbox of `partitions` partitions, the snapshot's bytes (its files'
    sizes on disk, manifest included) and the partitions its manifest says it holds."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_shell.pipeline import snapshot
    from kafka_shell.sandbox.server import Sandbox
    from kafka_shell.connection.session import Session, Target
    with Sandbox(brokers=3, racks=["a", "b", "c"]) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        per_topic, per_request = 1000, 9   # KRaft takes 10,000 records a request: a topic's own and its partitions'
        for first in range(0, partitions // per_topic, per_request):
            batch = [NewTopic(f"bench-{i:05d}", per_topic, 3)
                     for i in range(first, min(first + per_request, partitions // per_topic))]
            for f in admin.create_topics(batch, request_timeout=120).values():
                f.result()
        session = Session(target=Target(sandbox.bootstrap, {}, timeout_s=60))
        t0 = time.perf_counter()
        directory, _ = snapshot.take(session, work / "sandbox-snapshots")
        elapsed = time.perf_counter() - t0
        session.close()
    manifest = json.loads((directory / schema.MANIFEST).read_text())
    return elapsed, sum(f.stat().st_size for f in directory.iterdir() if f.is_file()), manifest["rows"]["partitions"]


def size_text(n: float) -> str:
    """Bytes in the unit that shows them (a small snapshot is KiB, not 0.0 MiB)."""
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def baseline(root: Path) -> dict[str, int]:
    """The health and plan job in one process: health classes per snapshot; on each cluster's
    latest snapshot the recovery plan, the preferred-election plan and the rebalance's move
    count (per rack, replicas above the floor/ceil of the rack's mean)."""
    manifests = schema.find_snapshots(root)
    latest = {m["cluster_id"]: m for m in manifests}
    totals = dict.fromkeys(("partitions", "offline", "under_replicated", "under_min_isr", "at_min_isr",
                            "not_preferred", "recovery", "preferred", "rebalance_moves"), 0)
    for m in manifests:
        d = Path(m["path"])
        is_latest = latest[m["cluster_id"]] is m
        brokers = pq.read_table(d / "brokers.parquet", columns=["broker_id", "rack"])
        live = brokers["broker_id"].to_numpy()
        if m.get("format", 1) >= schema.COUNTED_FORMAT:   # the counts Spark reads too
            parts = pq.read_table(d / "partitions.parquet", columns=[
                "leader", *schema.DERIVED_PARTITION_COLUMNS, *(("topic", "partition", "replicas", "isr") if is_latest else ())])
            leader, n_isr, n_rep, first = (parts[c].to_numpy(zero_copy_only=False)
                                           for c in ("leader", "isr_count", "replica_count", "preferred"))
            min_isr = parts["min_isr"].fill_null(1).to_numpy()
        else:
            parts = pq.read_table(d / "partitions.parquet", columns=["topic", "partition", "leader", "replicas", "isr"])
            topics = pq.read_table(d / "topics.parquet", columns=["topic", "min_isr"])
            leader = parts["leader"].to_numpy()
            min_isr = pc.take(topics["min_isr"], pc.index_in(parts["topic"], topics["topic"])).to_numpy()
            n_isr = pc.list_value_length(parts["isr"]).to_numpy()
            n_rep = pc.list_value_length(parts["replicas"]).to_numpy()
            first = pc.list_element(parts["replicas"], 0).to_numpy()
        offline = (leader < 0) | ~np.isin(leader, live)
        totals["partitions"] += len(leader)
        totals["offline"] += int(offline.sum())
        totals["under_replicated"] += int((n_isr < n_rep).sum())
        totals["under_min_isr"] += int((offline | (n_isr < min_isr)).sum())
        totals["at_min_isr"] += int((n_isr == min_isr).sum())
        totals["not_preferred"] += int((leader != first).sum())
        if not is_latest:
            continue
        replicas = pq.read_table(d / "replicas.parquet",
                                 columns=["topic", "partition", "broker_id", "log_end_offset", "last_epoch"])
        off = parts.filter(pa.array(offline))
        keyed = replicas.filter(pc.is_valid(replicas["log_end_offset"])).join(off.select(["topic", "partition"]),
                                                                               ["topic", "partition"])
        keyed = keyed.filter(pc.is_in(keyed["broker_id"], pa.array(live)))
        totals["recovery"] += len(set(zip(keyed["topic"].to_pylist(), keyed["partition"].to_pylist())))
        flat_isr = pc.list_flatten(parts["isr"]).to_numpy()
        owner = np.repeat(np.arange(len(leader)), n_isr)
        first_in_isr = np.zeros(len(leader), bool)
        first_in_isr[owner[flat_isr == first[owner]]] = True
        totals["preferred"] += int((~offline & (leader != first) & first_in_isr & np.isin(first, live)).sum())
        flat = pc.list_flatten(parts["replicas"]).to_numpy()
        rack_of = dict(zip(brokers["broker_id"].to_pylist(), brokers["rack"].to_pylist()))
        held = np.bincount(flat[np.isin(flat, live)], minlength=int(live.max()) + 1)
        for rack in set(rack_of.values()):
            members = np.array(sorted(b for b, r in rack_of.items() if r == rack))
            loads = np.sort(held[members])[::-1]
            base, extra = divmod(int(loads.sum()), len(members))
            target = base + (np.arange(len(members)) < extra)
            totals["rebalance_moves"] += int(np.maximum(0, loads - target).sum())
    return totals


def analyze(root: Path, out: Path, *spark: str) -> tuple[float, dict[str, str]]:
    """Seconds of one `kafka-shell analyze` process, and its progress line per stage (with the
    load average before and after, and the CPU the stages took, summed)."""
    shutil.rmtree(out, ignore_errors=True)
    before = load()
    t0 = time.perf_counter()
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "kafka-shell"), "--analyze", "--snapshots", str(root),
                           "--out", str(out), *spark], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"analyze failed: {proc.stderr[-2000:]}")
    stages = {}
    cpu = {"JVM": 0.0, "Python": 0.0}
    for line in proc.stderr.splitlines():
        if m := re.match(r"analyze \[\d+/\d+\] (.+?): (.+)$", line):
            stages[m.group(1)] = m.group(2)
            for seconds, side in re.findall(r"([\d.]+) s (JVM|Python)", m.group(2)):
                cpu[side] += float(seconds)
    stages["(CPU, all stages)"] = f"{cpu['JVM']:.1f} s JVM + {cpu['Python']:.1f} s Python; load average {before} -> {load()}"
    return elapsed, stages


LOCAL = ("--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=6g")


def median_analyze(root: Path, out: Path, repeat: int, *spark: str) -> tuple[float, list[float], dict[str, str]]:
    runs = [analyze(root, out, *spark) for _ in range(repeat)]
    times = [t for t, _ in runs]
    middle = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    return statistics.median(times), times, middle[1]


def show_stages(stages: dict[str, str]) -> None:
    for name, figures in stages.items():
        print(f"      {name}: {figures}")


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


class ConnectServer:
    """A Spark Connect server from pyspark's own distribution, local[2], on a loopback port; its
    JVM runs as analyze's local one does on a job of this size (Spark's class archive, no C2), so
    the comparison is of the two ways to reach Spark, not of two JVM setups."""

    def __init__(self, work: Path):
        import pyspark
        self.home = Path(pyspark.__file__).parent
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "SPARK_HOME": str(self.home), "SPARK_LOCAL_IP": "127.0.0.1"}
        self.proc = subprocess.Popen(
            [str(self.home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--master", "local[2]", "--driver-memory", "6g", "--conf", "spark.ui.enabled=false",
             "--driver-java-options", " ".join(self.java_options()),
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={self.port}"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(work / "connect-server.log", "w"))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the Spark Connect server exited; see {work / 'connect-server.log'}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.5)
        raise SystemExit("the Spark Connect server did not listen within 300 s")

    @staticmethod
    def java_options() -> list[str]:
        from kafka_shell.pipeline import jobs
        archive = jobs.ClassArchive()
        mapped = [f"-XX:SharedArchiveFile={archive.path}", "-Xlog:cds=error"] if archive.path.exists() else []
        return ["-XX:TieredStopAtLevel=1", *mapped]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scales", default="0.1,1,3", help="millions of partitions per run")
    p.add_argument("--snapshots", type=int, default=24)
    p.add_argument("--brokers", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3, help="analyze runs per case (the median is printed)")
    p.add_argument("--no-connect", action="store_true", help="skip the Spark Connect comparison")
    p.add_argument("--scales-only", action="store_true", help="skip the 300,000-row case (and Spark Connect)")
    p.add_argument("--sandbox-partitions", type=int, default=100_000, help="0 skips the sandbox snapshot")
    p.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-pipeline-"))
    print(f"load average at the start: {load()} (2 cores)", flush=True)
    warm_up(work)
    if args.sandbox_partitions:
        s, size, held = bench_sandbox_snapshot(args.sandbox_partitions, work)
        print(f"snapshot of a {args.sandbox_partitions:,}-partition sandbox: {s:.1f} s (goal < 10 s); "
              f"{size_text(size)} for the {held:,} partitions it holds, "
              f"{size_text(size * 100_000 / max(held, 1))} per 100,000 partitions", flush=True)

    if not args.scales_only:
        bench_300k(work, args.repeat, not args.no_connect)
    bench_scales(work, args)
    print(f"load average at the end: {load()}")


def warm_up(work: Path) -> None:
    """One analyze of a tiny fleet, so the timed runs start as a user's later runs do: with
    Spark's class archive, which the first analyze on a machine writes (once)."""
    fleet = work / "fleet-tiny"
    shutil.rmtree(fleet, ignore_errors=True)
    synth.generate(fleet, clusters=1, brokers=3, partitions=100, snapshots=2)
    seconds, stages = analyze(fleet, work / "out-tiny", *LOCAL)
    archive = next((f" (of which {v} writing the class archive)" for k, v in stages.items() if "class archive" in k), "")
    print(f"warm-up analyze of a tiny fleet: {seconds:.1f} s{archive}", flush=True)


def bench_300k(work: Path, repeat: int, connect: bool) -> None:
    fleet = work / "fleet-300k"
    shutil.rmtree(fleet, ignore_errors=True)
    synth.generate(fleet, clusters=2, brokers=30, partitions=50_000, snapshots=3)
    spark, times, stages = median_analyze(fleet, work / "out-300k", repeat, *LOCAL)
    t0 = time.perf_counter()
    baseline(fleet)
    base = time.perf_counter() - t0
    print(f"2 clusters x 50,000 partitions x 3 snapshots (300,000 rows): analyze local[2] {spark:.1f} s "
          f"(median of {', '.join(f'{t:.1f}' for t in times)}; goal < 12 s), baseline {base:.1f} s, "
          f"ratio {spark / base:.1f}", flush=True)
    show_stages(stages)
    if connect:
        server = ConnectServer(work)
        try:
            remote, rtimes, rstages = median_analyze(fleet, work / "out-300k-connect", repeat,
                                                     "--spark-remote", f"sc://127.0.0.1:{server.port}")
        finally:
            server.stop()
        print(f"    through Spark Connect (server already running): {remote:.1f} s (median of "
              f"{', '.join(f'{t:.1f}' for t in rtimes)}); Connect/local {remote / spark:.2f} (goal <= 1.5)", flush=True)
        show_stages(rstages)


def bench_scales(work: Path, args: argparse.Namespace) -> None:
    print(f"{'partitions':>11} {'snapshots':>9} {'synth s':>8} {'spark s':>8} {'baseline s':>10} {'spark/baseline':>14}")
    lines = []
    for scale in (float(x) for x in args.scales.split(",")):
        n = int(scale * 1_000_000)
        fleet, out = work / f"fleet-{n}", work / f"out-{n}"
        shutil.rmtree(fleet, ignore_errors=True)
        t0 = time.perf_counter()
        synth.generate(fleet, clusters=1, brokers=args.brokers, partitions=n, snapshots=args.snapshots)
        made = time.perf_counter() - t0
        spark, times, stages = median_analyze(fleet, out, args.repeat, *LOCAL)
        t0 = time.perf_counter()
        totals = baseline(fleet)
        base = time.perf_counter() - t0
        lines.append((n, spark, base))
        goal = " (goal < 25 s)" if n == 1_000_000 and args.snapshots == 24 else ""
        print(f"{n:>11,} {args.snapshots:>9} {made:>8.1f} {spark:>8.1f} {base:>10.1f} {spark / base:>14.2f}{goal}", flush=True)
        print(f"    runs: {', '.join(f'{t:.1f}' for t in times)}; baseline found: {totals}", flush=True)
        show_stages(stages)
        shutil.rmtree(fleet, ignore_errors=True)
    cross = next((n for n, s, b in lines if s < b), None)
    print("Spark is faster from " + (f"{cross:,} partitions on" if cross else "none of these sizes (on this 2-core machine)"))


if __name__ == "__main__":
    main()
