"""unclean-recovery of 10,000 offline partitions whose live replicas are on 6 brokers; prints figures.

    .venv/bin/python bench/bench_recovery.py [PARTITIONS] [stock]

An in-process 7-broker sandbox holds one topic whose partitions have replication factor 3: broker
7 (the last ISR member of every partition) and two of brokers 1-6. Brokers 1-6 stop, then 7, then
1-6 come back out of sync: every partition is offline with two live replicas, whose log end
offsets are then set apart (a random length each). Then one run of
`unclean-recovery --all-offline-partitions --automated-recovery --yes` (plan + elections),
timed as a whole process, with requests counted twice: from the shell's `--debug` lines and by
the sandbox itself (its handlers are wrapped in this process). Expected: one log-info request
per broker per 1,000 partitions it holds, one election request per 1,000 partitions. With
`stock`, KAFKA-20098's RPCs are off and the stock-Kafka path runs (ListOffsets, reorder,
unclean election, restore).
"""

from __future__ import annotations

import collections
import dataclasses
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shell.protocol.codes import ApiKey  # noqa: E402
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin  # noqa: E402
from kafka_shell.sandbox.handlers import HANDLERS, load  # noqa: E402
from kafka_shell.sandbox.server import Sandbox  # noqa: E402

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")
COUNTED = (ApiKey.GET_REPLICA_LOG_INFO, ApiKey.LIST_OFFSETS, ApiKey.ELECT_LEADERS,
           ApiKey.ALTER_PARTITION_REASSIGNMENTS)


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    stock = len(sys.argv) > 2 and sys.argv[2] == "stock"
    received: collections.Counter = collections.Counter()  # (api, broker) -> requests served
    apis = load()
    originals = {k: apis[k] for k in COUNTED}

    def counting(key: int):
        def handler(ctx):
            received[(key, ctx.broker.id)] += 1
            return originals[key].handler(ctx)
        return handler

    for key in COUNTED:
        HANDLERS[key] = dataclasses.replace(originals[key], handler=counting(key))
    rng = random.Random(20098)
    try:
        # The designated path needs the seeds' APIs; stock Kafka's path runs on a sandbox without them.
        with Sandbox(brokers=7, seed_apis=not stock) as sb:
            pairs = [(a, b) for a in range(1, 7) for b in range(1, 7) if a != b]
            assignment = [[7, *pairs[i % len(pairs)]] for i in range(total)]
            sb.call(sandbox_admin.create_topic, sb.cluster, "r", total, 3, assignment, {})
            for b in (1, 2, 3, 4, 5, 6, 7):
                sb.stop_broker(b)
            for b in (1, 2, 3, 4, 5, 6):
                sb.start_broker(b)
            lengths = {(i, b): rng.randrange(0, 1000) for i, r in enumerate(assignment) for b in r[1:]}

            def diverge(cluster) -> None:
                for i, p in enumerate(cluster.topics["r"].partitions):
                    for b in assignment[i][1:]:
                        p.leo[b], p.replica_epoch[b] = lengths[(i, b)], 0
            sb.call(diverge, sb.cluster)
            offline = sb.call(lambda: sum(p.leader < 0 for p in sb.cluster.topics["r"].partitions))
            received.clear()
            start = time.perf_counter()
            p = subprocess.run([SHELL, "--bootstrap-server", sb.bootstrap, "--debug", "-o", "csv", "--command",
                                "unclean-recovery --all-offline-partitions --automated-recovery --yes"],
                               capture_output=True, text=True, stdin=subprocess.DEVNULL)
            elapsed = time.perf_counter() - start
            if p.returncode:
                raise SystemExit(f"unclean-recovery failed ({p.returncode}): {p.stderr[-2000:]}")
            expected = {i: max(assignment[i][1:], key=lambda b: (lengths[(i, b)], -assignment[i].index(b)))
                        for i in range(total)}
            leaders = sb.call(lambda: [q.leader for q in sb.cluster.topics["r"].partitions])
            right = sum(leaders[i] == expected[i] for i in range(total))
            order_kept = sb.call(lambda: all(list(q.replicas) == assignment[i]
                                             for i, q in enumerate(sb.cluster.topics["r"].partitions)))
    finally:
        HANDLERS.update(originals)
    debug = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: ")]
    info_key = ApiKey.LIST_OFFSETS if stock else ApiKey.GET_REPLICA_LOG_INFO
    per_broker = {b: n for (k, b), n in sorted(received.items()) if k == info_key}
    held = collections.Counter(b for r in assignment for b in r[1:])
    expected_info = {b: -(-held[b] // 1000) for b in held}
    elections = sum(n for (k, _), n in received.items() if k == ApiKey.ELECT_LEADERS)
    reorders = sum(n for (k, _), n in received.items() if k == ApiKey.ALTER_PARTITION_REASSIGNMENTS)
    print(f"path: {'stock Kafka (ListOffsets + reorder + unclean)' if stock else 'KAFKA-20098 (designated)'}")
    print(f"offline partitions before: {offline} of {total}, live replicas on 6 brokers")
    print(f"unclean-recovery (plan + elections, whole process): {elapsed:.2f} s")
    print(f"leaders now the longest log: {right} of {total}; replica order as before: {order_kept}")
    print(f"log-info requests per broker (served): {per_broker}  expected {expected_info}")
    print(f"ElectLeaders requests served: {elections}  expected {-(-total // 1000)}")
    if stock:
        print(f"AlterPartitionReassignments requests served: {reorders}  expected {2 * -(-total // 1000)}")
    print(f"--debug request lines: {len(debug)}")


if __name__ == "__main__":
    main()
