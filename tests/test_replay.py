"""Replay mode (`--file script.ksh`, `-` and piped stdin) as a real process on a sandbox."""

from __future__ import annotations

import os
import select
import subprocess
import time

import pytest

from kafka_shell.base.files import MAX_INPUT_BYTES
from kafka_shell.sandbox.server import Sandbox
from tests.output import json_documents
from tests.test_oneshot import ROOT, SHELL, shell, topics


def replay(sandbox, tmp_path, script: str, *extra: str):
    path = tmp_path / "script.ksh"
    path.write_text(script)
    return shell("--bootstrap-server", sandbox.bootstrap, "--file", str(path), *extra), str(path)


def test_a_file_that_does_not_parse_runs_nothing(sandbox, tmp_path):
    script = ("create-topic --topic a\n"
              "topic a\n"
              "describe-topic --under-replicated-partitions\n"   # --topic from the context line
              "create-topic --topic b --partiton 2\n"
              "delete-records --partition 0 --before-offset 1\n"  # destructive, without --yes
              "creat-topic --topic c; list-topics --csv-table topics\n")
    p, path = replay(sandbox, tmp_path, script)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [
        f"{path}:4: Unknown option --partiton for create-topic (did you mean --partitions?)",
        f"{path}:5: Delete the records of a-0 before offset 1: add --yes to confirm",
        f"{path}:6: Unknown command creat-topic (did you mean create-topic?)",
        f"{path}:6: --csv-table picks the table of --output csv: add -o csv to list-topics (or leave --csv-table out)",
        f"{path}: 4 errors; nothing was run."]
    assert topics(sandbox) == {}
    p = shell("--check", str(path))   # the same check alone, without a cluster
    assert p.returncode == 2 and p.stderr.splitlines()[-1] == f"{path}: 7 command(s) checked, 4 error(s)."
    (tmp_path / "script.ksh").write_text("create-topic --topic a\ncreate-topic --topic b --partiton 2\n")
    p = shell("--bootstrap-server", sandbox.bootstrap, "--file", str(path))
    assert p.returncode == 2 and p.stderr == (f"{path}:2: Unknown option --partiton for create-topic "
                                              "(did you mean --partitions?) (nothing was run)\n")
    p = shell("--check", "-", stdin="topic a\ndescribe-topic\nalter-topic --partitions x\n")
    assert p.returncode == 2 and p.stderr.splitlines() == [
        'stdin:3: Invalid value "x" for --partitions of alter-topic: expected a positive integer from 1 to 2147483647',
        "stdin: 3 command(s) checked, 1 error(s)."]
    assert shell("--check", "-", stdin="list-topics\n").stderr == "stdin: 1 command(s) checked, no errors.\n"


def test_first_failure_stops_with_file_and_line_number(sandbox, tmp_path):
    script = ("create-topic --topic a\n"
              "# a comment line\n"
              "\n"
              "create-topic --topic b --partiton 2\n"
              "create-topic --topic c\n")
    p, path = replay(sandbox, tmp_path, script, "--no-check")   # lines run as they come
    assert p.returncode == 1
    assert f"{path}:4: Unknown option --partiton for create-topic (did you mean --partitions?)" in p.stderr
    assert set(topics(sandbox)) == {"a"}  # line 5 never ran
    assert "5> " not in p.stderr and "1> create-topic --topic a" in p.stderr


def test_continue_on_error_runs_every_line_and_still_fails(sandbox, tmp_path):
    script = "create-topic --topic a\ncreate-topic --topic a\ncreate-topic --topic c\n"
    p, path = replay(sandbox, tmp_path, script, "--continue-on-error")
    assert p.returncode == 1
    assert f'{path}:2: Topic "a" already exists (use --if-not-exists).' in p.stderr
    assert set(topics(sandbox)) == {"a", "c"}


def test_continuation_comments_and_context_lines(sandbox, tmp_path):
    script = ("create-topic --topic orders \\\n"
              "    --partitions 3 \\\n"
              "    --replication-factor 2   # trailing comment\n"
              "topic orders\n"
              "alter-topic --partitions 6\n"
              "describe-topic\n"
              "topic\n"
              "describe-topic --topic orders --under-replicated-partitions\n")
    p, path = replay(sandbox, tmp_path, script, "--output", "json")
    assert p.returncode == 0, p.stderr
    assert topics(sandbox) == {"orders": 6}
    assert "1> create-topic --topic orders --partitions 3 --replication-factor 2" in p.stderr
    assert 'Switched to "orders" topic.' in p.stderr and 'Left "orders" topic.' in p.stderr
    assert "5> alter-topic --partitions 6" in p.stderr
    outputs = [d for d in json_documents(p.stdout) if d]   # {} is a line without tables
    described = outputs[0]
    assert described["topics"][0]["partition_count"] == 6
    assert outputs[1] == {"partitions": []}  # nothing under-replicated


def test_context_topic_must_exist(sandbox, tmp_path):
    p, path = replay(sandbox, tmp_path, "topic nope\ndescribe-topic\n")
    assert p.returncode == 1
    assert f'{path}:1: Topic "nope" does not exist' in p.stderr


def test_stdin_with_dash_and_piped(sandbox):
    p = shell("--bootstrap-server", sandbox.bootstrap, "--file", "-", "--quiet",
              stdin="create-topic --topic s1\n")
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == "Created topic s1."  # --quiet: no echo
    p = shell("--bootstrap-server", sandbox.bootstrap, stdin="create-topic --topic s2\nlist-topics\n")
    assert p.returncode == 0, p.stderr
    assert "s1" in p.stdout and "s2" in p.stdout
    assert "1> create-topic --topic s2" in p.stderr
    p = shell("--bootstrap-server", sandbox.bootstrap, stdin="list-topics\ncrate-topic\n")
    assert p.returncode == 1 and "stdin:2: Unknown command crate-topic" in p.stderr


def test_destructive_lines_need_yes(sandbox, tmp_path):
    p, path = replay(sandbox, tmp_path, "create-topic --topic d\ndelete-topic --topic d\n")
    assert p.returncode == 1
    assert f"{path}:2: Delete 1 topic (d; 1 partition): add --yes to confirm" in p.stderr
    assert "d" in topics(sandbox)
    p, _ = replay(sandbox, tmp_path, "delete-topic --topic d\n", "--yes")
    assert p.returncode == 0 and "d" not in topics(sandbox)


def test_consecutive_create_topic_lines_are_one_request(sandbox, tmp_path):
    lines = [f"create-topic --topic batch-{i} --partitions 2" for i in range(20)]
    lines.insert(7, "create-topic --topic 'bad name'")
    lines.insert(12, "create-topic --topic batch-3")  # a name twice in one run
    p, path = replay(sandbox, tmp_path, "\n".join(lines) + "\nlist-topics\n",
                     "--continue-on-error", "--debug")
    requests = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: CreateTopics request")]
    # Line 8 (bad name) fails before any request; the other 21 lines go out in two requests:
    # a request may hold a name only once, so the second batch-3 (line 13) starts a new one.
    assert requests == ["debug: CreateTopics request: 11 topic(s)", "debug: CreateTopics request: 10 topic(s)"]
    assert f'{path}:8: Invalid topic name "bad name"' in p.stderr
    assert f'{path}:13: Topic "batch-3" already exists (use --if-not-exists).' in p.stderr
    assert len([n for n in topics(sandbox) if n.startswith("batch-")]) == 20
    assert p.returncode == 1


def test_batch_stops_at_first_failure_without_running_later_lines(sandbox, tmp_path):
    script = "".join(f"create-topic --topic s{i}\n" for i in range(5))
    script = script.replace("--topic s3", "--topic s3 --replication-factor 9")
    p, path = replay(sandbox, tmp_path, script, "--debug")
    assert p.returncode == 1
    assert f'{path}:4: Replication factor 9 of "s3"' in p.stderr
    assert set(topics(sandbox)) == {"s0", "s1", "s2"}
    requests = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: CreateTopics request")]
    assert requests == ["debug: CreateTopics request: 5 topic(s) (validate only)",
                        "debug: CreateTopics request: 3 topic(s)"]


@pytest.mark.parametrize("mode", ["kraft", "zk"])
def test_controller_killed_in_the_middle_of_a_replay(tmp_path, mode):
    script = ("create-topic --topic first --replication-factor 3\n"
              "sandbox kill-controller\n"
              "create-topic --topic second --replication-factor 3\n"
              "list-topics\n")
    path = tmp_path / "kill.ksh"
    path.write_text(script)
    # A `kafka-shell sandbox`-like server the shell drives through its control endpoint.
    controllers = {"controllers": 3} if mode == "kraft" else {}
    with Sandbox(brokers=3, mode=mode, serve_control=True, **controllers) as sandbox:
        p = shell("--bootstrap-server", sandbox.bootstrap, "--file", str(path), "--output", "csv")
    assert p.returncode == 0, p.stderr
    if mode == "kraft":  # another voter takes over; brokers forward, nobody answers NOT_CONTROLLER
        assert "active controller now 101 (epoch 2)." in p.stderr
    else:  # the AdminClient meets NOT_CONTROLLER, the shell finds the new controller and says so once
        assert p.stderr.count("Controller moved from broker") == 1, p.stderr
    assert "Created topic second." in p.stderr
    assert p.stdout.splitlines()[1:] == ["first,1,3", "second,1,3"]


# -- standard input streams ----------------------------------------------------------------------


def _shell_process(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*SHELL, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)


def _read_until(stream, wanted: bytes, seconds: float = 20) -> bytes:
    """What the stream gives until `wanted` appears (or it ends, or time is up)."""
    got = b""
    deadline = time.monotonic() + seconds
    while wanted not in got and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.1)
        if ready:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            got += chunk
    return got


def test_stdin_lines_run_as_they_come(sandbox):
    """Each line runs when it arrives, before the next is even written (it used to read all of
    standard input first)."""
    proc = _shell_process("--bootstrap-server", sandbox.bootstrap, "--file", "-", "--output", "csv")
    try:
        proc.stdin.write(b"create-topic --topic streamed \\\n   --partitions 2\n")
        proc.stdin.flush()
        assert b"Created topic streamed." in _read_until(proc.stderr, b"Created topic streamed.")
        proc.stdin.write(b"list-topics\n")
        proc.stdin.flush()
        assert b"streamed,2" in _read_until(proc.stdout, b"streamed,2")
        assert proc.poll() is None  # still reading its input
    finally:
        proc.stdin.close()
        assert proc.wait(30) == 0
        proc.stdout.close()
        proc.stderr.close()


def test_a_stream_keeps_echo_continuations_context_batches_and_continue_on_error(sandbox):
    script = ("create-topic --topic b1; create-topic --topic b2\n"
              "create-topic --topic b3 \\\n"
              "   --partitions 3   # a comment\n"
              "create-topic --topic b1\n"
              "topic b3\n"
              "describe-topic\n")
    p = shell("--bootstrap-server", sandbox.bootstrap, "--continue-on-error", "--debug", "-o", "json", stdin=script)
    assert p.returncode == 1
    requests = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: CreateTopics request")]
    assert requests == ["debug: CreateTopics request: 3 topic(s)", "debug: CreateTopics request: 1 topic(s)"]
    assert "1> create-topic --topic b1" in p.stderr and "2> create-topic --topic b3 --partitions 3" in p.stderr
    assert 'stdin:4: Topic "b1" already exists (use --if-not-exists).' in p.stderr
    assert 'Switched to "b3" topic.' in p.stderr
    assert json_documents(p.stdout)[-1]["topics"][0]["partition_count"] == 3
    assert set(topics(sandbox)) == {"b1", "b2", "b3"}


def test_a_stream_line_longer_than_a_files_limit_is_refused_with_its_number(tmp_path):
    long_line = b"#" + b"x" * MAX_INPUT_BYTES + b"\n"  # a comment: it would be dropped, were it read
    proc = _shell_process("--file", "-")
    try:
        out, err = proc.communicate(b"output json\noutput\n" + long_line + b"output table\n", timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 2
    assert err.decode().splitlines()[-1] == ("stdin:3: a line longer than 64 MiB (the limit of a script file): "
                                             "give one command a line")
    assert "1> output json" in err.decode() and "2> output" in err.decode()  # lines 1 and 2 ran
    assert "4> " not in err.decode()  # line 4 did not


def test_a_quote_left_open_on_a_stream_stops_at_the_limit(tmp_path):
    stream = b"output json\noutput 'table\n" + (b"y" * 1_000_000 + b"\n") * 70
    proc = _shell_process("--file", "-")
    try:
        out, err = proc.communicate(stream, timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 2
    assert err.decode().splitlines()[-1].startswith("stdin:2: a command longer than 64 MiB")


def test_bad_utf8_on_a_stream_names_its_line():
    proc = _shell_process("--file", "-")
    out, err = proc.communicate(b"output json\noutput \xff\n", timeout=60)
    assert proc.returncode == 2
    assert err.decode().splitlines()[-1] == ("standard input line 2 is not UTF-8 text (byte 0xff at offset 7): "
                                             "give a text file")


def test_a_run_of_creates_goes_out_in_requests_kraft_accepts(sandbox, tmp_path):
    """KRaft bounds a CreateTopics request to 10,000 metadata records (a topic, each partition,
    each config): two topics of 5,000 partitions are 10,002, so they go out in two requests."""
    script = "create-topic --topic a --partitions 5000 --replication-factor 1\n" \
             "create-topic --topic b --partitions 5000 --replication-factor 1\n"
    p, _ = replay(sandbox, tmp_path, script, "--debug")
    assert p.returncode == 0, p.stderr
    requests = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: CreateTopics request")]
    assert requests == ["debug: CreateTopics request: 1 topic(s) (validate only)"] * 2 \
        + ["debug: CreateTopics request: 1 topic(s)"] * 2     # the run's check, then the creates
    assert topics(sandbox) == {"a": 5000, "b": 5000}
