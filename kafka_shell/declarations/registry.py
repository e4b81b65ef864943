"""The command registry: every command is declared once, and parsing, help, REPL completion and
the shell completion files are all derived from that declaration.

    @command("create-topic", Option("--topic", repeatable=True, completer="topic"), ...,
             help="Create topics.", mutates=True)
    def create_topic(ctx, args): ... return Result(...)

Command modules live in the top-level `commands` package (one module per family) and are
imported by `load_commands()`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Callable

from kafka_shell.base.limits import INT16_MAX, INT32_MAX, INT64_MAX
from kafka_shell.declarations.render import FORMATS, table_key

__all__ = ["INT16_MAX", "INT32_MAX", "INT64_MAX", "Option", "Command", "command", "int_range"]

# Value completer kinds, resolved by the REPL completer against the metadata cache.
COMPLETERS = ("topic", "broker", "group", "config_key", "config_value", "path", "cluster",
              "entity_name", "api", "error", "principal", "acl_resource", "transactional_id")


_INTEGER = re.compile(r"[+-]?[0-9]+")


def int_range(low: int, high: int, what: str = "an integer") -> Callable[[str], int]:
    """An option type: an integer from `low` to `high` (Kafka's field width), in ASCII digits.
    Its ValueError says the range, e.g. "a replication factor from 1 to 32767"."""
    def convert(text: str) -> int:
        text = text.strip()
        if _INTEGER.fullmatch(text) and len(text) <= 20 and low <= int(text) <= high:
            return int(text)
        raise ValueError(f"{what} from {low} to {high}")
    return convert


@dataclass(frozen=True)
class Option:
    name: str                         # "--partitions"; positional options have no dashes: "topic"
    type: Callable[[str], Any] = str  # converts the text; raises ValueError with a clear message
    help: str = ""
    default: Any = None
    choices: tuple[str, ...] = ()
    repeatable: bool = False          # may be given many times; the value is a list
    flag: bool = False                # takes no value; True when given
    required: bool = False
    metavar: str | None = None
    completer: str | None = None      # one of COMPLETERS
    aliases: tuple[str, ...] = ()     # e.g. ("--broker-list",)
    hidden: bool = False              # accepted but not shown in help or completion
    rest: bool = False                # a positional that takes every word from it on, as given (watch CMD ...)

    @property
    def positional(self) -> bool:
        return not self.name.startswith("-")

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def is_list(self) -> bool:
        """Its value lists several names or ids separated by commas (metavar `ID,ID`)."""
        return "," in (self.metavar or "") and self.completer in ("topic", "broker", "group")


def _always(args: dict) -> bool:
    return True


@dataclass(frozen=True)
class Confirm:
    """A command's confirmation policy, declared with the command and applied by the runner:
    which invocations change what cannot be undone (`applies`), and how to name it. --yes (the
    command's or the session's) and --dry-run skip it; outside the REPL such an invocation is
    refused in one line (exit 2, nothing sent after the refusal); in the REPL the user is asked,
    and "no" cancels it (exit 1, nothing changed). The question comes from one of:

    - `question(session, args)`: read before the handler runs, naming the targets (it checks
      them too; None when there is nothing to ask);
    - the handler itself (`Proposal`), once it has planned the change, when `proposed`; with
      `refusal` the refusal outside the REPL comes before anything is read;
    - `asks(args)`: from the line alone, naming what it names (nothing read: replay's whole-file
      check refuses it without --yes before any line runs);
    - neither: the command line itself, "LINE: this cannot be undone. Continue?"."""
    applies: Callable[[dict], bool] = _always
    question: Callable[[Any, dict], str | None] | None = None
    asks: Callable[[dict], str] | None = None
    proposed: bool = False
    refusal: str | None = None
    # Kafka's own opt-in (reset-offsets' --execute): outside the REPL it is the confirmation,
    # so no --yes is needed there; the REPL still asks.
    opt_in: str | None = None


@dataclass(frozen=True)
class Command:
    name: str
    handler: Callable
    options: tuple[Option, ...] = ()
    help: str = ""
    description: str = ""             # longer text for `help CMD`
    examples: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    family: str = ""
    mutates: bool = False             # offers --dry-run; refreshes the metadata cache after
    changes_cluster: bool = False     # refreshes the cache after too, without --dry-run (sandbox faults)
    required_groups: tuple[tuple[str, ...], ...] = ()   # exactly one of each group is required
    exclusive_groups: tuple[tuple[str, ...], ...] = ()  # at most one of each group
    topic_context: bool = False       # `--topic` defaults to the REPL's context topic
    context_with: tuple[str, ...] = ()  # ... only when one of these options is given (an action)
    # ... and not when one of these is: they name another entity, or make the read cluster-wide (a
    # health filter, a broker's partitions) that the context topic does not narrow (Kafka's tools).
    context_without: tuple[str, ...] = ()
    # Without --topic the read covers every topic: when the context topic fills it, the output
    # says so in one line (CONTEXT_NOTE).
    context_narrows: bool = False
    confirm: Confirm | None = None    # what it changes that cannot be undone, and how to ask (see Confirm)
    # Runs consecutive lines of this command as one request (replay): args of each -> their outcomes.
    batch: Callable[[Any, list[dict]], list[Any]] | None = None
    sandbox_only: bool = False        # only when the shell runs on its embedded sandbox
    # A usage check of the whole line that the declarations above cannot say (args -> None, or
    # a UsageError); parsing runs it, so it holds before anything is sent (replay's check too).
    check: Callable[[dict], None] | None = None
    # The names of the tables its results may carry (json's keys, what --csv-table picks), checked
    # before anything is sent; None: another command's (watch). A test run checks each result.
    tables: tuple[str, ...] | None = ()

    @property
    def destructive(self) -> bool:
        """It asks for confirmation in the REPL and needs --yes elsewhere (for some invocations)."""
        return self.confirm is not None

    def option(self, name: str) -> Option | None:
        for o in self.options:
            if name in o.names:
                return o
        return None


@dataclass
class Registry:
    commands: dict[str, Command] = field(default_factory=dict)
    by_alias: dict[str, str] = field(default_factory=dict)
    # name or alias -> the module of `commands` declaring it: a command's module is imported
    # only when the command is asked for (a one-shot run imports one family, not all of them)
    index: dict[str, str] = field(default_factory=dict)

    def add(self, cmd: Command) -> None:
        for name in (cmd.name, *cmd.aliases):
            if name in self.by_alias:
                raise ValueError(f"command name {name!r} declared twice")
            self.by_alias[name] = cmd.name
        self.commands[cmd.name] = cmd

    def get(self, name: str) -> Command | None:
        real = self.by_alias.get(name)
        if real is None and name in self.index:
            importlib.import_module(f"commands.{self.index[name]}")
            real = self.by_alias.get(name)
        return self.commands[real] if real else None

    def names(self) -> list[str]:
        return sorted(set(self.by_alias) | set(self.index))


def _index() -> dict[str, str]:
    import commands
    return dict(commands.INDEX)


REGISTRY = Registry(index=_index())

_TABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def table_name(text: str) -> str:
    """An option type: a table's name as json shows it (snake_case)."""
    if not _TABLE_NAME.fullmatch(text):
        raise ValueError("a table name as --output json shows it (like partitions)")
    return text


# Options every mutating / destructive command gets, declared once here.
DRY_RUN = Option("--dry-run", flag=True, help="Show what would change; change nothing.")
YES = Option("--yes", flag=True, help="Do not ask for confirmation.")
# Every command takes it: `describe-topic --topic t -o json` overrides the session's format.
OUTPUT = Option("--output", aliases=("-o",), choices=FORMATS, metavar="FORMAT",
                help="Output format of this command (default: the session's, see `output`).")
CSV_TABLE = Option("--csv-table", metavar="NAME", type=table_name,
                   help="The table --output csv writes, by its json name (default: the first).")


def command(name: str, *options: Option, **attrs: Any) -> Callable:
    """Declare a command; the decorated function is its handler."""
    def register(handler: Callable) -> Callable:
        opts = list(options)
        if attrs.get("mutates") and not any(o.name == "--dry-run" for o in opts):
            opts.append(DRY_RUN)
        if attrs.get("confirm") and not any(o.name == "--yes" for o in opts):
            opts.append(YES)
        opts += [OUTPUT, CSV_TABLE]
        if attrs.get("topic_context"):
            opts = [_context_help(o) if o.dest == "topic" else o for o in opts]
        unknown = [o.completer for o in opts if o.completer not in (None, *COMPLETERS)]
        if unknown:
            raise ValueError(f"{name}: unknown completer kind {unknown[0]!r} (one of {COMPLETERS})")
        family = attrs.pop("family", handler.__module__.rsplit(".", 1)[-1])
        REGISTRY.add(Command(name=name, handler=handler, options=tuple(opts), family=family, **attrs))
        return handler
    return register


CONTEXT_DEFAULT = "(default: the context topic)"
CONTEXT_NOTE = "only topic {topic}: the context topic; 'topic' alone leaves it"


def _context_help(opt: Option) -> Option:
    """`--topic` of a command that uses the context topic says so, the same way everywhere."""
    if CONTEXT_DEFAULT in opt.help or "context topic" in opt.help:
        return opt
    return replace(opt, help=f"{opt.help.rstrip('.') or 'Topic'} {CONTEXT_DEFAULT}.")


# Set in test runs: a result carrying a table its command does not declare fails (runner).
STRICT_TABLES_ENV = "KAFKA_SHELL_STRICT_TABLES"


def undeclared_tables(cmd: Command, result: Any) -> list[str]:
    """The names of `result`'s tables (a render.Result) that `cmd` does not declare."""
    if cmd.tables is None:
        return []
    names = [table_key(t, i) for i, t in enumerate(result.tables)]
    if result.stream is not None:
        names.append(result.stream.name or "table0")
    return [n for n in names if n not in cmd.tables]


def load_commands() -> Registry:
    """Import every module of the `commands` package once (each registers its commands): for
    what needs them all (help, the REPL, completion files). A line needs only its own command:
    `REGISTRY.get` imports its module from the index."""
    global _commands_loaded
    if not _commands_loaded:
        import pkgutil  # here: a one-shot line imports only its own family, from the index

        import commands
        for info in pkgutil.iter_modules(commands.__path__):
            importlib.import_module(f"commands.{info.name}")
        _commands_loaded = True
    return REGISTRY


def declared_index() -> dict[str, str]:
    """name or alias -> module, as the declarations say (commands/__init__.py's INDEX is this,
    written down; tests/test_layers.py checks that it stays so)."""
    load_commands()
    return {name: REGISTRY.commands[real].handler.__module__.removeprefix("commands.")
            for name, real in sorted(REGISTRY.by_alias.items())}


def print_index() -> None:
    """commands/__init__.py's INDEX as the declarations say it (paste it there)."""
    print("INDEX = {")
    for name, module in declared_index().items():
        print(f'    "{name}": "{module}",')
    print("}")


_commands_loaded = False
