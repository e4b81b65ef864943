"""Record commands: get-offsets (kafka-get-offsets), delete-records (kafka-delete-records),
produce and consume (the console producer and consumer, through confluent-kafka's Producer
and Consumer).

Every partition that fails is one line and makes the exit code 1; the others still report.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kafka_shell.admin import offsets, records, topics
from kafka_shell.admin.offsets import EARLIEST, LATEST, MAX_TIMESTAMP
from kafka_shell.admin.records import HIGH_WATERMARK
from kafka_shell.declarations import failure_lines
from kafka_shell.base.errors import ShellError, UsageError, printable, shown
from kafka_shell.base.files import MAX_INPUT_BYTES, is_int, read_bytes, read_json
from kafka_shell.base.names import check_topic_name
from kafka_shell.declarations.option_types import group_id, iso_epoch_ms, positive_int
from kafka_shell.declarations.registry import INT32_MAX, INT64_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Result, Stream, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

Key = tuple[str, int]
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
    snap, found = topics.read_topics(session.conn, args["topic"])
    keys = [(t.name, p.partition) for t in found for p in t.partitions
            if not args["partitions"] or p.partition in args["partitions"]]
    if not keys:
        raise ShellError("Could not match any topic-partitions with the specified filters")
    answers = offsets.log_offsets(session.conn, snap, keys, args["time"])
    rows, lines, notes = [], [], []
    failures = failure_lines.partition_lines(dict(sorted(answers.errors.items())))
    for key in sorted(answers.rows):
        a = answers.rows[key]
        if a.offset < 0:
            notes.append(f"{key[0]}-{key[1]}: no record at or after that time.")
        else:
            rows.append([key[0], key[1], a.offset, a.timestamp if a.timestamp >= 0 else None])
            lines.append(f"{key[0]}:{key[1]}:{a.offset}")
    return Result.outcome([Table(["Topic", "Partition", "Offset", "Timestamp"], rows, name="offsets")], notes,
                          failures, "\n".join(lines) if lines else "(none)")


# -- delete-records ----------------------------------------------------------------------------

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
         mutates=True, confirm=Confirm(), topic_context=True,
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
    for t, p in wanted:
        topic = topics.require(session.conn, t, snap)
        if p >= len(topic.partitions):
            raise UsageError(f'Topic "{t}" has no partition {p} (it has {len(topic.partitions)})')
    if args["dry_run"]:
        return Result.message(*(f"Would delete the records of {t}-{p} before offset {o} (dry run)."
                                for (t, p), o in sorted(wanted.items())))
    deleted = records.delete_records(session.conn, snap, wanted)
    rows = [[t, p, deleted.rows.get((t, p)), "Successful" if (t, p) in deleted.rows else "Error"] for t, p in sorted(wanted)]
    return Result.outcome([Table(["Topic", "Partition", "LowWatermark", "Status"], rows, name="records")], [],
                          failure_lines.deletion_lines(deleted.errors, wanted))


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
    topic = topics.require(session.conn, args["topic"])
    if args["partition"] is not None and args["partition"] >= len(topic.partitions):
        raise UsageError(f'Topic "{topic.name}" has no partition {args["partition"]} (it has {len(topic.partitions)})')
    lines = _values(session, args)
    if not lines:
        raise UsageError("Nothing to send: give values, --file FILE, or lines on stdin")
    sep = raw_bytes(args["key_separator"]) if args["key_separator"] else None
    values: list[tuple[bytes | None, bytes]] = []
    for n, line in enumerate(lines, 1):
        if sep is None:
            values.append((None, line))
            continue
        key, found, value = line.partition(sep)
        if not found:
            raise UsageError(f"Line {n} has no key separator {shown(args['key_separator'])}: "
                             "give KEY<SEP>VALUE on every line")
        values.append((key, value))
    return _send(session, topic.name, values, args)


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


def _send(session: Session, topic: str, values: list[tuple[bytes | None, bytes]], args: dict) -> Result:
    produced = records.produce(session.conn, topic, list(values), acks=args["acks"], partition=args["partition"],
                               headers=list(args["header"]) or None)
    sent = len(produced.delivered)
    note = f"Produced {sent} record(s) to {topic}." if not produced.failures else \
        f"Produced {sent} of {len(values)} record(s) to {topic}."
    return Result.outcome([Table(["Record", "Partition", "Offset"], [list(r) for r in produced.delivered],
                                 name="produced")], [note], produced.failures)


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
         Option("--from-beginning", flag=True,
                help="Start at the earliest offset and stop at the log end (default: only new records)."),
         Option("--offset", type=offset_value, metavar="N",
                help="Start at offset N of --partition and stop at the log end."),
         Option("--partition", type=partition_index, metavar="P", help="Only this partition."),
         Option("--follow", flag=True,
                help="With --from-beginning or --offset: go on past the log end, waiting for new records."),
         Option("--max-messages", type=positive_int, metavar="N",
                help=f"Stop after N records (default {REPL_MAX_MESSAGES} in the REPL, else none)."),
         Option("--group", type=group_id, metavar="GROUP", completer="group",
                help="Consume as this consumer group and commit (default: no group, nothing committed)."),
         Option("--timeout", type=float, metavar="SECONDS",
                help="Stop when no record came for this long (default: the session's --timeout)."),
         topic_context=True, exclusive_groups=(("--from-beginning", "--offset"),),
         help="Read records as they arrive: partition, offset, timestamp, key, headers and value (text, or hex "
              "when binary); Ctrl-C stops with a summary.",
         description="Each record is printed as it arrives. A read from the beginning or an offset stops at the "
                     "end of the log (as kcat -e) unless --follow; a read of new records stops after --timeout "
                     "seconds without one. Tables show timestamps as UTC times; json, jsonl and csv give epoch ms.",
         examples=("consume --topic orders --from-beginning --max-messages 5",
                   "consume --topic orders --partition 0 --offset 42",
                   "consume --topic orders --group audit --from-beginning --follow"))
def consume(session: Session, args: dict) -> Result:
    if args["offset"] is not None and args["partition"] is None:
        raise UsageError("--offset needs --partition (an offset is a position in one partition)")
    if args["timeout"] is not None and not 0 < args["timeout"] <= 86400:
        raise UsageError("--timeout of consume must be from 0 to 86400 seconds")
    from_start = args["from_beginning"] or args["offset"] is not None
    if args["follow"] and not from_start:
        raise UsageError("--follow goes on past the log end of a read that has one: add --from-beginning or --offset")
    snap = topics.read_for(session.conn, [args["topic"]])
    topic = topics.require(session.conn, args["topic"], snap)
    if args["partition"] is not None and args["partition"] >= len(topic.partitions):
        raise UsageError(f'Topic "{topic.name}" has no partition {args["partition"]} (it has {len(topic.partitions)})')
    limit = args["max_messages"] or (REPL_MAX_MESSAGES if session.interactive else None)
    reading = records.consume(session.conn, snap, topic.name, args["partition"], args["group"], args["offset"],
                              args["from_beginning"], limit, args["timeout"], to_end=from_start and not args["follow"])
    rows = ([r.partition, r.offset, r.timestamp, shown_bytes(r.key),
             ",".join(f"{k}={shown_bytes(v) or ''}" for k, v in r.headers) or None, shown_bytes(r.value)]
            for r in reading)

    def summary(interrupted: bool) -> Result:
        why = {"end": ": reached the end of the log.", "idle": f": none came for {reading.idle_s:g} s.",
               "interrupted": " (interrupted)."}.get("interrupted" if interrupted else reading.stopped, ".")
        note = f"Consumed {reading.count} record(s){why}"
        return Result(messages=[note, *reading.failures], exit_code=1 if reading.failures else 0)
    return Result(stream=Stream(["Partition", "Offset", "Timestamp", "Key", "Headers", "Value"], rows, summary,
                                name="records", kinds={"Timestamp": "datetime"},
                                widths={"Offset": 6, "Timestamp": 24, "Key": 8}))
