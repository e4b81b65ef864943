"""Group and record commands at size, one-shot (a process per command, as scripts run them):

- `describe-group` of a group with committed offsets on 10,000 partitions (goal < 0.5 s), beside
  `describe-topic` of the same topic (the same partitions through Metadata alone) as a baseline;
  Kafka's own tool cannot run here, so the ratio to describe-topic is what we print.
- `consume --max-messages 10` from a topic that holds records: the time to the first record,
  measured in-process (goal < 0.5 s), and the whole one-shot process beside `list-topics`
  (the cost of a process start and one Metadata read).

    .venv/bin/python bench/bench_groups.py [PARTITIONS]
"""

from __future__ import annotations

import io
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer

from kafka_shell.face.runner import run_line
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target

ROOT = Path(__file__).resolve().parent.parent
SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")
RUNS = 5


def one_shot(bootstrap: str, line: str) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of RUNS one-shot processes running
    `line`. The CPU time is the shell's own work, whatever else the machine runs; the wall time
    also holds the sandbox's answers (it runs in this process)."""
    walls, cpus = [], []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        p = subprocess.run([SHELL, "--bootstrap-server", bootstrap, "--command", line], capture_output=True,
                           text=True, cwd=ROOT, env=os.environ)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if p.returncode:
            sys.exit(f"{line} failed: {p.stderr.strip()}")
    return statistics.median(walls), statistics.median(cpus)


def in_process(bootstrap: str, line: str) -> float:
    session = Session(target=Target(bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
    try:
        start = time.perf_counter()
        code = run_line(session, line)
        seconds = time.perf_counter() - start
    finally:
        session.close()
    if code:
        sys.exit(f"{line} failed: {session.stderr.getvalue().strip()}")  # type: ignore[attr-defined]
    return seconds


def main() -> None:
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with Sandbox(brokers=3) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "big", partitions, 1)
        s.call(sandbox_admin.create_topic, s.cluster, "small", 1, 1)
        producer = Producer({"bootstrap.servers": s.bootstrap, "log_level": 3})
        for i in range(100):
            producer.produce("small", value=f"record {i}".encode())
        producer.flush(10)
        # Offsets for every partition, committed through the shell itself (an inactive group).
        commit = in_process(s.bootstrap, "reset-offsets --group app --topic big --to-latest --execute --yes")

        group, group_cpu = one_shot(s.bootstrap, "describe-group app")
        topic, topic_cpu = one_shot(s.bootstrap, "describe-topic --topic big")
        print(f"describe-group, {partitions} partitions (one-shot, median of {RUNS}; wall / shell CPU)")
        print(f"  describe-group app          {group:.3f} s / {group_cpu:.3f} s (goal < 0.5 s)")
        print(f"  describe-topic --topic big  {topic:.3f} s / {topic_cpu:.3f} s (baseline)")
        print(f"  ratio                       {group / topic:.2f}x / {group_cpu / topic_cpu:.2f}x")
        print(f"  (reset-offsets --execute of all {partitions}, in-process: {commit:.3f} s)")

        first = statistics.median(in_process(s.bootstrap, "consume --topic small --from-beginning --max-messages 1")
                                  for _ in range(RUNS))
        ten = statistics.median(in_process(s.bootstrap, "consume --topic small --from-beginning --max-messages 10")
                                for _ in range(RUNS))
        consume, consume_cpu = one_shot(s.bootstrap, "consume --topic small --from-beginning --max-messages 10")
        listing, listing_cpu = one_shot(s.bootstrap, "list-topics")
        print(f"\nconsume (median of {RUNS}; one-shot: wall / shell CPU)")
        print(f"  first record, in-process    {first:.3f} s (goal < 0.5 s)")
        print(f"  10 records, in-process      {ten:.3f} s")
        print(f"  10 records, one-shot        {consume:.3f} s / {consume_cpu:.3f} s")
        print(f"  list-topics, one-shot       {listing:.3f} s / {listing_cpu:.3f} s (baseline: process start "
              "+ one read)")
        print(f"  ratio                       {consume / listing:.2f}x / {consume_cpu / listing_cpu:.2f}x")


if __name__ == "__main__":
    main()
