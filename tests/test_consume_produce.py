"""consume and produce as kcat and Kafka's console clients have them, on a sandbox: where a read
starts (last N, a time), the line formats (kcat's -f tokens, the console consumer's key and
header lines, raw bytes, base64), exact bytes in json, the isolation level, and how a read ends
(the log end read when it began, an offset reset said once, a slow leader's partition named);
produce's partitioner (Java's murmur2), headers, compression, acks and rate. Each is read back
with a real client or checked in the sandbox's own log. tests/real/test_records_real.py does the
same on real Kafka 4.4."""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import time

from confluent_kafka import Producer

from kafka_shell.face.runner import run_line
from kafka_shell.sandbox import log
from kafka_shell.connection.session import Session, Target
from tests.output import json_rows
from tests.test_groups_cmd import create, ok, sh
from tests.test_oneshot import SHELL, ROOT

HOUR_MS = 3_600_000


def produce_at(sandbox, topic: str, records: list[tuple[int, bytes | None, bytes | None, int]],
               headers: list | None = None) -> None:
    """(partition, key, value, timestamp) records from a real producer."""
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
    for partition, key, value, ts in records:
        producer.produce(topic, key=key, value=value, partition=partition, timestamp=ts, headers=headers)
    assert producer.flush(10) == 0


def raw(sandbox, line: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """A one-shot shell, stdout as bytes."""
    return subprocess.run([*SHELL, "--bootstrap-server", sandbox.bootstrap, "--command", line], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, cwd=ROOT)


def test_where_a_read_starts_last_n_and_from_a_time(sandbox):
    create(sandbox, "t", 2)
    now = int(time.time() * 1000)
    produce_at(sandbox, "t", [(0, None, b"old0", now - 3 * HOUR_MS), (0, None, b"old1", now - 2 * HOUR_MS),
                              (0, None, b"new0", now - 60_000), (1, None, b"new1", now - 30_000),
                              (1, None, b"new2", now - 10_000)])
    out, err = ok(sandbox, "consume --topic t --offset -2 -o json")
    assert sorted((r["partition"], r["value"]) for r in json_rows(out)) == [(0, "new0"), (0, "old1"), (1, "new1"),
                                                                           (1, "new2")]
    assert err == "Consumed 4 record(s): reached the end of the log.\n"
    out, _ = ok(sandbox, "consume --topic t --offset -5 --partition 1 -o json")   # not before the log's start
    assert [r["value"] for r in json_rows(out)] == ["new1", "new2"]
    out, _ = ok(sandbox, "consume --topic t --from-time -1h -o json")
    assert sorted(r["value"] for r in json_rows(out)) == ["new0", "new1", "new2"]
    out, _ = ok(sandbox, f"consume --topic t --from-time {now - 150 * 60_000} --partition 0 -o json")   # epoch ms
    assert [r["value"] for r in json_rows(out)] == ["old1", "new0"]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((now - 45_000) / 1000))
    out, _ = ok(sandbox, f"consume --topic t --from-time {iso} -o json")   # UTC without a zone, as Kafka's tools
    assert sorted(r["value"] for r in json_rows(out)) == ["new1", "new2"]
    out, err = ok(sandbox, "consume --topic t --from-time -1s -o json")   # after every record: nothing to read
    assert json_rows(out) == [] and err.startswith("Consumed 0 record(s)")
    for line, needle in (("consume --topic t --offset 3", "--offset N needs --partition"),
                         ("consume --topic t --from-time yesterday", "a time ago like -1h"),
                         ("consume --topic t --from-time -1h --from-beginning", "cannot be used together"),
                         ("consume --topic t --group g --offset -1", "--group starts at the group's committed"),
                         ("consume --topic t --follow", "--follow goes on past the log end")):
        code, out, err = sh(sandbox, line)
        assert code == 2 and out == "" and needle in err and len(err.splitlines()) == 1, (line, err)


def test_line_formats_kcat_tokens_console_consumer_lines_raw_and_base64(sandbox):
    create(sandbox, "t", 1)
    produce_at(sandbox, "t", [(0, b"k1", b"hello", 1_700_000_000_000), (0, None, b"\x00\xff\n", 1_700_000_000_001),
                              (0, b"k3", None, 1_700_000_000_002)], headers=[("h", b"1"), ("bin", b"\x90")])
    p = raw(sandbox, r"consume --topic t --from-beginning --format '%t/%p/%o %T key=%k(%K) value=%s(%S) [%h] %%\n'")
    assert p.returncode == 0, p.stderr
    assert p.stdout == (b"t/0/0 1700000000000 key=k1(2) value=hello(5) [h=1,bin=\x90] %\n"
                        b"t/0/1 1700000000001 key=(-1) value=\x00\xff\n(3) [h=1,bin=\x90] %\n"
                        b"t/0/2 1700000000002 key=k3(2) value=(-1) [h=1,bin=\x90] %\n")
    assert p.stderr == b"Consumed 3 record(s): reached the end of the log.\n"
    p = raw(sandbox, r"consume --topic t --offset 0 --partition 0 --max-messages 1 --format '%R%s\x00'")
    assert p.stdout == b"\x00\x00\x00\x05hello\x00"
    # Kafka's console consumer's lines (print.key, print.headers): tab-separated, null, NO_HEADERS.
    p = raw(sandbox, "consume --topic t --from-beginning --print-key --print-headers")
    assert p.stdout == (b"h:1,bin:\x90\tk1\thello\n" b"h:1,bin:\x90\tnull\t\x00\xff\n\n" b"h:1,bin:\x90\tk3\tnull\n")
    p = raw(sandbox, "consume --topic t --from-beginning --print-key --base64")
    assert p.stdout == b"azE=\taGVsbG8=\n" b"null\tAP8K\n" b"azM=\tnull\n"
    p = raw(sandbox, "consume --topic t --from-beginning --raw")   # kcat's default: each value, a newline
    assert p.stdout == b"hello\n\x00\xff\n\n\n"
    out, _ = ok(sandbox, "consume --topic t --from-beginning --base64 -o json")
    assert [(r["key_base64"], r["value_base64"], r["key"], r["value"]) for r in json_rows(out)] == [
        ("azE=", "aGVsbG8=", None, None), (None, "AP8K", None, None), ("azM=", None, None, None)]
    for line in ("consume --topic t --raw --print-key", "consume --topic t --format %s --raw",
                 "consume --topic t --print-key -o json", "consume --topic t --format '%x'"):
        code, out, err = sh(sandbox, line)
        assert code == 2 and out == "" and len(err.splitlines()) == 1, (line, err)


def test_json_and_jsonl_give_exact_bytes(sandbox):
    """The bytes 62 ff and the text "0x62ff", a NUL and the text "\\x00", an empty value and a
    tombstone: each its own json."""
    create(sandbox, "t", 1)
    produce_at(sandbox, "t", [(0, None, b"\x62\xff", 1), (0, None, b"0x62ff", 2), (0, b"a\x00", b"a\\x00", 3),
                              (0, b"", b"", 4), (0, b"k", None, 5)])
    out, _ = ok(sandbox, "consume --topic t --from-beginning -o jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["key"], r["key_base64"], r["value"], r["value_base64"]) for r in rows] == [
        (None, None, None, "Yv8="), (None, None, "0x62ff", None), ("a\x00", None, "a\\x00", None),
        ("", None, "", None), ("k", None, None, None)]
    assert base64.b64decode(rows[0]["value_base64"]) == b"\x62\xff"


def test_isolation_level_read_uncommitted_by_default_as_kafkas_console_consumer(sandbox):
    create(sandbox, "t", 1)
    produce_at(sandbox, "t", [(0, None, b"v%d" % i, 1) for i in range(4)])
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "transactional.id": "tx", "log_level": 3})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("t", b"open", partition=0)
    producer.flush(30)   # a transaction open from offset 4; the log ends at 5
    out, err = ok(sandbox, "consume --topic t --partition 0 --offset 0 -o json")
    assert [r["value"] for r in json_rows(out)] == ["v0", "v1", "v2", "v3", "open"]
    assert err == "Consumed 5 record(s): reached the end of the log.\n"
    out, err = ok(sandbox, "consume --topic t --partition 0 --offset 0 --isolation-level read_committed -o json")
    assert [r["value"] for r in json_rows(out)] == ["v0", "v1", "v2", "v3"]
    assert err.splitlines() == ["Consumed 4 record(s): reached the end of the log.",
                                "t-0: stopped at offset 4, its last stable offset: a transaction is open "
                                "(--isolation-level read_uncommitted reads past it)"]
    producer.abort_transaction(30)
    out, _ = ok(sandbox, "consume --topic t --from-beginning --isolation-level read_committed -o json")
    assert [r["value"] for r in json_rows(out)] == ["v0", "v1", "v2", "v3"]   # the aborted record is not read


def test_an_offset_reset_is_said_once_and_stops_the_read(sandbox):
    create(sandbox, "t", 2)
    ok(sandbox, "produce --topic t --partition 0 a b c")
    code, out, err = sh(sandbox, "consume --topic t --partition 0 --offset 7 -o json")
    assert code == 1 and out == ""
    assert err.splitlines() == ["Consumed 0 record(s): stopped at an offset reset.",
                                "t-0: offset 7 is outside the log (log start 0, log end 3): the read stopped "
                                "(--offset-reset earliest or latest goes on from there)"]
    ok(sandbox, "delete-records --topic t --partition 0 --before-offset 2 --yes")
    code, out, err = sh(sandbox, "consume --topic t --partition 0 --offset 0 --offset-reset earliest -o json")
    assert code == 0 and [r["value"] for r in json_rows(out)] == ["c"]
    assert err.splitlines() == ["Consumed 1 record(s): reached the end of the log.",
                                "t-0: offset 0 is outside the log (log start 2, log end 3): went on from offset 2 "
                                "(--offset-reset earliest)"]


def test_a_log_deleted_under_a_following_read_is_one_line_not_a_loop(sandbox):
    """The read is paused (SIGSTOP: librdkafka's threads too) while records are deleted past its
    position; when it goes on, its next fetch is out of range."""
    for topic, flags, code, values in (("t1", "", 1, [b"a", b"b", b"c"]),
                                       ("t2", "--offset-reset earliest", 0, [b"a", b"b", b"c", b"g"])):
        create(sandbox, topic, 1)
        ok(sandbox, f"produce --topic {topic} a b c")
        proc = subprocess.Popen([*SHELL, "--bootstrap-server", sandbox.bootstrap, "--command",
                                 f"consume --topic {topic} --from-beginning --follow --timeout 3 --raw {flags}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT)
        try:
            assert proc.stdout is not None
            got = [proc.stdout.readline() for _ in range(3)]   # caught up
            os.kill(proc.pid, signal.SIGSTOP)
            # Its fetch under way (fetch.wait.max.ms 100) is answered, empty, into the socket
            # meanwhile; records produced now would otherwise come in that answer.
            time.sleep(1)
            ok(sandbox, f"produce --topic {topic} d e f g")
            ok(sandbox, f"delete-records --topic {topic} --partition 0 --before-offset {6 if flags else 5} --yes")
            os.kill(proc.pid, signal.SIGCONT)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == code, stderr
        assert [line.rstrip(b"\n") for line in (*got, *stdout.splitlines(keepends=True))] == values
        lines = stderr.decode().splitlines()
        resets = [line for line in lines if "is outside the log" in line]
        assert len(resets) == 1, stderr   # said once, whatever librdkafka does after
        if flags:
            assert resets[0] == f"{topic}-0: offset 3 is outside the log (log start 6, log end 7): went on from offset 6 " \
                                "(--offset-reset earliest)"
        else:
            assert lines == ["Consumed 3 record(s): stopped at an offset reset.",
                             f"{topic}-0: offset 3 is outside the log (log start 5, log end 7): the read stopped "
                             "(--offset-reset earliest or latest goes on from there)"]


def test_a_slow_leader_is_named_and_does_not_hold_up_the_other_partitions(sandbox):
    create(sandbox, "a1", 3, 1)
    for p in range(3):
        ok(sandbox, f"produce --topic a1 --partition {p} x{p} y{p}")
    leaders = [sandbox.call(lambda p=p: sandbox.cluster.partition("a1", p).leader) for p in range(3)]
    slow = leaders[2]
    others = [p for p in range(3) if leaders[p] != slow]
    # The shell starts at a broker that answers (bootstrap with a hung broker is another test's).
    bootstrap = ",".join(f"{b.host}:{b.port}" for i, b in sandbox.cluster.brokers.items() if i != slow)
    sandbox.delay(slow, 30_000)
    try:
        for line, idle in (("consume --topic a1 --from-beginning -o json", 2), ("consume --topic a1 --timeout 1", 1)):
            out, err = io.StringIO(), io.StringIO()
            session = Session(target=Target(bootstrap, timeout_s=2), stdout=out, stderr=err)
            try:
                assert run_line(session, line) == 1, err.getvalue()
            finally:
                session.close()
            lines = err.getvalue().splitlines()
            assert f"a1-2: not read: its leader, broker {slow}, did not answer Fetch within {idle} s" in lines, lines
            if "from-beginning" in line:   # what the others hold is printed
                assert sorted(r["partition"] for r in json_rows(out.getvalue())) == sorted(others * 2)
                assert lines[0] == f"Consumed {2 * len(others)} record(s): stopped waiting after {idle} s without " \
                                   "a record."
    finally:
        sandbox.delay(slow, 0)


def test_produce_places_keyed_records_as_javas_producer_does(sandbox):
    create(sandbox, "k", 3)
    out, _ = ok(sandbox, "produce --topic k --key-separator : alice:1 bob:2 carol:3 -o json")
    assert [r["partition"] for r in json_rows(out)] == [0, 0, 2]   # Java's murmur2 (librdkafka's crc32: 2, 2, 2)
    # -X partitioner=... still chooses librdkafka's own.
    p = subprocess.run([*SHELL, "--bootstrap-server", sandbox.bootstrap, "-X", "partitioner=consistent",
                        "-o", "json", "--command", "produce --topic k --key-separator : alice:1 bob:2 carol:3"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert [r["partition"] for r in json_rows(p.stdout)] == [2, 2, 2]
    code, _, err = sh(sandbox, "produce --topic k --key-separator : alice:1 bob")
    assert code == 2 and err == 'Line 2 has no key separator ":": give KEY:VALUE on every line\n'


def test_produce_headers_per_line_and_on_every_record(sandbox, tmp_path):
    create(sandbox, "t", 1)
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"trace:1,src:web\tk1:v1\n\tk2:v2\nbin:\xff\tk3:v3\n")
    ok(sandbox, f"produce --topic t --parse-headers --key-separator : --header app:shell --header env=test --file {lines}")
    p = raw(sandbox, "consume --topic t --from-beginning --print-headers --print-key")
    assert p.stdout == (b"app:shell,env:test,trace:1,src:web\tk1\tv1\n" b"app:shell,env:test\tk2\tv2\n"
                        b"app:shell,env:test,bin:\xff\tk3\tv3\n")
    lines.write_bytes(b"no tab here\n")
    code, _, err = sh(sandbox, f"produce --topic t --parse-headers --file {lines}")
    assert code == 2 and "Line 1 has no headers" in err
    code, _, err = sh(sandbox, "produce --topic t --header novalue x")
    assert code == 2 and "KEY:VALUE" in err


def test_produce_compression_acks_and_rate(sandbox):
    create(sandbox, "t", 1)
    for codec, number in (("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4)):
        # (librdkafka sends a batch uncompressed when compressing does not make it smaller)
        ok(sandbox, f"produce --topic t --compression {codec} {codec}-a{'a' * 500} {codec}-b{'b' * 500}")
        codecs = sandbox.call(lambda: [log.codec_of(b.data) for b in sandbox.cluster.partition("t", 0).batches])
        assert codecs[-1] == number, (codec, codecs)
    out, _ = ok(sandbox, "produce --topic t --acks 0 x -o json")
    assert json_rows(out) == [{"record": 1, "partition": 0, "offset": None}]   # acks=0: no offset comes back
    ok(sandbox, "produce --topic t --rate 20 r0 r1 r2 r3 r4")
    out, _ = ok(sandbox, "consume --topic t --offset -5 -o json")
    stamps = [r["timestamp"] for r in json_rows(out)]
    assert stamps[-1] - stamps[0] >= 4 * 50 - 5   # 20 a second: the fifth goes out 200 ms after the first
    out, _ = ok(sandbox, "consume --topic t --from-beginning -o json")
    assert [r["value"][:6] for r in json_rows(out)][:2] == ["gzip-a", "gzip-b"]


def test_records_a_hung_leader_never_acknowledges_are_one_line_naming_it(sandbox):
    create(sandbox, "t", 2, 1)
    hung = sandbox.call(lambda: sandbox.cluster.partition("t", 1).leader)
    bootstrap = ",".join(f"{b.host}:{b.port}" for i, b in sandbox.cluster.brokers.items() if i != hung)
    sandbox.delay(hung, 30_000)
    out, err = io.StringIO(), io.StringIO()
    session = Session(target=Target(bootstrap, timeout_s=2), stdout=out, stderr=err)
    try:
        assert run_line(session, "produce --topic t --partition 1 " + " ".join(f"v{i}" for i in range(50))) == 1
    finally:
        session.close()
        sandbox.delay(hung, 0)
    assert out.getvalue() == ""   # nothing was acknowledged: no table
    assert err.getvalue().splitlines() == [
        "Produced 0 of 50 record(s) to t.",
        f"Records 1-50 (50) (partition 1): no acknowledgement within 2 s (they may be written yet: consume shows it) "
        f"(its leader: broker {hung})"]
