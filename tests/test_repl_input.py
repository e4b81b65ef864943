"""REPL input in a real pseudo-terminal (kafka-shell --sandbox under pexpect): `;` between
commands, continued lines, pasted blocks, fuzzy completion, the next id after a comma; and
Ctrl-R, `;` in one-shot and replay, `--delete-config` overrides, without a terminal."""

from __future__ import annotations

import io
import json

from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from kafka_shell.declarations.parsing import is_incomplete, logical_lines, split_commands
from kafka_shell.face.repl import run_repl
from kafka_shell.face.repl.app import Repl
from kafka_shell.connection.session import Session, Target
from tests.test_oneshot import run, shell, topics
from tests.test_repl import CTRL_D, ESC, data_dir, session, terminal  # noqa: F401 - fixtures

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"   # bracketed paste, as a terminal sends it


def test_semicolons_multi_line_and_pasted_blocks(terminal):  # noqa: F811 - the fixture
    t = terminal
    t.prompt()
    # `;` separates commands (not inside quotes).
    t.run("create-topic --topic svc-799-events --partitions 1 --replication-factor 1; "
          "create-topic --topic other --partitions 2 --replication-factor 1",
          "Created topic svc-799-events.", "Created topic other.")
    # A trailing backslash continues the line: Enter shows a continuation prompt, not an error.
    t.child.send("describe-topic \\\r")
    t.child.expect_exact("...")
    out = t.run("--topic other", "PartitionCount")
    assert "Unbalanced" not in out and "other" in out
    # An open quote continues too; the newline stays inside the quoted value.
    t.child.send("list-topics 'oth\r")
    t.child.expect_exact("...")
    out = t.run("'")
    assert "Unbalanced" not in out, out
    # A pasted block stays in the buffer; Enter runs its lines one after the other.
    t.child.send(f"{PASTE_START}list-topics 'svc-.*'\rdescribe-topic --topic other{PASTE_END}")
    t.child.send("\r")
    t.child.expect(r"svc-799-events" + ESC + r"\s+" + ESC + r"1")     # list-topics' row
    t.child.expect(r"other\s+1\s+\d")                                   # then describe-topic's
    t.prompt()
    assert t.leave() == 0


def test_fuzzy_completion_and_the_next_id_after_a_comma(terminal):  # noqa: F811 - the fixture
    t = terminal
    t.prompt()
    t.run("create-topic --topic svc-799-events --partitions 1 --replication-factor 1", "Created topic")
    t.child.send("desc-top")                        # fuzzy: describe-topic
    t.child.expect("describe-topic")
    t.child.send("\t --topic 799")                  # fuzzy: svc-799-events
    t.child.expect("svc-799-events" + ESC + " +" + ESC + " *1" + ESC + " *partitions")
    t.child.send("\t\r")
    t.child.expect(r"svc-799-events\s+0\s+\d")
    t.prompt()
    # After `1,` the menu offers the brokers not listed yet, 2 first.
    t.child.send("describe-log-dirs --broker-list 1,")
    t.child.expect(r"2" + ESC + " +" + ESC + r" *127\.0\.0\.1:\d+")
    t.child.send("\t\r\r")     # Tab takes 2; Enter closes the menu, Enter runs
    out = t.prompt()
    assert "/broker-1/" in out and "/broker-2/" in out and "/broker-3/" not in out, out
    assert t.leave() == 0


def test_each_ctrl_r_goes_to_the_next_older_entry(sandbox, data_dir):  # noqa: F811 - the fixture
    """Ctrl-R, "topic" shows second-one's line (which matches twice); each Ctrl-R then shows the
    next older entry that matches, none skipped (issue 22: every other one was)."""
    lines = ("describe-topic --topic first-one", "list-topics", "describe-topic --topic second-one")
    for presses, ran in ((1, "list-topics"), (2, "first-one"), (3, "first-one")):
        history = InMemoryHistory()
        for line in lines:
            history.append_string(line)
        s = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO(),
                    output="json")
        try:
            with create_pipe_input() as pipe:
                pipe.send_text("\x12topic" + "\x12" * presses + "\r\r" + CTRL_D)
                run_repl(s, input=pipe, output=DummyOutput(), history=history)
            said = s.stderr.getvalue()
            if ran == "list-topics":
                assert json.loads(s.stdout.getvalue()) == {"topics": []} and "does not exist" not in said, said
            else:
                assert 'Topic "first-one" does not exist' in said and "second-one" not in said, said
        finally:
            s.close()


def test_delete_config_offers_the_entity_overrides(sandbox, data_dir):  # noqa: F811 - the fixture
    s = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO())
    try:
        repl = Repl(s, output=DummyOutput())
        assert repl.execute("create-topic --topic orders --partitions 1 --replication-factor 1 "
                            "--config retention.ms=1000 --config cleanup.policy=compact") == 0

        def words(line: str) -> list[str]:
            return [c.text for c in repl.completer.get_completions(Document(line))]

        assert words("alter-configs --topic orders --delete-config ") == ["cleanup.policy", "retention.ms"]
        assert words("alter-configs --topic orders --delete-config retention.ms,") == ["cleanup.policy"]
        s.topic = "orders"   # the context topic names the entity when the line does not
        assert words("alter-configs --delete-config ret") == ["retention.ms"]
        assert repl.execute("alter-configs --delete-config retention.ms") == 0
        assert words("alter-configs --delete-config ") == ["cleanup.policy"]   # read again after a change
    finally:
        s.close()


def test_semicolons_in_one_shot_and_replay(sandbox, tmp_path):
    p = run(sandbox, "create-topic --topic a --partitions 1 --replication-factor 1; "
                     "create-topic --topic 'b;c' --partitions 1 --replication-factor 1")
    assert p.returncode == 2 and "b;c" in p.stderr     # the quoted ';' is part of the name
    assert topics(sandbox) == {"a": 1}                   # a ran; then the bad name stopped the line
    script = tmp_path / "s.ksh"
    script.write_text("create-topic --topic x --partitions 1 --replication-factor 1; list-topics\n"
                      "describe-topic \\\n  --topic 'x'\n")
    p = shell("--bootstrap-server", sandbox.bootstrap, "--file", str(script))
    assert p.returncode == 0, p.stderr
    assert "1> create-topic --topic x" in p.stderr and "1> list-topics" in p.stderr
    assert "2> describe-topic --topic 'x'" in p.stderr


def test_line_splitting_rules():
    assert split_commands("a; b ;c") == ["a", "b", "c"]
    assert split_commands("a ';' b \\; c") == ["a ';' b \\; c"]
    assert split_commands("a # b; c") == ["a # b; c"]
    assert is_incomplete("a \\") and is_incomplete("a 'b") and is_incomplete('a "b\\"')
    assert not is_incomplete("a \\\\") and not is_incomplete("a # 'b")
    assert logical_lines(["# note", "a \\", "   --b 1", "", "c 'd", "e'"]) == [(2, "a --b 1"), (5, "c 'd\ne'")]
