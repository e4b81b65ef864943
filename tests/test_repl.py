"""The REPL driven for real: prompt_toolkit pipe input against a Session on a sandbox cluster, and
pexpect against `kafka-shell --sandbox` in a pseudo-terminal."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
from pathlib import Path

import pexpect
import pytest
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from kafka_shell.face.repl import run_repl
from kafka_shell.face.repl.app import Repl
from kafka_shell.face.repl.history import SecretFreeHistory, history_path, is_secret
from kafka_shell.face.repl.toolbar import create_toolbar
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows

SHELL = str(Path(sys.executable).parent / "kafka-shell")
CTRL_D = "\x04"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture
def session(sandbox, data_dir):
    s = Session(target=Target(sandbox.bootstrap), sandbox=sandbox,
                stdout=io.StringIO(), stderr=io.StringIO())
    yield s
    s.close()


def run_piped(session: Session, *lines: str) -> int:
    """Type `lines` into the REPL (each ends with Enter unless it is a control key)."""
    with create_pipe_input() as pipe:
        for line in lines:
            pipe.send_text(line if line == CTRL_D else line + "\n")
        return run_repl(session, input=pipe, output=DummyOutput())


# -- history -----------------------------------------------------------------------------------

SECRET_LINES = [
    "connect -X sasl.password=hunter2",
    "alter-configs --entity-type brokers --add-config ssl.keystore.password=x",
    "alter-configs --add-config 'sasl.jaas.config=org.apache...PlainLoginModule required;'",
    "alter-configs --add-config listener.name.sasl_ssl.secret=abc",
]


@pytest.mark.parametrize("line", SECRET_LINES)
def test_secret_lines_are_recognised(line):
    assert is_secret(line)


def test_plain_lines_are_not_secret():
    assert not is_secret("create-topic --topic orders --partitions 3 --config cleanup.policy=compact")


def test_history_keeps_plain_lines_and_never_stores_secret_ones(tmp_path):
    path = tmp_path / "sub" / "history"
    history = SecretFreeHistory(path)
    history.append_string("list-topics")
    for line in SECRET_LINES:
        history.append_string(line)
    assert list(history.get_strings()) == ["list-topics"]       # nor kept for auto-suggest
    assert list(FileHistory(str(path)).load_history_strings()) == ["list-topics"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_history_lives_in_the_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_SHELL_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert history_path() == tmp_path / "xdg" / "kafka-shell" / "history"
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "mine"))
    assert history_path() == tmp_path / "mine" / "history"


def test_repl_saves_typed_lines_except_secret_ones(session, data_dir):
    assert run_piped(session, "nosuch-command --x 1", SECRET_LINES[0], CTRL_D) == 0
    saved = (data_dir / "history").read_text()
    assert "nosuch-command --x 1" in saved
    assert "hunter2" not in saved and "sasl" not in saved


def test_the_repl_keeps_a_split_secret_out_of_its_history_file(session, data_dir):
    typed = ["list-topics", "alter-configs --entity-type brokers --entity-default --add-config ss\\",
             "   l.keystore.pass\\", "word=hunter2", CTRL_D]
    assert run_piped(session, *typed) == 0
    saved = (data_dir / "history").read_text()
    assert "+list-topics" in saved and "hunter2" not in saved and "keystore" not in saved


# -- prompt, toolbar, exit ---------------------------------------------------------------------

def test_exit_and_quit_leave_with_zero(session):
    assert run_piped(session, "exit") == 0
    assert run_piped(session, "quit") == 0


def test_prompt_shows_the_context_topic(session):
    repl = Repl(session, input=None, output=DummyOutput())
    assert "".join(t for _, t in repl.message()) == "kafka> "
    session.topic = "orders"
    assert "".join(t for _, t in repl.message()) == "kafka orders> "


def test_toolbar_counts_brokers_up_out_of_all_seen(session, sandbox):
    repl = Repl(session, output=DummyOutput())
    toolbar = create_toolbar(repl)
    session.conn.refresh()
    text = "".join(t for _, t in toolbar())
    assert "cluster: sandbox" in text and "brokers: 3/3" in text and "topic: -" in text
    controller = session.conn.snapshot.controller_id
    assert f"controller: {controller}" in text
    down = next(b for b in (1, 2, 3) if b != controller)
    sandbox.stop_broker(down)
    session.conn.refresh()
    session.topic = "orders"
    fragments = toolbar()
    assert ("class:bottom-toolbar.alarm", "2/3") in fragments
    assert "topic: orders" in "".join(t for _, t in fragments)


def test_repl_reads_what_changed_behind_its_back(session, sandbox, admin):
    """Each command reads the cluster when it runs: a topic another client created, a stopped
    broker, a whole cluster gone (then the toolbar says unreachable, not the last counts)."""
    from confluent_kafka.admin import NewTopic

    from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 3, [[1, 2, 3], [2, 3, 1]])
    outputs: list[str] = []
    toolbar_text: list[str] = []

    def typed(pipe, line: str, expect: str) -> str:
        """Type a line, wait for its answer (stdout or stderr) to contain `expect`."""
        start = len(session.stdout.getvalue()), len(session.stderr.getvalue())
        pipe.send_text(line + "\n")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            new = session.stdout.getvalue()[start[0]:] + session.stderr.getvalue()[start[1]:]
            if expect in new:
                return new
            time.sleep(0.02)
        raise AssertionError(f"{line!r} never showed {expect!r}")

    def drive(pipe) -> None:
        try:
            outputs.append(typed(pipe, "list-topics", "ReplicationFactor"))
            admin.create_topics([NewTopic("made-elsewhere", 1, 1)])["made-elsewhere"].result(10)
            outputs.append(typed(pipe, "list-topics", "made-elsewhere"))
            sandbox.stop_broker(2)
            outputs.append(typed(pipe, "describe-topic --topic t -o json", "offline"))
            for b in (1, 3):
                sandbox.stop_broker(b)
            outputs.append(typed(pipe, "describe-topic --topic t", "Cannot reach any broker"))
            toolbar_text.append("".join(t for _, t in create_toolbar(Repl(session, output=DummyOutput()))()))
        finally:
            pipe.send_text(CTRL_D)

    with create_pipe_input() as pipe:
        feeder = threading.Thread(target=drive, args=(pipe,), daemon=True)
        feeder.start()
        run_repl(session, input=pipe, output=DummyOutput())
        feeder.join(30)
    assert len(outputs) == 4, outputs
    assert "made-elsewhere" not in outputs[0] and "made-elsewhere" in outputs[1]
    parts = json_rows(outputs[2][outputs[2].index("{"):], "partitions")
    assert all(p["leader"] != 2 and 2 not in p["isr"] and p["offline"] == [2] for p in parts)
    assert "unreachable since" in toolbar_text[0] and "controller: ?" in toolbar_text[0]
    assert "brokers: ?/" in toolbar_text[0]


def test_completer_follows_the_cache(session):
    """A new snapshot in the connection manager reaches the completer: no request per key."""
    repl = Repl(session, output=DummyOutput())
    session.conn.refresh()
    repl._sync_completer()
    before = repl.completer
    assert repl._sync_completer() is False and repl.completer is before   # same snapshot: kept
    assert repl.execute("create-topic --topic fresh --partitions 1 --replication-factor 1") == 0
    assert repl.completer is not before and repl.completer.snapshot is session.conn.snapshot
    words = [c.text for c in repl.completer.get_completions(Document("describe-topic --topic fr"))]
    assert words == ["fresh"]


def test_destructive_commands_ask_on_the_terminal(session):
    code = run_piped(session,
                     "create-topic --topic doomed --partitions 1 --replication-factor 1",
                     "delete-topic --topic doomed", "n",
                     "delete-topic --topic doomed", "y",
                     "list-topics", CTRL_D)
    assert code == 0
    said = session.stderr.getvalue()
    assert said.index("Created topic doomed.") < said.index("Cancelled: nothing was changed.") \
        < said.index("Deleted topic doomed.")
    assert "doomed" not in session.stdout.getvalue()            # list-topics after the delete
    assert "doomed" not in session.conn.snapshot.topics


# -- end to end in a terminal: kafka-shell --sandbox under pexpect -----------------------------

ESC = r"(?:\x1b\[[0-9;?]*[a-zA-Z])*"   # colour and cursor sequences between visible characters


class Terminal:
    """kafka-shell (default `--sandbox`) in a pseudo-terminal, answering prompt_toolkit's cursor
    position request so the bottom toolbar is drawn as on a real terminal."""

    def __init__(self, data_dir: Path, args: tuple[str, ...] = ("--sandbox",), timeout: float = 30):
        env = dict(os.environ, KAFKA_SHELL_DATA_DIR=str(data_dir), TERM="xterm")
        self.child = pexpect.spawn(SHELL, list(args), env=env, encoding="utf-8", timeout=timeout,
                                   dimensions=(30, 160))

    def prompt(self, topic: str | None = None) -> str:
        """Wait for the next prompt; return what the shell wrote before it."""
        self.child.expect(r"\x1b\[6n")
        before = self.child.before
        self.child.send("\x1b[1;1R")
        context = ESC + " " + ESC + re.escape(topic) if topic else ""
        self.child.expect("kafka" + context + ESC + ">")
        return before

    def run(self, line: str, *expected: str, topic: str | None = None) -> str:
        """Type a line; wait for each expected text, then the prompt; return the output."""
        self.child.send(line + "\r")
        output = ""
        for text in expected:
            self.child.expect_exact(text)
            output += self.child.before + self.child.after
        return output + self.prompt(topic)

    def leave(self) -> int:
        self.child.sendcontrol("d")
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus


@pytest.fixture
def terminal(data_dir):
    term = Terminal(data_dir)
    yield term
    if term.child.isalive():
        term.child.terminate(force=True)


def test_topic_context_end_to_end(terminal):
    t = terminal
    t.child.expect(r"Connected to cluster \S+ \(KRaft, active controller 100 at 127\.0\.0\.1:\d+, epoch \d+\)\.")
    t.prompt()
    t.child.expect("cluster: " + ESC + "sandbox")                  # the toolbar's first drawing
    t.child.expect("brokers: " + ESC + "3/3")
    t.run("create-topic --topic orders --partitions 2 --replication-factor 3", "Created topic orders.")
    t.run("topic orders", 'Switched to "orders" topic.', topic="orders")
    # describe-topic without --topic uses the context: both partitions of orders are listed.
    out = t.run("describe-topic", "PartitionCount", topic="orders")
    assert re.search(r"orders\s+0\s+\d", out) and re.search(r"orders\s+1\s+\d", out)
    t.run("topic nosuch", 'Topic "nosuch" does not exist', topic="orders")
    t.run("topic", 'Left "orders" topic.')
    assert t.leave() == 0


def test_ctrl_c_cancels_the_line_and_tab_completes_from_the_cache(terminal):
    t = terminal
    t.prompt()
    t.run("create-topic --topic payments-eu --partitions 1 --replication-factor 1", "Created topic")
    t.child.send("create-topic --topic half-typed")
    t.child.sendcontrol("c")                                       # drops the line
    t.prompt()
    t.child.send("describe-topic --topic paym")
    t.child.expect("payments-eu" + ESC + " +" + ESC + " *1 partitions")  # the menu, from the cache
    t.child.send("\t\r")                                            # Tab takes it, Enter runs
    t.child.expect(r"payments-eu\s+0\s+\d")
    t.prompt()
    out = t.run("list-topics", "payments-eu")
    assert "half-typed" not in out
    assert t.leave() == 0


def test_ctrl_c_cancels_a_running_command_and_stays_in_the_repl(terminal):
    t = terminal
    t.prompt()
    for broker in (1, 2, 3):                                       # every answer 20 s late
        t.run(f"sandbox delay {broker} 20000", f"Broker {broker} answers 20000 ms late.")
    t.child.send("create-topic --topic slow\r")
    t.child.expect_exact("\x1b[?2004l")      # the prompt has handed the line over
    # Let the prompt finish tearing down (a Ctrl-C before that goes to prompt_toolkit, not to
    # the command): wait until the terminal stays quiet, as a user would.
    t.child.expect(pexpect.TIMEOUT, timeout=1)
    t.child.sendcontrol("c")
    t.child.expect_exact("Cancelled.")
    t.prompt()
    t.run("sandbox heal", "")
    t.child.send("exit\r")
    t.child.expect(pexpect.EOF)
    t.child.close()
    assert t.child.exitstatus == 0
