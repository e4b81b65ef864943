"""The minimal-movement planner on plain data, against the properties it promises and against
Kafka's own generator (replayed, and checked against the expectations of Kafka's AdminUtilsTest
and AdminRackAwareTest)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kafka_shell.admin import assignment_plan as rp
from kafka_shell.declarations import failure_lines
from tests import kafka_generator


def layout(topics: int, partitions: int, rf: int, brokers: list[int], racks=None, seed: int = 7) -> rp.Assignment:
    """A cluster as Kafka itself would have placed it (random start per topic)."""
    rng = random.Random(seed)
    out = {}
    for t in range(topics):
        placed = kafka_generator.kafka_assignment(partitions, rf, brokers, racks, rng.randrange(len(brokers)),
                                     rng.randrange(len(brokers)))
        out.update({(f"topic-{t}", p): placed[p] for p in range(partitions)})
    return out


def assert_balanced(proposed: rp.Assignment, brokers: list[int]) -> None:
    replicas = Counter({b: 0 for b in brokers}) + Counter(b for r in proposed.values() for b in r)
    leaders = Counter({b: 0 for b in brokers}) + Counter(r[0] for r in proposed.values())
    for counts in (replicas, leaders):
        assert set(counts) <= set(brokers)
        mean = sum(counts.values()) / len(brokers)
        assert all(abs(counts[b] - mean) < 1 for b in brokers), counts
    for r in proposed.values():
        assert len(set(r)) == len(r)


def spans_racks(proposed: rp.Assignment, racks: dict[int, str]) -> bool:
    n = len(set(racks.values()))
    return all(len({racks[b] for b in r}) == min(len(r), n) for r in proposed.values())


def test_kafka_generator_replay_matches_kafkas_own_tests():
    # AdminUtilsTest.testReplicaAssignment (fixed start index 0)
    assert kafka_generator.kafka_assignment(10, 3, [0, 1, 2, 3, 4], None, 0, 0) == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
        [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert kafka_generator.rack_alternated(racks) == [0, 3, 1, 5, 4, 2]
    assert kafka_generator.rack_alternated({b: r for b, r in racks.items() if b != 5}) == [0, 3, 1, 4, 2]
    assert kafka_generator.kafka_assignment(7, 3, list(racks), racks, 0, 0) == [
        [0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3], [0, 4, 2]]


def test_adding_brokers_moves_exactly_the_lower_bound_and_fewer_than_kafka():
    old, new = list(range(1, 9)), list(range(1, 11))
    current = layout(12, 20, 3, old)
    proposed = rp.plan(current, new)
    assert_balanced(proposed, new)
    moves = rp.moved(current, proposed)
    assert moves == rp.lower_bound(current, new) > 0
    assert moves < kafka_generator.kafka_fewest_moves(current, new, None)
    assert moves < rp.moved(current, kafka_generator.kafka_generate(current, new, None, random.Random(1)))
    # Every move lands on a new broker: the old ones only give replicas away.
    gained = Counter(b for k in current for b in set(proposed[k]) - set(current[k]))
    assert set(gained) == {9, 10}


def test_rack_aware_plan_spreads_racks_and_balances():
    racks = {b: f"rack-{b % 3}" for b in range(1, 10)}
    old = list(range(1, 7))
    current = layout(10, 18, 3, old, {b: racks[b] for b in old})
    proposed = rp.plan(current, list(racks), racks)
    assert spans_racks(proposed, racks)
    assert_balanced(proposed, list(racks))
    assert rp.moved(current, proposed) == rp.lower_bound(current, list(racks))
    assert rp.moved(current, proposed) <= kafka_generator.kafka_fewest_moves(current, list(racks), racks)


def test_rack_repair_fixes_partitions_placed_without_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    current = {("t", 0): [1, 2], ("t", 1): [3, 4], ("t", 2): [1, 3], ("t", 3): [2, 4]}
    proposed = rp.plan(current, [1, 2, 3, 4], racks)
    assert spans_racks(proposed, racks)
    assert_balanced(proposed, [1, 2, 3, 4])
    assert rp.moved(current, proposed) == 2  # one replica of each of the two one-rack partitions
    assert proposed[("t", 2)] == [1, 3] and proposed[("t", 3)] == [2, 4]


def test_removing_a_broker_evacuates_it_with_minimal_moves():
    current = layout(5, 12, 2, [1, 2, 3, 4])
    proposed = rp.plan(current, [1, 2, 3])
    assert all(4 not in r for r in proposed.values())
    assert_balanced(proposed, [1, 2, 3])
    assert rp.moved(current, proposed) == rp.lower_bound(current, [1, 2, 3])
    assert rp.moved(current, proposed) <= kafka_generator.kafka_fewest_moves(current, [1, 2, 3], None)


def test_a_balanced_layout_moves_nothing():
    current = layout(4, 9, 3, [1, 2, 3])
    proposed = rp.plan(current, [1, 2, 3])
    assert rp.moved(current, proposed) == 0
    assert all(set(proposed[k]) == set(current[k]) for k in current)


def test_replication_factor_up_and_down():
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    current = layout(1, 12, 2, list(racks), racks)
    up = rp.plan(current, list(racks), racks, {"topic-0": 3})
    assert all(len(r) == 3 and set(current[k]) <= set(r) for k, r in up.items())
    assert rp.moved(current, up) == 12  # just the added replicas
    assert spans_racks(up, racks)
    assert_balanced(up, list(racks))
    down = rp.plan(up, list(racks), racks, {"topic-0": 1})
    assert all(len(r) == 1 and set(r) <= set(up[k]) for k, r in down.items())
    assert rp.moved(up, down) == 0
    assert_balanced(down, list(racks))


def test_plan_errors():
    with pytest.raises(rp.PlanError) as too_many:
        rp.plan({("t", 0): [1, 2, 3]}, [1, 2])
    assert (too_many.value.reason, too_many.value.topic, too_many.value.factor, too_many.value.brokers) == \
        (rp.FACTOR_ABOVE_BROKERS, "t", 3, (1, 2))
    assert "larger than the 2 broker(s)" in failure_lines.plan_line(too_many.value)
    with pytest.raises(rp.PlanError) as partial:
        rp.rack_map([1, 2], {1: "a", 2: None}, True)
    assert (partial.value.reason, partial.value.brokers) == (rp.PARTIAL_RACKS, (2,))
    assert failure_lines.plan_line(partial.value).startswith("Brokers 2 have no rack while others do")
    assert rp.rack_map([1, 2], {1: "a", 2: None}, False) is None
    assert rp.rack_map([1, 2], {}, True) is None
