"""The shell's group commands at size, side by side with Kafka's own tools, in one run:
describe-group of a KIP-848 consumer group over 10,000 partitions and 10 members (offsets, and
--members --verbose), and list-groups of 10,000 groups, each as a one-shot `kafka-shell` process
against the sandbox and against real Apache Kafka 4.4 (one combined node from Maven Central's
jars), beside Kafka's kafka-consumer-groups (ConsumerGroupCommand, a JVM) on the same Kafka.

    .venv/bin/python bench/bench_group_commands.py [PARTITIONS] [GROUPS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.protocol.codes import ApiKey  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402
from tests import k848_scenarios  # noqa: E402
from tests.clients import java_client  # noqa: E402
from tests.real_kafka import KAFKA_4, RealKafka  # noqa: E402

RUNS = 3
SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")


def timed(cmd: list[str], rows: int | None = None) -> float:
    """Median seconds of RUNS runs of a command that must succeed (and, for the shell's json,
    print at least `rows` rows in its first table: the work was done)."""
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - t0)
        assert done.returncode == 0, (cmd, done.stderr[-2000:])
        if rows is not None:
            got = len(next(iter(json.loads(done.stdout).values())))
            assert got >= rows, (cmd, got, rows)
    return statistics.median(times)


def shell(bootstrap: str, line: str) -> list[str]:
    return [SHELL, "--bootstrap-server", bootstrap, "--timeout", "120", "-o", "json", "--command", line]


def tool(bootstrap: str, *args: str) -> list[str]:
    return java_client.command("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bootstrap, *args)


def many_groups(bootstrap: str, count: int, topic: str) -> None:
    """`count` classic groups, each with one committed offset (OffsetCommit as an admin does)."""
    channel = k848_scenarios.coordinator(bootstrap, "bench-0")
    try:
        for i in range(count):
            answer = channel.request(ApiKey.OFFSET_COMMIT, {
                "group_id": f"bench-{i}", "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "committed_offset": 0, "committed_metadata": None}]}]}, 8)
            assert answer["topics"][0]["partitions"][0]["error_code"] == 0, answer
    finally:
        channel.close()


def measure(bootstrap: str, partitions: int, groups: int, kafka: bool) -> dict[str, float]:
    g = k848_scenarios.Group(bootstrap, partitions=partitions)
    out: dict[str, float] = {}
    try:
        state: dict[str, list] = {}
        for _ in range(10):
            m = g.new_member()
            a = g.join(m)
            state[m] = [a["epoch"], a["assignment"] or []]
        k848_scenarios.settle(g, state, rounds=200)
        gid = g.group_id
        out["describe-group (offsets)"] = timed(shell(bootstrap, f"describe-group {gid}"), rows=partitions)
        out["describe-group --members --verbose"] = timed(shell(bootstrap, f"describe-group {gid} --members --verbose"),
                                                          rows=10)
        if kafka:
            out["tool: --describe (offsets)"] = timed(tool(bootstrap, "--describe", "--group", gid))
            out["tool: --describe --members --verbose"] = timed(
                tool(bootstrap, "--describe", "--group", gid, "--members", "--verbose"))
        many_groups(bootstrap, groups, g.topic)
        out["list-groups"] = timed(shell(bootstrap, "list-groups"), rows=groups + 1)
        if kafka:
            out["tool: --list --state"] = timed(tool(bootstrap, "--list", "--state"))
    finally:
        g.close()
    return out


def main() -> None:
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    groups = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    with Sandbox(brokers=1) as s:
        ours = measure(s.bootstrap, partitions, groups, kafka=False)
    with RealKafka(KAFKA_4, combined=True, heap="1g") as k:
        real = measure(k.bootstrap, partitions, groups, kafka=True)
    print(f"A KIP-848 group over {partitions} partitions with 10 members; {groups} groups listed "
          f"(one-shot processes, median of {RUNS})")
    for name, mine in ours.items():
        print(f"  {name:38s} sandbox {mine:7.2f} s   Kafka 4.4 {real[name]:7.2f} s   ratio {mine / real[name]:.2f}x")
    for name, theirs in (("describe-group (offsets)", "tool: --describe (offsets)"),
                         ("describe-group --members --verbose", "tool: --describe --members --verbose"),
                         ("list-groups", "tool: --list --state")):
        print(f"  on Kafka 4.4: {name:36s} {real[name]:7.2f} s   kafka-consumer-groups {real[theirs]:7.2f} s   "
              f"ratio {real[name] / real[theirs]:.2f}x")


if __name__ == "__main__":
    main()
