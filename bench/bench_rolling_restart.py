"""`rolling-restart-plan` for 100 brokers and 100,000 partitions; prints figures.

    .venv/bin/python bench/bench_rolling_restart.py [BROKERS] [TOPICS] [PARTITIONS_PER_TOPIC]

Builds 1,000 topics x 100 partitions (replication factor 3, replicas spread round-robin) on an
in-process 100-broker sandbox in zk and KRaft mode, and times the command as the user runs it
(a kafka-shell process). Target: under 2 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")


def build(cluster, brokers: int, topics: int, per_topic: int) -> None:
    for i in range(topics):
        assignment = [[(i * 7 + k + j * 13) % brokers + 1 for j in range(3)] for k in range(per_topic)]
        sandbox_admin.create_topic(cluster, f"r{i:04d}", per_topic, 3, assignment, {})


def main() -> None:
    brokers = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    topics = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    per_topic = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    for mode in ("zk", "kraft"):
        with Sandbox(brokers=brokers, mode=mode) as sb:
            sb.call(build, sb.cluster, brokers, topics, per_topic)
            start = time.perf_counter()
            p = subprocess.run([SHELL, "--bootstrap-server", sb.bootstrap, "-o", "json", "--command",
                                "rolling-restart-plan"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            if p.returncode:
                raise SystemExit(p.stderr[-2000:])
            steps = json.loads(p.stdout)
            print(f"rolling-restart-plan ({mode}) for {brokers} brokers, {topics * per_topic:,} partitions: "
                  f"{wall:.2f} s wall, {len(steps)} steps (largest group {max(len(s['nodes']) for s in steps)} "
                  f"brokers); {p.stderr.strip()}")


if __name__ == "__main__":
    main()
