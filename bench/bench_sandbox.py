"""Sandbox speed, seen by real clients: start-up, and a full Metadata answer for 10,000 topics
of 10 partitions (100,000 partitions) created through batched CreateTopics requests, both
repeated and right after a change (the first answer after a change is built anew), to a real
AdminClient and to the shell's own ConnectionManager.refresh().

Run: .venv/bin/python bench/bench_sandbox.py [--topics N] [--partitions P]
Prints figures and their ratio to the targets (start < 1 s, full metadata < 1 s).

Figures on the development machine (10,000 x 10, medians; before -> after caching encoded pieces
per topic and partition): list_topics repeated 569 -> 511 ms, first after a change 3356 -> 1059 ms
(worst 3799 -> 1409 ms, after a broker stop); refresh() repeated 686 -> 819 ms (noise: GC), first
after a change 3052 -> 947 ms. What is left after a stop or start is mostly Python's full GC
passes over the ~1M objects of the sandbox's model, which shares the process with the clients.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.connection import ConnectionManager
from kafka_shell.sandbox import admin as sandbox_admin
from kafka_shell.sandbox import replication
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


def timed(fn: Callable[[], int], expect_partitions: int) -> float:
    t0 = time.perf_counter()
    seen = fn()
    elapsed = time.perf_counter() - t0
    assert seen >= expect_partitions, (seen, expect_partitions)
    return elapsed


def changes(sandbox: Sandbox) -> list[tuple[str, Callable[[], None]]]:
    """State changes that each make the next full answer be built anew."""
    cluster = sandbox.cluster
    created = iter(range(1_000_000))

    def elect_preferred() -> None:
        for t in cluster.topics.values():
            for p in t.partitions:
                replication.elect_preferred(cluster, p)
        replication.settle(cluster)

    return [
        ("one topic created", lambda: sandbox.call(sandbox_admin.create_topic, cluster, f"new-{next(created)}", 10, 3)),
        ("broker 3 stopped", lambda: sandbox.stop_broker(3)),
        ("broker 3 started", lambda: sandbox.start_broker(3)),
        ("preferred election", lambda: sandbox.call(elect_preferred)),
    ]


def report(label: str, times: list[float]) -> None:
    med = statistics.median(times)
    print(f"  {label}: median {med * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms "
          f"({max(times) / METADATA_TARGET_S:.2f} x target)")


def bench_reader(name: str, sandbox: Sandbox, read: Callable[[], int], total: int, runs: int) -> None:
    print(f"full metadata ({total} partitions) to {name}:")
    read()  # connections and version negotiation
    report("repeated", [timed(read, total) for _ in range(runs)])
    after = []
    for label, change in changes(sandbox):
        change()
        after.append(timed(read, total))
        print(f"    after {label}: {after[-1] * 1000:.0f} ms")
    report("first after a change", after)


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

        def list_topics() -> int:
            return sum(len(t.partitions) for t in admin.list_topics(timeout=60).topics.values())

        manager = ConnectionManager(sandbox.bootstrap, timeout_s=60)

        def refresh() -> int:
            return sum(len(t.partitions) for t in manager.refresh().topics.values())

        bench_reader("AdminClient.list_topics", sandbox, list_topics, total, args.runs)
        bench_reader("ConnectionManager.refresh()", sandbox, refresh, total, args.runs)
        manager.close()


if __name__ == "__main__":
    main()
