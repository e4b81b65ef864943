"""Completion speed with a large cache: build a ClusterSnapshot of 100,000 topics (or TOPICS:
the goal is 1,000,000), then time one keystroke's `get_completions` (stage 1 + stage 2, all
candidates consumed) for a few lines.

    .venv/bin/python bench/bench_completion.py [TOPICS]

Prints the median and worst time per keystroke, fuzzy matching on, and the worst as a share of
the goal (under 20 ms); the CPU time beside it shows what a busy machine adds to the wall time.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

from prompt_toolkit.document import Document

from kafka_shell.connection.metadata import BrokerInfo, ClusterSnapshot, ControllerInfo, PartitionInfo, TopicInfo
from kafka_shell.declarations.registry import Command, Option, Registry, load_commands
from kafka_shell.face.repl.completer import KafkaCompleter

LINES = [
    "describe-topic --topic ",            # every topic matches: the cap matters
    "describe-topic --topic orders-4",    # a narrow prefix: bisection matters
    "describe-topic --topic zzz",         # no match
    "describe-topic --topic 799",         # fuzzy: thousands of subsequence matches to rank
    "describe-topic --topic rdrs-9x",     # fuzzy: no name has an x: every block skipped
    "describe-topic --topic -e-",         # fuzzy: every block has the characters, no name matches: the budget
    "describe-topic --topic svc-7",       # fuzzy and prefix mixed
    "create-topic --config cleanup.policy=",
    "alter-configs --add-config retms",   # fuzzy config key
    "desc-top",                           # fuzzy command name
]
GOAL_MS = 20.0


def snapshot(n: int) -> ClusterSnapshot:
    part = (PartitionInfo("x", 0, 1, (1, 2, 3), (1, 2, 3)),)
    names = [f"orders-{i}" if i % 2 else f"svc-{i}-events" for i in range(n)]
    topics = {name: TopicInfo(name, None, part) for name in names}
    brokers = {i: BrokerInfo(i, "127.0.0.1", 9090 + i) for i in (1, 2, 3)}
    return ClusterSnapshot("bench", ControllerInfo(100), brokers, topics, groups=tuple(f"g{i}" for i in range(1000)))


def registry() -> Registry:
    """The shell's commands; a stand-in declaration of the two benchmarked ones if absent."""
    real = load_commands()
    if real.get("describe-topic") and real.get("create-topic"):
        return real
    stand_in = Registry()
    stand_in.add(Command("describe-topic", print, (Option("--topic", completer="topic"),)))
    stand_in.add(Command("create-topic", print, (Option("--topic", completer="topic"),
                                                 Option("--config", completer="config_value"))))
    return stand_in


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    snap = snapshot(n)
    t0 = time.perf_counter()
    completer = KafkaCompleter(registry(), snap)
    build_ms = (time.perf_counter() - t0) * 1000
    gc.collect()
    gc.freeze()   # as the REPL does after swapping in a completer (repl/app.py)
    print(f"{n} topics; building the completer (done off the keystroke path): {build_ms:.1f} ms")
    worst = worst_cpu = 0.0
    for line in LINES:
        doc = Document(line)
        times, cpu, count = [], [], 0
        for _ in range(50):
            t0, c0 = time.perf_counter(), time.thread_time()
            count = len(list(completer.get_completions(doc, None)))
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
        worst, worst_cpu = max(worst, max(times)), max(worst_cpu, max(cpu))
        print(f"{line!r:45} {count:4d} candidates  median {statistics.median(times):6.2f} ms"
              f"  max {max(times):6.2f} ms  (CPU median {statistics.median(cpu):6.2f} ms, max {max(cpu):6.2f} ms)")
    print(f"worst keystroke {worst:.2f} ms wall = {worst / GOAL_MS:.2f} x the {GOAL_MS:.0f} ms goal; "
          f"{worst_cpu:.2f} ms CPU = {worst_cpu / GOAL_MS:.2f} x (wall above CPU is other processes on the machine)")


if __name__ == "__main__":
    main()
