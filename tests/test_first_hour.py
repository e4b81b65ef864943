"""Issue 22: what a new user met in the first hour, each defect as it was seen (one-shot forms,
describe-configs of the default entity, consume that streams, ...), on the sandbox and, where
Kafka's behaviour is the reference, on real Kafka."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time

import pytest
from confluent_kafka import Producer

from tests.output import json_rows
from tests.test_groups_cmd import create, ok, sh
from tests.test_oneshot import ROOT, SHELL, shell


# -- one-shot forms the README documents -------------------------------------------------------

def test_describe_configs_of_the_default_entity_does_not_crash(sandbox, kafka4):
    for bootstrap in (sandbox.bootstrap, kafka4.bootstrap):
        ok_line = ["--bootstrap-server", bootstrap, "--output", "json", "--command"]
        for line in ("describe-configs --entity-type brokers --entity-default",
                     "describe-configs --entity-default", "describe-configs --entity-default --all"):
            p = shell(*ok_line, line)
            assert p.returncode == 0 and "Internal error" not in p.stderr, (bootstrap, line, p.stderr)
            assert isinstance(json_rows(p.stdout), list)


def test_snapshot_and_analyze_read_as_words_after_the_global_options(sandbox, tmp_path):
    p = shell("--bootstrap-server", sandbox.bootstrap, "snapshot", "--output-dir", str(tmp_path / "s"), "-o", "json")
    assert p.returncode == 0, p.stderr
    assert json_rows(p.stdout)[0]["status"] == "ok"
    p = shell("snapshot", "--bootstrap-server", sandbox.bootstrap, "--output-dir", str(tmp_path / "s"))
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("argv,usage", [
    (["analyze", "--help"], "Usage: analyze --snapshots"),
    (["snapshot", "--help"], "Usage: snapshot --output-dir"),
    (["--describe-topic", "--help"], "Usage: describe-topic"),
    (["--bootstrap-server", "127.0.0.1:1", "snapshot", "-h"], "Usage: snapshot --output-dir"),
])
def test_a_commands_help_is_its_own_not_the_global_one(argv, usage):
    p = shell(*argv)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(usage), p.stdout[:200]


# -- consume streams ---------------------------------------------------------------------------

def _read_line(proc: subprocess.Popen, deadline: float) -> str:
    """The next line of the process's stdout, as soon as it is written (None at the deadline)."""
    assert proc.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no line within the deadline (got {line!r})"
        if select.select([proc.stdout], [], [], left)[0]:
            byte = os.read(proc.stdout.fileno(), 1)
            assert byte, f"stdout closed (got {line!r}): {proc.stderr.read() if proc.stderr else ''}"
            line += byte
    return line.decode()


@contextlib.contextmanager
def _running(sandbox, *args: str):
    """kafka-shell with `args` on the sandbox, its stdout read as it comes; killed if a test
    leaves it running."""
    proc = subprocess.Popen([*SHELL, "--bootstrap-server", sandbox.bootstrap, *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _interrupt(proc: subprocess.Popen) -> str:
    """Ctrl-C, as a terminal sends it; what the process said on stderr once it ended (a bound
    generous enough for a machine whose cores are shared many ways: closing the consumer and
    printing the summary took over 30 s there)."""
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=120)[1].decode()


@pytest.mark.parametrize("fmt", ["table", "jsonl"])
def test_consume_prints_each_record_as_it_arrives_and_ctrl_c_summarises(sandbox, fmt):
    create(sandbox, "live", 1)
    with _running(sandbox, "-o", fmt, "--command", "consume --topic live --timeout 120") as proc:
        producer = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        deadline = time.monotonic() + 60
        seen: list[str] = []
        # It reads only new records: send until the first arrives (the consumer may start late).
        while not seen:
            producer.produce("live", value=b"first")
            producer.flush(10)
            if select.select([proc.stdout], [], [], 0.5)[0]:
                while not any("first" in line for line in seen):
                    seen.append(_read_line(proc, deadline))
        producer.produce("live", value=b"second", timestamp=1_700_000_000_123)
        producer.flush(10)
        line = _read_line(proc, deadline)
        while "first" in line:
            line = _read_line(proc, deadline)
        assert "second" in line   # printed while the consumer still runs
        if fmt == "table":
            assert "2023-11-14T22:13:20.123Z" in line   # a readable time in the table
        else:
            assert '"timestamp": 1700000000123' in line   # exact ms in json
        assert proc.poll() is None
        err = _interrupt(proc)
    assert proc.returncode == 0, err
    assert err.strip().endswith("record(s) (interrupted).")


def test_consume_from_the_beginning_stops_at_the_end_of_the_log(sandbox):
    create(sandbox, "t", 3)
    ok(sandbox, "produce --topic t a b c")
    # A long idle timeout is never waited for: the end of every partition ends the read.
    code, out, err = sh(sandbox, "consume --topic t --from-beginning --timeout 600 -o json")
    assert code == 0, err
    assert sorted(r["value"] for r in json_rows(out)) == ["a", "b", "c"]
    assert err.strip() == "Consumed 3 record(s): reached the end of the log."
    code, out, err = sh(sandbox, "consume --topic t --partition 0 --offset 0 --timeout 600 -o json")
    assert code == 0 and err.strip().endswith("reached the end of the log."), err
    # --follow waits for more, until the idle time; an empty topic has nothing to show.
    code, out, err = sh(sandbox, "consume --topic t --from-beginning --follow --timeout 0.5 -o json")
    assert code == 0 and len(json_rows(out)) == 3 and err.strip().endswith("none came for 0.5 s."), err
    create(sandbox, "empty", 2)
    code, out, err = sh(sandbox, "consume --topic empty --from-beginning --timeout 600")
    assert (code, out) == (0, "(none)\n"), err
    code, out, err = sh(sandbox, "consume --topic t --max-messages 2 --from-beginning -o json")
    assert len(json_rows(out)) == 2 and err.strip() == "Consumed 2 record(s): --max-messages 2 reached.", err


# -- help ----------------------------------------------------------------------------------------

def test_help_says_each_annotation_once_and_keeps_indented_items_in():
    import re

    from kafka_shell.declarations.parsing import help_text
    from kafka_shell.declarations.registry import load_commands
    for cmd in load_commands().commands.values():
        text = help_text(cmd, 100)
        for line in text.splitlines():
            for note in ("repeatable", "required"):
                assert line.lower().count(note) <= 1, (cmd.name, line)
            assert len(re.findall(r"(?<![-\w])default\b", line)) <= 1, (cmd.name, line)
        if cmd.description:   # a paragraph that starts indented goes on indented
            lines = text.splitlines()
            for before, after in zip(lines, lines[1:]):
                if before.startswith("  ") and after.strip() and not after.startswith(" ") and "Options:" not in after:
                    raise AssertionError(f"{cmd.name}: {after!r} falls back to column 0")
    usage = help_text(load_commands().get("create-topic"), 100).splitlines()[0]
    assert usage.startswith("Usage: create-topic --topic NAME [--topic ...]")


def test_help_lists_the_commands_under_titles_topics_first(sandbox):
    out, _ = ok(sandbox, "help")
    titles = [line for line in out.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert titles[:3] == ["Topics:", "Records:", "Consumer groups:"]
    assert "The shell:" in titles and len(titles) == len(set(titles))
    assert out.splitlines()[1].split()[0] == "alter-topic"


# -- the REPL --------------------------------------------------------------------------------------

@pytest.fixture
def repl_session(sandbox, tmp_path, monkeypatch):
    import io

    from kafka_shell.connection.session import Session, Target
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / "data"))
    s = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO())
    yield s
    s.close()


def test_a_command_then_exit_on_one_line_leaves(repl_session, sandbox):
    from tests.test_repl import CTRL_D, run_piped
    assert run_piped(repl_session, "create-topic --topic before; exit", "create-topic --topic after", CTRL_D) == 0
    assert "Created topic before." in repl_session.stderr.getvalue()
    assert set(sandbox.cluster.topics) == {"before"}


def test_output_json_prints_no_empty_object(repl_session):
    from tests.test_repl import CTRL_D, run_piped
    assert run_piped(repl_session, "output json", "topic", CTRL_D) == 0
    assert repl_session.stdout.getvalue() == ""
    assert "json" in repl_session.stderr.getvalue()


def test_a_soft_wrapped_line_shows_no_continuation_dots():
    from kafka_shell.face.repl.app import _continuation
    assert "".join(text for _, text in _continuation(7, 1, 0)) == "...... "   # after `\` or in a quote
    assert "".join(text for _, text in _continuation(7, 0, 1)).strip() == ""   # only wrapped on screen


# -- things that read wrong --------------------------------------------------------------------

def test_topic_ids_read_as_kafkas_own_tool_prints_them(kafka4):
    from tests.clients import java_client
    p = shell("--bootstrap-server", kafka4.bootstrap, "--command", "create-topic --topic ids --partitions 1 "
              "--replication-factor 1 --if-not-exists")
    assert p.returncode == 0, p.stderr
    ours = json_rows(shell("--bootstrap-server", kafka4.bootstrap, "-o", "json", "--command",
                           "describe-topic --topic ids").stdout, "topics")[0]["topic_id"]
    theirs = java_client.run("TopicCommand", "--bootstrap-server", kafka4.bootstrap, "--describe", "--topic", "ids")
    assert f"TopicId: {ours}\t" in theirs.stdout, theirs.stdout


def _wait(what: str, condition) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"waited 60 s for {what}"
        time.sleep(0.05)


def test_an_offline_partition_shows_its_empty_isr_and_no_leader_as_null(sandbox):
    """The ISR emptied by the failures (its members went to the ELR, KIP-966) is the news: the
    table keeps the column; json says null for no leader, as other rows say integers."""
    ok(sandbox, "create-topic --topic off --replica-assignment 1:3:2 --config min.insync.replicas=2")
    part = sandbox.cluster.topics["off"].partitions[0]
    for broker in (3, 2, 1):
        ok(sandbox, f"sandbox stop-broker {broker}")
        _wait(f"{broker} out of the ISR", lambda b=broker: b not in part.isr or part.leader < 0)
    ok(sandbox, "sandbox start-broker 3")
    out, _ = ok(sandbox, "describe-topic --topic off")
    header, _, row = out.split("\n\n")[1].splitlines()[:3]
    assert header.split()[:5] == ["Topic", "Partition", "Leader", "Replicas", "Isr"], out
    assert row.split()[2:5] == ["none", "1,3,2", "-"], out
    [part_json] = json_rows(ok(sandbox, "describe-topic --topic off -o json")[0], "partitions")
    assert part_json["leader"] is None and part_json["isr"] == [] and part_json["elr"], part_json
    # unclean-recovery's LastIsr agrees with describe-topic's Elr.
    out, _ = ok(sandbox, "unclean-recovery --all-offline-partitions --show-replica-info -o json")
    last_isr = {r["replica"]: r["last_isr"] for r in json_rows(out, "replicas")}
    assert last_isr == {b: b in part_json["elr"] for b in (1, 3, 2)}, out
    # ...and marks the eligible leader replicas themselves (KIP-966).
    elr = {r["replica"]: r["elr"] for r in json_rows(out, "replicas")}
    assert elr == {b: b in part_json["elr"] for b in (1, 3, 2)} and any(elr.values()), out


# -- confirmations and dry runs ------------------------------------------------------------------

def test_delete_group_and_delete_offsets_name_what_they_delete(sandbox):
    from tests.test_groups_cmd import commit
    create(sandbox, "t", 2)
    commit(sandbox, "old-app", "t", {0: 5, 1: 7})
    commit(sandbox, "older-app", "t", {0: 1})
    code, _, err = sh(sandbox, "delete-group old-app older-app")   # outside the REPL: refused, named
    assert code == 2 and err.strip() == ("Delete 2 consumer groups (old-app, older-app) and 3 committed offset(s): "
                                          "add --yes to confirm"), err
    code, _, err = sh(sandbox, "delete-offsets --group old-app --topic t")
    assert code == 2 and "group 'old-app' for 2 partition(s) (t-0 at 5, t-1 at 7)" in err, err
    # In the REPL the same question is asked.
    import io

    from kafka_shell.face.runner import run_line
    from kafka_shell.connection.session import Session, Target
    asked: list[str] = []
    s = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=io.StringIO(),
                interactive=True, confirm=lambda q: asked.append(q) or False)
    try:
        assert run_line(s, "delete-group --all-groups") == 1
    finally:
        s.close()
    assert asked == ["Delete 2 consumer groups (old-app, older-app) and 3 committed offset(s)?"]
    _, err = ok(sandbox, "delete-group --all-groups --dry-run")
    assert err.splitlines() == ["Would delete consumer group 'old-app' (dry run).",
                                "Would delete consumer group 'older-app' (dry run)."]
    ok(sandbox, "delete-group --all-groups --yes")
    out, _ = ok(sandbox, "list-groups -o json")
    assert json_rows(out) == []


def test_alter_configs_dry_run_shows_old_and_new(sandbox):
    create(sandbox, "t", 1)
    ok(sandbox, "alter-configs --topic t --add-config retention.ms=5000")
    out, err = ok(sandbox, "alter-configs --topic t --add-config retention.ms=1000,cleanup.policy=compact "
                           "--dry-run -o json")
    assert json_rows(out) == [
        {"name": "retention.ms", "value": "5000", "source": "DYNAMIC_TOPIC_CONFIG", "new_value": "1000"},
        {"name": "cleanup.policy", "value": "delete", "source": "DEFAULT_CONFIG", "new_value": "compact"}]
    assert err.strip() == 'Validated updating config for topic "t" (dry run).'
    out, _ = ok(sandbox, "alter-configs --topic t --delete-config retention.ms --dry-run -o json")
    assert json_rows(out) == [{"name": "retention.ms", "value": "5000", "source": "DYNAMIC_TOPIC_CONFIG",
                               "new_value": "(default)"}]
    out, _ = ok(sandbox, "describe-configs --topic t -o json")
    assert ("retention.ms", "5000") in [(r["name"], r["value"]) for r in json_rows(out)]   # nothing changed


def test_a_dynamic_broker_config_kafka_accepts_is_accepted(sandbox, kafka4):
    for bootstrap in (sandbox.bootstrap, kafka4.bootstrap):
        p = shell("--bootstrap-server", bootstrap, "--command", "alter-configs --broker 2 --add-config "
                  "log.cleaner.threads=2")
        assert p.returncode == 0 and "Completed updating config for broker 2." in p.stderr, (bootstrap, p.stderr)
        p = shell("--bootstrap-server", bootstrap, "--command", "alter-configs --broker 2 --delete-config "
                  "log.cleaner.threads")
        assert p.returncode == 0, p.stderr


# -- partial failure -------------------------------------------------------------------------------

def test_one_slow_broker_leaves_the_others_log_dirs_shown(sandbox):
    create(sandbox, "t", 3, rf=1)
    ok(sandbox, "sandbox delay 2 15000")
    code, out, err = sh(sandbox, "describe-log-dirs -o json", timeout_s=2)
    assert code == 1
    assert {r["broker"] for r in json_rows(out, "log_dirs")} == {1, 3}
    assert err.strip().splitlines() == [err.strip().splitlines()[0]] and "Broker 2" in err, err


def test_with_every_broker_down_the_repl_says_nothing_of_its_cache(repl_session):
    from tests.test_repl import CTRL_D, run_piped
    assert run_piped(repl_session, "sandbox stop-broker 1", "sandbox stop-broker 2", "sandbox stop-broker 3",
                     "sandbox status", "sandbox start-broker 1", CTRL_D) == 0
    said = repl_session.stderr.getvalue()
    assert "Broker 3 stopped." in said and "Broker 1 started." in said
    assert "metadata cache" not in said, said


# -- said wrong or missing ---------------------------------------------------------------------------

def test_with_the_only_controller_stopped_the_shell_says_so(sandbox):
    ok(sandbox, "sandbox stop-controller 100")
    code, _, err = sh(sandbox, "describe-controller", timeout_s=2)
    assert code == 1 and err.startswith("The brokers answer, but the KRaft controller quorum does not"), err
    assert "Cannot reach any broker" not in err
    # The broker forwards it, and answers REQUEST_TIMED_OUT when the controller does not (as Kafka).
    code, _, err = sh(sandbox, "create-topic --topic t", timeout_s=2)
    assert code == 1 and ("forwards it to the KRaft controller" in err or "the controller the brokers forward it to"
                          in err), err
    ok(sandbox, "sandbox start-controller 100")


def test_acls_on_a_sandbox_without_an_authorizer_say_how_to_get_one(sandbox):
    code, _, err = sh(sandbox, "describe-acls")
    assert code == 1 and "kafka-shell sandbox --authorizer" in err, err
    readme = (ROOT / "README.md").read_text()
    assert "kafka-shell sandbox --authorizer" in readme


# -- KIP-4's --blocking on create-topic, alter-topic and delete-topic ------------------------------

def _broker_knows(bootstrap: str, topic: str) -> int | None:
    """The partition count a client bootstrapped from one broker is told for `topic` (None:
    unknown). Every topic is listed: a Metadata request naming a topic Kafka does not know
    would create it (auto.create.topics.enable)."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    md = admin.list_topics(timeout=20)
    t = md.topics.get(topic)
    return None if t is None or t.error is not None else len(t.partitions)


def test_blocking_returns_once_every_broker_shows_the_change(kafka4):
    brokers = kafka4.bootstrap.split(",")

    def each(line: str) -> str:
        p = shell("--bootstrap-server", kafka4.bootstrap, "--command", line)
        assert p.returncode == 0, p.stderr
        assert "Every live broker (3) shows" in p.stderr, p.stderr
        return p.stderr
    each("create-topic --topic blocked --partitions 2 --replication-factor 2 --blocking")
    assert [_broker_knows(b, "blocked") for b in brokers] == [2, 2, 2]   # each broker, right away
    each("alter-topic --topic blocked --partitions 4 --blocking")
    assert [_broker_knows(b, "blocked") for b in brokers] == [4, 4, 4]
    each("delete-topic --topic blocked --yes --blocking")
    assert [_broker_knows(b, "blocked") for b in brokers] == [None, None, None]


def test_blocking_names_the_brokers_that_lag_at_the_timeout(sandbox):
    ok(sandbox, "sandbox delay 3 20000")
    code, _, err = sh(sandbox, "create-topic --topic slow --replica-assignment 1:2 --blocking", timeout_s=1.5)
    assert code == 1 and "Created topic slow." in err, err
    assert "Timed out after 1.5 s waiting for the brokers to show the new topic(s): broker(s) 3 do not yet" in err
    code, _, err = sh(sandbox, "create-topic --topic slow2 --replica-assignment 1:2 --blocking --dry-run")
    assert code == 0 and "Every live broker" not in err   # a dry run changes nothing to wait for


# -- watch ---------------------------------------------------------------------------------------------

def test_watch_redraws_a_read_command_and_marks_what_changed(sandbox):
    import io
    import threading

    from kafka_shell.face.runner import run_line
    from kafka_shell.connection.session import Session, Target
    ok(sandbox, "create-topic --topic w --replica-assignment 3:1")
    out = io.StringIO()
    s = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=out, stderr=io.StringIO(),
                interactive=True)

    def break_broker_after_round_one() -> None:
        _wait("round 1", lambda: "round 1;" in out.getvalue())
        sandbox.stop_broker(3)
    breaker = threading.Thread(target=break_broker_after_round_one)
    breaker.start()
    try:
        # The first round may run before the broker stops; rounds go on until the change shows.
        assert run_line(s, "watch describe-topic --topic w --interval 0.2s --count 30") == 0
    finally:
        breaker.join()
        s.close()
    rounds = out.getvalue().split("Every 0.2 s: describe-topic --topic w")[1:]
    assert len(rounds) == 30 and "*" not in rounds[0]
    moved = next(r for r in rounds if "*" in r)
    row = next(line for line in moved.splitlines() if line.startswith("w ") and line.split()[1] == "0")
    assert row.split()[2:5] == ["1*", "3,1", "1*"], moved     # the new leader and ISR, marked
    assert "Watched describe-topic --topic w for 30 round(s)." in s.stderr.getvalue()


def test_watch_refuses_what_changes_the_cluster_and_stops_on_ctrl_c(sandbox):
    for line, said in (("watch delete-topic --topic t", "watch re-runs read commands only: delete-topic"),
                       ("watch reassign-partitions --execute --reassignment-json-file f",
                        "it reads with --list or --verify"),
                       ("watch output json", "not output")):
        code, _, err = sh(sandbox, line)
        assert code == 2 and said in err, err
    with _running(sandbox, "--command", "watch list-topics --interval 0.1s") as proc:
        _read_line(proc, time.monotonic() + 60)   # the first round's header
        err = _interrupt(proc)
    assert proc.returncode == 0 and "Watched list-topics for" in err, err


# -- completion of a million topics (bench/bench_completion.py times it) ---------------------------

def test_fuzzy_index_blocks_skip_names_without_the_characters_and_keep_every_match():
    from kafka_shell.face.repl import fuzzy
    names = [f"orders-{i}" for i in range(3 * fuzzy.BLOCK)] + ["zeta-svc", "alpha-xylo"]
    index = fuzzy.FuzzyIndex(names)
    assert len(index.blocks) == 4
    assert index.matches("xyl", 10) == ["alpha-xylo"]          # in the last block, by subsequence
    assert index.matches("ztsv", 10) == ["zeta-svc"]
    assert index.matches("qqq", 10) == []
    found = index.matches("rdrs-12287", 10)                      # across a block boundary
    assert "orders-12287" in found


def test_watch_completes_the_command_it_watches():
    from kafka_shell.declarations.registry import load_commands
    from kafka_shell.face.repl.suggest import CommandName, OptionName, Topic, suggest
    registry = load_commands()
    assert CommandName() in suggest("watch desc", registry).suggestions
    assert suggest("watch describe-topic --topic o", registry).suggestions == (Topic(),)
    assert OptionName("describe-topic") in suggest("watch --interval 2s describe-topic --u", registry).suggestions


def test_quorum_lag_time_and_snapshot_help_read_right(sandbox):
    out, _ = ok(sandbox, "describe-quorum")
    assert "MaxFollowerLagTimeMs" in out and " ms" not in out.split("\n")[2], out   # a number of ms, as Kafka's tool
    out, _ = ok(sandbox, "snapshot --help")
    assert "consistent" not in out and "one after another" in out
