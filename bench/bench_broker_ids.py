"""`broker-ids missing` over 100,000 partitions; prints figures.

    .venv/bin/python bench/bench_broker_ids.py [TOPICS] [PARTITIONS_PER_TOPIC]

Builds 1,000 topics x 100 partitions (replication factor 3) straight in an in-process 3-broker
sandbox, stops broker 3 (so every partition lost a replica), then times `broker-ids missing`
as the user runs it (a kafka-shell process: start-up, one Metadata read, DescribeCluster, one
DescribeConfigs, rendering). Side by side: KIP-426's own method, one Metadata request per topic
(the KIP measured ~1 s per 1,000 topics), timed in this process on the same cluster.
Target: under 1 s for the command's own work at 100,000 partitions.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.connection.manager import ConnectionManager  # noqa: E402
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")


def shell(boot: list[str], *args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    p = subprocess.run([SHELL, *boot, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if p.returncode:
        raise SystemExit(f"kafka-shell {' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return elapsed, p


def build(cluster, topics: int, per_topic: int) -> None:
    for i in range(topics):
        assignment = [[(i + k) % 3 + 1, (i + k + 1) % 3 + 1, (i + k + 2) % 3 + 1] for k in range(per_topic)]
        sandbox_admin.create_topic(cluster, f"b{i:04d}", per_topic, 3, assignment, {})


def main() -> None:
    topics = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    per_topic = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    total = topics * per_topic
    with Sandbox(brokers=3) as sb:
        sb.call(build, sb.cluster, topics, per_topic)
        sb.stop_broker(3)
        boot = ["--bootstrap-server", sb.bootstrap]
        startup, _ = shell(boot, "--command", "help")
        listed, _ = shell(boot, "-o", "csv", "--command", "list-topics")
        print(f"for scale: the shell's start-up {startup:.2f} s, list-topics (one full Metadata read) "
              f"{listed:.2f} s wall")
        for fmt in ("csv", "json", "table"):
            wall, p = shell(boot, "-o", fmt, "--command", "broker-ids missing")
            print(f"broker-ids missing over {total:,} partitions (-o {fmt}): {wall:.2f} s wall, "
                  f"{wall - startup:.2f} s beyond the shell's start-up ({startup:.2f} s); "
                  f"{len(p.stdout.splitlines()):,} output lines")
        conn = ConnectionManager(sb.bootstrap, timeout_s=30)
        try:
            start = time.perf_counter()
            conn.read()
            one_read = time.perf_counter() - start
            start = time.perf_counter()
            for i in range(topics):  # KIP-426's method: a Metadata request per topic
                conn.read([f"b{i:04d}"])
            per_topic_reads = time.perf_counter() - start
        finally:
            conn.close()
        print(f"one Metadata read of {total:,} partitions: {one_read:.2f} s; one request per topic "
              f"(KIP-426's method, {topics:,} requests): {per_topic_reads:.2f} s "
              f"({per_topic_reads / one_read:.1f}x)")


if __name__ == "__main__":
    main()
