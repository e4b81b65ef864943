"""Record commands: get-offsets (kafka-get-offsets), delete-records (kafka-delete-records),
produce and consume (the console producer and consumer, through confluent-kafka's Producer
and Consumer).

Every partition that fails is one line and makes the exit code 1; the others still report.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_shell.admin import offsets, records, topics
from kafka_shell.admin.offsets import EARLIEST, LATEST, MAX_TIMESTAMP
from kafka_shell.admin.records import HIGH_WATERMARK
from kafka_shell.declarations import failure_lines
from kafka_shell.base.errors import ShellError, UsageError, printable, shown
from kafka_shell.base.files import MAX_INPUT_BYTES, is_int, read_bytes, read_json
from kafka_shell.base.names import PATTERN_HELP, check_topic_name, pattern_notes
from kafka_shell.declarations.option_types import group_id, iso_epoch_ms, positive_int
from kafka_shell.declarations.registry import INT32_MAX, INT64_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Result, Stream, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import TopicInfo
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
                help=f"Topic ({PATTERN_HELP})."),
         Option("--partitions", type=partition_list, metavar="P,P", help="Only these partitions."),
         Option("--time", type=offset_time, default=LATEST, metavar="TIME",
                help="latest (default), earliest, max-timestamp, a timestamp in ms or an ISO date and time: "
                     "the first offset whose record is at or after it."),
         topic_context=True,
         help="Offsets of partitions at a time, as kafka-get-offsets (topic:partition:offset).",
         examples=("get-offsets --topic orders", "get-offsets --topic orders --time earliest",
                   "get-offsets --topic orders --time 2024-01-31T12:00:00"), tables=("offsets",))
def get_offsets(session: Session, args: dict) -> Result:
    snap, found = topics.read_topics(session.conn, args["topic"])
    keys = [(t.name, p.partition) for t in found for p in t.partitions
            if not args["partitions"] or p.partition in args["partitions"]]
    if not keys:
        raise ShellError("Could not match any topic-partitions with the specified filters"
                         + "".join(f" {n}" for n in pattern_notes(args["topic"], list(snap.topics))))
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
    return Result.outcome([Table(["Topic", "Partition", "Offset", "Timestamp"], rows, name="offsets")],
                          [*pattern_notes(args["topic"], list(snap.topics)), *notes], failures,
                          "\n".join(lines) if lines else "(none)")


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


def _deletions(args: dict) -> dict[Key, int]:
    """What delete-records deletes: partition -> the offset before which its records go."""
    if args["offset_json_file"]:
        return _offsets_file(args["offset_json_file"])
    if args["topic"] is None or args["partition"] is None or args["before_offset"] is None:
        raise UsageError("delete-records needs --topic, --partition and --before-offset, or --offset-json-file")
    return {(args["topic"], args["partition"]): args["before_offset"]}


def _deletion_question(args: dict) -> str:
    """The confirmation names each partition and its offset (up to 10 of them)."""
    wanted = sorted(_deletions(args).items())
    listed = ", ".join(f"{t}-{p} before {'the high watermark' if o == HIGH_WATERMARK else f'offset {o}'}"
                       for (t, p), o in wanted[:10])
    more = f" and {len(wanted) - 10} more partition(s)" if len(wanted) > 10 else ""
    return f"Delete the records of {listed}{more}?"


@command("delete-records",
         Option("--topic", metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--partition", type=partition_index, metavar="P", help="Partition (with --topic)."),
         Option("--before-offset", type=offset_value, metavar="N", help="Delete records before offset N."),
         Option("--offset-json-file", metavar="FILE", completer="path",
                help='Kafka\'s file: {"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}.'),
         mutates=True, confirm=Confirm(asks=lambda args: _deletion_question(args)), topic_context=True,
         exclusive_groups=(("--offset-json-file", "--topic"), ("--offset-json-file", "--before-offset")),
         help="Delete records before an offset (moves the log start); reports the low watermarks after.",
         examples=("delete-records --topic orders --partition 0 --before-offset 100 --yes",
                   "delete-records --offset-json-file offsets.json --yes"), tables=("records",))
def delete_records(session: Session, args: dict) -> Result:
    wanted = _deletions(args)
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
    """A header as Kafka's console producer writes one (KEY:VALUE), or kcat (KEY=VALUE): split
    at the first ':' or '='."""
    cut = min((i for i in (text.find(":"), text.find("=")) if i >= 0), default=-1)
    key, value = (text[:cut], text[cut + 1:]) if cut >= 0 else (text, "")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("KEY:VALUE (or KEY=VALUE) with a UTF-8 key") from None
    if cut < 0 or not key:
        raise ValueError("KEY:VALUE (or KEY=VALUE)")
    return key, raw_bytes(value)


def records_per_second(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        rate = 0.0
    if not 0.001 <= rate <= 1e9:   # NaN fails too
        raise ValueError("records per second, a number from 0.001 up")
    return rate


@command("produce",
         Option("value", repeatable=True, metavar="VALUE", help="Values to send, one record each."),
         Option("--topic", required=True, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--file", metavar="FILE", completer="path", help="Values from a file, one a line (may be binary)."),
         Option("--key-separator", metavar="SEP",
                help="Each line is KEY<SEP>VALUE (a line without SEP is an error)."),
         Option("--header", type=header, repeatable=True, metavar="KEY:VALUE",
                help="A header on every record (KEY=VALUE too)."),
         Option("--parse-headers", flag=True,
                help="Each line starts with its record's headers, as Kafka's console producer reads them "
                     "(parse.headers): KEY:VALUE,KEY:VALUE<TAB>, then the rest of the line."),
         Option("--partition", type=partition_index, metavar="P",
                help="Send to this partition (default: by key as Java's producer does, murmur2; records without "
                     "a key to any partition; -X partitioner=... sets librdkafka's)."),
         Option("--acks", choices=("all", "-1", "1", "0"), default="all", aliases=("--request-required-acks",),
                help="Acknowledgements to wait for: all (= -1, the default), 1 or 0."),
         Option("--compression", choices=records.COMPRESSION_TYPES, aliases=("--compression-codec",),
                help="Compress record batches: none (the default), gzip, snappy, lz4 or zstd."),
         Option("--rate", type=records_per_second, metavar="N",
                help="Send at most N records a second (default: as fast as the cluster takes them)."),
         topic_context=True,
         help="Send records: values from arguments, --file or stdin, one a line; reports partition and offset.",
         description="Keyed records go to the partition Java's producer picks (murmur2 of the key), so they land "
                     "where Java applications look for them.",
         examples=("produce --topic orders hello world", "produce --topic orders --key-separator : k1:v1 k2:v2",
                   "produce --topic orders --file values.txt --header source:batch",
                   "produce --topic orders --parse-headers --key-separator : --file lines.txt",
                   "produce --topic orders --compression zstd --acks 1 --rate 100 --file values.txt"), tables=("produced",))
def produce(session: Session, args: dict) -> Result:
    if args["value"] and args["file"]:
        raise UsageError("Give values as arguments or --file, not both")
    topic = topics.require(session.conn, args["topic"])
    if args["partition"] is not None and args["partition"] >= len(topic.partitions):
        raise UsageError(f'Topic "{topic.name}" has no partition {args["partition"]} (it has {len(topic.partitions)})')
    lines = _values(session, args)
    if not lines:
        raise UsageError("Nothing to send: give values, --file FILE, or lines on stdin")
    values = [_record_line(n, line, args) for n, line in enumerate(lines, 1)]
    return _send(session, topic, values, args)


def _record_line(n: int, line: bytes, args: dict) -> tuple[bytes | None, bytes, list[tuple[str, bytes | None]]]:
    """Line `n`'s record: (key, value, headers), or a UsageError naming the line."""
    heads: list[tuple[str, bytes | None]] = []
    if args["parse_headers"]:
        found, tab, line = line.partition(b"\t")
        if not tab:
            raise UsageError(f"Line {n} has no headers: give KEY:VALUE,KEY:VALUE then a tab (--parse-headers)")
        for part in filter(None, found.split(b",")):
            key, colon, value = part.partition(b":")
            try:
                heads.append((key.decode("utf-8"), value))
            except UnicodeDecodeError:
                raise UsageError(f"Line {n}: a header key that is not UTF-8 text") from None
            if not colon or not key:
                raise UsageError(f'Line {n}: header "{shown(part.decode("utf-8", "replace"))}" is not KEY:VALUE')
    if not args["key_separator"]:
        return None, line, heads
    key, sep, value = line.partition(raw_bytes(args["key_separator"]))
    if not sep:
        separator = shown(args["key_separator"])
        raise UsageError(f'Line {n} has no key separator "{separator}": give KEY{separator}VALUE on every line')
    return key, value, heads


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


def _send(session: Session, topic_info: TopicInfo, values: list, args: dict) -> Result:
    topic = topic_info.name
    produced = records.produce(session.conn, topic, values, acks=args["acks"], partition=args["partition"],
                               headers=list(args["header"]) or None, compression=args["compression"],
                               rate=args["rate"])
    sent = len(produced.delivered)
    note = f"Produced {sent} record(s) to {topic}." if not produced.unacked else \
        f"Produced {sent} of {len(values)} record(s) to {topic}."
    leaders = {p.partition: p.leader for p in topic_info.partitions}
    failures = [line + (f" (its leader: broker {leaders[u.partition]})"
                        if u.partition is not None and leaders.get(u.partition, -1) >= 0 else "")
                for u, line in zip(produced.unacked, failure_lines.unacked_lines(produced.unacked))]
    return Result.outcome([Table(["Record", "Partition", "Offset"], [list(r) for r in produced.delivered],
                                 name="produced")], [note], failures)


# -- consume -----------------------------------------------------------------------------------

REPL_MAX_MESSAGES = 10


def shown_bytes(data: str | bytes | None) -> str | None:
    """A key or value for people: text when it is UTF-8 (control characters escaped), else 0x-hex."""
    if data is None:
        return None
    if isinstance(data, str):
        return printable(data)
    try:
        return printable(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "0x" + data.hex()


def exact(data: bytes | None, base64: bool = False) -> tuple[str | None, str | None]:
    """A key or value for scripts, unambiguous: (its text, None) when it is UTF-8, else (None,
    its base64); (None, None) when there is none. `base64`: always base64."""
    if data is None:
        return None, None
    if not base64:
        try:
            return data.decode("utf-8"), None
        except UnicodeDecodeError:
            pass
    import base64 as b64
    return None, b64.b64encode(data).decode("ascii")


def start_offset(text: str) -> int:
    """--offset: N (an offset of --partition) or -N (the last N records of each partition)."""
    text = text.strip()
    if text.startswith("-"):
        return -offset_value(text[1:]) or 0
    return offset_value(text)


_AGO = re.compile(r"-([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")
_AGO_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def from_time(text: str) -> int:
    """--from-time: an ISO date and time (UTC unless it gives a zone), epoch ms, or a time ago
    (-30s, -15m, -1h, -2d), as epoch ms."""
    text = text.strip()
    ago = _AGO.fullmatch(text)
    if ago:
        return int(time.time() * 1000 - float(ago.group(1)) * _AGO_MS[ago.group(2)])
    if text.isascii() and text.isdigit() and len(text) <= 15:
        return int(text)
    return iso_epoch_ms(text, "an ISO date and time (2024-01-31T12:00:00), epoch ms, or a time ago like -1h, -30m, -2d")


# kcat's -f tokens (%s value, %S its length or -1, %R that length as 4 big-endian bytes, %k key,
# %K its length, %T timestamp ms, %h headers as n=v CSV, %t topic, %p partition, %o offset) and
# escapes (\n \r \t \\ \xHH).
FORMAT_TOKENS = "sSRkKThtpo%"
_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\"}


def record_format(text: str) -> list[bytes | str]:
    """A kcat -f format: literal bytes, and one-letter tokens (str)."""
    parts: list[bytes | str] = []
    literal = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%":
            token = text[i + 1:i + 2]
            if token not in FORMAT_TOKENS or not token:
                raise ValueError(f"kcat's tokens: %{', %'.join(FORMAT_TOKENS[:-1])} (%% for %)")
            if token == "%":
                literal += b"%"
            else:
                parts += [bytes(literal), token] if literal else [token]
                literal = bytearray()
            i += 2
        elif c == "\\" and text[i + 1:i + 2] in _ESCAPES:
            literal += _ESCAPES[text[i + 1]]
            i += 2
        elif c == "\\" and re.fullmatch(r"x[0-9a-fA-F]{2}", text[i + 1:i + 4]):
            literal.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            literal += c.encode("utf-8", "surrogateescape")
            i += 1
    return [*parts, bytes(literal)] if literal else parts


def _format_line(fmt: list[bytes | str], topic: str, r: records.Record, base64: bool) -> bytes:
    out = bytearray()
    for part in fmt:
        if isinstance(part, bytes):
            out += part
        elif part in "sk":
            out += _plain(r.value if part == "s" else r.key, base64, b"")
        elif part in "SKR":
            data = r.key if part == "K" else r.value
            size = -1 if data is None else len(data)
            out += size.to_bytes(4, "big", signed=True) if part == "R" else str(size).encode()
        elif part == "h":
            out += b",".join(k.encode() + b"=" + _plain(v, base64, b"") for k, v in r.headers)
        else:
            out += {"T": str(r.timestamp if r.timestamp is not None else -1), "t": topic, "p": str(r.partition),
                    "o": str(r.offset)}[part].encode("utf-8", "surrogateescape")
    return bytes(out)


def _plain(data: bytes | None, base64: bool, null: bytes) -> bytes:
    if data is None:
        return null
    if base64:
        import base64 as b64
        return b64.b64encode(data)
    return data


def _console_line(r: records.Record, key: bool, headers: bool, base64: bool) -> bytes:
    """Kafka's console consumer's line (DefaultMessageFormatter): headers as k:v,k:v (or
    NO_HEADERS), the key, then the value, tab-separated; null shown as "null"."""
    fields = []
    if headers:
        fields.append(b",".join(k.encode() + b":" + _plain(v, base64, b"null") for k, v in r.headers) or b"NO_HEADERS")
    if key:
        fields.append(_plain(r.key, base64, b"null"))
    return b"\t".join([*fields, _plain(r.value, base64, b"null")]) + b"\n"


ISOLATION_HELP = ("read_uncommitted (the default, as Kafka's console consumer: records of open and aborted "
                  "transactions too) or read_committed (stops at an open transaction).")
LINE_OUTPUTS = ("--format", "--raw", "--print-key", "--print-headers")


@command("consume",
         Option("--topic", required=True, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--from-beginning", flag=True,
                help="Start at the earliest offset and stop at the log end (default: only new records)."),
         Option("--offset", type=start_offset, metavar="N|-N",
                help="Start at offset N of --partition, or -N: the last N records of each partition; stop at "
                     "the log end."),
         Option("--from-time", type=from_time, metavar="TIME",
                help="Start at the first record at or after TIME (an ISO date and time, epoch ms, or ago: -1h, "
                     "-30m, -2d); stop at the log end."),
         Option("--partition", type=partition_index, metavar="P", help="Only this partition."),
         Option("--follow", flag=True,
                help="With --from-beginning, --offset or --from-time: go on past the log end, waiting for new "
                     "records."),
         Option("--max-messages", type=positive_int, metavar="N",
                help=f"Stop after N records (default {REPL_MAX_MESSAGES} in the REPL, else none)."),
         Option("--group", type=group_id, metavar="GROUP", completer="group",
                help="Consume as this consumer group and commit; it starts at the group's committed offsets "
                     "(default: no group, nothing committed)."),
         Option("--timeout", type=float, metavar="SECONDS",
                help="Stop when no new record came for this long (default: the session's --timeout)."),
         Option("--isolation-level", choices=records.ISOLATION_LEVELS, default="read_uncommitted",
                help=ISOLATION_HELP),
         Option("--offset-reset", choices=(records.RESET_STOP, records.RESET_EARLIEST, records.RESET_LATEST),
                default=records.RESET_STOP,
                help="When the position is outside the log (truncated, deleted, an --offset beyond it): stop "
                     "(the default: said once, exit 1), or go on from the earliest or latest offset (said once)."),
         Option("--format", type=record_format, metavar="FMT",
                help="Each record as kcat -f prints it: %t topic, %p partition, %o offset, %T timestamp (ms), "
                     "%k key, %K key length, %s value, %S value length, %R it as 4 bytes, %h headers (n=v,...), "
                     r"\n \t \xHH; bytes as they are."),
         Option("--raw", flag=True, help="Each value's bytes as they are, then a newline (kcat's default)."),
         Option("--print-key", flag=True, help="Plain lines as Kafka's console consumer prints them: KEY<TAB>VALUE."),
         Option("--print-headers", flag=True,
                help="Plain lines with the headers first: k:v,k:v<TAB>[KEY<TAB>]VALUE (NO_HEADERS when none)."),
         Option("--base64", flag=True,
                help="Keys, values and header values in base64 (plain lines, --format, tables, and json's "
                     "key_base64/value_base64 fields)."),
         topic_context=True, exclusive_groups=(("--from-beginning", "--offset", "--from-time"), ("--format", "--raw"),
                                               ("--raw", "--print-key"), ("--raw", "--print-headers"),
                                               ("--format", "--print-key"), ("--format", "--print-headers"),
                                               ("--raw", "--base64")),
         help="Read records as they arrive: partition, offset, timestamp, key, headers and value (text, or hex "
              "when binary); Ctrl-C stops with a summary.",
         description="Each record is printed as it arrives. A read from the beginning, an offset or a time stops "
                     "at the end of the log as it was when the read began (as kcat -e) unless --follow; a read "
                     "of new records stops after --timeout seconds without one. The summary says what ended the "
                     "read, names each partition it could not read (exit 1), and each offset reset. Tables show "
                     "timestamps as UTC times; json, jsonl and csv give epoch ms, and a key or value as Key/"
                     "value when it is UTF-8 text, else as key_base64/value_base64 (the other null).",
         examples=("consume --topic orders --from-beginning --max-messages 5",
                   "consume --topic orders --partition 0 --offset 42",
                   "consume --topic orders --offset -10 --print-key",
                   "consume --topic orders --from-time -1h --format '%p:%o %k=%s\\n'",
                   "consume --topic orders --group audit --from-beginning --follow"), tables=("records",))
def consume(session: Session, args: dict) -> Result:
    start = _start(args)
    if args["timeout"] is not None and not 0 < args["timeout"] <= 86400:
        raise UsageError("--timeout of consume must be from 0 to 86400 seconds")
    if args["follow"] and start.kind in (records.NEW, ):
        raise UsageError("--follow goes on past the log end of a read that has one: add --from-beginning, --offset "
                         "or --from-time")
    lines = [o for o in LINE_OUTPUTS if args[o[2:].replace("-", "_")]]
    if lines and args["output"]:
        raise UsageError(f"{lines[0]} prints its own lines: leave out -o {args['output']}")
    snap = topics.read_for(session.conn, [args["topic"]])
    topic = topics.require(session.conn, args["topic"], snap)
    if args["partition"] is not None and args["partition"] >= len(topic.partitions):
        raise UsageError(f'Topic "{topic.name}" has no partition {args["partition"]} (it has {len(topic.partitions)})')
    default_limit = args["max_messages"] is None and session.interactive
    limit = REPL_MAX_MESSAGES if default_limit else args["max_messages"]
    reading = records.consume(session.conn, snap, topic.name, args["partition"], args["group"], start, limit,
                              args["timeout"], to_end=start.kind != records.NEW and not args["follow"],
                              isolation=args["isolation_level"], on_reset=args["offset_reset"])

    def summary(interrupted: bool) -> Result:
        return _consumed(reading, args, "interrupted" if interrupted else reading.stopped, default_limit)
    return Result(stream=Stream(RECORD_COLUMNS, iter(reading), summary, name="records", kinds={"Timestamp": "datetime"},
                                widths={"Offset": 6, "Timestamp": 24, "Key": 8}, row=_record_row(args["base64"]),
                                people=(PEOPLE_COLUMNS, _people_row(args["base64"])),
                                encode=_line_encoder(topic.name, args)))


RECORD_COLUMNS = ["Partition", "Offset", "Timestamp", "Key", "KeyBase64", "Headers", "Value", "ValueBase64"]
PEOPLE_COLUMNS = ["Partition", "Offset", "Timestamp", "Key", "Headers", "Value"]


def _record_row(base64: bool) -> Callable[[records.Record], list]:
    """A record for scripts: exact bytes (text, or base64 under its own name), headers as a list."""
    def row(r: records.Record) -> list:
        key, value = exact(r.key, base64), exact(r.value, base64)
        heads = []
        for k, v in r.headers:
            text, b64 = exact(v, base64)
            heads.append({"key": k, "value": text} if b64 is None else {"key": k, "value_base64": b64})
        return [r.partition, r.offset, r.timestamp, key[0], key[1], heads, value[0], value[1]]
    return row


def _people_row(base64: bool) -> Callable[[records.Record], list]:
    """A record for people: key, headers and value as text (control characters escaped), or as
    0x-hex when binary (base64 with --base64)."""
    def shown_data(data: bytes | None) -> str | None:
        return shown_bytes(data) if not base64 or data is None else _plain(data, True, b"").decode("ascii")

    def row(r: records.Record) -> list:
        heads = ",".join(f"{k}={shown_data(v) or ''}" for k, v in r.headers)
        return [r.partition, r.offset, r.timestamp, shown_data(r.key), heads or None, shown_data(r.value)]
    return row


def _line_encoder(topic: str, args: dict) -> Callable[[records.Record], bytes] | None:
    """The bytes of a record's line for --format, --raw and --print-key/--print-headers."""
    if args["format"] is not None:
        fmt = args["format"]
        return lambda r: _format_line(fmt, topic, r, args["base64"])
    if args["raw"]:
        return lambda r: _plain(r.value, False, b"") + b"\n"
    if args["print_key"] or args["print_headers"]:
        return lambda r: _console_line(r, args["print_key"], args["print_headers"], args["base64"])
    return None


def _start(args: dict) -> records.Start:
    offset, partition = args["offset"], args["partition"]
    explicit = offset is not None or args["from_time"] is not None
    if args["group"] and explicit and partition is None:
        raise UsageError("--group starts at the group's committed offsets: --offset and --from-time need --partition "
                         "with it (reset-offsets moves a group's offsets)")
    if offset is not None and offset >= 0:
        if partition is None:
            raise UsageError("--offset N needs --partition (an offset is a position in one partition; -N reads the "
                             "last N of each)")
        return records.Start(records.AT_OFFSET, offset)
    if offset is not None:
        return records.Start(records.LAST, -offset)
    if args["from_time"] is not None:
        return records.Start(records.AT_TIME, args["from_time"])
    return records.Start(records.BEGINNING if args["from_beginning"] else records.NEW)


def _consumed(reading: records.Consumption, args: dict, stopped: str, default_limit: bool) -> Result:
    """The summary: how many records and what ended the read, then a line for each partition that
    was not read, each offset reset and each read_committed stop short of the end."""
    topic = reading.topic
    why = {"end": ": reached the end of the log.",
           "idle": (f": none came for {reading.idle_s:g} s." if reading.ends is None else
                    f": stopped waiting after {reading.idle_s:g} s without a record."),
           "interrupted": " (interrupted).",
           "limit": (f": the REPL's limit of {REPL_MAX_MESSAGES} (--max-messages N for more)." if default_limit
                     else f": --max-messages {args['max_messages']} reached."),
           "reset": ": stopped at an offset reset."}.get(stopped, ".")
    lines = [f"Consumed {reading.count} record(s){why}"]
    failed = bool(reading.errors)
    for r in reading.resets:
        log = f"log start {r.log_start}, log end {r.log_end}" if r.log_start >= 0 and r.log_end >= 0 \
            else "its range could not be read"
        if r.to is None:
            failed = True
            lines.append(f"{topic}-{r.partition}: offset {r.position} is outside the log ({log}): the read stopped "
                         "(--offset-reset earliest or latest goes on from there)")
        else:
            lines.append(f"{topic}-{r.partition}: offset {r.position} is outside the log ({log}): went on from "
                         f"offset {r.to} (--offset-reset {args['offset_reset']})")
    for u in reading.unread:
        failed = True
        more = "" if u.position is None else " with more"
        why = (f"its leader, broker {u.leader}, did not answer Fetch{more} within {reading.idle_s:g} s"
               if u.leader >= 0 else f"it had no leader for {reading.idle_s:g} s")
        if u.position is None:
            lines.append(f"{topic}-{u.partition}: not read: {why}")
        else:
            of = f" of {u.end}" if u.end is not None and u.end < INT64_MAX else ""
            lines.append(f"{topic}-{u.partition}: read to offset {u.position}{of} only: {why}")
    if args["group"] and reading.assigned is None and stopped == "idle":
        failed = True
        who = f"its coordinator, broker {reading.coordinator}," if reading.coordinator >= 0 else \
            "its coordinator (FindCoordinator told none)"
        lines.append(f"Group '{shown(args['group'])}' gave this consumer no partitions within {reading.idle_s:g} s: "
                     f"{who} did not answer the join (JoinGroup, SyncGroup) in time")
    for partition, at in sorted(reading.short.items()):
        lines.append(f"{topic}-{partition}: stopped at offset {at}, its last stable offset: a transaction is open "
                     "(--isolation-level read_uncommitted reads past it)")
    errors = [f"{topic}-{e.partition}: {e.message}" for e in reading.errors]
    return Result(messages=[*lines, *errors], exit_code=1 if failed else 0)
