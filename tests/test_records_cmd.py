"""Record commands on a sandbox: produce and consume round trips with keys, headers and binary
values (checked against real confluent-kafka clients), get-offsets by time against the produced
timestamps, delete-records by arguments and by Kafka's file, and exit codes on partial failure."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_shell.face.runner import run_line
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows
from tests.test_groups_cmd import committed, create, ok, sh
from tests.test_oneshot import run


def read_back(sandbox, topic: str, partitions: int, count: int) -> list:
    """`count` records of `topic` read from the start with a real consumer (a bounded wait)."""
    c = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "reader", "log_level": 3,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    deadline = time.monotonic() + 20
    while len(got) < count:
        assert time.monotonic() < deadline, f"read {len(got)} of {count} records"
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append(m)
    c.close()
    return got


def test_produce_then_consume_round_trip_with_keys_headers_and_binary_values(sandbox, tmp_path: Path):
    create(sandbox, "t", 2)
    out, err = ok(sandbox, "produce --topic t --key-separator : --header source=test --header n=1 "
                           "--partition 1 k1:hello 'k2:two words' -o json")
    assert json_rows(out) == [{"record": 1, "partition": 1, "offset": 0}, {"record": 2, "partition": 1, "offset": 1}]
    assert err.strip() == "Produced 2 record(s) to t."
    values = tmp_path / "values.bin"
    values.write_bytes(b"\x00\xff\xfe\n\nplain\n")  # a binary line, a blank line (skipped), a text line
    out, _ = ok(sandbox, f"produce --topic t --file {values} --partition 0 -o json")
    assert [r["offset"] for r in json_rows(out)] == [0, 1]

    got = read_back(sandbox, "t", 2, 4)
    seen = {(m.partition(), m.offset()): (m.key(), m.value(), m.headers()) for m in got}
    assert seen[(1, 0)] == (b"k1", b"hello", [("source", b"test"), ("n", b"1")])
    assert seen[(1, 1)] == (b"k2", b"two words", [("source", b"test"), ("n", b"1")])
    assert seen[(0, 0)] == (None, b"\x00\xff\xfe", None)
    assert seen[(0, 1)] == (None, b"plain", None)

    # Records from a real producer: text as text, bytes that are not UTF-8 as base64 under a name
    # that says so (json gives exact bytes: the text "0x00fffe" is no longer the bytes 00 ff fe).
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    producer.produce("t", key=b"\x81", value=b"caf\xc3\xa9", partition=0, headers=[("bin", b"\x90")],
                     timestamp=1_700_000_000_000)
    assert producer.flush(10) == 0
    out, err = ok(sandbox, "consume --topic t --partition 0 --from-beginning --max-messages 3 -o json")
    assert json_rows(out) == [
        {"partition": 0, "offset": 0, "timestamp": seen_ts(got, 0, 0), "key": None, "key_base64": None, "headers": [],
         "value": None, "value_base64": "AP/+"},
        {"partition": 0, "offset": 1, "timestamp": seen_ts(got, 0, 1), "key": None, "key_base64": None, "headers": [],
         "value": "plain", "value_base64": None},
        {"partition": 0, "offset": 2, "timestamp": 1_700_000_000_000, "key": None, "key_base64": "gQ==",
         "headers": [{"key": "bin", "value_base64": "kA=="}], "value": "café", "value_base64": None}]
    assert err.strip() == "Consumed 3 record(s): --max-messages 3 reached."
    out, _ = ok(sandbox, "consume --topic t --partition 1 --offset 1 --timeout 0.5 -o json")
    assert [(r["key"], r["value"], r["headers"]) for r in json_rows(out)] == [
        ("k2", "two words", [{"key": "source", "value": "test"}, {"key": "n", "value": "1"}])]
    # The table shows bytes that are not UTF-8 as 0x-hex, for people.
    out, _ = ok(sandbox, "consume --topic t --partition 0 --offset 2")
    assert "0x81" in out and "bin=0x90" in out and "café" in out
    # Bytes of the command line that are not UTF-8 (as Python hands them over) go out as they came.
    ok(sandbox, "produce --topic t --partition 1 \udcff\udcfe")
    out, _ = ok(sandbox, "consume --topic t --partition 1 --offset 2 --timeout 0.5 -o json")
    assert [r["value_base64"] for r in json_rows(out)] == ["//4="]


def seen_ts(messages: list, partition: int, offset: int) -> int:
    return next(m.timestamp()[1] for m in messages if (m.partition(), m.offset()) == (partition, offset))


def test_consume_as_a_group_commits_what_it_read(sandbox):
    create(sandbox, "t", 1)
    ok(sandbox, "produce --topic t a b c d")
    out, _ = ok(sandbox, "consume --topic t --group readers --from-beginning --max-messages 3 -o json")
    assert [r["value"] for r in json_rows(out)] == ["a", "b", "c"]
    assert committed(sandbox, "readers") == {0: 3}
    out, _ = ok(sandbox, "describe-group readers -o json")
    assert [(r["current_offset"], r["log_end_offset"], r["lag"]) for r in json_rows(out, "offsets")] == [(3, 4, 1)]
    # Without --group nothing is committed and no group is left behind.
    ok(sandbox, "consume --topic t --from-beginning --max-messages 1")
    out, _ = ok(sandbox, "list-groups -o json")
    assert [r["group"] for r in json_rows(out)] == ["readers"]


def test_consume_and_produce_refuse_bad_input_in_one_line(sandbox):
    create(sandbox, "t", 1)
    for line in ("consume --topic t --offset 3", "consume --topic t --partition 9",
                 "produce --topic t --key-separator : novalue", "produce --topic t --partition 4 x",
                 "consume --topic t --from-beginning --offset 1 --partition 0"):
        code, out, err = sh(sandbox, line)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and "Traceback" not in err, (line, err)
    code, _, err = sh(sandbox, "produce --topic missing x")
    assert code == 1 and 'Topic "missing" does not exist' in err


def test_get_offsets_by_time_as_kafka_get_offsets(sandbox):
    create(sandbox, "t", 2)
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    base = 1_700_000_000_000
    for i, ts in enumerate([base, base + 5000, base + 2000]):  # out of order: max-timestamp is offset 1
        producer.produce("t", value=str(i).encode(), partition=0, timestamp=ts)
    assert producer.flush(10) == 0
    out, _ = ok(sandbox, "get-offsets --topic t")
    assert out == "t:0:3\nt:1:0\n"  # kafka-get-offsets' lines
    out, _ = ok(sandbox, "get-offsets --topic t --time earliest -o json")
    assert [(r["partition"], r["offset"]) for r in json_rows(out)] == [(0, 0), (1, 0)]
    out, err = ok(sandbox, "get-offsets --topic t --time max-timestamp --partitions 0 -o json")
    assert json_rows(out) == [{"topic": "t", "partition": 0, "offset": 1, "timestamp": base + 5000}]
    out, err = ok(sandbox, f"get-offsets --topic t --time {base + 1000}")
    assert out == "t:0:1\n" and "t-1: no record at or after that time." in err  # first ts >= it
    out, _ = ok(sandbox, "get-offsets --topic t --partitions 0 --time 2023-11-14T22:13:21Z")
    assert out == "t:0:1\n"  # 1700000001000 ms
    assert ok(sandbox, "get-offsets --topic t --time -2")[0] == "t:0:0\nt:1:0\n"
    code, _, err = sh(sandbox, "get-offsets --topic t --time soon")
    assert code == 2 and "latest, earliest, max-timestamp" in err


def test_delete_records_by_arguments_and_by_kafkas_file_with_partial_failure(sandbox, tmp_path: Path):
    create(sandbox, "t", 2)
    ok(sandbox, "produce --topic t --partition 0 a b c d e")
    ok(sandbox, "produce --topic t --partition 1 a b")
    code, _, err = sh(sandbox, "delete-records --topic t --partition 0 --before-offset 2")
    assert code == 2 and "--yes" in err  # destructive: confirmation outside the REPL
    out, _ = ok(sandbox, "delete-records --topic t --partition 0 --before-offset 2 --yes -o json")
    assert json_rows(out) == [{"topic": "t", "partition": 0, "low_watermark": 2, "status": "Successful"}]
    plan = tmp_path / "offsets.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": 4},
                                               {"topic": "t", "partition": 1, "offset": 9}], "version": 1}))
    code, out, err = sh(sandbox, f"delete-records --offset-json-file {plan} --yes -o json")
    assert code == 1
    assert json_rows(out) == [{"topic": "t", "partition": 0, "low_watermark": 4, "status": "Successful"},
                              {"topic": "t", "partition": 1, "low_watermark": None, "status": "Error"}]
    assert err.strip() == ("t-1: offset 9 is beyond the high watermark: give a lower --before-offset "
                           "(see get-offsets)")
    assert ok(sandbox, "get-offsets --topic t --time earliest")[0] == "t:0:4\nt:1:0\n"
    plan.write_text('{"partitions": [{"topic": "t", "partition": "0", "offset": 1}]}')
    code, _, err = sh(sandbox, f"delete-records --offset-json-file {plan} --yes")
    assert code == 2 and "integer partition" in err


def test_produce_from_stdin_in_a_real_process(sandbox):
    create(sandbox, "t", 1)
    p = run(sandbox, "produce --topic t", "-o", "json", stdin="one\ntwo\n")
    assert p.returncode == 0, p.stderr
    assert [r["offset"] for r in json_rows(p.stdout)] == [0, 1]
    p = run(sandbox, "consume --topic t --from-beginning --max-messages 2")
    assert p.returncode == 0 and "one" in p.stdout and "two" in p.stdout


def test_in_the_repl_the_context_topic_serves_and_consume_stops_at_10(sandbox):
    create(sandbox, "t", 1)
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=out, stderr=err, interactive=True,
                      output="json")
    try:
        assert run_line(session, "topic t") == 0
        assert run_line(session, "produce " + " ".join(f"v{i}" for i in range(12))) == 0
        out.truncate(0), out.seek(0)
        assert run_line(session, "consume --from-beginning") == 0, err.getvalue()
        assert [r["value"] for r in json_rows(out.getvalue())] == [f"v{i}" for i in range(10)]
        assert err.getvalue().splitlines()[-1] == "Consumed 10 record(s): the REPL's limit of 10 (--max-messages N for more)."
        out.truncate(0), out.seek(0)
        assert run_line(session, "get-offsets") == 0
        assert json_rows(out.getvalue())[0]["offset"] == 12
    finally:
        session.close()
