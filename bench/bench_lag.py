"""Lag of every group at once (issue 33 item 4), side by side with Kafka's own tool, in one run:
GROUPS groups, each with committed offsets on every partition of one PARTITIONS-partition topic,
then each group's total lag by

- `kafka-shell list-groups --lag` (committed offsets by coordinator, each partition's log end
  read once for all groups) and `kafka-shell describe-group --all-groups --by-topic`;
- `kafka-consumer-groups --describe --all-groups` (ConsumerGroupCommand, a JVM: Kafka's only way
  to the lag of every group; it reads the log ends group by group),

each as a one-shot process against the sandbox and against real Apache Kafka 4.4 (one combined
node from Maven Central's jars). Prints the medians, the ratios, and how many ListOffsets
requests the shell sent.

    .venv/bin/python bench/bench_lag.py [GROUPS] [PARTITIONS]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_group_commands import RUNS, shell, timed, tool  # noqa: E402
from kafka_shell.protocol.codes import ApiKey  # noqa: E402
from kafka_shell.connection.manager import COORDINATOR_RETRIABLE  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402
from tests import k848_scenarios  # noqa: E402
from tests.real_kafka import KAFKA_4, RealKafka  # noqa: E402

TOPIC = "lag-bench"


def committed_groups(bootstrap: str, groups: int, partitions: int) -> None:
    """`groups` groups, each committing offset 0 on every partition (OffsetCommit as an admin)."""
    channel = k848_scenarios.coordinator(bootstrap, "lag-0")   # one node: every group's coordinator
    deadline = time.monotonic() + 60
    try:
        for i in range(groups):
            while True:   # a coordinator that just started loads its state first
                answer = channel.request(ApiKey.OFFSET_COMMIT, {
                    "group_id": f"lag-{i}", "generation_id_or_member_epoch": -1, "member_id": "",
                    "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
                        {"partition_index": p, "committed_offset": 0, "committed_metadata": None}
                        for p in range(partitions)]}]}, 8)
                codes = {p["error_code"] for p in answer["topics"][0]["partitions"]}
                if not codes & COORDINATOR_RETRIABLE or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert codes == {0}, answer
    finally:
        channel.close()


def list_offsets_requests(bootstrap: str) -> int:
    done = subprocess.run([*shell(bootstrap, "list-groups --lag"), "--debug"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return sum(1 for line in done.stderr.splitlines() if "ListOffsets request" in line)


def measure(bootstrap: str, groups: int, partitions: int, kafka: bool) -> dict[str, float]:
    create = subprocess.run(shell(bootstrap, f"create-topic --topic {TOPIC} --partitions {partitions} "
                                             "--replication-factor 1"), capture_output=True, text=True, timeout=600)
    assert create.returncode == 0, create.stderr
    committed_groups(bootstrap, groups, partitions)
    out = {"list-groups --lag": timed(shell(bootstrap, "list-groups --lag"), rows=groups),
           "describe-group --all-groups --by-topic": timed(shell(bootstrap, "describe-group --all-groups --by-topic"),
                                                           rows=groups),
           "ListOffsets requests": float(list_offsets_requests(bootstrap))}
    if kafka:
        out["tool: --describe --all-groups"] = timed(tool(bootstrap, "--describe", "--all-groups"))
    return out


def main() -> None:
    groups = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    partitions = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with Sandbox(brokers=1) as s:
        ours = measure(s.bootstrap, groups, partitions, kafka=False)
    with RealKafka(KAFKA_4, combined=True, heap="1g") as k:
        real = measure(k.bootstrap, groups, partitions, kafka=True)
    print(f"{groups} groups, each with committed offsets on all {partitions} partitions of one topic "
          f"(one-shot processes, median of {RUNS})")
    for name in ("list-groups --lag", "describe-group --all-groups --by-topic"):
        print(f"  {name:40s} sandbox {ours[name]:7.2f} s   Kafka 4.4 {real[name]:7.2f} s   "
              f"ratio {ours[name] / real[name]:.2f}x")
    print(f"  ListOffsets requests of list-groups --lag: sandbox {ours['ListOffsets requests']:.0f}, "
          f"Kafka 4.4 {real['ListOffsets requests']:.0f} (one per leader, for {groups * partitions} committed offsets)")
    theirs = real["tool: --describe --all-groups"]
    for name in ("list-groups --lag", "describe-group --all-groups --by-topic"):
        print(f"  on Kafka 4.4: {name:40s} {real[name]:7.2f} s   kafka-consumer-groups --describe --all-groups "
              f"{theirs:7.2f} s   ratio {real[name] / theirs:.2f}x")


if __name__ == "__main__":
    main()
