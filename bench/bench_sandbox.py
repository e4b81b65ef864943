"""Sandbox speed, seen by real clients: start-up, and a full Metadata answer for 10,000 topics
of 10 partitions (100,000 partitions) created through batched CreateTopics requests, both
repeated and right after a change (the first answer after a change is built anew), to a real
AdminClient and to the shell's own ConnectionManager.refresh().

Run: .venv/bin/python bench/bench_sandbox.py [--topics N] [--partitions P]
Prints figures and their ratio to the targets (start < 1 s, full metadata < 1 s). Start-up is
timed for a KRaft sandbox (3 brokers, 1 controller: the default) beside a zk-mode one.

Each figure is taken twice, side by side: with the sandbox in a process of its own (as
`kafka-shell sandbox` serves it) and in the clients' process (as in the tests), where the
clients' garbage collection walks the broker's ~1M model objects too.

Figures on the development machine (10,000 x 10, medians / worst, sandbox in its own process):
list_topics repeated 308 / 405 ms, first after a change 547 / 828 ms; refresh() repeated
300 / 366 ms, first after a change 446 / 509 ms. History: before encoded pieces were cached,
the first answer after a change took 3.4 s; before refresh() paused the GC, it took 0.73 s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections.abc import Callable

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.connection.manager import ConnectionManager
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import replication
from kafka_shell.sandbox.server import Sandbox

START_TARGET_S = 1.0
METADATA_TARGET_S = 1.0
TOPICS_PER_REQUEST = sandbox_admin.MAX_PARTITIONS_PER_BATCH  # divided by partitions below


def client(sandbox: Sandbox) -> AdminClient:
    return AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})


def time_start(brokers: int, mode: str = "kraft") -> tuple[float, Sandbox]:
    t0 = time.perf_counter()
    sandbox = Sandbox(brokers=brokers, mode=mode).start()
    admin = client(sandbox)
    while len(admin.list_topics(timeout=5).brokers) < brokers:
        time.sleep(0.005)
    return time.perf_counter() - t0, sandbox


def create_topics(admin: AdminClient, topics: int, partitions: int) -> float:
    per_request = max(1, TOPICS_PER_REQUEST // partitions)
    t0 = time.perf_counter()
    for first in range(0, topics, per_request):
        batch = [NewTopic(f"bench-{i:05d}", partitions, 3) for i in range(first, min(first + per_request, topics))]
        for _name, f in admin.create_topics(batch, request_timeout=120).items():
            f.result()
    return time.perf_counter() - t0


def timed(fn: Callable[[], int], expect_partitions: int) -> float:
    t0 = time.perf_counter()
    seen = fn()
    elapsed = time.perf_counter() - t0
    assert seen >= expect_partitions, (seen, expect_partitions)
    return elapsed


# State changes that each make the next full answer be built anew: (label, op, args).
CHANGES = [
    ("one topic created", "create_topic", ("new-topic", 10, 3)),
    ("broker 3 stopped", "stop_broker", (3,)),
    ("broker 3 started", "start_broker", (3,)),
    ("preferred election", "elect_preferred", ()),
]
OPS = {
    "create_topic": lambda sb, name, n, rf: sb.call(sandbox_admin.create_topic, sb.cluster, name, n, rf),
    "stop_broker": lambda sb, b: sb.stop_broker(b),
    "start_broker": lambda sb, b: sb.start_broker(b),
    "elect_preferred": lambda sb: sb.call(replication.elect_all_preferred, sb.cluster),
}


class OwnProcess:
    """The sandbox in a process of its own, as `kafka-shell sandbox` runs it: the clients' work
    (and their garbage collection) no longer shares an interpreter with the broker's model.
    Operations travel over a pipe and run there."""

    def __init__(self) -> None:
        self.conn, child = multiprocessing.Pipe()
        self.proc = multiprocessing.Process(target=self._serve, args=(child,), daemon=True)
        self.proc.start()
        self.bootstrap = self.conn.recv()

    @staticmethod
    def _serve(conn) -> None:
        with Sandbox(brokers=3) as sandbox:
            conn.send(sandbox.bootstrap)
            while (msg := conn.recv()) is not None:
                op, args = msg
                OPS[op](sandbox, *args)
                conn.send("done")

    def do(self, op: str, *args: object) -> None:
        self.conn.send((op, args))
        self.conn.recv()

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(10)


class SameProcess:
    def __init__(self) -> None:
        self.sandbox = Sandbox(brokers=3).start()
        self.bootstrap = self.sandbox.bootstrap

    def do(self, op: str, *args: object) -> None:
        OPS[op](self.sandbox, *args)

    def close(self) -> None:
        self.sandbox.stop()


def report(label: str, times: list[float]) -> None:
    med = statistics.median(times)
    print(f"  {label}: median {med * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms "
          f"({max(times) / METADATA_TARGET_S:.2f} x target)")


def bench_reader(name: str, host, read: Callable[[], int], total: int, runs: int) -> None:
    print(f"full metadata ({total} partitions) to {name}:")
    read()  # connections and version negotiation
    report("repeated", [timed(read, total) for _ in range(runs)])
    after = []
    for label, op, args in CHANGES:
        host.do(op, *(f"{a}-{name[:5]}" if isinstance(a, str) else a for a in args))
        after.append(timed(read, total))
        print(f"    after {label}: {after[-1] * 1000:.0f} ms")
    report("first after a change", after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    figures = {}
    for mode, what in (("kraft", "KRaft sandbox, 3 brokers + 1 controller"), ("zk", "zk-mode sandbox, 3 brokers")):
        starts = []
        for _ in range(3):
            elapsed, sandbox = time_start(3, mode)
            starts.append(elapsed)
            sandbox.stop()
        figures[mode] = best = min(starts)
        print(f"start {what}, until a real AdminClient sees the brokers: best {best * 1000:.0f} ms, "
              f"median {statistics.median(starts) * 1000:.0f} ms ({best / START_TARGET_S:.2f} x target)")
    print(f"  KRaft / zk start-up: {figures['kraft'] / figures['zk']:.2f}")

    for host_class in (OwnProcess, SameProcess):
        host = host_class()
        where = "its own process" if host_class is OwnProcess else "the clients' process"
        print(f"-- sandbox in {where}")
        try:
            bench_host(host, args)
        finally:
            host.close()


def bench_host(host, args) -> None:
    admin = AdminClient({"bootstrap.servers": host.bootstrap, "log_level": 3})
    created = create_topics(admin, args.topics, args.partitions)
    total = args.topics * args.partitions
    print(f"create {args.topics} topics x {args.partitions} partitions (RF 3) in batched "
          f"CreateTopics: {created:.2f} s")

    def list_topics() -> int:
        return sum(len(t.partitions) for t in admin.list_topics(timeout=60).topics.values())

    manager = ConnectionManager(host.bootstrap, timeout_s=60)

    def refresh() -> int:
        return sum(len(t.partitions) for t in manager.refresh().topics.values())

    bench_reader("AdminClient.list_topics", host, list_topics, total, args.runs)
    bench_reader("ConnectionManager.refresh()", host, refresh, total, args.runs)
    manager.close()


if __name__ == "__main__":
    main()
