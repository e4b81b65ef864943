"""Memory of a replay from standard input: streams of commands of growing size piped into
`kafka-shell --file -` against a sandbox, the peak RSS of the shell for each, side by side;
prints the figures and their ratios.

    .venv/bin/python bench/bench_replay_stream.py [GiB]     (default 1)

The stream repeats a block of lines that replay must handle as a script would have them:
session commands, `;`, `\\` continuations, comments and blank lines (each line padded to about
4 KiB with a trailing comment), and every 256th block a cluster command (describe-cluster) and a
create-topic (the lookahead of the create-topic batching included). Target: under 100 MB peak
RSS for 1 GiB, about the same as for 16 MiB (the shell reads a line at a time; it used to read
all of standard input first, at about 27x its size).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")
MiB = 1024 * 1024
TARGET_RSS = 100 * 1000 * 1000

PAD = "x" * 4000
BLOCK = "".join([
    f"output table   # {PAD}\n",
    f"# a comment line {PAD}\n",
    "\n",
    f"expanded \\\n   off   # {PAD}\n",
    f"output csv; output table   # {PAD}\n",
]).encode()


def cluster_lines(k: int) -> bytes:
    return f"describe-cluster\ncreate-topic --topic stream-{k % 50} --if-not-exists\n".encode()


def replay(bootstrap: str, size: int) -> tuple[int, float, int]:
    """Pipe `size` bytes of commands into the shell; (peak RSS in bytes, seconds, commands sent)."""
    env = {**os.environ, "KAFKA_SHELL_DATA_DIR": tempfile.mkdtemp(prefix="bench-replay-")}
    errors = tempfile.TemporaryFile()  # not a pipe: nobody reads it while the stream is written
    proc = subprocess.Popen([SHELL, "--bootstrap-server", bootstrap, "--file", "-", "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors, env=env)
    start = time.perf_counter()
    sent, blocks = 0, 0
    try:
        while sent < size:
            chunk = BLOCK if blocks % 256 else BLOCK + cluster_lines(blocks // 256)
            proc.stdin.write(chunk)  # type: ignore[union-attr]
            sent += len(chunk)
            blocks += 1
        proc.stdin.close()  # type: ignore[union-attr]
    except BrokenPipeError:
        pass
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    errors.seek(0)
    said = errors.read()
    if os.waitstatus_to_exitcode(status) or said.count(b"Expanded display: off.") != blocks:
        raise SystemExit(f"the replay failed: {said[-2000:].decode(errors='replace')}")
    commands = blocks * 4 + (blocks - 1) // 256 * 2 + 2  # output x3 (one pair on a `;` line), expanded
    return usage.ru_maxrss * 1024, seconds, commands


def main() -> None:
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    sandbox = subprocess.Popen([SHELL, "sandbox", "--brokers", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        bootstrap = sandbox.stdout.readline().strip().split("=", 1)[1]  # type: ignore[union-attr]
        sizes = sorted({16 * MiB, 256 * MiB, int(gib * 1024 * MiB)})
        print(f"{'stream':>10} {'peak RSS':>10} {'seconds':>8} {'MiB/s':>7} {'commands':>9}  RSS / RSS(16 MiB)")
        first = None
        for size in sizes:
            rss, seconds, commands = replay(bootstrap, size)
            first = first or rss
            print(f"{size / MiB:>7.0f} MiB {rss / 1e6:>7.1f} MB {seconds:>8.1f} {size / MiB / seconds:>7.1f} "
                  f"{commands:>9,}  {rss / first:.2f}x", flush=True)
        verdict = "OK" if rss < TARGET_RSS else "OVER"
        print(f"target: under {TARGET_RSS / 1e6:.0f} MB for {sizes[-1] / MiB:.0f} MiB: {verdict} "
              f"({rss / sizes[-1]:.3f} bytes of RSS per byte of input)")
    finally:
        sandbox.terminate()
        sandbox.wait(30)


if __name__ == "__main__":
    main()
