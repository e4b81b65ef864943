"""Lag roll-ups (issue 33 item 4) on a sandbox with real confluent-kafka consumers: describe-group
--by-topic and its total line, list-groups --lag (every group's total from one read of each
partition's log end), and copy-offsets (a plan, --execute only on an inactive target group, as
kafka-consumer-groups refuses resets of active groups). The same on real Kafka 4.4 in
tests/real/test_fleet_real.py."""

from __future__ import annotations

import pytest

from tests.output import json_rows, json_tables
from tests.test_groups_cmd import commit, committed, create, member, ok, produce, sh


@pytest.fixture
def lagging(sandbox):
    """Topics a (3 partitions: 5, 7, 2 records) and b (1 partition: 4 records); group app
    committed a-0 at 3, a-1 at 7 and b-0 at 1; group ops committed a-2 at 0; both left."""
    create(sandbox, "a", 3)
    create(sandbox, "b", 1)
    produce(sandbox, "a", [5, 7, 2])
    produce(sandbox, "b", [4])
    commit(sandbox, "app", "a", {0: 3, 1: 7})
    commit(sandbox, "app", "b", {0: 1})
    commit(sandbox, "ops", "a", {2: 0})
    return sandbox


def test_describe_group_by_topic_and_the_total_line(lagging):
    out, _ = ok(lagging, "describe-group app ops --by-topic -o json")
    tables = json_tables(out)
    assert "offsets" not in tables   # no row per partition
    assert tables["topic_totals"] == [{"group": "app", "topic": "a", "partitions": 2, "lag": 2},
                                      {"group": "app", "topic": "b", "partitions": 1, "lag": 3},
                                      {"group": "ops", "topic": "a", "partitions": 1, "lag": 2}]
    assert [(r["group"], r["lag"]) for r in tables["group_totals"]] == [("app", 5), ("ops", 2)]
    assert tables["total"] == [{"groups": 2, "topics": 2, "partitions": 4, "lag": 7}]
    # The default view has the same roll-ups after the partitions.
    out, _ = ok(lagging, "describe-group --all-groups -o json")
    tables = json_tables(out)
    assert [(r["group"], r["topic"], r["partition"], r["lag"]) for r in tables["offsets"]] == [
        ("app", "a", 0, 2), ("app", "a", 1, 0), ("app", "b", 0, 3), ("ops", "a", 2, 2)]
    assert tables["total"] == [{"groups": 2, "topics": 2, "partitions": 4, "lag": 7}]
    out, _ = ok(lagging, "describe-group app ops --by-topic --topic b -o json")
    assert json_rows(out, "total") == [{"groups": 2, "topics": 1, "partitions": 1, "lag": 3}]
    # One group: its line in group_totals is the total; no table repeats it.
    assert "total" not in json_tables(ok(lagging, "describe-group app -o json")[0])
    # The table view: the totals as the last line, none of the partition columns.
    out, _ = ok(lagging, "describe-group app ops --by-topic")
    assert "CurrentOffset" not in out and out.rstrip().splitlines()[-1].split() == ["2", "2", "4", "7"]
    code, out, err = sh(lagging, "describe-group app --by-topic --members")
    assert (code, out) == (2, "") and "cannot be used together" in err


def test_list_groups_lag_reads_each_log_end_once(lagging):
    out, _ = ok(lagging, "list-groups --lag -o json")
    assert [(r["group"], r["lag"]) for r in json_rows(out)] == [("app", 5), ("ops", 2)]
    # Without --lag the columns are as before.
    assert "lag" not in json_rows(ok(lagging, "list-groups -o json")[0])[0]
    # One ListOffsets request per leader for all groups (3 brokers at most), however many groups.
    for n in range(20):
        commit(lagging, f"g{n:02d}", "a", {0: 1, 1: 1, 2: 1})
    code, _, err = sh_debug(lagging, "list-groups --lag")
    assert code == 0, err
    asked = [line for line in err.splitlines() if "ListOffsets request" in line]
    assert 1 <= len(asked) <= 3, asked
    assert sum(int(line.rsplit(": ", 1)[1].split()[0]) for line in asked) == 4   # a-0..2 and b-0, each once


def sh_debug(sandbox, line: str) -> tuple[int, str, str]:
    """A line run as a process with --debug (its request log on stderr)."""
    from tests.test_oneshot import run
    p = run(sandbox, line, "--debug")
    return p.returncode, p.stdout, p.stderr


def test_list_groups_lag_with_a_consumer_that_committed_nothing(lagging):
    c = member(lagging, "live", "b")
    try:
        out, _ = ok(lagging, "list-groups --lag -o json")
        assert {r["group"]: r["lag"] for r in json_rows(out)}["live"] is None   # nothing committed: unknown
        out, _ = ok(lagging, "describe-group live -o json")
        assert json_rows(out, "offsets")[0]["lag"] is None and json_rows(out, "group_totals")[0]["lag"] is None
    finally:
        c.close()


def test_copy_offsets_plans_then_executes_on_an_inactive_group(lagging):
    out, err = ok(lagging, "copy-offsets --from-group app --to-group app2 -o json")
    assert [(r["group"], r["topic"], r["partition"], r["current_offset"], r["new_offset"]) for r in json_rows(out)] == [
        ("app2", "a", 0, None, 3), ("app2", "a", 1, None, 7), ("app2", "b", 0, None, 1)]
    assert "Dry run: nothing was changed (add --execute to apply)." in err
    assert committed(lagging, "app2") == {}
    # --topic limits it; --execute is Kafka's own opt-in (no --yes outside the REPL).
    out, err = ok(lagging, "copy-offsets --from-group app --to-group app2 --topic b --execute")
    assert "Copied 1 offset(s) of group 'app' to group 'app2'." in err
    assert committed(lagging, "app2") == {0: 1}
    ok(lagging, "copy-offsets --from-group app --to-group ops --topic a:1 --execute")
    assert committed(lagging, "ops") == {1: 7, 2: 0}
    # --dry-run wins over --execute; --export prints the plan as reset-offsets --from-file reads it.
    ok(lagging, "copy-offsets --from-group app --to-group app3 --execute --dry-run")
    assert committed(lagging, "app3") == {}
    out, _ = ok(lagging, "copy-offsets --from-group app --to-group app3 --export")
    assert out == "a,0,3\na,1,7\nb,0,1\n"


def test_copy_offsets_refuses_an_active_target_and_bad_input(lagging):
    c = member(lagging, "busy", "a")
    try:
        code, out, err = sh(lagging, "copy-offsets --from-group app --to-group busy --execute")
        assert (code, out) == (1, "")
        assert err.strip() == ("Offsets can only be copied to group 'busy' if it is inactive, but the current state "
                               "is Stable: stop its consumers first.")
    finally:
        c.close()
    for line, code, needle in (("copy-offsets --from-group app --to-group app", 2, "same group"),
                               ("copy-offsets --from-group ghost --to-group x", 1, "no committed offsets"),
                               ("copy-offsets --from-group app --to-group x --topic nope", 1, "nope"),
                               ("copy-offsets --to-group x", 2, "--from-group")):
        got, out, err = sh(lagging, line)
        assert (got, out) == (code, "") and len(err.strip().splitlines()) == 1 and needle in err, (line, err)
    assert committed(lagging, "x") == {}


def test_copy_offsets_moves_offsets_into_the_log_with_kafkas_note(lagging):
    ok(lagging, "delete-records --topic a --partition 0 --before-offset 4 --yes")
    out, err = ok(lagging, "copy-offsets --from-group app --to-group app2 --topic a:0 -o json")
    assert json_rows(out)[0]["new_offset"] == 4
    assert "New offset (3) is lower than earliest offset for topic partition a-0. Value will be set to 4" in err


def test_the_repl_asks_before_copying(lagging):
    import io

    from kafka_shell.face.runner import run_line
    from kafka_shell.connection.session import Session, Target
    asked: list[str] = []
    answers = iter([False, True])
    session = Session(target=Target(lagging.bootstrap), sandbox=lagging, stdout=io.StringIO(), stderr=io.StringIO(),
                      interactive=True, confirm=lambda q: asked.append(q) is None and next(answers))
    try:
        line = "copy-offsets --from-group app --to-group app2 --topic a --execute"
        assert run_line(session, line) == 1 and committed(lagging, "app2") == {}   # "no" changes nothing
        assert run_line(session, line) == 0 and committed(lagging, "app2") == {0: 3, 1: 7}
    finally:
        session.close()
    assert asked == ["Copy 2 offset(s) of group 'app' to group 'app2'. Continue?"] * 2
