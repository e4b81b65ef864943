"""The balance planner (kafka_shell/admin/balance.py) on plain data: each goal met where it can
be, in priority order (a lower goal never undoes a higher one), the hard constraints (drained,
cordoned, down brokers), and the data moved against the lower bound it states."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shell.admin import balance as bl
from kafka_shell.admin.assignment_plan import rack_penalty
from kafka_shell.declarations.failure_lines import balance_error_line, balance_note
from tests import kafka_generator
from tests.test_reassign_plan import layout as kafka_layout

MiB = 1 << 20


def after(layout: bl.Layout, plan: bl.Plan) -> dict[tuple[str, int], list[int]]:
    out = {k: list(r) for k, r in zip(layout.keys, layout.replicas)}
    out.update(plan.proposed())
    return out


def notes(plan: bl.Plan) -> list[str]:
    """The plan's notes as people read them."""
    return [balance_note(n) for n in plan.notes]


def counts(assignment, brokers, leaders: bool = False) -> Counter:
    return Counter({b: 0 for b in brokers}) + Counter(b for r in assignment.values() for b in (r[:1] if leaders else r))


def within_one(counter: Counter, brokers) -> bool:
    mean = sum(counter[b] for b in brokers) / len(brokers)
    return all(abs(counter[b] - mean) < 1 for b in brokers)


def met(plan: bl.Plan, *goals: str) -> bool:
    return all(plan.goal(g).met_after for g in goals)


def test_adding_brokers_meets_every_goal_at_the_lower_bound_of_replicas_moved():
    old, new = list(range(1, 9)), list(range(1, 11))
    current = kafka_layout(10, 24, 3, old)
    layout = bl.layout_from(current, [bl.Broker(b) for b in new], {k: 10 * MiB for k in current})
    plan = bl.plan(layout)
    result = after(layout, plan)
    assert within_one(counts(result, new), new) and within_one(counts(result, new, leaders=True), new)
    assert met(plan, bl.REPLICAS, bl.LEADERS, bl.DISK, bl.TOPICS)
    assert not plan.goal(bl.REPLICAS).met_before and plan.goal(bl.REPLICAS).before > 0
    # Equal sizes: every move is one the bound counts, so the plan moves exactly the bound.
    assert plan.moved_replicas == plan.bound_replicas == 144
    assert plan.moved_bytes == plan.bound_bytes == 144 * 10 * MiB
    # Every move goes from an old broker to a new one, and Kafka's own generator moves far more.
    for c in plan.changes:
        assert set(c.adding) <= {9, 10} and set(c.removing) <= set(old)
    kafka = kafka_generator.kafka_fewest_moves(current, new, None)
    assert plan.moved_replicas < kafka / 2


def test_the_rack_rule_holds_and_a_broken_one_is_mended():
    brokers = list(range(1, 10))
    racks = {b: f"rack-{b % 3}" for b in brokers}
    current = kafka_layout(6, 12, 3, brokers, racks)
    current[("topic-0", 0)] = [1, 4, 7]            # all on rack-1
    current[("topic-0", 1)] = [2, 5, 3]            # two on rack-2
    layout = bl.layout_from(current, [bl.Broker(b, racks[b]) for b in brokers], {k: MiB for k in current})
    plan = bl.plan(layout)
    assert plan.goal(bl.RACK).before == 2 and plan.goal(bl.RACK).after == 0 and plan.goal(bl.RACK).met_after
    for reps in after(layout, plan).values():
        assert len({racks[b] for b in reps}) == 3
    assert plan.bound_replicas >= 3    # two replicas for topic-0-0, one for topic-0-1
    assert met(plan, bl.REPLICAS, bl.LEADERS)


def test_a_lower_goal_never_breaks_the_rack_rule():
    """Racks of 2, 1 and 1 brokers with RF 3: a replica in each rack leaves the single-broker
    racks holding every partition, so the replicas goal cannot be met; the plan keeps the racks."""
    racks = {1: "a", 2: "a", 3: "b", 4: "c"}
    current = {("t", p): [1 + p % 2, 3, 4] for p in range(8)}
    layout = bl.layout_from(current, [bl.Broker(b, r) for b, r in racks.items()], {k: MiB for k in current})
    plan = bl.plan(layout)
    assert plan.goal(bl.RACK).met_after
    assert not plan.goal(bl.REPLICAS).met_after
    assert plan.changes == [] or all(len({racks[b] for b in c.after}) == 3 for c in plan.changes)
    assert "Goal replicas (replicas per broker) is not met after the plan: a higher goal (the rack rule, cordoned " \
        "or drained brokers) leaves no move that helps." in notes(plan)


def test_a_drained_broker_ends_empty_and_leads_nothing():
    brokers = [1, 2, 3, 4, 5]
    current = kafka_layout(4, 10, 3, brokers)
    nodes = [bl.Broker(b, drained=(b == 3)) for b in brokers]
    layout = bl.layout_from(current, nodes, {k: 2 * MiB for k in current})
    plan = bl.plan(layout)
    result = after(layout, plan)
    assert counts(result, brokers)[3] == 0
    held = counts(result, brokers)[3]
    assert held == 0 and plan.moved_replicas == plan.bound_replicas == counts(current, brokers)[3]
    assert within_one(counts(result, [1, 2, 4, 5]), [1, 2, 4, 5])
    assert within_one(counts(result, [1, 2, 4, 5], leaders=True), [1, 2, 4, 5])
    assert met(plan, bl.REPLICAS, bl.LEADERS)


def test_leadership_drain_moves_no_replica():
    brokers = [1, 2, 3, 4]
    current = kafka_layout(3, 8, 3, brokers)
    layout = bl.layout_from(current, [bl.Broker(b, leads=(b != 2)) for b in brokers], {k: MiB for k in current})
    plan = bl.plan(layout, bl.Options(leaders_only=True))
    assert all(c.reorder_only for c in plan.changes) and plan.moved_replicas == 0 and plan.bound_bytes == 0
    result = after(layout, plan)
    assert counts(result, brokers, leaders=True)[2] == 0
    assert within_one(counts(result, [1, 3, 4], leaders=True), [1, 3, 4])
    assert plan.goal(bl.LEADERS).met_after and not plan.goal(bl.LEADERS).met_before


def test_a_cordoned_or_down_broker_takes_no_new_replica():
    brokers = [1, 2, 3, 4, 5, 6]
    current = kafka_layout(4, 12, 2, [1, 2, 3, 4])    # 5 and 6 empty
    nodes = [bl.Broker(b, cordoned=(b == 5), live=(b != 6)) for b in brokers]
    layout = bl.layout_from(current, nodes, {k: MiB for k in current})
    plan = bl.plan(layout)
    result = after(layout, plan)
    assert counts(result, brokers)[5] == counts(result, brokers)[6] == 0
    # The others share what the cordoned one cannot take (the down one is out of the means).
    assert within_one(counts(result, [1, 2, 3, 4]), [1, 2, 3, 4])
    assert plan.changes == [] or met(plan, bl.REPLICAS)


def test_a_partition_with_a_replica_on_a_cordoned_broker_is_left_alone():
    """Kafka refuses any target naming a cordoned broker, a reorder too: such a partition changes
    only by moving its cordoned replica off (a drain), and keeps its leader otherwise."""
    current = {("t", p): [1, 2] for p in range(6)} | {("u", p): [3, 1] for p in range(6)}
    brokers = [bl.Broker(1), bl.Broker(2), bl.Broker(3, cordoned=True), bl.Broker(4)]
    layout = bl.layout_from(current, brokers, {k: MiB for k in current})
    plan = bl.plan(layout)
    assert all(c.key[0] == "t" for c in plan.changes) and plan.changes
    drained = bl.plan(bl.layout_from(current, [bl.Broker(1), bl.Broker(2), bl.Broker(3, cordoned=True, drained=True),
                                               bl.Broker(4)], {k: MiB for k in current}))
    assert all(3 not in c.after for c in drained.changes if c.key[0] == "u")
    assert len([c for c in drained.changes if c.key[0] == "u"]) == 6


def test_a_leadership_drain_changes_only_what_the_broker_leads():
    current = {("t", p): [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(9)}
    keys = sorted(current)
    isr = [tuple(current[k]) for k in keys]
    layout = bl.Layout({b: bl.Broker(b, leads=(b != 2)) for b in (1, 2, 3)}, keys, [current[k] for k in keys], [MiB] * 9,
                       leaders=[current[k][0] for k in keys], isr=isr)
    plan = bl.plan(layout, bl.Options(goals=(bl.LEADERS,), drain_only=True))
    assert {c.key for c in plan.changes} == {k for k in keys if current[k][0] == 2}
    assert all(c.reorder_only and c.after[0] != 2 for c in plan.changes)
    assert Counter(c.after[0] for c in plan.changes) == Counter({1: 2, 3: 1}) or \
        Counter(c.after[0] for c in plan.changes) == Counter({1: 1, 3: 2})


def test_replicas_on_a_down_broker_stay_where_they_are():
    current = {("t", p): [1 + p % 3, 4] for p in range(6)}
    layout = bl.layout_from(current, [bl.Broker(b, live=(b != 4)) for b in (1, 2, 3, 4)], {k: MiB for k in current})
    plan = bl.plan(layout)
    assert all(4 in c.after for c in plan.changes)


def test_an_unmoved_partition_is_led_only_by_a_replica_in_its_isr():
    current = {("t", p): [1, 2, 3] for p in range(6)}
    keys = sorted(current)
    layout = bl.Layout({b: bl.Broker(b) for b in (1, 2, 3)}, keys, [current[k] for k in keys], [MiB] * 6,
                       leaders=[1] * 6, isr=[(1, 2)] * 6)
    plan = bl.plan(layout, bl.Options(leaders_only=True))
    result = after(layout, plan)
    assert all(r[0] in (1, 2) for r in result.values())
    assert counts(result, [1, 2], leaders=True) == Counter({1: 3, 2: 3})
    assert not plan.goal(bl.LEADERS).met_after   # broker 3 leads nothing: it is out of every ISR


def test_bytes_are_balanced_by_moves_and_swaps_that_keep_the_replica_counts():
    brokers = [1, 2, 3, 4]
    current = {("t", p): [1 + p % 4, 1 + (p + 1) % 4] for p in range(16)}
    # Broker 1 leads the big partitions: the counts are even, the bytes are not.
    sizes = {k: (400 if k[1] % 4 == 0 else 10) * MiB for k in current}
    layout = bl.layout_from(current, [bl.Broker(b) for b in brokers], sizes)
    plan = bl.plan(layout)
    assert plan.goal(bl.REPLICAS).met_before and plan.goal(bl.REPLICAS).met_after
    assert not plan.goal(bl.DISK).met_before and plan.goal(bl.DISK).met_after
    assert plan.moved_bytes >= plan.bound_bytes > 0
    assert plan.moved_bytes <= 2 * plan.bound_bytes + 2 * 400 * MiB


def test_capacity_weights_the_bytes_goal():
    current = {("t", p): [1 + p % 2] for p in range(20)}
    layout = bl.layout_from(current, [bl.Broker(1, capacity=300 * MiB * 10), bl.Broker(2, capacity=100 * MiB * 10)],
                            {k: 10 * MiB for k in current})
    plan = bl.plan(layout, bl.Options(goals=(bl.DISK,)))
    result = after(layout, plan)
    c = counts(result, [1, 2])
    assert (c[1], c[2]) == (15, 5)


def test_bytes_in_goal_from_rates():
    current = {("t", p): [1 + p // 3] for p in range(9)}      # broker 1 holds the busy three
    rates = {k: (900.0 if k[1] < 3 else 10.0) * 1024 for k in current}
    layout = bl.layout_from(current, [bl.Broker(b) for b in (1, 2, 3)], {k: MiB for k in current}, rates=rates)
    plan = bl.plan(layout)
    assert not plan.goal(bl.BYTES_IN).met_before and plan.goal(bl.BYTES_IN).met_after
    assert plan.goal(bl.BYTES_IN).applies
    assert met(plan, bl.REPLICAS)
    no_rates = bl.plan(bl.layout_from(current, [bl.Broker(b) for b in (1, 2, 3)], {k: MiB for k in current}))
    assert not no_rates.goal(bl.BYTES_IN).applies


def test_a_topic_crowded_onto_three_of_twelve_brokers_is_spread():
    brokers = list(range(1, 13))
    current = kafka_layout(8, 12, 3, brokers)
    current.update({("crowded", p): [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(12)})
    layout = bl.layout_from(current, [bl.Broker(b) for b in brokers], {k: MiB for k in current})
    plan = bl.plan(layout)
    assert plan.goal(bl.TOPICS).before == 1 and plan.goal(bl.TOPICS).met_after
    crowded = Counter(b for (t, _), r in after(layout, plan).items() if t == "crowded" for b in r)
    assert max(crowded.values()) <= bl.topic_bounds(36, 12)[1]
    assert met(plan, bl.REPLICAS, bl.LEADERS)


def test_a_balanced_cluster_gets_an_empty_plan():
    brokers = [1, 2, 3]
    current = {("t", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(9)}
    layout = bl.layout_from(current, [bl.Broker(b) for b in brokers], {k: MiB for k in current})
    plan = bl.plan(layout)
    assert plan.changes == [] and plan.bound_replicas == 0 and plan.bound_bytes == 0
    assert all(g.met_before and g.met_after for g in plan.goals if g.applies)


def test_only_the_goals_asked_for_are_planned():
    current = {("t", p): [1] for p in range(4)}
    layout = bl.layout_from(current, [bl.Broker(1), bl.Broker(2)], {k: MiB for k in current})
    plan = bl.plan(layout, bl.Options(goals=(bl.LEADERS,)))
    assert all(c.reorder_only for c in plan.changes) and not plan.goal(bl.REPLICAS).applies
    with pytest.raises(bl.BalanceError) as refused:
        bl.plan(layout, bl.Options(goals=("speed",)))
    assert (refused.value.reason, refused.value.goal) == (bl.UNKNOWN_GOAL, "speed")
    assert balance_error_line(refused.value).startswith("Unknown goal 'speed': the goals are rack, replicas, ")


def test_no_broker_that_may_hold_replicas_is_an_error():
    layout = bl.layout_from({("t", 0): [1]}, [bl.Broker(1, drained=True)], {("t", 0): 1})
    with pytest.raises(bl.BalanceError) as refused:
        bl.plan(layout)
    assert balance_error_line(refused.value) == "No broker may hold replicas (every one is down or drained)"
    with pytest.raises(bl.BalanceError) as refused:
        bl.plan(bl.layout_from({("t", 0): [1, 7]}, [bl.Broker(1)], {("t", 0): 1}))
    assert balance_error_line(refused.value) == "A replica names broker 7, which the layout lacks"


@st.composite
def layouts(draw):
    n = draw(st.integers(2, 7))
    brokers = list(range(1, n + 1))
    racked = draw(st.booleans())
    racks = {b: f"r{draw(st.integers(0, 2))}" for b in brokers} if racked else {}
    rf = draw(st.integers(1, min(3, n)))
    parts = draw(st.integers(1, 30))
    current = {("t" + str(p % 3), p): draw(st.permutations(brokers))[:rf] for p in range(parts)}
    sizes = {k: draw(st.integers(0, 50)) * MiB for k in current}
    flags = {b: draw(st.sampled_from(["", "", "", "drained", "cordoned", "down", "no-leaders"])) for b in brokers}
    if all(flags[b] in ("drained", "down") for b in brokers):
        flags[brokers[0]] = ""
    nodes = [bl.Broker(b, racks.get(b), live=flags[b] != "down", drained=flags[b] == "drained",
                       cordoned=flags[b] == "cordoned", leads=flags[b] != "no-leaders") for b in brokers]
    return bl.layout_from(current, nodes, sizes), racks, flags


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_every_plan_keeps_the_constraints_and_its_goals_order(case):
    layout, racks, flags = case
    plan = bl.plan(layout)
    result = after(layout, plan)
    before = {k: list(r) for k, r in zip(layout.keys, layout.replicas)}
    n_racks = len({racks[b] for b in layout.brokers if layout.brokers[b].member}) if racks else 1
    for key, reps in result.items():
        old = before[key]
        assert len(reps) == len(old) and len(set(reps)) == len(reps)
        for b in set(reps) - set(old):   # what lands, lands on a broker that may take it
            assert flags[b] not in ("drained", "cordoned", "down")
        for b in set(old) - set(reps):   # a broker that is down keeps its replicas
            assert flags[b] != "down"
        if racks and all(racks.get(b) for b in layout.brokers if layout.brokers[b].member) and n_racks > 1:
            members = [b for b in reps]
            assert rack_penalty(Counter(racks[b] for b in members), n_racks) <= \
                max(rack_penalty(Counter(racks[b] for b in old), n_racks), 0) or flags.get(old[0]) == "drained" or \
                any(flags[b] == "drained" for b in old)
    held = counts(result, layout.brokers)
    drained = [b for b, f in flags.items() if f == "drained"]
    kept = sum(1 for n in notes(plan) if "keeps its replica on drained broker" in n)
    assert sum(held[b] for b in drained) == kept   # every replica left there is named
    # A goal met before stays met unless a higher one (or a drain) asked for the change.
    if not drained:
        rank = [g.goal for g in plan.goals]
        for g in plan.goals:
            if g.applies and g.met_before and not g.met_after:
                higher = [x for x in plan.goals[:rank.index(g.goal)] if x.applies and not x.met_before]
                assert higher, f"{g.goal} was met and is not after the plan"
    assert plan.moved_replicas >= 0 and plan.bound_bytes >= 0


# -- the log_dirs goal --------------------------------------------------------------------------


def dir_layout(brokers: list[bl.Broker], assignment: dict, sizes: dict, dirs: dict) -> bl.Layout:
    layout = bl.layout_from(assignment, brokers, sizes)
    layout.dirs = [dict(dirs[k]) for k in layout.keys]
    return layout


def dir_bytes(layout: bl.Layout, plan: bl.Plan) -> Counter:
    """(broker, dir) -> bytes after the plan."""
    placed = {(k, b): d for k, where in zip(layout.keys, layout.dirs or []) for b, d in where.items()}
    placed.update({(m.key, m.broker): m.after for m in plan.dir_moves})
    final = after(layout, plan)
    size = dict(zip(layout.keys, layout.sizes))
    out: Counter = Counter()
    for k, reps in final.items():
        for b in reps:
            if (k, b) in placed:
                out[(b, placed[(k, b)])] += size[k]
    return out


def test_the_log_dirs_goal_moves_replicas_between_the_dirs_of_their_broker_only():
    two = ("/d1", "/d2")
    brokers = [bl.Broker(1, log_dirs=two), bl.Broker(2, log_dirs=two)]
    assignment = {("t", p): [1, 2] if p % 2 else [2, 1] for p in range(8)}
    sizes = {k: (k[1] + 1) * 10 * MiB for k in assignment}
    layout = dir_layout(brokers, assignment, sizes, {k: {1: "/d1", 2: "/d1"} for k in assignment})
    plan = bl.plan(layout)
    goal = plan.goal(bl.LOG_DIRS)
    assert goal.applies and not goal.met_before and goal.met_after and goal.after < goal.before
    assert not plan.changes                      # the brokers are balanced: nothing changes broker
    assert plan.dir_moves and all(m.before == "/d1" and m.after == "/d2" for m in plan.dir_moves)
    assert plan.moved_dir_bytes == sum(m.size for m in plan.dir_moves)
    held = sum(sizes.values())                   # each broker holds every partition
    for b in (1, 2):
        for d in two:
            assert abs(dir_bytes(layout, plan)[(b, d)] - held / 2) <= 0.1 * held / 2
    # Measured alone, as the executor shows it after the run: the goal met.
    moved = dict(zip(layout.keys, layout.dirs or []))
    for m in plan.dir_moves:
        moved[m.key][m.broker] = m.after
    layout.dirs = [moved[k] for k in layout.keys]
    [now] = [g for g in bl.measure(layout) if g.goal == bl.LOG_DIRS]
    assert now.met_after and now.before == goal.after


def test_arriving_replicas_get_a_dir_and_cordoned_dirs_take_nothing_new():
    three = ("/d1", "/d2", "/d3")
    brokers = [bl.Broker(1), bl.Broker(2), bl.Broker(3, log_dirs=three, cordoned_dirs=frozenset({"/d3"}))]
    assignment = {("t", p): [1, 2] for p in range(6)}
    sizes = {k: 20 * MiB for k in assignment}
    layout = dir_layout(brokers, assignment, sizes, {k: {} for k in assignment})
    plan = bl.plan(layout)
    arriving = [m for m in plan.dir_moves if m.before is None]
    assert arriving and {m.broker for m in arriving} == {3}
    assert {m.key for m in arriving} == {c.key for c in plan.changes if 3 in c.adding}
    assert all(m.after in ("/d1", "/d2") and m.bytes == 0 for m in arriving)   # chosen, not copied again
    ends = Counter(m.after for m in arriving)
    assert abs(ends["/d1"] - ends["/d2"]) <= 1


def test_the_log_dirs_goal_is_not_judged_without_brokers_of_several_dirs_nor_planned_for_leaders_only():
    assignment = {("t", p): [1, 2] for p in range(4)}
    layout = bl.layout_from(assignment, [bl.Broker(1), bl.Broker(2)], {k: MiB for k in assignment})
    assert not bl.plan(layout).goal(bl.LOG_DIRS).applies
    two = ("/d1", "/d2")
    piled = dir_layout([bl.Broker(1, log_dirs=two), bl.Broker(2, log_dirs=two)], assignment,
                       {k: 10 * MiB for k in assignment}, {k: {1: "/d1", 2: "/d1"} for k in assignment})
    assert not bl.plan(piled, bl.Options(leaders_only=True)).dir_moves
    assert not bl.plan(piled, bl.Options(goals=(bl.REPLICAS, bl.DISK))).goal(bl.LOG_DIRS).applies
    # A broker that did not tell a replica's dir is left out, and said so.
    piled.dirs = [{1: "/d1"} for _ in piled.keys]
    plan = bl.plan(piled)
    assert all(m.broker == 1 for m in plan.dir_moves)
    assert "The log_dirs goal leaves out broker 2: it did not tell the log dir of each replica it holds." \
        in notes(plan)


def test_the_log_dirs_goal_shares_a_brokers_bytes_by_the_size_of_each_dirs_volume():
    dirs = ("/small", "/large")
    brokers = [bl.Broker(1, log_dirs=dirs, dir_sizes=(100 * MiB * 1024, 300 * MiB * 1024))]
    assignment = {("t", p): [1] for p in range(16)}
    sizes = {k: 10 * MiB for k in assignment}
    layout = dir_layout(brokers, assignment, sizes, {k: {1: "/small"} for k in assignment})
    plan = bl.plan(layout)
    assert plan.goal(bl.LOG_DIRS).met_after
    held = dir_bytes(layout, plan)
    assert held[(1, "/small")] == 40 * MiB and held[(1, "/large")] == 120 * MiB   # 1:3, as the volumes


def test_a_drain_places_the_replicas_it_moves_by_the_log_dirs_goal_and_leaves_the_others_in_their_dirs():
    two = ("/d1", "/d2")
    brokers = [bl.Broker(1, log_dirs=two), bl.Broker(2, log_dirs=two), bl.Broker(3, drained=True)]
    assignment = {("t", p): [3, 1 + p % 2] for p in range(8)}
    sizes = {k: 10 * MiB for k in assignment}
    # Broker 1's kept replicas all in /d1; broker 2's all in /d2.
    layout = dir_layout(brokers, assignment, sizes, {k: {3: "/x", 1: "/d1", 2: "/d2"} for k in assignment})
    options = bl.Options(goals=(bl.RACK, bl.LOG_DIRS), place_dirs_only=True)
    plan = bl.plan(layout, options)
    assert sorted(c.removing for c in plan.changes) == [[3]] * 8
    assert all(m.before is None and m.bytes == 0 for m in plan.dir_moves)   # kept replicas stay in their dir
    assert {(m.key, m.broker) for m in plan.dir_moves} == {(c.key, b) for c in plan.changes for b in c.adding}
    # Each arriving replica fills the dir with the most room: the other brokers' dirs end even.
    held = dir_bytes(layout, plan)
    for b in (1, 2):
        assert held[(b, "/d1")] == held[(b, "/d2")] == 40 * MiB
    assert plan.goal(bl.LOG_DIRS).met_after
    # Dirs uneven before the drain stay so (balance evens them); the plan says why.
    piled = dir_layout(brokers, {**assignment, ("u", 0): [1, 2]}, {**sizes, ("u", 0): 200 * MiB},
                       {**{k: {3: "/x", 1: "/d1", 2: "/d2"} for k in assignment}, ("u", 0): {1: "/d1", 2: "/d1"}})
    drained = bl.plan(piled, options)
    assert all(m.before is None for m in drained.dir_moves)
    assert "Goal log_dirs (bytes per log dir) is not met after the plan: the replicas each broker keeps stay in " \
        "their dir (balance moves them between dirs)." in notes(drained)
    assert any(m.before is not None for m in bl.plan(piled, bl.Options(goals=(bl.RACK, bl.LOG_DIRS))).dir_moves)
