"""The --generate planner on 10,000 partitions (RF 3): replicas moved against the lower bound
and against Kafka's own generator (replayed: its luckiest start per topic, and the mean of a few
random draws as users get it), and the planning time.

    .venv/bin/python bench/bench_reassign.py [PARTITIONS]

Cases: 2 brokers added to 10 (rack-unaware); the same on 3 racks (rack-aware); 1 broker of 12
removed. The time goal is under 2 s per plan.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_shell.admin import assignment_plan as rp  # noqa: E402
from tests import kafka_generator  # noqa: E402

TOPICS = 100
RF = 3


def layout(partitions: int, brokers: list[int], racks: dict[int, str] | None, rng: random.Random) -> rp.Assignment:
    """A cluster as Kafka itself placed it: every topic from a random start."""
    per_topic = partitions // TOPICS
    out: rp.Assignment = {}
    for t in range(TOPICS):
        placed = kafka_generator.kafka_assignment(per_topic, RF, brokers, racks, rng.randrange(len(brokers)),
                                     rng.randrange(len(brokers)))
        out.update({(f"topic-{t:03d}", p): placed[p] for p in range(per_topic)})
    return out


def spread(counts: Counter, brokers: list[int]) -> str:
    values = [counts[b] for b in brokers]
    return f"{min(values)}-{max(values)} (mean {sum(values) / len(brokers):.1f})"


def case(name: str, partitions: int, old: list[int], new: list[int], racks: dict[int, str] | None) -> None:
    rng = random.Random(42)
    current = layout(partitions, old, {b: racks[b] for b in old} if racks else None, rng)
    start = time.perf_counter()
    proposed = rp.plan(current, new, racks)
    seconds = time.perf_counter() - start
    moves = rp.moved(current, proposed)
    bound = rp.lower_bound(current, new)
    kafka_best = kafka_generator.kafka_fewest_moves(current, new, racks)
    kafka_random = statistics.mean(rp.moved(current, kafka_generator.kafka_generate(current, new, racks, random.Random(s)))
                                   for s in range(5))
    bad_racks = 0
    if racks:
        n_racks = len(set(racks[b] for b in new))
        bad_racks = sum(1 for r in proposed.values() if len({racks[b] for b in r}) < min(len(r), n_racks))
    print(f"\n{name}: {len(current)} partitions, {len(current) * RF} replicas, brokers {len(old)} -> {len(new)}")
    print(f"  plan time            {seconds:.3f} s (goal < 2 s)")
    print(f"  replicas moved       {moves}")
    print(f"  lower bound          {bound}  (moved / bound = {moves / bound:.3f})" if bound else
          "  lower bound          0")
    print(f"  Kafka, luckiest draw {kafka_best}  (ours is {moves / kafka_best:.1%} of it)")
    print(f"  Kafka, random (mean) {kafka_random:.0f}  (ours is {moves / kafka_random:.1%} of it)")
    print(f"  replicas per broker  {spread(Counter(b for r in proposed.values() for b in r), new)}")
    print(f"  leaders per broker   {spread(Counter(r[0] for r in proposed.values()), new)}")
    if racks:
        print(f"  partitions off-rack  {bad_racks}")


def main() -> None:
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    twelve = list(range(1, 13))
    case("Add 2 brokers to 10 (rack-unaware)", partitions, twelve[:10], twelve, None)
    racks = {b: f"rack-{b % 3}" for b in twelve}
    case("Add 2 brokers to 10 on 3 racks (rack-aware)", partitions, twelve[:10], twelve, racks)
    case("Remove broker 12 of 12 (rack-unaware)", partitions, twelve, twelve[:11], None)


if __name__ == "__main__":
    main()
