"""Where the REPL sends results, as a shell does: `> FILE`, `>> FILE`, `| COMMAND`, and pgcli's
`\\o FILE` until `\\o` alone; messages stay on the terminal, and no secret reaches a file."""

from __future__ import annotations

import io
import json

from confluent_kafka import Producer

from kafka_shell.declarations.parsing import split_redirect
from kafka_shell.connection.session import Session, Target
from tests.test_groups_cmd import commit, create, produce
from tests.test_repl import data_dir, run_piped  # noqa: F401 - the fixture

EXPORT = "reset-offsets --group app --topic t --to-earliest --export"


def test_split_redirect_reads_the_line_as_a_shell_does():
    assert split_redirect("list-topics") == ("list-topics", "", "")
    assert split_redirect("list-topics > out.txt") == ("list-topics", ">", "out.txt")
    assert split_redirect("list-topics>>'my file'") == ("list-topics", ">>", "'my file'")
    assert split_redirect("list-topics | grep -c orders > n") == ("list-topics", "|", "grep -c orders > n")
    assert split_redirect("describe-acls --principal 'User:a>b' | sort") == ("describe-acls --principal 'User:a>b'",
                                                                             "|", "sort")
    assert split_redirect("list-topics # > not.txt") == ("list-topics # > not.txt", "", "")


def test_results_go_to_a_file_a_command_or_every_result_to_a_file(sandbox, data_dir, tmp_path):  # noqa: F811
    create(sandbox, "t", 2)
    produce(sandbox, "t", [3, 2])
    commit(sandbox, "app", "t", {0: 2, 1: 1})
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=out, stderr=err)
    plan, every, piped = tmp_path / "plan.csv", tmp_path / "all.txt", tmp_path / "piped.txt"
    try:
        assert run_piped(session, f"{EXPORT} > {plan}",                        # the help's own example
                         f"list-topics -o json >> {plan}",
                         f"consume --topic t --from-beginning --raw | sort -r > {piped}",
                         f"\\o {every}", "describe-topic --topic t", "get-offsets --topic t", "\\o",
                         "list-topics --topic nope > /nonexistent-dir/x.txt", "exit") == 0
    finally:
        session.close()
    first, second, appended = plan.read_text().split("\n", 2)
    assert (first, second) == ("t,0,0", "t,1,0")   # Kafka's CSV, which --from-file reads back
    assert "t" in [t["topic"] for t in json.loads(appended)["topics"]]
    assert piped.read_text() == "".join(f"{p}-{i}\n" for p, i in sorted(((0, 0), (0, 1), (0, 2), (1, 0), (1, 1)),
                                                                        reverse=True))
    every_text = every.read_text()
    assert every_text.startswith("Topic    TopicId") and every_text.endswith("\nt:0:3\nt:1:2\n")
    assert "t:0:3" not in out.getvalue() and "t,0,0" not in out.getvalue()   # none of it on the terminal
    messages = err.getvalue()
    assert "Consumed 5 record(s): reached the end of the log." in messages   # messages stay on the terminal
    assert f"Results go to {every} (\\o alone: back to the terminal)." in messages
    assert "Cannot write /nonexistent-dir/x.txt: No such file or directory" in messages


def test_a_pipe_that_stops_reading_stops_a_stream_and_no_secret_is_written(sandbox, data_dir, tmp_path,  # noqa: F811
                                                                           monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    create(sandbox, "t", 1)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    for i in range(200):   # more than a pipe holds: the writer meets head's end
        producer.produce("t", value=b"%03d" % i + b"." * 1000, partition=0)
    assert producer.flush(10) == 0
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=out, stderr=err)
    head, listed = tmp_path / "head.txt", tmp_path / "clusters.txt"
    try:
        assert run_piped(session, f"consume --topic t --from-beginning --follow --max-messages 500 --raw "
                                  f"| head -2 > {head}",
                         f"add-cluster vault --bootstrap-server {sandbox.bootstrap} -X sasl.password=hunter2 "
                         f"-X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=PLAIN --store-secret > {listed}",
                         f"clusters -o json >> {listed}", "exit") == 0
    finally:
        session.close()
    assert head.read_text() == "".join(f"{i:03d}{'.' * 1000}\n" for i in range(2))
    assert "(interrupted)." in err.getvalue()   # it stopped when head did, not at --timeout
    assert "hunter2" not in listed.read_text() and "vault" in listed.read_text()
    assert "hunter2" not in (data_dir / "history").read_text()


def test_outside_the_repl_a_redirect_word_says_where_it_works(sandbox):
    from tests.test_groups_cmd import sh
    code, out, err = sh(sandbox, "list-topics > out.txt")
    assert code == 2 and "in the interactive shell; elsewhere redirect kafka-shell's own output" in err
