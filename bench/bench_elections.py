"""A preferred leader election over 100,000 partitions; prints figures.

    .venv/bin/python bench/bench_elections.py [TOPICS] [PARTITIONS_PER_TOPIC]

Builds 1,000 topics x 100 partitions (replication factor 2) on an in-process 3-broker sandbox
through the shell's batched CreateTopics (a replay of create-topic lines), restarts broker 1 so
that the partitions it prefers are led elsewhere, then runs
`preferred-replica-leader-election --all-topic-partitions` once. Requests are counted twice:
from the shell's `--debug` lines, and by the sandbox's controller (its ElectLeaders handler is
wrapped in this process). Expected: one request per 1,000 partitions (100 for 100,000).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.sandbox.handlers import HANDLERS, load  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")
ELECT_LEADERS = 43


def shell(boot: list[str], *args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    p = subprocess.run([SHELL, *boot, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if p.returncode:
        raise SystemExit(f"kafka-shell {' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return elapsed, p


def main() -> None:
    topics = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    per_topic = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    total = topics * per_topic
    received: list[int] = []  # partitions per ElectLeaders request the controller served
    api = load()[ELECT_LEADERS]

    def counting(ctx):
        received.append(sum(len(t.partitions) for t in ctx.request.topic_partitions or ()))
        return api.handler(ctx)

    HANDLERS[ELECT_LEADERS] = dataclasses.replace(api, handler=counting)
    try:
        with Sandbox(brokers=3) as sb:
            boot = ["--bootstrap-server", sb.bootstrap]
            with tempfile.TemporaryDirectory() as tmp:
                script = Path(tmp) / "create.ksh"
                script.write_text("".join(f"create-topic --topic e{i:04d} --partitions {per_topic} "
                                          "--replication-factor 2\n" for i in range(topics)))
                created, p = shell(boot, "--file", str(script), "--quiet", "--debug")
            creates = sum(1 for ln in p.stderr.splitlines() if ln.startswith("debug: CreateTopics request"))
            print(f"created {topics:,} topics x {per_topic} partitions ({total:,}) in {created:.1f} s "
                  f"with {creates} CreateTopics request(s)")

            sb.stop_broker(1)
            sb.start_broker(1)
            moved = sum(1 for t in sb.cluster.topics.values() for pt in t.partitions
                        if pt.leader != pt.replicas[0])
            print(f"after restarting broker 1: {moved:,} partitions led by another than their preferred replica")

            for fmt in ("csv", "table"):
                received.clear()
                wall, p = shell(boot, "--debug", "-o", fmt, "--command",
                                "preferred-replica-leader-election --all-topic-partitions")
                sent = sum(1 for ln in p.stderr.splitlines() if ln.startswith("debug: ElectLeaders request "))
                still = sum(1 for t in sb.cluster.topics.values() for pt in t.partitions
                            if pt.leader != pt.replicas[0])
                print(f"preferred election over {total:,} partitions (-o {fmt}): {wall:.2f} s wall; "
                      f"{sent} ElectLeaders request(s) per --debug, {len(received)} served by the controller "
                      f"(largest {max(received, default=0)} partitions; expected {-(-total // 1000)}); "
                      f"{still} partition(s) still off their preferred leader; "
                      f"{len(p.stdout.splitlines()):,} output lines")
                if fmt == "csv":
                    sb.stop_broker(1)  # move leadership away again for the second run
                    sb.start_broker(1)
    finally:
        HANDLERS[ELECT_LEADERS] = api


if __name__ == "__main__":
    main()
