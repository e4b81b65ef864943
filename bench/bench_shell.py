"""Speed of the shell's modes against a sandbox in its own process; prints figures and ratios.

    .venv/bin/python bench/bench_shell.py

1. one-shot `--command list-topics` against a bare confluent-kafka `list_topics` script, the
   same cluster, median of 15 runs each, side by side (target: within 1.5x)
2. a replay of 1,000 create-topic lines (target < 3 s), against 1,000 one-shot runs
   (50 runs measured, extrapolated to 1,000)
3. describe-topic of a 10,000-partition topic in a REPL session, its fresh read and its table
   included (target < 150 ms)
"""

from __future__ import annotations

import contextlib
import io
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    p = subprocess.run([SHELL, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if p.returncode:
        raise SystemExit(f"kafka-shell {' '.join(args)} failed: {p.stderr}")
    return elapsed


BARE = """
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": %r}).list_topics(timeout=10)
for name in sorted(md.topics):
    t = md.topics[name]
    print(name, len(t.partitions), len(next(iter(t.partitions.values())).replicas) if t.partitions else 0)
"""


def bare(bootstrap: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE % bootstrap], check=True, capture_output=True)
    return time.perf_counter() - start


@contextlib.contextmanager
def sandbox_process():
    """`kafka-shell sandbox` in its own process (as a user's cluster would be); its bootstrap."""
    p = subprocess.Popen([SHELL, "sandbox", "--brokers", "3"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        yield p.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(10)


def main() -> None:
    with sandbox_process() as bootstrap:
        boot = ["--bootstrap-server", bootstrap]
        for i in range(20):
            wall([*boot, "--command", f"create-topic --topic t{i} --partitions 3 --replication-factor 2"])
        ours, theirs = [], []
        for _ in range(15):  # interleaved, so both see the same machine load
            ours.append(wall([*boot, "--command", "list-topics"]))
            theirs.append(bare(bootstrap))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"one-shot list-topics: median {a * 1000:.0f} ms; bare confluent-kafka list_topics script: "
              f"{b * 1000:.0f} ms; ratio {a / b:.2f}x (target <= 1.5x: {'ok' if a / b <= 1.5 else 'MISSED'})")

        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "create.ksh"
            script.write_text("".join(f"create-topic --topic bench-{i}\n" for i in range(1000)))
            replay = wall([*boot, "--file", str(script), "--quiet"])
        creates = [wall([*boot, "--command", f"create-topic --topic one-{i}"]) for i in range(50)]
        per_run = statistics.mean(creates)
        thousand = per_run * 1000
        print(f"replay of 1,000 create-topic lines: {replay:.2f} s; target < 3 s: "
              f"{'ok' if replay < 3 else 'MISSED'}")
        print(f"1,000 one-shot create-topic runs: {thousand:.1f} s (extrapolated from 50 runs, "
              f"mean {per_run * 1000:.0f} ms each); replay is {thousand / replay:.0f}x faster")

        # KRaft takes at most 10,000 metadata records per request (the topic's own included).
        wall([*boot, "--command", "create-topic --topic big --partitions 5000 --replication-factor 3"])
        wall([*boot, "--command", "alter-topic --topic big --partitions 10000"])
        from kafka_shell.declarations.registry import load_commands
        from kafka_shell.face.runner import run_line
        from kafka_shell.connection.session import Session, Target
        load_commands()
        session = Session(target=Target(bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
        session.conn.connect()  # a REPL fills its cache at start
        times = []
        for _ in range(10):
            session.stdout = io.StringIO()
            start = time.perf_counter()
            assert run_line(session, "describe-topic --topic big") == 0
            times.append(time.perf_counter() - start)
        lines = session.stdout.getvalue().count("\n")
        median = statistics.median(times)
        print(f"describe-topic of a 10,000-partition topic in a REPL session: median {median * 1000:.1f} ms "
              f"over 10 runs ({lines} lines; one Metadata read of the topic and one DescribeConfigs "
              f"included); target < 150 ms: {'ok' if median < 0.15 else 'MISSED'}")
        from kafka_shell.declarations.parsing import parse, tokenize
        from kafka_shell.declarations.render import render
        parsed = parse(tokenize("describe-topic --topic big"))
        data_times, render_times = [], []
        for _ in range(10):
            start = time.perf_counter()
            result = parsed.command.handler(session, parsed.args)
            data_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            render(result, "table", io.StringIO(), io.StringIO())
            render_times.append(time.perf_counter() - start)
        print(f"  of which the handler (reads): {statistics.median(data_times) * 1000:.1f} ms, "
              f"the table rendering: {statistics.median(render_times) * 1000:.1f} ms")
        session.output = "json"
        start = time.perf_counter()
        run_line(session, "describe-topic --topic big")
        print(f"  same as JSON: {(time.perf_counter() - start) * 1000:.1f} ms")
        session.close()


if __name__ == "__main__":
    main()
