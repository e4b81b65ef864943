"""The smaller manners of issue 34, each seen by a new user: help text in sentences and sections
with names, a command alone doing its natural read, a positional left out saying what to give,
confirmations naming what goes, a streamed table that stays aligned, durations without a unit
the header contradicts, a port in use named, and the broker defaults' current values in a dry
run. (The key separator line, fish's descriptions, KiB in the reassignment progress, the
current cluster's line and share groups' member counts are tested beside their commands.)"""

from __future__ import annotations

import io
import os
import socket
import subprocess

from kafka_shell.declarations.registry import load_commands
from kafka_shell.face.runner import run_line
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows
from tests.test_groups_cmd import create, ok, sh
from tests.test_oneshot import ROOT, SHELL


def test_help_is_whole_sentences_under_named_sections():
    from commands.session import FAMILY_TITLES
    commands = load_commands().commands.values()
    for c in commands:
        for text in (c.help, c.description):
            for paragraph in filter(None, text.split("\n")):
                assert paragraph.rstrip().endswith((".", ":", ")", "?")), (c.name, paragraph[-60:])
    assert {c.family for c in commands} <= set(FAMILY_TITLES)   # no section named after a module
    p = subprocess.run([*SHELL, "--command", "help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "Share groups and streams groups:" in p.stdout and "Share streams groups" not in p.stdout
    p = subprocess.run([*SHELL, "--command", "rolling-restart-plan --help"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT, env={**os.environ, "COLUMNS": "100"})
    paragraphs = p.stdout.split("\n\n")
    assert any(para.startswith("Brokers are grouped so that") and "one move in all." in para for para in paragraphs)


def test_a_command_alone_does_its_natural_read_or_says_what_to_give(sandbox):
    out, err = ok(sandbox, "broker-ids")   # = broker-ids missing
    assert err == "No missing broker ids: every id in a replica set is a live broker.\n"
    out, _ = ok(sandbox, "preferred-controller -o json")   # = preferred-controller show
    assert json_rows(out)[0]["active_controller"] == 100
    code, _, err = sh(sandbox, "watch")
    assert code == 2 and err == ("watch needs COMMAND ...: the read command to re-run, with its options "
                                 "(e.g. watch describe-topic --under-replicated-partitions)\n")


def test_confirmations_name_what_goes(sandbox):
    create(sandbox, "t", 2)
    ok(sandbox, "produce --topic t --partition 0 a b c")
    code, _, err = sh(sandbox, "delete-records --topic t --partition 0 --before-offset 2")
    assert code == 2 and err == "Delete the records of t-0 before offset 2: add --yes to confirm\n"
    asked: list[str] = []
    out, errs = io.StringIO(), io.StringIO()
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=out, stderr=errs, interactive=True,
                      confirm=lambda q: asked.append(q) or False)
    try:
        assert run_line(session, "delete-records --topic t --partition 0 --before-offset 2") == 1
        assert run_line(session, "delete-share-group old-queue other") == 1
    finally:
        session.close()
    assert asked == ["Delete the records of t-0 before offset 2?",
                     "Delete 2 share group(s) (old-queue, other) and their share state?"]


def test_a_streamed_table_stays_aligned_with_a_long_key(sandbox):
    create(sandbox, "t", 1)
    ok(sandbox, "produce --topic t --key-separator : --partition 0 k:1 a-much-longer-key:2 k:3")
    out, _ = ok(sandbox, "consume --topic t --from-beginning")
    blocks = [b.splitlines() for b in out.strip().split("\n\n")]
    assert len(blocks) == 2   # the header again where the column widened
    for lines in blocks:
        value_at = lines[0].index("Value")
        assert all(line[value_at - 2:value_at] == "  " and line[value_at] in "-123" for line in lines[1:]), lines


def test_a_duration_header_drops_the_unit_its_values_no_longer_have(sandbox):
    sandbox.delay(1, 1500)
    try:
        out, _ = ok(sandbox, "sandbox status")
        header = out.splitlines()[0].split()
        assert "Delay" in header and "MetadataLag" in header and "1.5 s" in out
        out, _ = ok(sandbox, "sandbox status -o json")
        assert {r["node"]: r["delay_ms"] for r in json_rows(out)}[1] == 1500   # scripts keep the exact value
    finally:
        sandbox.delay(1, 0)


def test_a_port_in_use_is_named():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        base = held.getsockname()[1] - 1
        p = subprocess.run([*SHELL, "sandbox", "--port-base", str(base)], capture_output=True, text=True, timeout=60,
                           cwd=ROOT, stdin=subprocess.DEVNULL)
    assert p.returncode == 2
    assert p.stderr == (f"Cannot start the sandbox: port {base + 1} is in use: choose another --port-base "
                        "(or leave it out for free ports)\n") or p.stderr.startswith(f"Cannot start the sandbox: port {base}")


def test_a_dry_run_of_the_broker_defaults_shows_what_applies_now(sandbox):
    out, _ = ok(sandbox, "alter-configs --entity-default --add-config log.cleaner.threads=2 --dry-run -o json")
    assert json_rows(out) == [{"name": "log.cleaner.threads", "value": "1", "source": "DEFAULT_CONFIG", "new_value": "2"}]
    ok(sandbox, "alter-configs --entity-default --add-config log.cleaner.threads=2")
    out, _ = ok(sandbox, "alter-configs --entity-default --add-config log.cleaner.threads=3 --dry-run -o json")
    assert json_rows(out) == [{"name": "log.cleaner.threads", "value": "2", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
                               "new_value": "3"}]
