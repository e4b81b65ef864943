"""Speed of the shell's modes against an in-process sandbox; prints figures and ratios.

    .venv/bin/python bench/bench_shell.py

1. one-shot `--command list-topics`: median wall time of 10 runs (target < 0.3 s)
2. a replay of 1,000 create-topic lines (target < 3 s), against 1,000 one-shot runs
   (50 runs measured, extrapolated to 1,000)
3. describe-topic of a 10,000-partition topic from the cache, in-process (target < 50 ms)
"""

from __future__ import annotations

import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.sandbox import admin as sandbox_admin  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    p = subprocess.run([SHELL, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if p.returncode:
        raise SystemExit(f"kafka-shell {' '.join(args)} failed: {p.stderr}")
    return elapsed


def main() -> None:
    with Sandbox(brokers=3) as sb:
        boot = ["--bootstrap-server", sb.bootstrap]
        for i in range(20):
            sb.call(sandbox_admin.create_topic, sb.cluster, f"t{i}", 3, 2)

        runs = [wall([*boot, "--command", "list-topics"]) for _ in range(10)]
        oneshot = statistics.median(runs)
        print(f"one-shot list-topics: median {oneshot * 1000:.0f} ms over 10 runs "
              f"(min {min(runs) * 1000:.0f}, max {max(runs) * 1000:.0f}); target < 300 ms: "
              f"{'ok' if oneshot < 0.3 else 'MISSED'}")

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

        sb.call(sandbox_admin.create_topic, sb.cluster, "big", 10_000, 3)
        from kafka_shell.registry import load_commands
        from kafka_shell.runner import run_line
        from kafka_shell.session import Session, Target
        load_commands()
        session = Session(target=Target(sb.bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
        session.connect()  # fills the cache
        times = []
        for _ in range(10):
            session.stdout = io.StringIO()
            start = time.perf_counter()
            assert run_line(session, "describe-topic --topic big") == 0
            times.append(time.perf_counter() - start)
        lines = session.stdout.getvalue().count("\n")
        median = statistics.median(times)
        print(f"describe-topic of a 10,000-partition topic from cache: median {median * 1000:.1f} ms "
              f"over 10 runs ({lines} lines rendered, includes one DescribeConfigs request); "
              f"target < 50 ms: {'ok' if median < 0.05 else 'MISSED'}")
        from kafka_shell.parsing import parse, tokenize
        from kafka_shell.render import render
        parsed = parse(tokenize("describe-topic --topic big"))
        data_times, render_times = [], []
        for _ in range(10):
            start = time.perf_counter()
            result = parsed.command.handler(session, parsed.args)
            data_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            render(result, "table", io.StringIO(), io.StringIO())
            render_times.append(time.perf_counter() - start)
        print(f"  of which the handler (cache + DescribeConfigs): {statistics.median(data_times) * 1000:.1f} ms, "
              f"the table rendering: {statistics.median(render_times) * 1000:.1f} ms")
        session.output = "json"
        start = time.perf_counter()
        run_line(session, "describe-topic --topic big")
        print(f"  same as JSON: {(time.perf_counter() - start) * 1000:.1f} ms")
        session.close()


if __name__ == "__main__":
    main()
