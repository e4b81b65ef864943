"""Every command option, fed hostile values (empty, binary, huge, NaN, inf, negative, unicode,
deeply nested JSON, NUL, hostile files), through one-shot mode against a running sandbox: each
run ends in exit 1 or 2 with exactly one line on stderr, never "Internal error" or a traceback,
and the cluster is the same afterwards.

The cases are generated from the registry, so a new command or option is covered as soon as it
is declared. The shell runs in-process through `kafka_shell.face.main.main` (the entry the
`kafka-shell` script calls); a sample also runs as a real process with raw argv bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from kafka_shell.face.main import main
from kafka_shell.declarations.registry import Command, Option, load_commands
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import classic_groups as sandbox_groups
from kafka_shell.sandbox.server import Sandbox

ROOT = Path(__file__).resolve().parent.parent
SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")

HOSTILE: tuple[str, ...] = (
    "",
    "\x00",
    "t\x00x",
    "\x1b[31mred\x1b[0m\r\n",
    "\udcff\udcfe\udc80",                 # bytes that are not UTF-8, as Python receives them in argv
    "9" * 30,
    "99999999999999999999999",
    "-9223372036854775809",
    "-1",
    "nan",
    "inf",
    "-inf",
    "1e300",
    "０１２",                              # full-width digits: int() takes them, Kafka does not
    "ünïcødé-名前",
    "[" * 20_000,                         # deeper than Python's JSON parser recurses
    "x" * 20_000,                         # longer than any name (test_huge_lines_are_refused... goes to 1 MB)
)

# Lines that put each option where its value is used (the action or scope it needs). The line
# gets the hostile value last; mutating commands also get --dry-run, so that a value that is
# legal for an option (a topic may be named "nan") changes nothing; destructive ones never
# get --yes.
BASE: dict[str, str] = {
    "elect-leaders": "--election-type preferred",
    "describe-configs": "--topic t",
    "alter-configs": "--topic t",
    "reassign-partitions": "--generate --topic t --broker-list 1,2,3",
}
BASE_FOR_OPTION: dict[tuple[str, str], str] = {
    ("elect-leaders", "--partition"): "--election-type preferred --topic t",
    ("elect-leaders", "--timeout-ms"): "--election-type preferred --topic t",
    ("preferred-replica-leader-election", "--partition"): "--topic t",
    ("describe-configs", "--entity-name"): "--entity-type brokers",
    ("alter-configs", "--entity-name"): "--entity-type brokers --add-config a=b",
    ("alter-configs", "--broker"): "--add-config a=b",
    ("alter-configs", "--topic"): "--add-config a=b",
    ("describe-configs", "--topic"): "",
    ("describe-configs", "--broker"): "",
    ("reassign-partitions", "--reassignment-json-file"): "--execute",
    ("reassign-partitions", "--throttle"): "--execute --reassignment-json-file {move}",
    ("reassign-partitions", "--topics-to-move-json-file"): "--generate --broker-list 1,2,3",
    ("reassign-partitions", "--topic"): "--generate --broker-list 1,2,3",
    ("reassign-partitions", "--broker-list"): "--generate --topic t",
    ("add-cluster", "-X"): "c1 --bootstrap-server h:1",
    ("add-cluster", "--bootstrap-server"): "c1",
    ("add-cluster", "name"): "--bootstrap-server h:1",
    ("sandbox", "args"): "stop-broker",
    ("sandbox", "--epoch"): "set-log-end-offset t 0 1 5",
}
# (command, option) where any text is a legal value (a glob, a file name to create): those
# runs may succeed; they must still print at most one line on stderr.
# `help ""` is help, `topic ""` leaves the context; most text is a regular expression.
ANY_TEXT = {("list-topics", "pattern"), ("reassign-partitions", "--proposed-json-file"), ("balance", "--save-plan"),
            ("help", "command"), ("topic", "name"), ("snapshot", "--output-dir"),
            ("list-transactions", "--transactional-id-pattern"), ("export-configs", "file")}
# Values Kafka takes as names (topic "nan" is legal): accepted by name options, which must then
# say the topic or cluster is unknown (exit 1 or 2), or succeed without changing anything.
LEGAL_NAMES = {"-1", "nan", "inf", "-inf", "1e300", "9" * 30, "99999999999999999999999", "-9223372036854775809"}
NAME_OPTIONS = {"--topic", "name", "--entity-name", "--topic-list", "pattern", "command", "--delete-config"}


def hostile_files(tmp: Path) -> list[str]:
    """Paths of files a careless or hostile user may hand to a file option."""
    entries = {
        "binary.json": os.urandom(512) + b"\xff\xfe",
        "deep.json": b"[" * 100_000,
        "deep-object.json": b'{"partitions":' * 50_000,
        "empty.json": b"",
        "nul.json": b'{"partitions":[{"topic":"t\\u0000","partition":0,"replicas":[1]}]}',
        "huge.json": json.dumps({"version": 1, "topics": [{"topic": "t"}], "partitions": [
            {"topic": "t", "partition": 10**30, "replicas": [10**30]}]}).encode(),
        "int32.json": json.dumps({"version": 1, "partitions": [
            {"topic": "t", "partition": 2**31, "replicas": [1, 2**31]}]}).encode(),
        "negative.json": json.dumps({"version": 1, "partitions": [
            {"topic": "t", "partition": -1, "replicas": [-1]}]}).encode(),
        "nan.json": b'{"version":1,"partitions":[{"topic":"t","partition":NaN,"replicas":[Infinity]}]}',
        "float.json": b'{"version":1,"partitions":[{"topic":"t","partition":0.5,"replicas":[1e300]}]}',
        "unicode.json": json.dumps({"version": 1, "topics": [{"topic": "ünï"}], "partitions": [
            {"topic": "ünï\u202e", "partition": 0, "replicas": [1]}]}).encode(),
        "not-object.json": b"[1, 2, 3]",
    }
    paths = []
    for name, data in entries.items():
        (tmp / name).write_bytes(data)
        paths.append(str(tmp / name))
    (tmp / "a-directory").mkdir()
    return [*paths, str(tmp / "a-directory"), str(tmp / "missing.json"), "/dev/null"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    with Sandbox(brokers=3) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 3, 3)
        # As on any cluster that has served a group: else the first FindCoordinator creates it.
        s.call(sandbox_groups.ensure_offsets_topic, s.cluster)
        move = tmp / "move.json"
        move.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]}))
        yield s, tmp, move


@pytest.fixture
def isolated(cluster, monkeypatch, tmp_path):
    """Config and data dirs (clusters.json, throttles, history) and the cwd in a temp dir."""
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def state(sandbox) -> dict:
    """Everything a command could change: topics, partitions, replicas, leaders, configs."""
    return sandbox.call(_state, sandbox.cluster)


def _state(cluster) -> dict:
    # Finding a transaction coordinator creates __transaction_state, as Kafka does: not a change.
    return {name: ([(p.replicas, p.leader, list(p.isr)) for p in t.partitions], dict(t.configs))
            for name, t in cluster.topics.items() if name != "__transaction_state"}


def run_inprocess(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def problems(code: int, out: str, err: str, may_succeed: bool) -> str | None:
    """What is wrong with one run's outcome, or None."""
    lines = err.splitlines()
    if "Internal error" in err or "Traceback" in err:
        return f"crashed: {err[:300]!r}"
    if code == 0 and may_succeed:
        return None if len(lines) <= 1 else f"{len(lines)} lines on stderr: {err[:300]!r}"
    if code not in (1, 2):
        return f"exit {code}: {err[:300]!r}"
    if len(lines) != 1:
        return f"{len(lines)} lines on stderr (want 1): {err[:300]!r}"
    if out:
        return f"output on stdout: {out[:200]!r}"
    return None


def value_options(cmd: Command) -> list[Option]:
    return [o for o in cmd.options if not o.flag and o.name != "--output"]


def cases_for(cmd: Command, files: list[str], move: Path) -> list[tuple[Option, str, list[str]]]:
    """(option, value, command-line tokens) for every value option of `cmd`."""
    out = []
    for opt in value_options(cmd):
        base = BASE_FOR_OPTION.get((cmd.name, opt.name), BASE.get(cmd.name, "")).format(move=move)
        tokens = [cmd.name, *shlex.split(base)]
        if cmd.mutates and "--dry-run" not in tokens:
            tokens.append("--dry-run")
        values = list(HOSTILE) + (files if opt.completer == "path" else [])
        for value in values:
            out.append((opt, value, [*tokens, value] if opt.positional else [*tokens, opt.name, value]))
    return out


def check_command(cmd: Command, sandbox, tmp: Path, move: Path, files: list[str]) -> list[str]:
    failures = []
    where = ["--sandbox"] if cmd.sandbox_only else ["--bootstrap-server", sandbox.bootstrap]
    for opt, value, tokens in cases_for(cmd, files, move):
        may_succeed = (cmd.name, opt.name) in ANY_TEXT or (opt.name in NAME_OPTIONS and value in LEGAL_NAMES)
        code, out, err = run_inprocess([*where, "--command", shlex.join(tokens)])
        problem = problems(code, out, err, may_succeed)
        if problem:
            failures.append(f"{cmd.name} {opt.name} {value[:40]!r}: {problem}")
    return failures


COMMANDS = sorted(load_commands().commands)


@pytest.mark.parametrize("name", [n for n in COMMANDS if value_options(load_commands().commands[n])])
def test_every_option_refuses_hostile_values(cluster, isolated, name):
    sandbox, tmp, move = cluster
    before = state(sandbox)
    failures = check_command(load_commands().commands[name], sandbox, tmp, move, hostile_files(isolated))
    assert failures == [], "\n".join(failures[:20])
    assert state(sandbox) == before


GLOBAL_CASES = [
    ["--timeout", v] for v in ("nan", "inf", "-inf", "1e300", "-1", "0", "", "\x00", "9" * 400)
] + [
    ["--bootstrap-server", v] for v in ("", "\x00:1", "h", "h:x", "h:0", "h:99999", "h:-1", "ünï:１２",
                                        "h:" + "9" * 30, "[" * 10_000)
] + [
    ["-X", v] for v in ("", "=", "=x", "\x00=1", "foo.bar=1", "socket.timeout.ms=nan",
                        "security.protocol=bogus", "ssl.ca.location=/nonexistent",
                        "ssl.certificate.location=/nonexistent/cert.pem", "sasl.password=${KSH_UNSET_VAR}")
] + [["--output", v] for v in ("", "\x00", "xml")] + [["--cluster", v] for v in ("", "\x00", "nope")] \
    + [["--csv-table", v] for v in ("", "\x00", "nope", "Ünï")]


@pytest.mark.parametrize("option", GLOBAL_CASES, ids=lambda o: f"{o[0]}={o[1][:12]!r}")
def test_global_options_refuse_hostile_values(cluster, isolated, option):
    sandbox, _, _ = cluster
    where = [] if option[0] in ("--bootstrap-server", "--cluster") else ["--bootstrap-server", sandbox.bootstrap]
    code, out, err = run_inprocess([*where, *option, "--command", "list-topics"])
    assert problems(code, out, err, may_succeed=False) is None


@pytest.mark.parametrize("option", ["--command-config", "--file"])
def test_hostile_files_for_global_options(cluster, isolated, option):
    sandbox, tmp, _ = cluster
    before = state(sandbox)
    failures = []
    for path in hostile_files(isolated) + ["\x00", ""]:
        if path == "/dev/null" or path.endswith("empty.json"):
            continue  # an empty script or properties file is fine: it asks nothing
        rest = ["--command", "list-topics"] if option == "--command-config" else ["--quiet"]  # no echo
        code, out, err = run_inprocess(["--bootstrap-server", sandbox.bootstrap, option, path, *rest])
        problem = problems(code, out, err, may_succeed=False)
        if problem:
            failures.append(f"{option} {path[-30:]!r}: {problem}")
    assert failures == []
    assert state(sandbox) == before


def test_replay_line_with_control_characters_is_escaped(cluster, isolated):
    sandbox, _, _ = cluster
    script = isolated / "nul.ksh"
    script.write_bytes(b"list-topics\x00 \x1b[2J --x\n")
    code, out, err = run_inprocess(["--bootstrap-server", sandbox.bootstrap, "--file", str(script)])
    assert code in (1, 2)
    assert "\x00" not in err and "\x1b" not in err
    assert "list-topics\\x00" in err


def test_a_sample_as_a_real_process_with_raw_bytes(cluster, isolated):
    """argv bytes that are not UTF-8, and a NUL-free binary value, through the real script."""
    sandbox, _, _ = cluster
    before = state(sandbox)
    for argv in ([b"--command", b"create-topic --topic \xff\xfe --partitions 1"],
                 [b"--create-topic", b"--topic", b"t\xff", b"--replication-factor", b"\xff"],
                 [b"--timeout", b"\xff", b"--command", b"list-topics"],
                 [b"--command", b"describe-configs --broker 99"],
                 [b"--command", b"create-topic --topic x --replication-factor 40000"]):
        p = subprocess.run([SHELL.encode(), b"--bootstrap-server", sandbox.bootstrap.encode(), *argv],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL, cwd=isolated)
        err = p.stderr.decode("utf-8", "replace")
        assert p.returncode in (1, 2), err
        assert len(err.splitlines()) == 1, err
        assert "Internal error" not in err and "Traceback" not in err
    assert state(sandbox) == before


@pytest.mark.parametrize("line", ["x" * 1_000_000, "list-topics --" + "x" * 1_000_000, '"' * 1_000_001,
                                  "create-topic --topic " + "a" * 120_000])
def test_huge_lines_are_refused_in_one_line(cluster, isolated, line):
    """A pasted megabyte: refused at once (shlex and difflib are quadratic), one short line."""
    sandbox, _, _ = cluster
    code, out, err = run_inprocess(["--bootstrap-server", sandbox.bootstrap, "--command", line])
    assert problems(code, out, err, may_succeed=False) is None
    assert code == 2 and len(err) < 300
