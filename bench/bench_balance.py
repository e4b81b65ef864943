"""balance against Kafka's own kafka-reassign-partitions --generate, on the same cluster, and the
planner's time on a cluster of a million partitions.

    .venv/bin/python bench/bench_balance.py [--skip-kafka] [--partitions 1000000] [--brokers 300]

1. The same cluster: a sandbox of 6 brokers on racks a, b, c whose 40 topics (8 partitions each,
   RF 3, sizes from 64 KiB to 2 MiB a partition) sit on brokers 1-4, as if 5 and 6 had just been
   added. Kafka's ReassignPartitionsCommand --generate (from the cached 4.4 jars) proposes its
   plan for every topic and all six brokers; `balance` plans from the same read. For each: the
   replicas it moves, the bytes they copy, and each goal's skew after (measured alike, by
   kafka_shell/admin/balance.py), with the ratios.
2. The planner alone: a million partitions (RF 3) on 297 brokers as Kafka placed them, then 3
   brokers added (3 racks): the CPU time of the plan (the goal: under 10 s; the machine's load
   bends the wall time, not the CPU time), its moves against its lower bound.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_shell.admin import balance as bl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHELL = [str(ROOT / ".venv" / "bin" / "kafka-shell")]


# -- 1. against Kafka's generator ------------------------------------------------------------------


def kafka_generate(bootstrap: str, topics: list[str], brokers: list[int]) -> dict[tuple[str, int], list[int]]:
    from tests.clients import java_client
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"version": 1, "topics": [{"topic": t} for t in topics]}, f)
    started = time.perf_counter()
    done = java_client.run("reassign.ReassignPartitionsCommand", "--bootstrap-server", bootstrap, "--generate",
                           "--topics-to-move-json-file", f.name, "--broker-list", ",".join(map(str, brokers)))
    os.unlink(f.name)
    if done.returncode != 0:
        raise SystemExit(f"Kafka's tool failed: {done.stderr[-2000:]}")
    print(f"  Kafka's --generate ran in {time.perf_counter() - started:.1f} s (a JVM start included)")
    proposed = done.stdout.split("Proposed partition reassignment configuration", 1)[1].strip().splitlines()[0]
    return {(p["topic"], p["partition"]): p["replicas"] for p in json.loads(proposed)["partitions"]}


def measured(layout: bl.Layout, assignment: dict[tuple[str, int], list[int]]) -> dict[str, bl.GoalStatus]:
    """Each goal of `assignment` (leaders: its first replicas, as after preferred elections)."""
    keys = layout.keys
    after = bl.Layout(layout.brokers, keys, [list(assignment.get(k, r)) for k, r in zip(keys, layout.replicas)],
                      layout.sizes)
    return {g.goal: g for g in bl.measure(after)}


def shown(g: bl.GoalStatus) -> str:
    """A goal's measure as measured (before == after): a skew in %, else a count."""
    value = f"{g.before * 100:.1f}%" if g.goal in bl.SPREAD_GOALS else f"{g.before:.1f}"
    return value + ("" if g.met_before else " (not met)")


def moved(layout: bl.Layout, assignment: dict) -> tuple[int, int]:
    replicas = data = 0
    for k, old, size in zip(layout.keys, layout.replicas, layout.sizes):
        new = assignment.get(k, old)
        added = len(set(new) - set(old))
        replicas += added
        data += added * size
    return replicas, data


def against_kafka() -> None:
    from kafka_shell.admin import load
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.sandbox import admin as sandbox_admin
    from kafka_shell.sandbox.server import Sandbox
    from tests import kafka_generator
    from tests.sandbox.wire import produce

    rng = random.Random(5)
    racks = ["a", "b", "c", "a", "b", "c"]
    old = [1, 2, 3, 4]
    with Sandbox(brokers=6, racks=racks) as s:
        names = [f"topic-{t:02d}" for t in range(40)]
        for name in names:
            placed = kafka_generator.kafka_assignment(8, 3, old, {b: racks[b - 1] for b in old},
                                                      rng.randrange(4), rng.randrange(4))
            s.call(sandbox_admin.create_topic, s.cluster, name, 8, 3, placed)
            for p in range(8):
                produce(s, name, p, rng.randrange(1, 33), 64 * 1024)
        conn = ConnectionManager(s.bootstrap)
        conn.open()
        found = load.read(conn, None, internal=False)
        conn.close()
        layout = found.layout
        print(f"\n1. The same cluster: {len(layout.keys)} partitions (RF 3, {sum(layout.sizes) * 3 / 2**20:.0f} MiB "
              "in all) on brokers 1-4 of 6 (racks a, b, c)")
        kafka = kafka_generate(s.bootstrap, names, [1, 2, 3, 4, 5, 6])
        started = time.perf_counter()
        ours = subprocess.run([*SHELL, "--bootstrap-server", s.bootstrap, "--command", "balance -o json"],
                              capture_output=True, text=True, cwd=ROOT)
        print(f"  balance (plan, a shell start included) ran in {time.perf_counter() - started:.1f} s")
        if ours.returncode != 0:
            raise SystemExit(ours.stderr)
        plan = {(m["Topic"], m["Partition"]): m["Target"] for m in json.loads(ours.stdout)["moves"]}
        rows = []
        k_moved, k_bytes = moved(layout, kafka)
        o_moved, o_bytes = moved(layout, plan)
        rows.append(("replicas moved", k_moved, o_moved, f"{o_moved / k_moved:.1%}" if k_moved else "-"))
        rows.append(("bytes copied", f"{k_bytes / 2**20:.1f} MiB", f"{o_bytes / 2**20:.1f} MiB",
                     f"{o_bytes / k_bytes:.1%}" if k_bytes else "-"))
        bound = bl.plan(layout)
        rows.append(("the lower bound (replicas, bytes)", "", f"{bound.bound_replicas}, {bound.bound_bytes / 2**20:.1f} MiB", ""))
        before, k_goals, o_goals = measured(layout, {}), measured(layout, kafka), measured(layout, plan)
        for goal in bl.GOALS:
            if not before[goal].applies:
                continue
            rows.append((f"{goal} after (was {shown(before[goal])})", shown(k_goals[goal]), shown(o_goals[goal]), ""))
        width = max(len(r[0]) for r in rows)
        print(f"  {'':{width}}  {'Kafka --generate':>22}  {'balance':>22}  balance/Kafka")
        for name, k, o, ratio in rows:
            print(f"  {name:{width}}  {str(k):>22}  {str(o):>22}  {ratio}")


# -- 2. a million partitions ------------------------------------------------------------------------


def kafka_placed(partitions: int, brokers: list[int], racks: dict[int, str], rng: random.Random) -> tuple[list, list]:
    """Topics of 1,000 partitions, RF 3, as Kafka's own placement spreads them (rack-aware, a
    random start per topic: tests/kafka_generator.py replays it)."""
    from tests import kafka_generator
    keys, reps = [], []
    for t in range(partitions // 1000):
        placed = kafka_generator.kafka_assignment(1000, 3, brokers, racks, rng.randrange(len(brokers)),
                                                  rng.randrange(len(brokers)))
        keys += [(f"topic-{t:04d}", p) for p in range(1000)]
        reps += placed
    return keys, reps


def a_million(partitions: int, brokers: int) -> None:
    rng = random.Random(1)
    ids = list(range(1, brokers + 1))
    racks = {b: f"rack-{b % 3}" for b in ids}
    keys, reps = kafka_placed(partitions, ids[:-3], {b: racks[b] for b in ids[:-3]}, rng)
    sizes = [rng.randrange(1, 1024) << 20 for _ in keys]
    layout = bl.Layout({b: bl.Broker(b, racks[b]) for b in ids}, keys, reps, sizes)
    print(f"\n2. The planner: {len(keys):,} partitions (RF 3) on {brokers - 3} brokers, 3 added ({brokers} in all, 3 racks)")
    cpu, wall = time.process_time(), time.perf_counter()
    plan = bl.plan(layout)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"  plan time            {cpu:.1f} s CPU ({wall:.1f} s wall on this machine; the goal: under 10 s)")
    print(f"  replicas moved       {plan.moved_replicas:,} (the lower bound: {plan.bound_replicas:,}; "
          f"{plan.moved_replicas / max(1, plan.bound_replicas):.3f} of it)")
    print(f"  bytes copied         {plan.moved_bytes / 2**40:.2f} TiB (the lower bound: {plan.bound_bytes / 2**40:.2f} TiB; "
          f"{plan.moved_bytes / max(1, plan.bound_bytes):.3f} of it)")
    for g in plan.goals:
        if g.applies:
            scale, unit = (100, "%") if g.goal in bl.SPREAD_GOALS else (1, "")
            print(f"  {g.goal:<20} {g.before * scale:8.1f}{unit} -> {g.after * scale:.1f}{unit} "
                  f"({'met' if g.met_after else 'not met'})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-kafka", action="store_true", help="Only the planner's time.")
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=300)
    args = parser.parse_args()
    if not args.skip_kafka:
        against_kafka()
    a_million(args.partitions, args.brokers)


if __name__ == "__main__":
    main()
