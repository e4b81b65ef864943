"""One-shot mode (`--command LINE` and KIP-4's `--create-topic ...` flags) run as a real process
against a sandbox cluster started in the test."""

from __future__ import annotations

import csv
import io
import os
import socket
import subprocess
from pathlib import Path

import pytest

from kafka_shell.connection.metadata import kafka_uuid
from kafka_shell.declarations.render import cell
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from tests.conftest import BOTH_MODES
from tests.output import json_rows, json_tables

ROOT = Path(__file__).resolve().parent.parent
SHELL = [str(ROOT / ".venv" / "bin" / "kafka-shell")]


def shell(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run kafka-shell with args; stdin is closed (or given) so it never waits on a terminal."""
    return subprocess.run([*SHELL, *args], input=stdin, capture_output=True, text=True, timeout=60,
                          stdin=None if stdin is not None else subprocess.DEVNULL,
                          env={**os.environ, **(env or {})}, cwd=ROOT)


def run(sandbox, line: str, *extra: str, **kw) -> subprocess.CompletedProcess:
    return shell("--bootstrap-server", sandbox.bootstrap, *extra, "--command", line, **kw)


def topics(sandbox) -> dict[str, int]:
    """Topic -> partition count, read from the sandbox's own state (not through the shell)."""
    return sandbox.call(_topic_counts, sandbox.cluster)


def _topic_counts(cluster) -> dict[str, int]:
    return {n: len(t.partitions) for n, t in cluster.topics.items()}


def assert_one_line_error(proc, code: int, *needles: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0]


def test_create_list_describe_alter_delete(sandbox):
    p = run(sandbox, "create-topic --topic orders --partitions 5 --replication-factor 3")
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == "Created topic orders."
    assert topics(sandbox) == {"orders": 5}

    p = run(sandbox, "list-topics", "--output", "json")
    assert json_rows(p.stdout) == [{"topic": "orders", "partitions": 5, "replication_factor": 3}]

    p = run(sandbox, "describe-topic --topic orders", "--output", "json")
    data = json_tables(p.stdout)
    assert data["topics"][0]["partition_count"] == 5
    assert data["topics"][0]["topic_id"] == kafka_uuid(sandbox.cluster.topics["orders"].id)   # as Kafka prints it
    parts = data["partitions"]
    assert [r["partition"] for r in parts] == [0, 1, 2, 3, 4]
    for row, part in zip(parts, sandbox.cluster.topics["orders"].partitions):
        assert row["replicas"] == part.replicas and row["leader"] == part.leader
        assert row["isr"] == part.isr

    p = run(sandbox, "alter-topic --topic orders --partitions 8")
    assert p.returncode == 0, p.stderr
    assert "from 5 to 8 partitions" in p.stderr
    assert topics(sandbox) == {"orders": 8}

    p = run(sandbox, "delete-topic --topic orders --yes")
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == "Deleted topic orders."
    assert topics(sandbox) == {}


def test_kip4_flag_style_with_broker_list_last(sandbox):
    p = shell("--create-topic", "--topic", "my_topic", "--partitions", "5", "--replication-factor", "3",
              "--config", "retention.ms=1000", "--broker-list", sandbox.bootstrap)
    assert p.returncode == 0, p.stderr
    assert topics(sandbox) == {"my_topic": 5}
    assert sandbox.cluster.topics["my_topic"].configs == {"retention.ms": "1000"}
    p = shell("--list-topics", "--broker-list", sandbox.bootstrap, "--output", "csv")
    assert p.returncode == 0
    assert list(csv.reader(io.StringIO(p.stdout))) == [["topic", "partitions", "replication_factor"],
                                                      ["my_topic", "5", "3"]]


BAD_INPUT = [
    # (line, exit code, words the one-line error must contain)
    ("crate-topic --topic x", 2, ["Unknown command crate-topic", "did you mean create-topic?"]),
    ("create-topic --topic x --partiton 3", 2,
     ["Unknown option --partiton for create-topic (did you mean --partitions?)"]),
    ("create-topic --partitions 3", 2, ["Missing required option --topic"]),
    ("create-topic --topic x --partitions many", 2, ['Invalid value "many" for --partitions']),
    ("create-topic --topic 'x", 2, ["Unbalanced quotes"]),
    ("create-topic --topic x --partitions 0", 2, ["positive integer"]),
    ("create-topic --topic x --partitions 5000000", 2, ["more than Kafka creates in one request"]),
    ("create-topic --topic 'bad name!'", 2, ['Invalid topic name "bad name!"']),
    ("create-topic --topic " + "a" * 250, 2, ["Invalid topic name"]),
    ("create-topic --topic x --replica-assignment 1:2 --partitions 2", 2, ["cannot be used together"]),
    ("create-topic --topic x --replica-assignment 1:1", 2, ["distinct brokers"]),
    ("create-topic --topic x --replication-factor 4", 1,
     ['Replication factor 4 of "x" is larger than the 3 available broker(s)', "--replication-factor 3"]),
    ("create-topic --topic existing", 1, ['Topic "existing" already exists (use --if-not-exists).']),
    ("alter-topic --topic existing --partitions 1", 2, ["cannot decrease", "--partitions 3 or more"]),
    ("alter-topic --topic missing --partitions 3", 1, ['Topic "missing" does not exist']),
    ("describe-topic --topic missing", 1, ['Topic "missing" does not exist']),
    ("delete-topic --topic existing", 2, ["Delete 1 topic (existing; ", "partitions): add --yes to confirm"]),
    ("delete-topic --topic missing --yes", 1, ['Topic "missing" does not exist']),
    ("alter-configs --topic existing --add-config no.such.key=1", 1, ["Invalid config", "no.such.key"]),
    ("describe-configs --topic existing --broker 1", 2, ["cannot be used together"]),
    ("sandbox status", 2, ["sandbox commands need kafka-shell --sandbox"]),
    ("list-topics --output yaml", 2, ["Invalid value \"yaml\" for --output", "table, json, jsonl, csv"]),
    # Every line of a `;` list is checked before the first runs (issue 31).
    ("create-topic --topic z; bogus", 2, ["Unknown command bogus"]),
    ("create-topic --topic z; describe-topic --topic z --partitions 2", 2, ["Unknown option --partitions"]),
    ("alter-topic --topic existing --partitions 4; create-topic --topic z -o csv --csv-table topics", 2,
     ["create-topic prints no table: leave --csv-table out"]),
    ("create-topic --topic z -o csv --csv-table nope", 2, ["create-topic prints no table"]),
    # --delete-config of a key the topic does not have and Kafka does not know: kafka-configs' refusal.
    ("alter-configs --topic existing --delete-config retention.m", 2,
     ['Invalid config(s): retention.m: topic "existing" has no such config', "did you mean retention.ms?"]),
    ("alter-topic --topic existing --partitions 4 --delete-config retention.m", 2, ["Invalid config(s): retention.m"]),
]


@pytest.mark.parametrize("line,code,needles", BAD_INPUT, ids=[b[0][:40] for b in BAD_INPUT])
def test_bad_input_is_one_line_with_exit_code_and_changes_nothing(sandbox, line, code, needles):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "existing", 2, 1)
    state = lambda c: (_topic_counts(c), dict(c.topics["existing"].configs))  # noqa: E731
    before = sandbox.call(state, sandbox.cluster)
    assert_one_line_error(run(sandbox, line), code, *needles)
    assert sandbox.call(state, sandbox.cluster) == before


def test_a_csv_table_the_command_lacks_is_refused_before_anything_is_sent(sandbox):
    """A retrying script must not duplicate a record: exit 2 means nothing was sent."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "a1", 1, 1)
    for args in (("-o", "csv", "--csv-table", "nope", "--command", "produce --topic a1 x"),
                 ("--command", "produce --topic a1 x -o csv --csv-table nope")):
        assert_one_line_error(shell("--bootstrap-server", sandbox.bootstrap, *args), 2,
                              'produce prints no table "nope" for --csv-table: choose one of produced')
    assert sandbox.cluster.topics["a1"].partitions[0].high_watermark == 0
    p = run(sandbox, "produce --topic a1 x", "-o", "csv", "--csv-table", "produced")
    assert p.returncode == 0 and p.stdout.splitlines() == ["record,partition,offset", "1,0,0"]


def test_a_list_runs_with_the_context_its_earlier_lines_set(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "a1", 1, 1)
    p = run(sandbox, "topic a1; describe-topic; output csv; list-topics --csv-table topics")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-2:] == ["topic,partitions,replication_factor", "a1,1,1"]


def test_bad_global_options_are_usage_errors():
    assert_one_line_error(shell("--bootstrap-server", "x:1", "--output", "yaml", "-c", "list-topics"), 2,
                          'Invalid value "yaml" for --output')
    assert_one_line_error(shell("--bootstap-server", "x:1"), 2, "did you mean --bootstrap-server?")
    assert_one_line_error(shell("--timeout", "soon", "-c", "list-topics"), 2, "--timeout")
    assert_one_line_error(shell("-c", "list-topics", "--file", "x.ksh"), 2, "cannot be used together")


def test_unreachable_cluster_is_one_line_exit_1():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = shell("--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "1", "--command", "list-topics")
    assert_one_line_error(p, 1, f"Cannot reach any broker of 127.0.0.1:{port}: connection refused by 127.0.0.1:{port}")


def test_help_needs_no_cluster_and_goes_to_stdout():
    p = shell("--command", "help")
    assert p.returncode == 0 and "create-topic" in p.stdout and "describe-cluster" in p.stdout
    p = shell("--command", "create-topic --help")
    assert p.returncode == 0
    assert p.stdout.startswith("Usage: create-topic --topic NAME [--topic ...]")
    assert "--replication-factor N" in p.stdout and "Examples:" in p.stdout
    p = shell("--help")
    assert p.returncode == 0 and "--bootstrap-server" in p.stdout


def test_json_and_csv_carry_exactly_the_table_data(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "a", 3, 2)
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "b", 1, 3)
    line = "describe-topic --topic a --topic b"
    table = run(sandbox, line).stdout
    as_json = json_tables(run(sandbox, line, "--output", "json").stdout)
    # csv writes one table: the first unless --csv-table names another.
    assert run(sandbox, line, "--output", "csv").stdout == run(sandbox, line, "--output", "csv", "--csv-table", "topics").stdout
    csv_tables = [list(csv.reader(io.StringIO(run(sandbox, line, "--output", "csv", "--csv-table", name).stdout)))
                  for name in as_json]
    for (_name, records), rows in zip(as_json.items(), csv_tables):
        assert rows[0] == list(records[0])  # same columns, same order
        as_text = [[cell(v) if v is not None else "" for v in r.values()] for r in records]
        assert rows[1:] == as_text
        for row in as_text:  # and the table shows the same cells
            assert all(cell in table for cell in row if cell)
    assert len(as_json["partitions"]) == 4


@BOTH_MODES
def test_controller_killed_between_two_commands(sandbox):
    assert run(sandbox, "create-topic --topic before --replication-factor 3").returncode == 0
    old, epoch = sandbox.active_controller, sandbox.controller_epoch
    new = sandbox.kill_controller()
    assert sandbox.controller_epoch > epoch
    p = run(sandbox, "create-topic --topic after --replication-factor 3")
    assert p.returncode == 0, p.stderr
    assert set(topics(sandbox)) == {"before", "after"}
    p = run(sandbox, "list-brokers", "--output", "json")
    roles = {r["id"]: r["role"] for r in json_rows(p.stdout)}
    if sandbox.mode == "zk":
        assert new != old and roles[new] == "controller" and roles[old] == "broker"
    else:  # the controllers are no brokers; a lone voter comes back itself
        assert new == old == 100 and set(roles.values()) == {"broker"}
    [row] = json_rows(run(sandbox, "describe-controller", "-o", "json").stdout)
    assert (row["id"], row["controller_epoch"] or -1) == (new, sandbox.controller_epoch if sandbox.mode == "kraft" else -1)


def test_broker_down(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 3, 3)
    sandbox.stop_broker(2)
    p = run(sandbox, "describe-topic --topic t --under-replicated-partitions", "--output", "json")
    assert p.returncode == 0, p.stderr
    rows = json_rows(p.stdout, "partitions")
    assert len(rows) == 3 and all(2 not in r["isr"] and 2 in r["offline"] for r in rows)
    p = run(sandbox, "describe-cluster", "--output", "json")
    status = {b["id"]: b["status"] for b in json_rows(p.stdout, "brokers")}
    assert status == {1: "online", 2: "offline", 3: "online"}
    p = run(sandbox, "create-topic --topic u --replication-factor 3")
    assert p.returncode == 1 and "larger than the 2 available broker(s)" in p.stderr
    assert "u" not in topics(sandbox)
    assert run(sandbox, "create-topic --topic u --replication-factor 2").returncode == 0


def test_output_option_of_one_command_overrides_the_session_format(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "fmt", 2, 1)
    p = run(sandbox, "list-topics -o json", "--output", "csv")
    assert p.returncode == 0, p.stderr
    assert json_rows(p.stdout) == [{"topic": "fmt", "partitions": 2, "replication_factor": 1}]
    p = run(sandbox, "list-topics", "--output", "csv")
    assert p.stdout.splitlines() == ["topic,partitions,replication_factor", "fmt,2,1"]
