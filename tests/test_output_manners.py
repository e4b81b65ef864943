"""Output and help manners (issue 12, part A): one json shape, jsonl, one csv table, tables for
people (no empty columns, readable sizes and times, vertical when too wide), the REPL's pager,
help wrapped to the terminal. Render-level tests, one-shot runs, every table-producing command
in every data format, and the REPL in a real pseudo-terminal."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pexpect
import pytest
from confluent_kafka import Producer

from kafka_shell.base.errors import UsageError
from kafka_shell.declarations.parsing import help_text
from kafka_shell.declarations.registry import load_commands
from kafka_shell.declarations.render import Result, Table, View, human_bytes, human_ms, human_time, output_text, render, snake_case
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows, json_tables
from tests.test_oneshot import run, shell
from tests.test_repl import SHELL, Terminal, run_piped

TWO = Result(tables=[Table(["Topic", "Size", "Adding"], [["t", 107374182400, []], ["u", 1536, None]], name="partitions",
                           kinds={"Size": "bytes"}),
                     Table(["ClusterId", "LastFetchTimestamp"], [["c1", 5_000], ["c2", -1]], name="cluster",
                           kinds={"LastFetchTimestamp": "time"})])


def text(result: Result, fmt: str, **view) -> str:
    return output_text(result, fmt, View(**view))


# -- data formats --------------------------------------------------------------------------------

def test_json_is_always_an_object_of_named_tables():
    one = Result.table(["Topic"], [["t"]], name="topics")
    assert json.loads(text(one, "json")) == {"topics": [{"Topic": "t"}]}
    assert json.loads(text(TWO, "json")) == {
        "partitions": [{"Topic": "t", "Size": 107374182400, "Adding": []}, {"Topic": "u", "Size": 1536, "Adding": None}],
        "cluster": [{"ClusterId": "c1", "LastFetchTimestamp": 5000}, {"ClusterId": "c2", "LastFetchTimestamp": -1}]}


def test_jsonl_is_one_row_a_line_with_snake_case_keys_and_its_table():
    lines = [json.loads(line) for line in text(TWO, "jsonl").splitlines()]
    assert lines == [{"table": "partitions", "topic": "t", "size": 107374182400, "adding": []},
                     {"table": "partitions", "topic": "u", "size": 1536, "adding": None},
                     {"table": "cluster", "cluster_id": "c1", "last_fetch_timestamp": 5000},
                     {"table": "cluster", "cluster_id": "c2", "last_fetch_timestamp": -1}]
    assert [snake_case(c) for c in ("Last ISR", "Leader epoch", "TopicId", "Isr", "ReadOnly", "APIKey")] == \
        ["last_isr", "leader_epoch", "topic_id", "isr", "read_only", "api_key"]


def test_csv_is_one_table_the_first_unless_named():
    assert list(csv.DictReader(io.StringIO(text(TWO, "csv")))) == [
        {"Topic": "t", "Size": "107374182400", "Adding": ""}, {"Topic": "u", "Size": "1536", "Adding": ""}]
    assert list(csv.DictReader(io.StringIO(text(TWO, "csv", csv_table="cluster")))) == [
        {"ClusterId": "c1", "LastFetchTimestamp": "5000"}, {"ClusterId": "c2", "LastFetchTimestamp": "-1"}]
    with pytest.raises(UsageError, match='No table "nope" in this result for --csv-table: choose one of partitions, cluster'):
        text(TWO, "csv", csv_table="nope")


# -- the table format, for people ----------------------------------------------------------------

def test_tables_leave_out_empty_columns_and_show_kinds_readably():
    out = text(TWO, "table")
    assert "Adding" not in out                       # [] and None in every row
    assert re.search(r"t\s+100 GiB", out) and re.search(r"u\s+1\.5 KiB", out)
    assert "ago" in out and "5000" not in out        # epoch ms as an age; -1 (unknown) as -
    assert human_bytes(0) == "0 B" and human_bytes(1023) == "1023 B" and human_bytes(-1) is None
    assert [human_ms(v) for v in (0, 120, 1500, 125_000, 7_200_000)] == ["0 ms", "120 ms", "1.5 s", "2 min 5 s", "2 h"]
    assert human_time(1_000, now_ms=1_120) == "120 ms ago" and human_time(-1) is None


def test_an_empty_result_says_none_once():
    empty = Result(tables=[Table(["Topic"], [], name="topics"), Table(["Partition"], [], name="partitions")])
    assert text(empty, "table") == "(none)\n"
    half = Result(tables=[Table(["Topic"], [["t"]], name="topics"), Table(["Partition"], [], name="partitions")])
    assert text(half, "table").endswith("(no partitions)\n")


def test_vertical_layout_on_demand_and_when_wider_than_the_terminal():
    wide = Result.table(["Name", "Value"], [["retention.ms", "x" * 90], ["cleanup.policy", "delete"]], name="configs")
    vertical = text(wide, "table", expanded="on")
    assert vertical.splitlines()[:3] == ["-[ RECORD 1 ]" + "-" * (80 - 13),   # the rule: at most 80 off a terminal
                                         "Name  | retention.ms", "Value | " + "x" * 90]
    assert "-[ RECORD 2 ]" in vertical
    assert text(wide, "table", expanded="auto", width=80).startswith("-[ RECORD 1 ]")       # too wide
    assert text(wide, "table", expanded="auto", width=200).startswith("Name")               # fits
    assert text(wide, "table", expanded="auto", width=None).startswith("Name")              # no terminal
    assert text(wide, "table", expanded="off", width=80).startswith("Name")


def test_the_pager_shows_output_taller_than_the_terminal_only():
    shown: list[str] = []

    def pager(t: str) -> bool:
        shown.append(t)
        return True
    tall = Result.table(["N"], [[i] for i in range(30)], name="n")
    out = io.StringIO()
    render(tall, "table", out, io.StringIO(), View(width=100, height=24, pager=pager))
    assert out.getvalue() == "" and len(shown) == 1 and shown[0].splitlines()[2].strip() == "0"
    render(Result.table(["N"], [[1]], name="n"), "table", out, io.StringIO(), View(width=100, height=24, pager=pager))
    assert len(shown) == 1 and out.getvalue().splitlines()[-1].strip() == "1"
    # A pager that cannot run leaves the text on stdout.
    render(tall, "table", out, io.StringIO(), View(width=100, height=24, pager=lambda t: False))
    assert "29" in out.getvalue()


# -- help ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [60, 100])
def test_help_is_wrapped_to_the_width_and_cuts_no_word(width):
    for cmd in load_commands().commands.values():
        wrapped = help_text(cmd, width)
        wide = help_text(cmd, 10_000)
        assert wrapped.split() == wide.split(), cmd.name           # the same words, none cut
        long_words = {w for w in wide.split() if len(w) > width // 2}
        for line in wrapped.splitlines():
            assert len(line) <= width or any(w in line for w in long_words), (cmd.name, line)


def test_elect_leaders_help_is_true_for_each_election_type():
    paragraphs = help_text(load_commands().get("elect-leaders"), 10_000).split("\n\n")
    by_type = {p.split(":", 1)[0]: p for p in paragraphs if p.split(":", 1)[0] in ("preferred", "unclean", "designated")}
    assert set(by_type) == {"preferred", "unclean", "designated"}
    assert "auto.leader.rebalance.enable" in by_type["preferred"]
    assert not any("auto.leader.rebalance.enable" in by_type[t] for t in ("unclean", "designated"))
    assert "lost" in by_type["unclean"] and "may lose data" in by_type["designated"]


def test_help_lists_exit_quit_question_mark_and_clear(sandbox):
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO())
    try:
        assert run_line(session, "?") == 0
        listing = session.stdout.getvalue()  # type: ignore[attr-defined]
        assert re.search(r"^  exit, quit +Leave", listing, re.M) and re.search(r"^  help, \? +List", listing, re.M)
        assert re.search(r"^  clear +Clear the screen", listing, re.M)
        assert run_line(session, "clear") == 0 and session.stdout.getvalue() == listing  # no escape codes into a pipe
        assert run_line(session, "expanded on") == 0 and session.expanded == "on"
        assert run_line(session, "pager off") == 0 and session.pager is False
        assert "Expanded display: on." in session.stderr.getvalue()  # type: ignore[attr-defined]
    finally:
        session.close()


def test_version_and_global_help():
    p = shell("--version")
    assert p.returncode == 0 and re.fullmatch(r"kafka-shell \d+\.\d+\.\d+\n", p.stdout)
    p = shell("--help", env={"COLUMNS": "64"})
    assert p.returncode == 0 and max(map(len, p.stdout.splitlines())) <= 64
    assert "--bootstrap-server" in p.stdout.split() and "--no-pager" in p.stdout


# -- one-shot ------------------------------------------------------------------------------------

def test_one_shot_formats_and_expanded(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 1)
    p = run(sandbox, "describe-topic --topic t", "--output", "jsonl")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["table"] for r in rows] == ["topics", "partitions", "partitions"]
    assert rows[1]["adding_replicas"] == [] and rows[0]["partition_count"] == 2
    p = run(sandbox, "describe-topic --topic t", "--output", "csv", "--csv-table", "partitions")
    assert [r["Partition"] for r in csv.DictReader(io.StringIO(p.stdout))] == ["0", "1"]
    p = run(sandbox, "describe-topic --topic t --csv-table nope -o csv")
    assert p.returncode == 2 and p.stderr.strip().endswith("choose one of topics, partitions")
    p = run(sandbox, "describe-topic --topic t", "--expanded")
    assert p.returncode == 0 and p.stdout.startswith("-[ RECORD 1 ]") and re.search(r"^Isr +\| ", p.stdout, re.M)
    assert "AddingReplicas" not in run(sandbox, "describe-topic --topic t").stdout   # empty on a healthy cluster


def test_describe_topic_with_no_match_says_none_once(sandbox):
    p = run(sandbox, "describe-topic --exclude-internal")
    assert p.returncode == 0 and p.stdout == "(none)\n"


def test_alter_topic_names_the_smallest_count_it_takes(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "eight", 8, 1)
    p = run(sandbox, "alter-topic --topic eight --partitions 4")
    assert p.returncode == 2 and "give --partitions 9 or more" in p.stderr


def test_a_result_without_tables_is_the_empty_json_object(sandbox):
    p = run(sandbox, "create-topic --topic shape-empty --partitions 1 --replication-factor 1", "-o", "json")
    assert p.returncode == 0 and json.loads(p.stdout) == {} and "Created topic" in p.stderr
    p = run(sandbox, "create-topic --topic shape-empty --partitions 1 --replication-factor 1", "-o", "json")
    assert p.returncode == 1 and p.stdout == ""   # a failure says so on stderr only


def test_a_failed_designated_election_reports_its_error_once(tmp_path):
    from kafka_shell.sandbox.server import Sandbox
    from tests.sandbox.wire import stage_offline_partition
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 0, "designatedLeader": 4}]}))
    with Sandbox(brokers=3, seed_apis=True) as sandbox:  # designated elections are a seed's API
        stage_offline_partition(sandbox)
        p = run(sandbox, f"elect-leaders --election-type designated --path-to-json-file {plan} --yes")
        assert p.returncode == 1
        said = p.stdout + p.stderr
        assert said.count("broker 4 is not a replica") == 1 and "1 partition(s) could not be elected" in p.stderr
        assert re.search(r"t\s+0\s+failed", p.stdout)
        p = run(sandbox, f"elect-leaders --election-type designated --path-to-json-file {plan} --yes", "-o", "json")
        assert "broker 4 is not a replica" in json_rows(p.stdout, "elections")[0]["Error"]   # scripts get it as data


# -- every command that produces tables, in every data format --------------------------------------

MOVE = '{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3]}]}'
CONFIGS = '{"format": "kafka-shell configs", "version": 1, "topics": {"t": {"retention.ms": "60000"}}}'
# command -> lines that produce tables (MOVE becomes a reassignment file's path, CONFIGS a
# configs file's, SNAPSHOTS a path of its own for each format).
TABLE_LINES: dict[str, list[str]] = {
    "api-versions": ["api-versions"],
    "broker-ids": ["broker-ids hosts", "broker-ids missing", "broker-ids suggest --host new.sandbox",
                   "broker-ids record --dry-run", "broker-ids gc --dry-run"],
    "clusters": ["clusters"],
    "controller-history": ["controller-history"],
    "describe-cluster": ["describe-cluster"],
    "describe-configs": ["describe-configs --topic t", "describe-configs --broker 1 --all"],
    "describe-controller": ["describe-controller"],
    "describe-log-dirs": ["describe-log-dirs"],
    "describe-quorum": ["describe-quorum", "describe-quorum --replication"],
    "describe-topic": ["describe-topic", "describe-topic --under-replicated-partitions"],
    "elect-leaders": ["elect-leaders --election-type preferred --topic t --dry-run",
                      "elect-leaders --election-type preferred --topic t"],
    "list-brokers": ["list-brokers"],
    "list-topics": ["list-topics"],
    "preferred-controller": ["preferred-controller show"],
    "preferred-replica-leader-election": ["preferred-replica-leader-election --topic t"],
    "reassign-partitions": ["reassign-partitions --generate --topic t --broker-list 1,2,3", "reassign-partitions --list",
                            "reassign-partitions --verify --reassignment-json-file MOVE",
                            "reassign-partitions --execute --reassignment-json-file MOVE --dry-run"],
    "rolling-restart-plan": ["rolling-restart-plan"],
    "sandbox": ["sandbox status"],
    "unclean-recovery": ["unclean-recovery --all-offline-partitions --show-replica-info"],
    "list-groups": ["list-groups"],
    "describe-group": ["describe-group --all-groups", "describe-group --all-groups --members", "describe-group --all-groups --state"],
    "reset-offsets": ["reset-offsets --group shape --topic t --to-earliest"],
    "copy-offsets": ["copy-offsets --from-group shape --to-group shape-copy"],
    "export-configs": ["export-configs SNAPSHOTS.json"],
    "import-configs": ["import-configs CONFIGS"],
    "diff-configs": ["diff-configs --all-brokers"],
    "delete-offsets": ["delete-offsets --group shape --topic t --yes"],
    "get-offsets": ["get-offsets --topic t", "get-offsets --topic t --time earliest"],
    "delete-records": ["delete-records --topic t --partition 0 --before-offset 0 --yes"],
    "produce": ["produce --topic t v1 v2"],
    "consume": ["consume --topic t --from-beginning --max-messages 1 --timeout 5"],
    "describe-user-scram-credentials": ["describe-user-scram-credentials"],
    "describe-client-quotas": ["describe-client-quotas"],
    "snapshot": ["snapshot --output-dir SNAPSHOTS"],
    "list-transactions": ["list-transactions", "list-transactions --state Ongoing"],
    "describe-transaction": ["describe-transaction --transactional-id shape"],
    "describe-producers": ["describe-producers --topic t --partition 0"],
    "find-hanging-transactions": ["find-hanging-transactions --topic t --max-transaction-timeout 0"],
    "describe-features": ["describe-features"],
    "version-mapping": ["version-mapping", "version-mapping --release-version 4.1"],
    "upgrade-features": ["upgrade-features --feature group.version=1 --dry-run"],
    "downgrade-features": ["downgrade-features --feature share.version=1 --dry-run"],
    "disable-feature": ["disable-feature --feature streams.version --dry-run"],
    "add-controller": ["add-controller --controller-id 7 --controller-directory-id AAAAAAAAAAAAAAAAAAAAAQ "
                       "--controller-endpoint CONTROLLER@localhost:9999 --dry-run"],
    "remove-controller": ["remove-controller --controller-id 100 --controller-directory-id AAAAAAAAAAAAAAAAAAAAAQ --dry-run"],
    "list-client-metrics": ["list-client-metrics"],
    "describe-client-metrics": ["describe-client-metrics"],
    "balance": ["balance", "balance --leaders-only --execute"],
    "drain-broker": ["drain-broker 1 --dry-run"],
    "undrain-broker": ["undrain-broker 1 --dry-run"],
    "cordon": ["cordon --broker 1 --dry-run"],
    "uncordon": ["uncordon --broker 1 --dry-run"],
    "health": ["health"],
}
# ACL commands answer SECURITY_DISABLED without an authorizer: their lines run on a sandbox with one.
ACL_LINES: dict[str, list[str]] = {
    "create-acls": ["create-acls --allow-principal User:a --operation Read --topic t"],
    "describe-acls": ["describe-acls", "describe-acls --topic t"],
    "delete-acls": ["delete-acls --allow-principal User:a --operation Read --topic t --dry-run"],
}
# analyze's shape (a "summary" table) is checked in test_pipeline_analyze, where Spark runs once.
# Commands that only say what they did (status lines, help text): no tables to shape.
MESSAGE_ONLY = {"add-cluster", "analyze", "alter-client-quotas", "alter-user-scram-credentials",
                "alter-configs", "alter-topic", "clear", "create-topic", "delete-group", "delete-topic", "exit",
                "expanded", "help", "output", "pager", "refresh", "topic", "use-cluster", "abort-transaction", "watch"}
MESSAGE_ONLY |= {"alter-client-metrics", "delete-client-metrics", "unregister-broker", "unregister-controller"}
# Delegation tokens need a SASL connection (the sandbox here has none): their tables are read in
# tests/test_cluster_tools.py.
MESSAGE_ONLY |= {"create-delegation-token", "renew-delegation-token", "expire-delegation-token",
                 "describe-delegation-token"}
# A share group needs Kafka's Java share consumer, a streams group a running Kafka Streams
# application: their tables are read in tests/test_share_streams_cmd.py, tests/test_share_clients.py
# and tests/test_streams_groups_cmd.py (Kafka 4.4 and the sandbox).
MESSAGE_ONLY |= {"list-share-groups", "describe-share-group", "delete-share-group", "reset-share-group-offsets",
                 "delete-share-group-offsets", "list-streams-groups", "describe-streams-group", "delete-streams-group",
                 "reset-streams-group-offsets", "delete-streams-group-offsets"}
CASES = [(name, line) for name, lines in TABLE_LINES.items() for line in lines]


def test_every_command_is_classified():
    """A new command lands in TABLE_LINES (and so in the shape test) or says why not."""
    assert set(load_commands().commands) == set(TABLE_LINES) | set(ACL_LINES) | MESSAGE_ONLY


def _outputs(sandbox, line: str, tmp_path: Path) -> dict[str, str]:
    move, configs = tmp_path / "move.json", tmp_path / "configs.json"
    move.write_text(MOVE)
    configs.write_text(CONFIGS)
    out = {}
    for fmt in ("json", "jsonl", "csv"):
        session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO())
        filled = line.replace("MOVE", str(move)).replace("CONFIGS", str(configs)).replace("SNAPSHOTS", str(tmp_path / fmt))
        try:
            code = run_line(session, f"{filled} -o {fmt}")
        finally:
            session.close()
        assert code in (0, 1), session.stderr.getvalue()  # type: ignore[attr-defined]  (1: verify says "differs")
        out[fmt] = session.stdout.getvalue()  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("name,line", CASES, ids=[line for _, line in CASES])
def test_every_table_command_has_one_json_shape_and_loads_as_jsonl_and_csv(sandbox, tmp_path, monkeypatch, name, line):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 2)
    if name in ("consume", "describe-group", "reset-offsets", "delete-offsets", "copy-offsets"):
        # Something to read, and a group "shape" with committed offsets and no members.
        _outputs(sandbox, "produce --topic t v", tmp_path)
        _outputs(sandbox, "consume --topic t --from-beginning --group shape --max-messages 1 --timeout 5", tmp_path)
    if name in ("describe-transaction", "describe-producers", "list-transactions"):
        # An open transaction of the transactional id "shape" on t-0.
        producer = Producer({"bootstrap.servers": sandbox.bootstrap, "transactional.id": "shape", "log_level": 0})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("t", b"v", partition=0)
        producer.flush(30)
    _check_shapes(_outputs(sandbox, line, tmp_path))


ACL_CASES = [line for lines in ACL_LINES.values() for line in lines]


@pytest.fixture(scope="module")
def acl_sandbox():
    with Sandbox(brokers=1, authorizer=True, super_users=["User:ANONYMOUS"]) as sb:
        yield sb


@pytest.mark.parametrize("line", ACL_CASES)
def test_acl_commands_have_one_json_shape(acl_sandbox, tmp_path, line):
    _check_shapes(_outputs(acl_sandbox, line, tmp_path))


def _check_shapes(out: dict[str, str]) -> None:
    tables = json_tables(out["json"])
    assert isinstance(json.loads(out["json"]), dict) and tables
    for key, rows in tables.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", key) and not re.fullmatch(r"table\d+", key), key
        assert all(isinstance(r, dict) for r in rows)
    jsonl = [json.loads(row) for row in out["jsonl"].splitlines()]
    assert len(jsonl) == sum(map(len, tables.values()))
    for row in jsonl:
        assert row["table"] in tables and all(re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in row)
    first = next(iter(tables.values()))
    reader = csv.DictReader(io.StringIO(out["csv"]))
    assert len(list(reader)) == len(first)
    if first:
        assert reader.fieldnames == list(first[0])


# -- the REPL in a real pseudo-terminal ----------------------------------------------------------

PAGER_SCRIPT = """#!/bin/sh
# A stand-in pager: records that it ran, and what it was given.
echo ran >> "$PAGER_LOG"
cat >> "$PAGER_LOG.text"
"""
VISIBLE = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\r")


class SizedTerminal(Terminal):
    """`kafka-shell --sandbox` in a pty of the given size, with a recording $PAGER."""

    def __init__(self, data_dir: Path, rows: int, columns: int, pager_log: Path, *args: str):
        script = pager_log.parent / "pager.sh"
        script.write_text(PAGER_SCRIPT)
        script.chmod(0o755)
        env = dict(os.environ, KAFKA_SHELL_DATA_DIR=str(data_dir), TERM="xterm", PAGER=str(script),
                   PAGER_LOG=str(pager_log))
        self.child = pexpect.spawn(SHELL, ["--sandbox", *args], env=env, encoding="utf-8", timeout=30,
                                   dimensions=(rows, columns))


@pytest.fixture
def pager_log(tmp_path):
    return tmp_path / "pager.log"


def test_repl_pages_tall_output_but_not_short(tmp_path, pager_log):
    t = SizedTerminal(tmp_path / "data", 24, 100, pager_log)
    try:
        t.prompt()
        t.run("create-topic --topic tall --partitions 40 --replication-factor 1", "Created topic tall.")
        t.run("list-topics", "tall")                               # 3 lines: straight to the terminal
        assert not pager_log.exists()
        t.run("describe-topic --topic tall", "")                   # 45 lines on a 24-line terminal
        assert pager_log.read_text() == "ran\n"
        paged = Path(f"{pager_log}.text").read_text()
        assert re.search(r"^tall\s+39\s", paged, re.M)
        t.run("pager off", "Pager: off.")
        out = t.run("describe-topic --topic tall", "tall")
        assert pager_log.read_text() == "ran\n" and re.search(r"tall\s+39\s", out)
        assert t.leave() == 0
    finally:
        if t.child.isalive():
            t.child.terminate(force=True)


def test_a_100_column_terminal_gets_no_wrapped_table_rows(tmp_path, pager_log):
    t = SizedTerminal(tmp_path / "data", 40, 100, pager_log, "--no-pager")
    try:
        t.prompt()
        t.run("create-topic --topic orders --partitions 3 --replication-factor 3", "Created topic orders.")
        for line, expected in (("describe-topic --topic orders", "PartitionCount"),
                               ("describe-configs --broker 1 --all", "RECORD"),       # too wide: vertical
                               ("describe-quorum", "RECORD"), ("describe-cluster", "ClusterId")):
            out = VISIBLE.sub("", t.run(line, expected))
            start = out.rindex("\n", 0, out.index(expected)) + 1         # the table's first line on
            lines = [ln for ln in out[start:].splitlines() if "kafka>" not in ln and "cluster:" not in ln]
            assert len(lines) > 3 and max(map(len, lines)) <= 100, (line, max(lines, key=len))
        assert not pager_log.exists()                              # --no-pager
        assert t.leave() == 0
    finally:
        if t.child.isalive():
            t.child.terminate(force=True)


def test_one_shot_on_a_terminal_never_pages(tmp_path, sandbox, pager_log):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "tall", 40, 1)
    script = tmp_path / "pager.sh"
    script.write_text(PAGER_SCRIPT)
    script.chmod(0o755)
    env = dict(os.environ, PAGER=str(script), PAGER_LOG=str(pager_log))
    child = pexpect.spawn(SHELL, ["--bootstrap-server", sandbox.bootstrap, "--command", "describe-topic --topic tall"],
                          env=env, encoding="utf-8", timeout=30, dimensions=(24, 100))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "tall" in child.before and not pager_log.exists()


def test_repl_with_piped_output_never_pages(sandbox, tmp_path, pager_log, monkeypatch):
    """The REPL itself (pipe input, StringIO stdout): output that is no terminal is not paged."""
    script = tmp_path / "pager.sh"
    script.write_text(PAGER_SCRIPT)
    script.chmod(0o755)
    monkeypatch.setenv("PAGER", str(script))
    monkeypatch.setenv("PAGER_LOG", str(pager_log))
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "data"))
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "tall", 40, 1)
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO())
    try:
        assert run_piped(session, "describe-topic --topic tall", "exit") == 0
    finally:
        session.close()
    assert re.search(r"tall\s+39\s", session.stdout.getvalue()) and not pager_log.exists()  # type: ignore[attr-defined]


def test_a_pager_that_cannot_be_found_leaves_the_text_to_stdout(monkeypatch):
    from kafka_shell.face.pager import DEFAULT_PAGER, page
    assert DEFAULT_PAGER == "less -SRXF"
    monkeypatch.setenv("PAGER", "no-such-pager-here")
    assert page("x\n") is False   # the caller prints the text itself
