"""What handlers return (`Result`) and the one renderer that prints it as a table, JSON, JSON lines
or CSV.

Tables go to stdout; messages go to stderr, so `--output json` stdout is always valid JSON and
carries exactly the rows and columns the table shows. The table format alone is for people: it
leaves out columns empty in every row, shows sizes, times and durations readably (by the column
kinds a Table declares), and turns to a vertical record layout when a table is wider than the
terminal. json, jsonl and csv carry the exact values.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from kafka_shell.base.errors import UsageError, shown

FORMATS = ("table", "json", "jsonl", "csv")
EXPANDED = ("auto", "on", "off")
# Column kinds a Table may declare: how the table format shows a column's numbers.
#   bytes: a size ("100 GiB"); time: epoch milliseconds, shown as an age ("120 ms ago");
#   ms: a duration in milliseconds ("1.5 s"). Negative values are Kafka's "unknown" (shown as -).
#   reported: said in the result's messages already, so the table format leaves it out.
#   datetime: epoch milliseconds, shown as a UTC date and time ("2026-01-31T12:00:00.000Z").
#   id: a broker or node id, or None shown as "none" (Kafka's word for no leader); never left out.
#   kept: never left out, even when empty in every row (an empty ISR is the news).
#   mark: a boolean shown as "*" or nothing (the replica unclean-recovery chose).
#   entity: a quota's entity {"user": "alice", "client-id": None}, shown "user=alice, client-id=<default>".
#   assignment: partitions as a list of {"topic": t, "partitions": [0, 1]}, shown "t(0,1) u(2)" (or a
#     streams member's tasks, {"subtopology": s, ...}, shown "s:[0,1]").
KINDS = ("bytes", "time", "ms", "reported", "datetime", "id", "kept", "mark", "assignment", "entity")
KEPT_KINDS = ("id", "kept")


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]
    name: str = ""            # its key in json, its "table" in jsonl, what --csv-table picks
    kinds: dict[str, str] = field(default_factory=dict)   # column -> one of KINDS


@dataclass
class Result:
    tables: list[Table] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)   # status lines, to stderr
    # Preformatted stdout (help). With tables too, it is the table format's view of them (e.g.
    # Kafka's own wording), while json and csv print the tables: scripts always get data.
    text: str | None = None
    exit_code: int = 0
    stream: Stream | None = None   # rows still to come, printed as they do (see write_stream)

    @classmethod
    def table(cls, columns: list[str], rows: list[list[Any]], *messages: str, name: str = "",
              kinds: dict[str, str] | None = None, **kw: Any) -> Result:
        return cls(tables=[Table(columns, rows, name=name, kinds=kinds or {})], messages=list(messages), **kw)

    @classmethod
    def message(cls, *messages: str, exit_code: int = 0) -> Result:
        return cls(messages=list(messages), exit_code=exit_code)

    @classmethod
    def outcome(cls, tables: list[Table], notes: list[str], failures: list[str], text: str | None = None,
                answered: bool | None = None) -> Result:
        """A result where parts may fail: the tables (or `text`) and notes, then one line per
        failure and exit 1 if any. When nothing succeeded, only the lines: no empty tables.
        `answered` says whether anything did (default: whether the tables have rows), for an
        answer whose parts may be empty."""
        if failures and not (any(t.rows for t in tables) if answered is None else answered):
            return cls.message(*notes, *failures, exit_code=1)
        return cls(tables=tables, text=text, messages=[*notes, *failures], exit_code=1 if failures else 0)


@dataclass
class Stream:
    """Rows printed as they come (consume): one table whose items an iterator yields, each
    written and flushed at once (a table row, json's array as it grows, a jsonl line, a csv
    line). `summary(interrupted)` then gives the result's messages and exit code; `interrupted`
    is True when Ctrl-C came while a row was being written.

    An item is a row of `columns`, or whatever `row` makes one of; `people` gives the table
    format its own columns and row (the table shows what scripts get exactly in other words),
    and `encode`, when set, is the output whatever the format: each item's bytes (kcat's -f)."""
    columns: list[str]
    rows: Iterator[Any]
    summary: Callable[[bool], Result]
    name: str = ""
    kinds: dict[str, str] = field(default_factory=dict)
    widths: dict[str, int] = field(default_factory=dict)   # column -> its width in the table format
    row: Callable[[Any], list[Any]] | None = None
    people: tuple[list[str], Callable[[Any], list[Any]]] | None = None
    encode: Callable[[Any], bytes] | None = None


@dataclass
class Proposal:
    """What a handler returns when it has planned a change its command's confirmation policy
    covers: the runner asks `question` (or refuses outside the REPL with `refusal`), then runs
    `apply` for the result. See registry.Confirm."""
    question: str
    refusal: str
    apply: Callable[[], Result]


@dataclass
class View:
    """Where the output goes: the terminal's size (None when stdout is no terminal), the vertical
    layout setting, the table --output csv writes, and the pager (the REPL's, when it may page)."""
    width: int | None = None
    height: int | None = None
    expanded: str = "auto"             # one of EXPANDED
    csv_table: str | None = None
    pager: Callable[[str], bool] | None = None   # shows the text; False when it could not


def cell(value: Any) -> str:
    """A value as table and CSV text: lists joined by commas, None as '-'."""
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (dict, list, tuple)) for v in value):
            return json.dumps(value)   # a list of records (an assignment) as JSON text
        return ",".join(map(str, value))
    if isinstance(value, dict):   # a map (a topic's configs): k=v,k2=v2
        return ",".join(f"{k}={cell(v)}" for k, v in value.items())
    return str(value)


def render(result: Result, fmt: str, out: TextIO, err: TextIO, view: View | None = None) -> None:
    view = view or View()
    text = output_text(result, fmt, view)
    if text and not (view.pager and view.height and text.count("\n") >= view.height and view.pager(text)):
        out.write(text)
    for line in result.messages:
        err.write(line + "\n")
    out.flush()
    err.flush()


def write_stream(stream: Stream, fmt: str, out: TextIO) -> Result:
    """Print a stream's rows as they come; return its summary (messages and exit code). Stdout
    stays what the format promises: nothing before the first row (a failure prints nothing in
    json), and json's object closed however the stream ends."""
    write = _stream_writer(stream, fmt, out)
    first = True
    interrupted = False
    try:
        for item in stream.rows:
            if first and stream.encode is None:
                out.write(_stream_head(stream, fmt))
            elif fmt == "json" and stream.encode is None:
                out.write(",\n")
            write(item)
            first = False
            if getattr(out, "broken", False):   # a pipe's reader stopped reading (| head -3)
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        interrupted = True
        close = getattr(stream.rows, "close", None)
        if close is not None:
            close()
    summary = stream.summary(interrupted)
    if stream.encode is not None:
        pass
    elif first and fmt == "json" and summary.exit_code == 0:
        out.write(json.dumps({stream.name or "table0": []}) + "\n")
    elif first and fmt == "table" and summary.exit_code == 0:
        out.write("(none)\n")
    elif not first and fmt == "json":
        out.write("\n]}\n")
    out.flush()
    return summary


def _stream_writer(stream: Stream, fmt: str, out: TextIO) -> Callable[[Any], None]:
    """What writes one item of the stream, and flushes it."""
    if stream.encode is not None:
        encode = stream.encode
        binary = getattr(out, "buffer", None)

        def write_bytes(item: Any) -> None:
            data = encode(item)
            if binary is not None:
                binary.write(data)
                binary.flush()
            else:   # a text stream (a test's StringIO): the bytes as Python reads the command line's
                out.write(data.decode("utf-8", "surrogateescape"))
                out.flush()
        return write_bytes
    people = _StreamedTable(stream) if fmt == "table" else None
    make = stream.row or (lambda item: item)

    def write(item: Any) -> None:
        out.write(people.line(item) if people is not None else _stream_row(stream, fmt, make(item)))
        out.flush()
    return write


class _StreamedTable:
    """Rows of the table format in the stream's widths (the last column unpadded). A cell wider
    than its column widens it from there on, under the header printed again: every row lines up
    with the header above it."""

    def __init__(self, stream: Stream):
        self.columns, self.make = stream.people if stream.people is not None else \
            (stream.columns, stream.row or (lambda item: item))
        self.show = [HUMAN.get(stream.kinds.get(c, "")) for c in self.columns]
        self.widths = [max(stream.widths.get(c, 0), len(c)) for c in self.columns]
        self.started = False

    def head(self) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(self.columns, self.widths)).rstrip() + "\n" + \
            "  ".join("-" * w for w in self.widths) + "\n"

    def line(self, item: Any) -> str:
        cells = [cell(v if f is None else f(v)) for v, f in zip(self.make(item), self.show)]
        wider = [max(w, len(c)) for c, w in zip(cells[:-1], self.widths)] + self.widths[-1:]
        head = ""
        if wider != self.widths or not self.started:
            self.widths = wider
            head = ("\n" if self.started else "") + self.head()
            self.started = True
        return head + "  ".join(c.ljust(w) for c, w in zip(cells[:-1], self.widths)) + "  " + cells[-1] + "\n"


def _stream_head(stream: Stream, fmt: str) -> str:
    if fmt == "json":
        return "{" + json.dumps(stream.name or "table0") + ": [\n"
    if fmt == "csv":
        return _csv(Table(stream.columns, []))
    return ""   # the table's head comes with its first row; jsonl has none


def _stream_row(stream: Stream, fmt: str, row: list[Any]) -> str:
    if fmt == "json":
        return json.dumps(dict(zip(data_keys(stream.columns), row)), default=str)
    if fmt == "csv":
        return _csv(Table(stream.columns, [row])).split("\n", 1)[1]
    keys = ["table", *data_keys(stream.columns)]
    return json.dumps(dict(zip(keys, [stream.name or "table0", *row])), default=str) + "\n"


def output_text(result: Result, fmt: str, view: View | None = None) -> str:
    """What `render` writes to stdout."""
    view = view or View()
    if result.text is not None and (fmt == "table" or not result.tables):
        return result.text.rstrip("\n") + "\n"
    if not result.tables:
        # One json shape for every command: a result without tables (create-topic) that
        # succeeded is the object with no tables. Failures keep stdout empty.
        return "{}\n" if fmt == "json" and result.exit_code == 0 else ""
    if fmt == "table":
        return _table(result.tables, view)
    if fmt == "csv":
        return _csv(_csv_table(result.tables, view.csv_table))
    return _json(result.tables) if fmt == "json" else _jsonl(result.tables)


# A table of printable ASCII text goes through `_aligned`, which prints exactly tabulate's
# "simple" layout for it, without tabulate's import (~30 ms of a one-shot start) and ~10 times
# faster (tabulate inspects every cell's type and width: 0.35 s of a 10,000-partition
# describe-topic). Other text (wide characters, tabs) goes through tabulate itself.
_PLAIN = re.compile(r"[ -~]*")
_NUMBERS = {int, type(None)}


def _table(tables: list[Table], view: View | None = None) -> str:
    """tabulate's "simple" layout (or records one under another, when expanded). Cells are
    already text, so number parsing is off."""
    view = view or View()
    if all(not t.rows for t in tables):
        return "(none)\n"   # one word for the whole result, not one per empty table
    blocks = []
    for t in tables:
        if not t.rows:
            blocks.append(f"(no {t.name.replace('_', ' ') or 'rows'})")
            continue
        header, columns = people_columns(t)
        text = None if view.expanded == "on" else _horizontal(header, columns)
        if text is None or (view.expanded == "auto" and view.width is not None and _widest_line(text) > view.width):
            text = _vertical(header, list(zip(*columns)), view.width)
        blocks.append(text)
    return "\n\n".join(blocks) + "\n"


def _horizontal(header: list[str], values: list[Sequence[Any]]) -> str:
    """The table of `header` over `values` (column by column)."""
    kinds = [set(map(type, col)) for col in values]
    columns = list(map(_column_text, values, kinds))
    if all(_PLAIN.fullmatch("".join(col)) for col in (header, *columns)):
        # tabulate strips the cells (not the headers) before it aligns them; a column of numbers
        # (and None: "-") has nothing to strip
        return _aligned(header, [col if kind <= _NUMBERS else list(map(str.strip, col))
                                 for kind, col in zip(kinds, columns)])
    from tabulate import tabulate  # only tables of other text pay its import
    return tabulate([[cell(v) for v in row] for row in zip(*values)], headers=header, tablefmt="simple",
                    disable_numparse=True)


def _widest_line(text: str) -> int:
    return max(map(len, text.splitlines()), default=0)


def _vertical(header: list[str], rows: list[tuple], width: int | None) -> str:
    """pgcli's expanded layout: `-[ RECORD n ]---` and then `Column | value`, one line each."""
    key_width = max(map(len, header))
    records = []
    for n, row in enumerate(rows, 1):
        lines = [f"{c.ljust(key_width)} | {cell(v)}" for c, v in zip(header, row)]
        rule = min(max(map(len, lines)), width or 80)
        head = f"-[ RECORD {n} ]"
        records.append("\n".join([head + "-" * max(rule - len(head), 0), *lines]))
    return "\n".join(records)


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, (list, tuple, dict)) and not value)


def for_people(t: Table) -> Table:
    """The table format's view: columns empty in every row left out, declared kinds readable."""
    header, columns = people_columns(t)
    if header is t.columns:   # nothing left out and nothing made readable: the table as it is
        return t
    return Table(header, list(map(list, zip(*columns))), name=t.name)


def people_columns(t: Table) -> tuple[list[str], list[Sequence[Any]]]:
    """`for_people`'s header and values, column by column (10,000s of rows: a transposition
    costs less than a loop over the rows, and the table format aligns columns). The header is
    the table's own list only when no column is left out or made readable."""
    columns: list[Sequence[Any]] = list(zip(*t.rows)) if t.rows else [() for _ in t.columns]
    keep = [i for i, (c, values) in enumerate(zip(t.columns, columns))
            if t.kinds.get(c) != "reported" and (t.kinds.get(c) in KEPT_KINDS or _any_value(values))] \
        or list(range(len(t.columns)))
    show: list[Callable[[Any], Any] | None] = [HUMAN.get(t.kinds.get(t.columns[i], "")) for i in keep]
    if len(keep) == len(t.columns) and not any(show):
        return t.columns, columns
    return ([people_header(t.columns[i], t.kinds) for i in keep],
            [columns[i] if f is None else list(map(f, columns[i])) for i, f in zip(keep, show)])


def _any_value(values: Sequence[Any]) -> bool:
    """Whether a column holds anything but empty values (one of None only: one count)."""
    return values.count(None) != len(values) and any(not _empty(v) for v in values)


def people_header(column: str, kinds: dict[str, str]) -> str:
    """A column's header in the table format: a duration or time shown readably ("15 min") drops
    the unit its name gives the exact value in ("TransactionTimeoutMs" -> "TransactionTimeout")."""
    if kinds.get(column) in ("ms", "time") and column.endswith("Ms") and len(column) > 2:
        return column[:-2]
    return column


def human_bytes(value: Any) -> Any:
    """1536 -> "1.5 KiB", 107374182400 -> "100 GiB" (binary units, as Kafka's sizes are)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if value < 0:
        return None
    if value < 1024:
        return f"{value} B"
    size = float(value)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        size /= 1024
        if size < 1024 or unit == "EiB":
            break
    return f"{size:.1f}".rstrip("0").rstrip(".") + f" {unit}"


def human_ms(value: Any) -> Any:
    """A duration in milliseconds: 120 -> "120 ms", 1500 -> "1.5 s", 125000 -> "2 min 5 s"."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return value
    if value < 0:
        return None
    if value < 1000:
        return f"{value:g} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{seconds:.1f}".rstrip("0").rstrip(".") + " s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {sec} s" if sec else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def human_time(value: Any, now_ms: float | None = None) -> Any:
    """Epoch milliseconds as an age, like kafka-metadata-quorum --human-readable: "120 ms ago"."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return value
    if value < 0:
        return None
    age = round((time.time() * 1000 if now_ms is None else now_ms) - value)
    return f"{human_ms(age)} ago" if age >= 0 else f"in {human_ms(-age)}"


def human_datetime(value: Any) -> Any:
    """Epoch milliseconds as a UTC date and time to the millisecond: "2026-01-31T12:00:00.000Z"."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None if isinstance(value, int) and not isinstance(value, bool) else value
    seconds, ms = divmod(value, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def _id(value: Any) -> Any:
    return "none" if value is None else value


def _kept(value: Any) -> Any:
    return "-" if _empty(value) else value


def _mark(value: Any) -> Any:
    return ("*" if value else "") if isinstance(value, bool) else value


def human_assignment(value: Any) -> Any:
    """[{"topic": "t", "partitions": [0, 1]}] -> "t(0,1)", as kafka-consumer-groups prints one;
    a streams member's tasks, [{"subtopology": "0", "partitions": [0, 1]}] -> "0:[0,1]", as
    kafka-streams-groups does."""
    if not isinstance(value, list):
        return value
    return " ".join(f"{a['topic']}({','.join(map(str, a['partitions']))})" if "topic" in a
                    else f"{a['subtopology']}:[{','.join(map(str, a['partitions']))}]" for a in value) or None


def _entity(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return ", ".join(f"{k}={v if v is not None else '<default>'}" for k, v in value.items())


HUMAN: dict[str, Callable[[Any], Any]] = {"bytes": human_bytes, "time": human_time, "ms": human_ms,
                                          "datetime": human_datetime, "id": _id, "kept": _kept, "mark": _mark,
                                          "assignment": human_assignment, "entity": _entity}


def _column_text(values: Sequence[Any], kinds: set[type]) -> list[str]:
    """`cell` of a whole column, by the `kinds` (types) it holds (a column of ints or of strings
    in one pass: 100,000 cells of a large table cost ~30 ms less than cell by cell)."""
    if kinds == {str}:
        return list(values)
    if kinds == {int}:
        return list(map(str, values))
    if kinds <= {str, int}:
        return [v if v.__class__ is str else str(v) for v in values]
    if kinds <= {list, tuple}:
        return [",".join(map(str, v)) for v in values]
    return [cell(v) for v in values]


def _aligned(header: list[str], columns: list[list[str]]) -> str:
    """tabulate's "simple" table of left-aligned ASCII text, given column by column: header,
    dashes, rows; columns two spaces apart, each as wide as its widest cell or its header plus
    tabulate's padding of 2."""
    widths = [max(len(h) + 2, max(map(len, col))) for h, col in zip(header, columns)]
    line = "  ".join(f"{{:<{w}}}" for w in widths).format
    out = [line(*header).rstrip(), "  ".join("-" * w for w in widths)]
    # Padded a column at a time (the last one needs none): a third faster than a format per row.
    padded = [list(map(str.ljust, col, itertools.repeat(w))) for w, col in zip(widths[:-1], columns[:-1])] + columns[-1:]
    out += map(str.rstrip, map("  ".join, zip(*padded)))
    return "\n".join(out)


def table_key(t: Table, i: int) -> str:
    """A table's name in json and jsonl ("table0"... only for a table someone forgot to name)."""
    return t.name or f"table{i}"


def _json(tables: list[Table]) -> str:
    """Always one shape: an object whose keys name the result's tables."""
    return json.dumps({table_key(t, i): [dict(zip(data_keys(t.columns), row)) for row in t.rows]
                       for i, t in enumerate(tables)}, indent=1, default=str) + "\n"


_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(column: str) -> str:
    """"LastFetchTimestamp" -> "last_fetch_timestamp", "Leader epoch" -> "leader_epoch"."""
    return re.sub(r"[^0-9a-zA-Z]+", "_", _WORD_START.sub("_", column.strip())).strip("_").lower()


def data_keys(columns: list[str]) -> list[str]:
    """A table's columns as json, jsonl and csv name them: snake_case, the one spelling of every
    key a script reads (the tables' names, jsonl's "table", Kafka's JSON files such as a
    reassignment's "log_dirs"); the table format keeps Kafka's words ("LogEndOffset")."""
    return [snake_case(c) for c in columns]


def _jsonl(tables: list[Table]) -> str:
    """One row an object a line, snake_case keys, with its table's name under "table"."""
    lines = []
    for i, t in enumerate(tables):
        keys = ["table", *data_keys(t.columns)]
        name = table_key(t, i)
        lines += [json.dumps(dict(zip(keys, [name, *row])), default=str) for row in t.rows]
    return "".join(line + "\n" for line in lines)


def _csv_table(tables: list[Table], name: str | None) -> Table:
    """The one table csv writes: the main one (the first), or the one --csv-table names."""
    if name is None:
        return tables[0]
    for i, t in enumerate(tables):
        if name == table_key(t, i):
            return t
    names = ", ".join(table_key(t, i) for i, t in enumerate(tables))
    raise UsageError(f'No table "{shown(name)}" in this result for --csv-table: choose one of {names}')


class _Lines:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> None:
        self.parts.append(s)


def _csv(table: Table) -> str:
    buf = _Lines()
    import csv  # --output csv only
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(data_keys(table.columns))
    w.writerows([cell(v) if v is not None else "" for v in row] for row in table.rows)
    return "".join(buf.parts)
