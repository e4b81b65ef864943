"""Sandbox speed, seen by a real client: start-up, and a full Metadata answer for 10,000 topics
of 10 partitions (100,000 partitions) created through batched CreateTopics requests.

Run: .venv/bin/python bench/bench_sandbox.py [--topics N] [--partitions P]
Prints figures and their ratio to the targets (start < 1 s, full metadata < 1 s).
"""

from __future__ import annotations

import argparse
import statistics
import time

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox import admin as sandbox_admin
from kafka_shell.sandbox.server import Sandbox

START_TARGET_S = 1.0
METADATA_TARGET_S = 1.0
TOPICS_PER_REQUEST = sandbox_admin.MAX_PARTITIONS_PER_REQUEST  # divided by partitions below


def client(sandbox: Sandbox) -> AdminClient:
    return AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})


def time_start(brokers: int) -> tuple[float, Sandbox]:
    t0 = time.perf_counter()
    sandbox = Sandbox(brokers=brokers).start()
    admin = client(sandbox)
    while len(admin.list_topics(timeout=5).brokers) < brokers:
        time.sleep(0.005)
    return time.perf_counter() - t0, sandbox


def create_topics(admin: AdminClient, topics: int, partitions: int) -> float:
    per_request = max(1, TOPICS_PER_REQUEST // partitions)
    t0 = time.perf_counter()
    for first in range(0, topics, per_request):
        batch = [NewTopic(f"bench-{i:05d}", partitions, 3) for i in range(first, min(first + per_request, topics))]
        for name, f in admin.create_topics(batch, request_timeout=120).items():
            f.result()
    return time.perf_counter() - t0


def time_full_metadata(admin: AdminClient, runs: int, expect_partitions: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        md = admin.list_topics(timeout=60)
        times.append(time.perf_counter() - t0)
        assert sum(len(t.partitions) for t in md.topics.values()) == expect_partitions
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    starts = []
    for _ in range(3):
        elapsed, sandbox = time_start(3)
        starts.append(elapsed)
        sandbox.stop()
    best = min(starts)
    print(f"start 3 brokers until a real AdminClient sees them: best {best * 1000:.0f} ms, "
          f"median {statistics.median(starts) * 1000:.0f} ms ({best / START_TARGET_S:.2f} x target)")

    with Sandbox(brokers=3) as sandbox:
        admin = client(sandbox)
        created = create_topics(admin, args.topics, args.partitions)
        total = args.topics * args.partitions
        print(f"create {args.topics} topics x {args.partitions} partitions (RF 3) in batched "
              f"CreateTopics: {created:.2f} s")
        times = time_full_metadata(admin, args.runs, total)
        first, rest = times[0], times[1:] or times
        print(f"full metadata ({total} partitions) to AdminClient.list_topics: first {first * 1000:.0f} ms "
              f"({first / METADATA_TARGET_S:.2f} x target), repeated median "
              f"{statistics.median(rest) * 1000:.0f} ms ({statistics.median(rest) / METADATA_TARGET_S:.2f} x target)")


if __name__ == "__main__":
    main()
