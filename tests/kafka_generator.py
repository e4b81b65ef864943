"""Kafka's own replica placement (AdminUtils.assignReplicasToBrokers, rack unaware and rack
aware), replayed for comparison: it re-places every partition from a random start, and the
tests and bench/bench_reassign.py count its moves against the shell's minimal-movement plan
(kafka_shell/admin/assignment_plan.py)."""

from __future__ import annotations

import random
from collections import deque

Assignment = dict[tuple[str, int], list[int]]


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(racks: dict[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: one broker of each rack (sorted) in turn."""
    by_rack: dict[str, deque] = {}
    for b in sorted(racks):
        by_rack.setdefault(racks[b], deque()).append(b)
    out: list[int] = []
    order = sorted(by_rack)
    i = 0
    while len(out) < len(racks):
        q = by_rack[order[i]]
        if q:
            out.append(q.popleft())
        i = (i + 1) % len(order)
    return out


def kafka_assignment(n_partitions: int, rf: int, brokers: list[int], racks: dict[int, str] | None,
                     start: int, shift: int) -> list[list[int]]:
    """Replica lists of partitions 0..n-1 as Kafka's generator places them for one start index
    and replica shift (Kafka draws both at random, per topic)."""
    arranged = rack_alternated(racks) if racks else sorted(brokers)
    n = len(arranged)
    n_racks = len(set(racks.values())) if racks else 1
    out = []
    for p in range(n_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        reps = [arranged[first]]
        if not racks:
            reps += [arranged[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
        else:
            used_racks, k = {racks[reps[0]]}, 0
            for _ in range(rf - 1):
                while True:
                    b = arranged[_replica_index(first, shift * n_racks, k, n)]
                    k += 1
                    if ((racks[b] not in used_racks or len(used_racks) == n_racks)
                            and (b not in reps or len(reps) == n)):
                        reps.append(b)
                        used_racks.add(racks[b])
                        break
        out.append(reps)
    return out


def _topics(current: Assignment) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for t, p in sorted(current):
        topics.setdefault(t, []).append(p)
    return topics


def kafka_generate(current: Assignment, brokers: list[int], racks: dict[int, str] | None,
                   rng: random.Random) -> Assignment:
    """Kafka's --generate: every topic re-placed with a random start (the replication factor of
    its first partition)."""
    out: Assignment = {}
    n = len(brokers)
    for t, parts in _topics(current).items():
        rf = len(current[(t, parts[0])])
        placed = kafka_assignment(len(parts), rf, brokers, racks, rng.randrange(n), rng.randrange(n))
        out.update({(t, p): placed[p] for p in parts})
    return out


def kafka_fewest_moves(current: Assignment, brokers: list[int], racks: dict[int, str] | None) -> int:
    """The moves of Kafka's generator at its luckiest: per topic, the best of every start index
    and replica shift it could draw."""
    n = len(brokers)
    total = 0
    for t, parts in _topics(current).items():
        rf = len(current[(t, parts[0])])
        olds = [set(current[(t, p)]) for p in parts]
        total += min(sum(len(set(new) - old) for new, old in
                         zip(kafka_assignment(len(parts), rf, brokers, racks, s, h), olds))
                     for s in range(n) for h in range(n))
    return total
