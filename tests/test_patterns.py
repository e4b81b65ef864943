"""Topic patterns as Kafka's tools read them (a Java regular expression matched against the whole
name; a glob only where the text is no regular expression; a plain name that topic only), the
line that says how a glob-looking pattern reads, and describe-configs of every broker."""

from __future__ import annotations

import io

import pytest

from kafka_shell.base.names import glob_reading, matcher, topic_pattern
from kafka_shell.face.runner import run_line
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows
from tests.test_groups_cmd import create, ok, sh

NAMES = ["orders", "orders-eu", "orders-us", "ordersX", "a.b", "a_b", "logs-1", "web-logs"]


@pytest.mark.parametrize("pattern, selected", [
    ("orders", ["orders"]),                         # a plain name: that topic only
    ("a.b", ["a.b"]),                               # (Kafka's tools would take a_b too: '.' is any character)
    ("orders-.*", ["orders-eu", "orders-us"]),      # Kafka's regular expression, matched whole
    ("orders-*", ["orders"]),                       # ... "orders" and any number of "-", as Kafka reads it
    ("orders.*", ["orders", "orders-eu", "orders-us", "ordersX"]),
    ("orders-(eu|us)", ["orders-eu", "orders-us"]),
    ("orders,logs-1", ["orders", "logs-1"]),        # commas are alternatives, as kafka-topics' TopicFilter
    ("*-logs", ["web-logs"]),                       # no regular expression: a glob
    ("*", NAMES),
])
def test_a_pattern_selects_as_kafkas_tools_do(pattern, selected):
    assert [n for n in NAMES if matcher(topic_pattern(pattern))(n)] == selected


def test_a_glob_looking_pattern_says_how_it_reads():
    assert glob_reading("orders-*", NAMES) == (
        "'orders-*' is a regular expression, as in Kafka's tools: it selects 1 topic(s); as a glob it would select 2 "
        "('orders-.*' says that as a regular expression).")
    assert glob_reading("orders-.*", NAMES) is None and glob_reading("*-logs", NAMES) is None
    assert glob_reading("orders-[eu]s", NAMES) is None   # the same either way
    with pytest.raises(ValueError):
        topic_pattern("a(")


def test_commands_take_kafkas_patterns(sandbox):
    for name in ("orders", "orders-eu", "orders-us", "tmp-1", "tmp-2"):
        create(sandbox, name, 1, 1)
    out, err = ok(sandbox, "list-topics 'orders-*' -o json")
    assert [r["topic"] for r in json_rows(out)] == ["orders"]
    assert "as a glob it would select 2 ('orders-.*'" in err
    out, err = ok(sandbox, "describe-topic --topic 'orders-.*' -o json")
    assert [r["topic"] for r in json_rows(out, "topics")] == ["orders-eu", "orders-us"] and err == ""
    out, _ = ok(sandbox, "get-offsets --topic 'orders-(eu|us)'")
    assert out == "orders-eu:0:0\norders-us:0:0\n"
    code, _, err = sh(sandbox, "describe-topic --topic 'tmp*'")
    assert code == 1 and err.startswith("No topic matches tmp* (see list-topics) 'tmp*' is a regular expression")
    _, err = ok(sandbox, "delete-topic --topic 'tmp-.*' --yes")
    assert err == "Deleted topic tmp-1.\nDeleted topic tmp-2.\n"
    code, _, err = sh(sandbox, "list-topics 'a('")
    assert code == 2 and "Java regular expression" in err


def test_describe_configs_of_every_broker(sandbox):
    out, _ = ok(sandbox, "describe-configs --entity-type brokers -o json")
    rows = json_rows(out)
    assert sorted({r["broker"] for r in rows}) == [1, 2, 3]
    assert {r["name"] for r in rows if r["broker"] == 2} >= {"broker.id", "node.id"}
    out, _ = ok(sandbox, "describe-configs --entity-type brokers --all -o json")
    assert len(json_rows(out)) > 3 * 100   # every config of each
    code, _, err = sh(sandbox, "describe-configs --entity-type topics")
    assert code == 2 and "--entity-type brokers alone describes every broker" in err
    # A hung broker is one line; the others are shown (exit 1).
    bootstrap = ",".join(f"{b.host}:{b.port}" for i, b in sandbox.cluster.brokers.items() if i != 3)
    sandbox.delay(3, 30_000)
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(bootstrap, timeout_s=2), stdout=out, stderr=err)
    try:
        assert run_line(session, "describe-configs --entity-type brokers -o json") == 1
    finally:
        session.close()
        sandbox.delay(3, 0)
    assert sorted({r["broker"] for r in json_rows(out.getvalue())}) == [1, 2]
    assert err.getvalue().startswith("Broker 3: ") and len(err.getvalue().splitlines()) == 1
