"""The one place a line is executed: parse, topic context, sandbox-only and confirmation checks,
the handler, rendering, the cache refresh after a change, and every exception as one line.

The REPL and one-shot mode call `run_line`; replay calls `run_each`, which runs lines as they
come and also sends runs of consecutive lines of a batchable command (create-topic) as one
request, as KIP-4 intends (up to MAX_BATCH lines a request).
"""

from __future__ import annotations

import collections
import dataclasses
import os
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Iterator

from kafka_shell.declarations import parsing
from kafka_shell.base.errors import ShellError, UsageError, from_kafka_exception, printable, shown
from kafka_shell.declarations.registry import CONTEXT_NOTE, REGISTRY, STRICT_TABLES_ENV, Command, undeclared_tables
from kafka_shell.declarations.render import Proposal, Result, View, render, write_stream
from kafka_shell.connection.session import Session

Echo = Callable[[str, str], None]   # (where, line) -> None, called before a line's output


@dataclass
class Line:
    where: str              # "script.ksh:12: " in replay, "" elsewhere: prefixes error lines
    text: str
    parsed: parsing.Parsed | None = None
    echoed: bool = False
    # The commands after it on the same input line (`a; b; c`): checked with it, before any runs.
    rest: list[Line] = dataclasses.field(default_factory=list)


def run_line(session: Session, line: str, where: str = "") -> int:
    """Run one line and print its output; return its exit code (0 for a blank line)."""
    return run_lines(session, [(where, line)])[-1]


def run_lines(session: Session, items: Iterable[tuple[str, str]], echo: Echo | None = None,
              stop_on_error: bool = True) -> list[int]:
    """`run_each`, with the exit code of each line run (at least one: [0] when none ran)."""
    return list(run_each(session, items, echo, stop_on_error)) or [0]


def run_each(session: Session, items: Iterable[tuple[str, str]], echo: Echo | None = None,
             stop_on_error: bool = True, ready: Callable[[], bool] | None = None) -> Iterator[int]:
    """Run (where, line) items in order as they come (an iterator is read as it goes: replay
    streams); yield the exit code of each line run (a failure stops the run unless stop_on_error
    is False). `ready()` says whether the items can give another line without waiting for it (a
    batch takes only those; None: always)."""
    pending = _Pending(items)
    while (line := pending.pop()) is not None:
        if stop_on_error and line.rest:
            refused = _refusal_of_list(session, [line, *line.rest])
            if refused is not None:
                bad, exc = refused
                yield _fail(session, bad, exc, echo)
                return
        try:
            line.parsed = _prepare(session, line.text)
        except Exception as exc:  # noqa: BLE001 - a ShellError, or anything: still one line (or --debug)
            code = _fail(session, line, exc, echo)
            yield code
            if code and stop_on_error:
                return
            continue
        _echo(line, echo)
        run = [line]
        batch = _batch_of(line.parsed)
        if batch is not None and line.parsed is not None:
            run += _following_run(session, pending, line.parsed, ready)
        results = _execute(session, run, batch, stop_on_error)
        for ln, outcome in zip(run, results):
            code = _finish(session, ln, outcome, echo)
            yield code
            if code and stop_on_error:
                return


class _Pending:
    """The lines still to run (`a; b` is two commands, in every mode), read from the items as
    they are needed, with a look ahead for batching."""

    def __init__(self, items: Iterable[tuple[str, str]]):
        self._items = iter(items)
        self._ahead: collections.deque[Line] = collections.deque()

    def peek(self, k: int = 0) -> Line | None:
        """The k-th line from here (0: the next), reading more items when needed."""
        while len(self._ahead) <= k:
            item = next(self._items, None)
            if item is None:
                return None
            where, text = item
            parts = [Line(where, part) for part in parsing.split_commands(text)]
            parts[0].rest = parts[1:]
            self._ahead.extend(parts)
        return self._ahead[k]

    def holds_one(self) -> bool:
        """Whether a line was read ahead already."""
        return bool(self._ahead)

    def pop(self) -> Line | None:
        line = self.peek()
        if line is not None:
            self._ahead.popleft()
        return line


def _refusal_of_list(session: Session, lines: list[Line]) -> tuple[Line, Exception] | None:
    """The first line of `a; b; c` that its usage checks refuse, with the refusal: then none of
    them runs. Each is checked with the context topic and output format the lines before it
    leave (`topic t; describe-topic`)."""
    topic, output = session.topic, session.output
    for line in lines:
        try:
            parsed = check(session, line.text, (topic, output))
        except Exception as exc:  # noqa: BLE001 - a UsageError, or anything: reported as that line's
            return line, exc
        if parsed is not None and not parsed.help and parsed.command.family == "session":
            # The shell's own settings a line may change for the lines after it.
            if parsed.command.name == "topic":
                topic = parsed.args.get("name")
            elif parsed.command.name == "output" and parsed.args.get("format"):
                output = parsed.args["format"]
    return None


def check(session: Session, text: str, context: tuple[str | None, str] | None = None) -> parsing.Parsed | None:
    """Every check of one command line that needs no cluster, as the runner makes them: its
    words, the command and its options (the context topic filling --topic), --csv-table against
    the output format and the tables the command declares, and --yes of a destructive invocation
    outside the REPL when its question needs nothing read from the cluster. A UsageError names
    what is wrong; nothing is run or sent (replay checks a whole file with it before running any
    line; a `;` line each of its commands). `context`: the context topic and output format the
    lines before it leave (default: the session's). None for a blank line."""
    topic, output = context if context is not None else (session.topic, session.output)
    tokens = parsing.tokenize(text)
    if not tokens:
        return None
    cmd = parsing.find_command(tokens[0])
    filled = {"topic": topic} if cmd.topic_context and topic else None
    parsed = parsing.parse(tokens, REGISTRY, filled)
    if parsed.help:
        return parsed
    _check_csv_table(cmd, parsed.args.get("csv_table"), session.csv_table, parsed.args.get("output") or output)
    policy = cmd.confirm
    if policy is None or not policy.applies(parsed.args) or _approved(session, parsed.args) or _can_ask(session):
        return parsed
    if policy.proposed and policy.refusal is not None:
        raise UsageError(_refusal(policy.refusal))
    if not policy.proposed and policy.question is None:
        raise UsageError(_refusal(policy.asks(parsed.args).rstrip("?") if policy.asks else f"{cmd.name} is destructive"))
    return parsed


def _check_csv_table(cmd: Command, named: str | None, session_table: str | None, output: str) -> None:
    """--csv-table must name a table the command prints (its declared tables) and come with
    --output csv; the session's --csv-table (a global option) only the former, and only for
    commands that print tables."""
    if named and output != "csv":
        raise UsageError(f"--csv-table picks the table of --output csv: add -o csv to {cmd.name} (or leave --csv-table out)")
    wanted = named or (session_table if cmd.tables else None)
    if not wanted or cmd.tables is None or wanted in cmd.tables:
        return
    if cmd.tables:
        raise UsageError(f'{cmd.name} prints no table "{shown(wanted)}" for --csv-table: choose one of {", ".join(cmd.tables)}')
    raise UsageError(f"{cmd.name} prints no table: leave --csv-table out")


def _prepare(session: Session, text: str) -> parsing.Parsed | None:
    parsed = check(session, text)
    if parsed is None or parsed.help:
        return parsed
    policy = parsed.command.confirm
    if policy is None or not policy.applies(parsed.args) or _approved(session, parsed.args) or policy.proposed:
        return parsed   # a proposed change is asked about once the handler has planned it
    if policy.question is not None:   # it names the targets, after checking them
        with session.bounded():
            question = policy.question(session, parsed.args)
        if question is None:
            return parsed
        refusal = question.rstrip("?")
    elif policy.asks is not None:   # it names what the line names
        question = policy.asks(parsed.args)
        refusal = question.rstrip("?")
    else:
        question = f"{text.strip()}: this cannot be undone. Continue?"
        refusal = f"{parsed.command.name} is destructive"
    _ask(session, question, refusal)
    return parsed


def _approved(session: Session, args: dict) -> bool:
    return bool(args.get("yes") or session.yes or args.get("dry_run"))


def _can_ask(session: Session) -> bool:
    return session.interactive and session.confirm is not None


def _refusal(text: str) -> str:
    return text if "--yes" in text else f"{text}: add --yes to confirm"


def _ask(session: Session, question: str, refusal: str) -> None:
    """The confirmation policy: refused outside the REPL, asked in it; "no" cancels."""
    if not _can_ask(session):
        raise UsageError(_refusal(refusal))
    assert session.confirm is not None
    if not session.confirm(question):
        raise ShellError("Cancelled: nothing was changed.")


def _settle(session: Session, command: Command, args: dict, outcome: object) -> object:
    """A handler's Proposal is applied once approved (--yes, or outside the REPL the command's
    own opt-in such as --execute) or confirmed, by the policy above."""
    if isinstance(outcome, Proposal):
        opted_in = command.confirm is not None and command.confirm.opt_in is not None and not _can_ask(session)
        if not (_approved(session, args) or opted_in):
            _ask(session, outcome.question, outcome.refusal)
            with session.bounded():   # the time taken to answer is not the command's
                return outcome.apply()
        return outcome.apply()
    return outcome


def _batch_of(parsed: parsing.Parsed | None) -> Callable[[Session, list[dict]], list[object]] | None:
    if parsed is None or parsed.help:
        return None
    return parsed.command.batch


# Consecutive lines of a batchable command go out in one request, of at most this many lines (a
# stream of them must not be gathered without bound).
MAX_BATCH = 1000


def _following_run(session: Session, pending: _Pending, first: parsing.Parsed,
                   ready: Callable[[], bool] | None) -> list[Line]:
    """The next lines that parse cleanly to the same batchable command (taken from `pending`),
    those that are there already (a line still to come is not waited for)."""
    run: list[Line] = []
    while len(run) < MAX_BATCH - 1 and (pending.holds_one() or ready is None or ready()) \
            and (line := pending.peek()) is not None:
        try:
            parsed = _prepare(session, line.text)
        except Exception:  # noqa: BLE001 - the line runs (and fails) on its own later
            break
        if parsed is None or parsed.help or parsed.command is not first.command \
                or bool(parsed.args.get("dry_run")) != bool(first.args.get("dry_run")):
            break
        line.parsed = parsed
        run.append(line)
        pending.pop()
    return run


def _execute(session: Session, run: list[Line], batch, stop_on_error: bool) -> list[object]:
    """The outcome (Result or exception) of each line of the run."""
    first = run[0].parsed
    if first is None:
        return [Result()]
    if first.help:
        return [Result(text=parsing.help_text(first.command))]
    if batch is None:
        try:
            with session.bounded():   # one --timeout for the command, whatever it asks
                outcomes = [_settle(session, first.command, first.args, first.command.handler(session, first.args))]
        except Exception as exc:  # noqa: BLE001
            outcomes = [exc]
    else:
        args = [ln.parsed.args for ln in run]  # type: ignore[union-attr]
        try:
            with session.bounded():
                if stop_on_error and len(run) > 1 and not first.args.get("dry_run"):
                    # The first failure must stop the run: validate the whole run first, and send
                    # only the lines before the first line that would fail.
                    checks = batch(session, [{**a, "dry_run": True} for a in args])
                    bad = next((k for k, c in enumerate(checks) if _failed(c)), None)
                    if bad is not None:
                        done = batch(session, args[:bad]) if bad else []
                        return [*done, checks[bad]]
                outcomes = batch(session, args)
        except Exception as exc:  # noqa: BLE001 - the request of the whole run failed: each line says so
            outcomes = [exc] * len(run)
    if (first.command.mutates or first.command.changes_cluster) and not first.args.get("dry_run") \
            and session.refresh_after_mutation \
            and any(isinstance(o, Result) and o.exit_code == 0 for o in outcomes):
        _refresh(session)
    return outcomes


def _failed(outcome: object) -> bool:
    return isinstance(outcome, BaseException) or getattr(outcome, "exit_code", 0) != 0


def _refresh(session: Session) -> None:
    """The REPL's cache (completion, toolbar) follows a change at once: the next Tab knows it.
    A refresh that fails or is slow (a broker down or delayed: the change may have been that)
    is no news of the command's: it goes on in the background, the toolbar shows the cache's
    age, --debug the reason."""
    session.conn.refresh_after_change()


def _finish(session: Session, line: Line, outcome: object, echo: Echo | None) -> int:
    if isinstance(outcome, BaseException):
        return _fail(session, line, outcome, echo)
    if line.parsed is not None:
        _echo(line, echo)
    result: Result = outcome  # type: ignore[assignment]
    args = line.parsed.args if line.parsed is not None else {}
    fmt = args.get("output") or session.output
    if result.stream is not None:   # its rows are printed as they come, then its summary alone
        result = write_stream(result.stream, fmt, session.stdout)
        fmt = "table"
    elif line.parsed is not None and line.parsed.command.family == "session" and not result.tables:
        fmt = "table"   # the shell's own settings (output json, topic t) are no result: no {}
    if line.parsed is not None and _narrowed_by_context(line.parsed):
        topic = line.parsed.args["topic"]
        note = CONTEXT_NOTE.format(topic=shown(topic[0] if isinstance(topic, list) else topic))
        result = dataclasses.replace(result, messages=[note, *result.messages])
    if line.where and result.exit_code:
        result = dataclasses.replace(result, messages=[line.where + m for m in result.messages])
    if line.parsed is not None and os.environ.get(STRICT_TABLES_ENV):
        undeclared = undeclared_tables(line.parsed.command, result)
        if undeclared:
            return _fail(session, line, AssertionError(f"{line.parsed.command.name} printed table(s) "
                                                       f"{', '.join(undeclared)} it does not declare (tables=...)"), echo)
    try:
        render(result, fmt, session.stdout, session.stderr, _view(session, args.get("csv_table")))
    except UsageError as exc:   # --csv-table naming no table of the result
        return _fail(session, line, exc, echo)
    return result.exit_code


def _narrowed_by_context(parsed: parsing.Parsed) -> bool:
    """The context topic filled --topic of a read that would cover every topic without it."""
    return parsed.command.context_narrows and bool(parsed.args.get("topic")) and "topic" not in parsed.given


def _view(session: Session, csv_table: str | None) -> View:
    """The terminal the output goes to (if any), and the pager when the REPL may page."""
    size = _terminal_size(session.stdout)
    pager = None
    if session.pager and session.interactive and size is not None:
        from kafka_shell.face.pager import page  # the REPL's pager only (it imports subprocess)
        pager = page
    return View(width=size.columns if size else None, height=size.lines if size else None,
                expanded=session.expanded, csv_table=csv_table or session.csv_table, pager=pager)


def _terminal_size(stream) -> os.terminal_size | None:
    try:
        if not stream.isatty():
            return None
        return os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):   # a test's StringIO, a closed stream
        return None


def _echo(line: Line, echo: Echo | None) -> None:
    if echo is not None and not line.echoed:
        echo(line.where, line.text)
        line.echoed = True


def _fail(session: Session, line: Line, exc: BaseException, echo: Echo | None) -> int:
    """Report an exception as one line on stderr; return its exit code."""
    if line.text.strip():
        _echo(line, echo)
    if isinstance(exc, ShellError):
        message, code = str(exc), exc.exit_code
    elif type(exc).__name__ == "KafkaException":
        err = from_kafka_exception(exc)
        message, code = str(err), err.exit_code
    elif isinstance(exc, KeyboardInterrupt):
        message, code = "Interrupted.", 130
    else:
        message, code = f"Internal error: {type(exc).__name__}: {exc} (run with --debug for details)", 1
    if session.debug and not isinstance(exc, UsageError):
        import traceback  # only --debug shows one: not loaded at every start
        session.stderr.write("".join(traceback.format_exception(exc)))
    session.stderr.write(printable(f"{line.where}{message}") + "\n")
    session.stderr.flush()
    return code
