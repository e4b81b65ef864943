"""ConsumerGroupDescribe of a KIP-848 group over 10,000 partitions and 10 members, the sandbox
beside real Apache Kafka 4.4 (one combined node from Maven Central's jars, .ci/kafka-dist), in one
run: the same raw requests against both (10 members join by ConsumerGroupHeartbeat and reconcile
until the group is Stable), then the median answer time of ConsumerGroupDescribe, and the time
to settle the group.

    .venv/bin/python bench/bench_k848_describe.py [PARTITIONS] [MEMBERS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_shell.protocol.codes import ApiKey  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402
from tests import k848_scenarios  # noqa: E402
from tests.real_kafka import KAFKA_4, RealKafka  # noqa: E402

RUNS = 20


def measure(bootstrap: str, partitions: int, members: int) -> tuple[float, float, int]:
    """(seconds to settle the group, median seconds of one ConsumerGroupDescribe, members described)."""
    g = k848_scenarios.Group(bootstrap, partitions=partitions)
    try:
        start = time.perf_counter()
        state: dict[str, list] = {}
        for _ in range(members):
            m = g.new_member()
            a = g.join(m)
            state[m] = [a["epoch"], a["assignment"] or []]
        k848_scenarios.settle(g, state, rounds=200)
        settled = time.perf_counter() - start
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            answer = g.channel.request_entity(ApiKey.CONSUMER_GROUP_DESCRIBE, {
                "group_ids": [g.group_id], "include_authorized_operations": False}, 1)
            times.append(time.perf_counter() - t0)
        described = len(answer.groups[0].members)  # type: ignore[attr-defined]
        return settled, statistics.median(times), described
    finally:
        g.close()


def main() -> None:
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    members = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    with Sandbox(brokers=1) as s:
        ours = measure(s.bootstrap, partitions, members)
    with RealKafka(KAFKA_4, combined=True, heap="1g") as k:
        real = measure(k.bootstrap, partitions, members)
    print(f"KIP-848 group: {partitions} partitions, {members} members (median of {RUNS} describes)")
    print(f"  ConsumerGroupDescribe  sandbox {ours[1] * 1000:8.1f} ms   Kafka 4.4 {real[1] * 1000:8.1f} ms   "
          f"ratio {ours[1] / real[1]:.2f}x")
    print(f"  join + settle          sandbox {ours[0]:8.2f} s    Kafka 4.4 {real[0]:8.2f} s    "
          f"ratio {ours[0] / real[0]:.2f}x")
    assert ours[2] == real[2] == members


if __name__ == "__main__":
    main()
