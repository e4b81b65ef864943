"""The fleet pipeline's figures, printed side by side:

    .venv/bin/python bench/bench_pipeline.py [--scales 0.1,0.3,1,3] [--snapshots 24] [--brokers 300]
                                             [--sandbox-partitions 100000] [--work DIR]

1. `snapshot` of a sandbox cluster with --sandbox-partitions partitions (goal: under 10 s).
2. For each scale (millions of partitions, RF 3, one cluster of --brokers brokers, --snapshots
   snapshots): the synthetic fleet's write time, `kafka-shell analyze` on local[2] (a process
   of its own: Spark's start included; goal at 1M x 24: under 60 s), and a single-process
   baseline (pyarrow and numpy) of the same health and plan job on the same files, with the
   ratio, and where the two lines cross.
"""

from __future__ import annotations

import argparse
import shutil
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


def bench_sandbox_snapshot(partitions: int, work: Path) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_shell.pipeline import snapshot
    from kafka_shell.sandbox.server import Sandbox
    from kafka_shell.session import Session, Target
    with Sandbox(brokers=3, racks=["a", "b", "c"]) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        per_topic = 1000
        for first in range(0, partitions // per_topic, 10):
            batch = [NewTopic(f"bench-{i:05d}", per_topic, 3) for i in range(first, min(first + 10, partitions // per_topic))]
            for f in admin.create_topics(batch, request_timeout=120).values():
                f.result()
        session = Session(target=Target(sandbox.bootstrap, {}, timeout_s=60))
        t0 = time.perf_counter()
        snapshot.take(session, work / "sandbox-snapshots")
        elapsed = time.perf_counter() - t0
        session.close()
    return elapsed


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
        parts = pq.read_table(d / "partitions.parquet", columns=["topic", "partition", "leader", "replicas", "isr"])
        brokers = pq.read_table(d / "brokers.parquet", columns=["broker_id", "rack"])
        topics = pq.read_table(d / "topics.parquet", columns=["topic", "min_isr"])
        live = brokers["broker_id"].to_numpy()
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
        if latest[m["cluster_id"]] is not m:
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


def analyze(root: Path, out: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "kafka-shell"), "analyze", "--snapshots", str(root),
                           "--out", str(out), "--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=6g"],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"analyze failed: {proc.stderr[-2000:]}")
    sys.stderr.write("".join(line + "\n" for line in proc.stderr.splitlines() if line.startswith("analyze [")))
    return elapsed


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scales", default="0.1,0.3,1,3", help="millions of partitions per run")
    p.add_argument("--snapshots", type=int, default=24)
    p.add_argument("--brokers", type=int, default=300)
    p.add_argument("--sandbox-partitions", type=int, default=100_000, help="0 skips the sandbox snapshot")
    p.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-pipeline-"))
    if args.sandbox_partitions:
        s = bench_sandbox_snapshot(args.sandbox_partitions, work)
        print(f"snapshot of a {args.sandbox_partitions:,}-partition sandbox: {s:.1f} s (goal < 10 s)", flush=True)
    print(f"{'partitions':>11} {'snapshots':>9} {'synth s':>8} {'spark s':>8} {'baseline s':>10} {'spark/baseline':>14}")
    lines = []
    for scale in (float(x) for x in args.scales.split(",")):
        n = int(scale * 1_000_000)
        fleet, out = work / f"fleet-{n}", work / f"out-{n}"
        shutil.rmtree(fleet, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        synth.generate(fleet, clusters=1, brokers=args.brokers, partitions=n, snapshots=args.snapshots)
        made = time.perf_counter() - t0
        spark = analyze(fleet, out)
        t0 = time.perf_counter()
        totals = baseline(fleet)
        base = time.perf_counter() - t0
        lines.append((n, spark, base))
        print(f"{n:>11,} {args.snapshots:>9} {made:>8.1f} {spark:>8.1f} {base:>10.1f} {spark / base:>14.2f}", flush=True)
        print(f"    baseline found: {totals}", flush=True)
        shutil.rmtree(fleet, ignore_errors=True)
    cross = next((n for n, s, b in lines if s < b), None)
    print("Spark is faster from " + (f"{cross:,} partitions on" if cross else "none of these sizes (on this 2-core machine)"))


if __name__ == "__main__":
    main()
