"""Record commands: get-offsets (kafka-get-offsets), delete-records (kafka-delete-records),
produce and consume (the console producer and consumer, through confluent-kafka's Producer
and Consumer).

Every partition that fails is one line and makes the exit code 1; the others still report.
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

from kafka_shell import groups
from kafka_shell.codes import ApiKey, Error
from kafka_shell.errors import KafkaCallError, ShellError, UsageError, printable, shown
from kafka_shell.files import MAX_INPUT_BYTES, is_int, read_bytes, read_json
from kafka_shell.groups import EARLIEST, LATEST, MAX_TIMESTAMP, Key
from kafka_shell.metadata import ClusterSnapshot
from kafka_shell.operations import check_topic_name, debug, read_for, read_topics, require_topic
from kafka_shell.option_types import group_id, iso_epoch_ms, positive_int
from kafka_shell.registry import INT32_MAX, INT64_MAX, Option, command, int_range
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.session import Session

TOPIC_HELP = "Topic (default: the context topic)."
partition_index = int_range(0, INT32_MAX, "a partition number")
offset_value = int_range(0, INT64_MAX, "an offset")
TIME_NAMES = {"latest": LATEST, "-1": LATEST, "earliest": EARLIEST, "-2": EARLIEST,
              "max-timestamp": MAX_TIMESTAMP, "-3": MAX_TIMESTAMP}


def offset_time(text: str) -> int:
    """kafka-get-offsets' --time: latest (-1), earliest (-2), max-timestamp (-3), epoch ms, or
    (ours) an ISO date and time, UTC unless it gives a zone."""
    text = text.strip().lower()
    if text in TIME_NAMES:
        return TIME_NAMES[text]
    if text.isascii() and text.isdigit() and len(text) <= 18:
        return int(text)
    return iso_epoch_ms(text, "latest, earliest, max-timestamp, a timestamp in ms or an ISO date and time "
                              "(2024-01-31T12:00:00)")


def partition_list(text: str) -> list[int]:
    try:
        return sorted({partition_index(p) for p in text.split(",")})
    except ValueError:
        raise ValueError("partition numbers separated by commas (0,1,2)") from None


# -- get-offsets -------------------------------------------------------------------------------


@command("get-offsets",
         Option("--topic", repeatable=True, required=True, metavar="NAME", completer="topic",
                help=TOPIC_HELP + " A glob selects many."),
         Option("--partitions", type=partition_list, metavar="P,P", help="Only these partitions."),
         Option("--time", type=offset_time, default=LATEST, metavar="TIME",
                help="latest (default), earliest, max-timestamp, a timestamp in ms or an ISO date and time: "
                     "the first offset whose record is at or after it."),
         topic_context=True,
         help="Offsets of partitions at a time, as kafka-get-offsets (topic:partition:offset).",
         examples=("get-offsets --topic orders", "get-offsets --topic orders --time earliest",
                   "get-offsets --topic orders --time 2024-01-31T12:00:00"))
def get_offsets(session: Session, args: dict) -> Result:
    snap, topics = read_topics(session, args["topic"])
    keys = [(t.name, p.partition) for t in topics for p in t.partitions
            if not args["partitions"] or p.partition in args["partitions"]]
    if not keys:
        raise ShellError("Could not match any topic-partitions with the specified filters")
    answers = groups.log_offsets(session, snap, keys, args["time"])
    rows, lines, failures, notes = [], [], [], []
    for key in sorted(keys):
        a = answers[key]
        if a.error:
            failures.append(groups.offset_error(key, a.error))
        elif a.offset < 0:
            notes.append(f"{key[0]}-{key[1]}: no record at or after that time.")
        else:
            rows.append([key[0], key[1], a.offset, a.timestamp if a.timestamp >= 0 else None])
            lines.append(f"{key[0]}:{key[1]}:{a.offset}")
    return groups.outcome([Table(["Topic", "Partition", "Offset", "Timestamp"], rows, name="offsets")], notes,
                          failures, "\n".join(lines) if lines else "(none)")


# -- delete-records ----------------------------------------------------------------------------

DELETE_RECORDS_TIMEOUT_MS = 30000
HIGH_WATERMARK = -1   # DeleteRecords' offset meaning "up to the high watermark"


def _offsets_file(path: str) -> dict[Key, int]:
    """Kafka's kafka-delete-records file: {"partitions": [{"topic", "partition", "offset"}], "version": 1}."""
    data = read_json(path, "--offset-json-file")
    entries = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise UsageError(f'{path}: expected {{"partitions": [{{"topic": "t", "partition": 0, "offset": 10}}], '
                         '"version": 1}')
    if isinstance(data, dict) and data.get("version", 1) != 1:
        raise UsageError(f"{path}: only version 1 is known")
    out: dict[Key, int] = {}
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("topic"), str) and is_int(e.get("partition"))
                and is_int(e.get("offset"))):
            raise UsageError(f"{path}: partitions[{i}] needs a string topic and integer partition and offset")
        if not 0 <= e["partition"] <= INT32_MAX or not HIGH_WATERMARK <= e["offset"] <= INT64_MAX:
            raise UsageError(f"{path}: partitions[{i}]: partition from 0 to {INT32_MAX}, offset from -1 "
                             f"(the high watermark) to {INT64_MAX}")
        check_topic_name(e["topic"])
        key = (e["topic"], e["partition"])
        if key in out:
            raise UsageError(f"{path}: duplicate partition {key[0]}-{key[1]}")
        out[key] = e["offset"]
    return out


@command("delete-records",
         Option("--topic", metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--partition", type=partition_index, metavar="P", help="Partition (with --topic)."),
         Option("--before-offset", type=offset_value, metavar="N", help="Delete records before offset N."),
         Option("--offset-json-file", metavar="FILE", completer="path",
                help='Kafka\'s file: {"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}.'),
         mutates=True, destructive=True, topic_context=True,
         exclusive_groups=(("--offset-json-file", "--topic"), ("--offset-json-file", "--before-offset")),
         help="Delete records before an offset (moves the log start); reports the low watermarks after.",
         examples=("delete-records --topic orders --partition 0 --before-offset 100 --yes",
                   "delete-records --offset-json-file offsets.json --yes"))
def delete_records(session: Session, args: dict) -> Result:
    if args["offset_json_file"]:
        wanted = _offsets_file(args["offset_json_file"])
    else:
        if args["topic"] is None or args["partition"] is None or args["before_offset"] is None:
            raise UsageError("delete-records needs --topic, --partition and --before-offset, or --offset-json-file")
        wanted = {(args["topic"], args["partition"]): args["before_offset"]}
    snap = session.conn.read(sorted({t for t, _ in wanted}))
    failures = []
    for t, p in wanted:
        topic = require_topic(session, t, snap)
        if p >= len(topic.partitions):
            raise UsageError(f'Topic "{t}" has no partition {p} (it has {len(topic.partitions)})')
    if args["dry_run"]:
        return Result.message(*(f"Would delete the records of {t}-{p} before offset {o} (dry run)."
                                for (t, p), o in sorted(wanted.items())))
    by_leader: dict[int, list[Key]] = {}
    results: dict[Key, tuple[int, int]] = {}
    for key in sorted(wanted):
        leader = snap.topics[key[0]].partitions[key[1]].leader
        if leader < 0:
            results[key] = (-1, Error.leader_not_available)
        else:
            by_leader.setdefault(leader, []).append(key)
    for leader, keys in sorted(by_leader.items()):
        topics: dict[str, list[dict]] = {}
        for t, p in keys:
            topics.setdefault(t, []).append({"partition_index": p, "offset": wanted[(t, p)]})
        body = {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                "timeout": DELETE_RECORDS_TIMEOUT_MS}
        debug(session, f"DeleteRecords request to broker {leader}: {len(keys)} partition(s)")
        try:
            answer = session.conn.broker_request(leader, ApiKey.DELETE_RECORDS, body, mutation=True)
        except KafkaCallError as exc:
            failures.append(f"Broker {leader} did not answer for {len(keys)} partition(s): {exc}")
            continue
        for t in answer.get("topics", []):
            for p in t["partitions"]:
                results[(t["name"], p["partition_index"])] = (p["low_watermark"], p["error_code"])
    rows = []
    for key, (low, code) in sorted(results.items()):
        if code == Error.offset_out_of_range:
            failures.append(f"{key[0]}-{key[1]}: offset {wanted[key]} is beyond the high watermark: give a lower "
                            "--before-offset (see get-offsets)")
        elif code == Error.policy_violation:
            failures.append(f"{key[0]}-{key[1]}: the topic is compacted (cleanup.policy without delete): Kafka "
                            "deletes records only from delete-policy topics")
        elif code:
            failures.append(groups.offset_error(key, code))
        rows.append([key[0], key[1], None if code else low, "Error" if code else "Successful"])
    return groups.outcome([Table(["Topic", "Partition", "LowWatermark", "Status"], rows, name="records")], [],
                          failures)


# -- produce -----------------------------------------------------------------------------------


def header(text: str) -> tuple[str, bytes]:
    key, sep, value = text.partition("=")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("key=value with a UTF-8 key") from None
    if not sep or not key:
        raise ValueError("key=value")
    return key, value.encode("utf-8", "surrogateescape")


@command("produce",
         Option("value", repeatable=True, metavar="VALUE", help="Values to send, one record each."),
         Option("--topic", required=True, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--file", metavar="FILE", completer="path", help="Values from a file, one a line (may be binary)."),
         Option("--key-separator", metavar="SEP",
                help="Each line is KEY<SEP>VALUE (a line without SEP is an error)."),
         Option("--header", type=header, repeatable=True, metavar="KEY=VALUE", help="A header on every record."),
         Option("--partition", type=partition_index, metavar="P", help="Send to this partition (default: by key)."),
         Option("--acks", choices=("all", "-1", "1", "0"), default="all", aliases=("--request-required-acks",),
                help="Acknowledgements to wait for: all (= -1, the default), 1 or 0."),
         topic_context=True,
         help="Send records: values from arguments, --file or stdin, one a line; reports partition and offset.",
         examples=("produce --topic orders hello world", "produce --topic orders --key-separator : k1:v1 k2:v2",
                   "produce --topic orders --file values.txt --header source=batch"))
def produce(session: Session, args: dict) -> Result:
    if args["value"] and args["file"]:
        raise UsageError("Give values as arguments or --file, not both")
    topic = require_topic(session, args["topic"])
    if args["partition"] is not None and args["partition"] >= len(topic.partitions):
        raise UsageError(f'Topic "{topic.name}" has no partition {args["partition"]} (it has {len(topic.partitions)})')
    lines = _values(session, args)
    if not lines:
        raise UsageError("Nothing to send: give values, --file FILE, or lines on stdin")
    sep = raw_bytes(args["key_separator"]) if args["key_separator"] else None
    records: list[tuple[bytes | None, bytes]] = []
    for n, line in enumerate(lines, 1):
        if sep is None:
            records.append((None, line))
            continue
        key, found, value = line.partition(sep)
        if not found:
            raise UsageError(f"Line {n} has no key separator {shown(args['key_separator'])}: "
                             "give KEY<SEP>VALUE on every line")
        records.append((key, value))
    return _send(session, topic.name, records, args)


def _stdin_piped() -> bool:
    try:
        return not sys.stdin.isatty()
    except (AttributeError, ValueError, OSError):  # closed, or replaced by a test harness
        return False


def raw_bytes(text: str) -> bytes:
    """What the user typed, as bytes: text as UTF-8, and bytes of the command line that were
    not UTF-8 (Python's surrogate escapes) as they came."""
    return text.encode("utf-8", "surrogateescape")


def _values(session: Session, args: dict) -> list[bytes]:
    if args["value"]:
        return [raw_bytes(v) for v in args["value"]]
    if args["file"]:
        data = read_bytes(args["file"], "--file")
    elif not session.interactive and _stdin_piped():
        try:
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES)
        except (OSError, ValueError, AttributeError) as exc:
            raise UsageError(f"Cannot read standard input: {exc}") from None
    else:
        return []
    return [line.rstrip(b"\r") for line in data.split(b"\n") if line.rstrip(b"\r")]


def _send(session: Session, topic: str, records: list[tuple[bytes | None, bytes]], args: dict) -> Result:
    from confluent_kafka import KafkaException, Producer
    config = {**session.conn.client_config(), "acks": args["acks"], "linger.ms": 5,
              "message.timeout.ms": int(session.conn.timeout_s * 1000)}
    try:
        producer = Producer(config)
    except KafkaException as exc:
        raise UsageError(f"Invalid client setting: {exc.args[0]}") from None
    outcomes: list[Any] = [None] * len(records)

    def delivered(index: int):
        def report(err, msg) -> None:
            outcomes[index] = err if err is not None else (msg.partition(), msg.offset())
        return report
    headers = list(args["header"]) or None
    extra = {"partition": args["partition"]} if args["partition"] is not None else {}
    debug(session, f"producing {len(records)} record(s) to {topic} (acks={args['acks']})")
    try:
        for i, (key, value) in enumerate(records):
            while True:
                try:
                    producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered(i), **extra)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
        producer.flush(session.conn.timeout_s)
    except KeyboardInterrupt:
        producer.flush(1)
        raise
    rows, failures = [], []
    for i, outcome in enumerate(outcomes):
        if outcome is None:
            failures.append(f"Record {i + 1}: no acknowledgement within {session.conn.timeout_s:g} s")
        elif isinstance(outcome, tuple):
            # acks=0: the producer never learns the offset (-1).
            rows.append([i + 1, outcome[0], outcome[1] if outcome[1] >= 0 else None])
        else:
            failures.append(f"Record {i + 1}: {outcome.str()}")
    sent = len(rows)
    note = f"Produced {sent} record(s) to {topic}." if not failures else \
        f"Produced {sent} of {len(records)} record(s) to {topic}."
    return groups.outcome([Table(["Record", "Partition", "Offset"], rows, name="produced")], [note], failures)


def _start_offsets(session: Session, snap: ClusterSnapshot, topic: str, parts: list[int], args: dict) -> dict[int, int]:
    """Where each assigned partition starts. Absolute offsets, looked up here, where we can:
    given a logical one (beginning, end), librdkafka waits 500 ms before its first offset query
    when it assigns a partition before it knows the leader."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED
    if args["offset"] is not None:
        return dict.fromkeys(parts, args["offset"])
    if args["group"]:
        return dict.fromkeys(parts, OFFSET_STORED)
    logical = OFFSET_BEGINNING if args["from_beginning"] else OFFSET_END
    found = groups.log_offsets(session, snap, [(topic, p) for p in parts],
                               EARLIEST if args["from_beginning"] else LATEST)
    return {p: logical if found[(topic, p)].error else found[(topic, p)].offset for p in parts}


# -- consume -----------------------------------------------------------------------------------

REPL_MAX_MESSAGES = 10


def shown_bytes(data: str | bytes | None) -> str | None:
    """A key or value as text when it is UTF-8 (control characters escaped), else as 0x-hex."""
    if data is None:
        return None
    if isinstance(data, str):
        return printable(data)
    try:
        return printable(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "0x" + data.hex()


@command("consume",
         Option("--topic", required=True, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--from-beginning", flag=True, help="Start at the earliest offset (default: only new records)."),
         Option("--offset", type=offset_value, metavar="N", help="Start at offset N of --partition."),
         Option("--partition", type=partition_index, metavar="P", help="Only this partition."),
         Option("--max-messages", type=positive_int, metavar="N",
                help=f"Stop after N records (default {REPL_MAX_MESSAGES} in the REPL, else none)."),
         Option("--group", type=group_id, metavar="GROUP", completer="group",
                help="Consume as this consumer group and commit (default: no group, nothing committed)."),
         Option("--timeout", type=float, metavar="SECONDS",
                help="Stop when no record came for this long (default: the session's --timeout)."),
         topic_context=True, exclusive_groups=(("--from-beginning", "--offset"),),
         help="Read records: partition, offset, timestamp, key, headers and value (text, or hex when binary).",
         examples=("consume --topic orders --from-beginning --max-messages 5",
                   "consume --topic orders --partition 0 --offset 42",
                   "consume --topic orders --group audit --from-beginning"))
def consume(session: Session, args: dict) -> Result:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    if args["offset"] is not None and args["partition"] is None:
        raise UsageError("--offset needs --partition (an offset is a position in one partition)")
    if args["timeout"] is not None and not 0 < args["timeout"] <= 86400:
        raise UsageError("--timeout of consume must be from 0 to 86400 seconds")
    snap = read_for(session, [args["topic"]])
    topic = require_topic(session, args["topic"], snap)
    if args["partition"] is not None and args["partition"] >= len(topic.partitions):
        raise UsageError(f'Topic "{topic.name}" has no partition {args["partition"]} (it has {len(topic.partitions)})')
    limit = args["max_messages"] or (REPL_MAX_MESSAGES if session.interactive else None)
    idle_s = args["timeout"] if args["timeout"] is not None else session.conn.timeout_s
    group = args["group"]
    config = {**session.conn.client_config(), "group.id": group or f"kafka-shell-{uuid.uuid4()}",
              "enable.auto.commit": bool(group), "auto.offset.reset": "earliest" if args["from_beginning"] else "latest",
              "enable.partition.eof": False, "fetch.wait.max.ms": 100}
    try:
        consumer = Consumer(config)
    except KafkaException as exc:
        raise UsageError(f"Invalid client setting: {exc.args[0]}") from None
    parts = [args["partition"]] if args["partition"] is not None else [p.partition for p in topic.partitions]
    starts = _start_offsets(session, snap, topic.name, parts, args)
    rows: list[list[Any]] = []
    failures: list[str] = []
    interrupted = False
    try:
        if group and args["partition"] is None:
            consumer.subscribe([topic.name])
        else:
            consumer.assign([TopicPartition(topic.name, p, starts[p]) for p in parts])
        debug(session, f"consuming {topic.name} ({'group ' + group if group else 'no group'}, "
                       f"stop after {limit or 'no limit'} record(s) or {idle_s:g} s idle)")
        last = time.monotonic()
        while limit is None or len(rows) < limit:
            msg = consumer.poll(min(0.2, idle_s))
            if msg is None:
                if time.monotonic() - last >= idle_s:
                    break
                continue
            error = msg.error()
            if error is not None:
                failures.append(f"{topic.name}-{msg.partition()}: {error.str()}")
                if error.fatal() or not error.retriable():
                    break
                continue
            last = time.monotonic()
            _, ts = msg.timestamp()
            pairs: list[tuple[str, Any]] = list(msg.headers() or [])  # type: ignore[arg-type]
            heads = ",".join(f"{k}={shown_bytes(v) or ''}" for k, v in pairs)
            rows.append([msg.partition(), msg.offset(), ts if ts >= 0 else None, shown_bytes(msg.key()),
                         heads or None, shown_bytes(msg.value())])
    except KeyboardInterrupt:
        interrupted = True
    finally:
        consumer.close()  # with a group: commits what was consumed and leaves the group
    notes = [f"Consumed {len(rows)} record(s)" + (" (interrupted)." if interrupted else ".")]
    return groups.outcome([Table(["Partition", "Offset", "Timestamp", "Key", "Headers", "Value"], rows,
                                 name="records")], notes, failures)
