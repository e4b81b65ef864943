"""`watch CMD [--interval 2s]`: re-run a read command and redraw it, the cells that changed since
the last round marked, until Ctrl-C (pgcli's `\\watch`, Unix watch(1)'s -d). For reassignments
(`watch reassign-partitions --list`), elections and under-replicated partitions (`watch
describe-topic --under-replicated-partitions`) and lag (`watch describe-group G`).

Each round is a fresh read of the cluster (the command's own). On a terminal the screen is
redrawn and changed cells are shown in reverse video; elsewhere rounds follow one another, each
under a header, changed cells followed by `*`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.declarations.option_types import duration, positive_int
from kafka_shell.declarations.parsing import help_text, parse
from kafka_shell.declarations.registry import REGISTRY, Option, command
from kafka_shell.declarations.render import Result, Table, View, cell, for_people, output_text

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

DEFAULT_INTERVAL_S = 2.0
# Read commands that a `mutates` command also is, by the options that make it one.
READ_INVOCATIONS = {"reassign-partitions": ("list", "verify")}
CLEAR = "\x1b[H\x1b[2J"
REVERSE, PLAIN = "\x1b[7m", "\x1b[0m"


@command("watch",
         Option("command", rest=True, required=True, metavar="COMMAND ...",
                help="The read command to re-run, with its options."),
         Option("--interval", type=duration, metavar="INTERVAL",
                help=f"Time between rounds, e.g. 2s, 500ms, 1m (default {DEFAULT_INTERVAL_S:g}s); also after "
                     "the command."),
         Option("--count", type=positive_int, metavar="N", help="Stop after N rounds (default: at Ctrl-C)."),
         help="Re-run a read command every --interval and redraw it, the changed cells marked, until Ctrl-C.",
         examples=("watch describe-topic --under-replicated-partitions", "watch reassign-partitions --list --interval 1s",
                   "watch describe-group app --interval 5s"), tables=None)
def watch(session: Session, args: dict) -> Result:
    args = dict(args)
    words = _own_options(list(args["command"]), args)
    interval = args["interval"] if args["interval"] is not None else DEFAULT_INTERVAL_S
    inner = parse(words, REGISTRY, {"topic": session.topic} if session.topic else None)
    if inner.help:
        return Result(text=help_text(inner.command))
    _check_read_only(inner.command, inner.args)
    fmt = inner.args.get("output") or session.output
    terminal = _is_terminal(session.stdout)
    line = " ".join(words)
    previous: dict[str, dict[tuple, list[Any]]] = {}
    rounds = 0
    try:
        while True:
            rounds += 1
            try:
                with session.bounded():   # each round within --timeout
                    result = inner.command.handler(session, inner.args)
            except ShellError as exc:   # a round that fails says why; the next one tries again
                result = Result.message(str(exc), exit_code=exc.exit_code)
            if not isinstance(result, Result) or result.stream is not None:
                raise UsageError(f"watch cannot redraw {inner.command.name}: give it a command that shows a result")
            changes = _changes(result.tables, previous)
            head = f"Every {interval:g} s: {line}   ({time.strftime('%H:%M:%S')}, round {rounds}; Ctrl-C stops)"
            body = _marked_text(result, fmt, changes, terminal, session) if fmt == "table" \
                else output_text(result, fmt)
            session.stdout.write((CLEAR if terminal else ("\n" if rounds > 1 else "")) + head + "\n\n" + body)
            for message in result.messages:
                session.stdout.write(message + "\n")
            session.stdout.flush()
            if args["count"] is not None and rounds >= args["count"]:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    return Result.message(f"Watched {line} for {rounds} round(s).")


def _own_options(words: list[str], args: dict) -> list[str]:
    """`watch CMD ... --interval 2s --count 3`: trailing --interval and --count are watch's own
    when the command has no such option; they go into `args`, the command keeps the rest."""
    cmd = REGISTRY.get(words[0])
    own = {"--interval": duration, "--count": positive_int}
    while len(words) >= 3 and words[-2] in own and (cmd is None or cmd.option(words[-2]) is None):
        name, raw = words[-2], words[-1]
        dest = name.lstrip("-")
        if args.get(dest) is not None:
            raise UsageError(f"Option {name} given twice for watch")
        try:
            args[dest] = own[name](raw)
        except ValueError as exc:
            raise UsageError(f'Invalid value "{raw}" for {name} of watch: expected {exc}') from None
        words = words[:-2]
    return words


def _check_read_only(cmd: Any, args: dict) -> None:
    reads = READ_INVOCATIONS.get(cmd.name, ())
    if cmd.name == "watch" or cmd.family == "session":
        raise UsageError(f"watch re-runs commands that read the cluster, not {cmd.name}")
    if (cmd.mutates or cmd.changes_cluster or cmd.confirm is not None) and not any(args.get(r) for r in reads):
        read_forms = f" (it reads with --{' or --'.join(reads)})" if reads else ""
        raise UsageError(f"watch re-runs read commands only: {cmd.name} changes the cluster{read_forms}")


# Columns that say which thing a row is (the rest say how it is).
IDENTITY = {"Topic", "Partition", "Group", "Broker", "LogDir", "NodeId", "Id", "Name", "Replica", "Cluster",
            "Entity", "Principal", "Member", "MemberId", "ClientId", "Host", "Resource", "Key", "User"}


def _row_key(t: Table, row: list[Any]) -> tuple:
    """Which row of the last round a row is: its leading identity cells (topic, partition...)."""
    width = 1
    while width < len(t.columns) and t.columns[width] in IDENTITY and t.columns[width - 1] in IDENTITY:
        width += 1
    return tuple(cell(v) for v in row[:width])


def _changes(tables: list[Table], previous: dict[str, dict[tuple, list[Any]]]) -> dict[str, dict[tuple, set[str]]]:
    """Per table, per row key, the columns whose values differ from the last round (a new row:
    all of them); `previous` becomes this round."""
    out: dict[str, dict[tuple, set[str]]] = {}
    for i, t in enumerate(tables):
        name = t.name or f"table{i}"
        before = previous.get(name)
        now = {_row_key(t, row): row for row in t.rows}
        if before is not None:
            out[name] = {key: {c for c, v, old in zip(t.columns, row, before.get(key, [None] * len(row)))
                               if key not in before or v != old}
                         for key, row in now.items()}
        previous[name] = now
    return out


def _marked_text(result: Result, fmt: str, changes: dict[str, dict[tuple, set[str]]], terminal: bool,
                 session: Session) -> str:
    """The table format of the result, each changed cell marked (reverse video, or `*`)."""
    tables = []
    for i, t in enumerate(result.tables):
        changed = changes.get(t.name or f"table{i}", {})
        shown = for_people(t)
        rows = []
        for raw, row in zip(t.rows, shown.rows):
            columns = changed.get(_row_key(t, raw), set())
            rows.append([_mark(v, terminal) if c in columns else v for c, v in zip(shown.columns, row)])
        tables.append(Table(shown.columns, rows, name=t.name))
    if result.text is not None and not result.tables:
        return output_text(result, fmt)
    size = _terminal_width(session)
    return output_text(Result(tables=tables), "table", View(width=size))


def _mark(value: Any, terminal: bool) -> str:
    return f"{REVERSE}{cell(value)}{PLAIN}" if terminal else f"{cell(value)}*"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _terminal_width(session: Session) -> int | None:
    import os
    try:
        return os.get_terminal_size(session.stdout.fileno()).columns if _is_terminal(session.stdout) else None
    except (AttributeError, ValueError, OSError):
        return None

