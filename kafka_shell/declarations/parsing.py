"""Command lines -> (command, arguments), and `CMD --help` text, both derived from the registry.

Every check that can fail here fails before anything is sent to the cluster, with one line that
names the bad part and what to do (a UsageError, exit code 2).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka_shell.base.errors import UsageError, shown, suggest
from kafka_shell.declarations.registry import REGISTRY, Command, Option, Registry

HELP_FLAGS = ("--help", "-h")
# shlex takes time quadratic in a token's length: 128 KiB splits in ~0.4 s, 1 MiB in ~30 s.
MAX_LINE = 128 * 1024


@dataclass
class Parsed:
    command: Command
    args: dict[str, Any]                     # option dest -> value (defaults filled in)
    given: set[str] = field(default_factory=set)  # dests the line named explicitly
    help: bool = False                       # `CMD --help`: show help, run nothing


def tokenize(line: str) -> list[str]:
    """Split a line like a POSIX shell does (quotes, escapes, and `#` comments where a word
    starts, so `a=b#c` keeps its `#`)."""
    if len(line) > MAX_LINE:
        raise UsageError(f"Command line too long ({len(line)} characters, at most {MAX_LINE}): split it into "
                         "several commands")
    try:
        return shlex.split(_strip_comment(line))
    except ValueError:
        raise UsageError(f"Unbalanced quotes in: {shown(line.strip())} (close the quote, or escape it with \\)") from None


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"" and (i == 0 or line[i - 1] != "\\"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


@dataclass(frozen=True)
class _Scan:
    separators: tuple[int, ...]   # where a `;` outside quotes and comments splits the line
    open_quote: str               # the quote still open at the end, "" when none
    trailing_backslash: bool      # the line ends with an unescaped `\`: it continues
    redirect: int = -1            # where the first `|` or `>` outside quotes and comments is


def _scan(text: str) -> _Scan:
    """One pass over a line as a POSIX shell reads it: quotes, escapes, `#` comments."""
    separators: list[int] = []
    redirect = -1
    quote, i, n = "", 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                i += 1
        elif c == "\\":
            if i + 1 == n:
                return _Scan(tuple(separators), "", True, redirect)
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace() or text[i - 1] == ";"):
            break
        elif c == ";":
            separators.append(i)
        elif c in "|>" and redirect < 0:
            redirect = i
        i += 1
    return _Scan(tuple(separators), quote, False, redirect)


def split_commands(line: str) -> list[str]:
    """`a; b` -> ["a", "b"]: a `;` outside quotes separates commands (`\\;` and `';'` do not)."""
    separators = _scan(line).separators if ";" in line else ()
    if not separators:
        return [line]
    bounds = [-1, *separators, len(line)]
    parts = [line[a + 1:b].strip() for a, b in zip(bounds, bounds[1:])]
    return [p for p in parts if p] or [""]


def split_redirect(line: str) -> tuple[str, str, str]:
    """`list-topics > out.txt` -> ("list-topics", ">", "out.txt"): the command, and where its
    output goes as a shell says it (`>` a file, `>>` appended to it, `|` a command's input), from
    the first `|` or `>` outside quotes on; ("line", "", "") without one."""
    at = _scan(line).redirect if ("|" in line or ">" in line) else -1
    if at < 0:
        return line, "", ""
    op = ">>" if line.startswith(">>", at) else line[at]
    return line[:at].strip(), op, line[at + len(op):].strip()


def is_incomplete(text: str) -> bool:
    """The text goes on on the next line: it ends with `\\` or inside an open quote."""
    scan = _scan(text)
    return scan.trailing_backslash or bool(scan.open_quote)


def logical_lines(raw: Iterable[str]) -> list[tuple[int, str]]:
    """`each_logical_line`, all of them."""
    return list(each_logical_line(raw))


def each_logical_line(raw: Iterable[str], limit: int | None = None,
                      where: str = "") -> Iterator[tuple[int, str]]:
    """(first line number, logical line) pairs from physical lines, as they come: a line ending
    with `\\` continues on the next (joined with a space), as does one that leaves a quote open
    (the newline stays inside the quote); blank lines and `#` comment lines are dropped. A
    logical line growing past `limit` characters is a UsageError naming `where` and its line."""
    parts: list[str] = []   # the logical line so far
    size, start, quote = 0, 0, ""
    for number, text in enumerate(raw, 1):
        if not parts:
            start = number
            if not text.strip() or text.lstrip().startswith("#"):
                continue
        text = text if quote else text.strip()
        scan = _scan(quote + text)  # resumes inside the quote the lines before left open
        if scan.trailing_backslash:
            part, quote = text[:-1].strip() + " ", ""
        elif scan.open_quote:
            part, quote = text + "\n", scan.open_quote
        else:
            yield start, ("".join(parts) + text).strip()
            parts, size, quote = [], 0, ""
            continue
        parts.append(part)
        size += len(part)
        if limit is not None and size > limit:
            raise UsageError(f"{where}{start}: a command longer than {limit // 2**20} MiB (its line continues "
                             "on and on: is a quote left open?)")
    if "".join(parts).strip():
        yield start, "".join(parts).strip()


def _unexpected_argument(cmd: Command, token: str, values: dict[str, Any]) -> str:
    """A value without an option: the option it most likely belongs to is the first required
    one not given yet (`create-topic orders` meant `--topic orders`)."""
    if token in (">", ">>", "|"):
        return (f'Unexpected argument "{token}" for {cmd.name}: output goes to a file or a command ({token}) in the '
                "interactive shell; elsewhere redirect kafka-shell's own output")
    wanted = next((o for o in cmd.options if o.required and not o.flag and o.dest not in values), None)
    if wanted is not None and not token.startswith("-"):
        return f'Unexpected argument "{shown(token)}" for {cmd.name} (did you mean {wanted.name} {shown(token)}?)'
    return f'Unexpected argument "{shown(token)}" for {cmd.name} (see {cmd.name} --help)'


def find_command(name: str, registry: Registry = REGISTRY) -> Command:
    cmd = registry.get(name)
    if cmd is None:
        hint = suggest(name, registry.names()) or " (type help for the list of commands)"
        raise UsageError(f"Unknown command {shown(name)}{hint}")
    return cmd


def parse(tokens: list[str], registry: Registry = REGISTRY,
          context: dict[str, Any] | None = None) -> Parsed:
    """Parse tokens (command name first). `context` fills options the line leaves out (the
    REPL's context topic) before required options are checked."""
    if not tokens:
        raise UsageError("Empty command (type help for the list of commands)")
    cmd = find_command(tokens[0], registry)
    values: dict[str, Any] = {}
    positionals = [o for o in cmd.options if o.positional]
    tail = next((o for o in positionals if o.rest), None)
    if any(t in HELP_FLAGS for t in (tokens[1:2] if tail is not None else tokens[1:])):
        return Parsed(cmd, {}, help=True)
    rest = iter(tokens[1:])
    for token in rest:
        if tail is not None and not token.startswith("-"):   # the rest of the line, as given
            values[tail.dest] = [token, *rest]
            break
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        opt = cmd.option(name) if token.startswith("-") and not _is_number(token) else None
        if opt is None and token.startswith("-") and not _is_number(token):
            raise UsageError(_unknown_option(cmd, name))
        if opt is None:  # a positional value
            if not positionals:
                raise UsageError(_unexpected_argument(cmd, token, values))
            opt = positionals[0]
            if not opt.repeatable:
                positionals.pop(0)
            _store(cmd, opt, values, _convert(cmd, opt, token))
            continue
        if opt.flag:
            if eq:
                raise UsageError(f"Option {opt.name} of {cmd.name} takes no value")
            _store(cmd, opt, values, True)
            continue
        raw = inline if eq else next(rest, None)
        if raw is None:
            raise UsageError(f"Option {opt.name} of {cmd.name} needs a value ({_metavar(opt)})")
        _store(cmd, opt, values, _convert(cmd, opt, raw))
    given = set(values)
    _apply_context(cmd, values, context or {})
    _check_groups(cmd, values)
    missing = [o.name for o in cmd.options if o.required and o.dest not in values]
    positional = next((o for o in cmd.options if o.required and o.positional and o.dest not in values), None)
    if positional is not None:   # `watch` alone: what to give, and an example
        example = f" (e.g. {cmd.examples[0]})" if cmd.examples else f" (see {cmd.name} --help)"
        what = f": {positional.help[:1].lower()}{positional.help[1:].rstrip('.')}" if positional.help else ""
        raise UsageError(f"{cmd.name} needs {_metavar(positional)}{what}{example}")
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise UsageError(f"Missing required option{plural} {', '.join(missing)} for {cmd.name} "
                         f"(see {cmd.name} --help)")
    for o in cmd.options:
        values.setdefault(o.dest, ([] if o.repeatable else False if o.flag else o.default))
    if cmd.check is not None:
        cmd.check(values)
    return Parsed(cmd, values, given)


def _is_number(token: str) -> bool:
    return token[1:].replace(".", "", 1).isdigit()


def _unknown_option(cmd: Command, name: str) -> str:
    bare = name.lstrip("-").lower()
    positional = next((o for o in cmd.options if o.positional and bare in (o.dest.lower(), o.dest.lower() + "s")), None)
    if positional is not None:   # `produce --value x`: values are given without an option
        hint = f" ({positional.name.upper()} is given without an option; see {cmd.name} --help)"
    else:
        names = [n for o in cmd.options if not o.positional and not o.hidden for n in o.names]
        hint = suggest(name, names) or f" (see {cmd.name} --help)"
    return f"Unknown option {shown(name)} for {cmd.name}{hint}"


# Repeatable options that name resources: a name given twice is a mistake (create-topic would
# create it, then fail on the second).
NAMING_DESTS = ("topic", "group")


def _store(cmd: Command, opt: Option, values: dict[str, Any], value: Any) -> None:
    if opt.repeatable:
        if opt.dest in NAMING_DESTS and value in values.get(opt.dest, ()):
            raise UsageError(f'{opt.name if not opt.positional else opt.name.upper()} "{shown(str(value))}" '
                             f"given twice for {cmd.name}: give each once")
        values.setdefault(opt.dest, []).append(value)
    elif opt.dest in values:
        raise UsageError(f"Option {opt.name} given twice for {cmd.name}")
    else:
        values[opt.dest] = value


# Keyed by an option's converter (`Option.type`).
TYPE_NAMES: dict[Callable[[str], Any], str] = {int: "an integer", float: "a number", str: "text"}


def _convert(cmd: Command, opt: Option, raw: str) -> Any:
    label = opt.name if not opt.positional else opt.name.upper()
    if opt.positional and raw in (">", ">>", "|"):
        raise UsageError(_unexpected_argument(cmd, raw, {}))
    if opt.choices and raw not in opt.choices and raw.lower() in opt.choices:
        raw = raw.lower()  # Kafka's tools take `--election-type PREFERRED`; scripts carry that over
    if opt.choices and raw not in opt.choices:
        raise UsageError(f'Invalid value "{shown(raw)}" for {label} of {cmd.name}: choose one of '
                         f"{', '.join(opt.choices)}")
    try:
        return opt.type(raw)
    except (ValueError, TypeError) as exc:
        expected = TYPE_NAMES.get(opt.type) or str(exc)
        raise UsageError(f'Invalid value "{shown(raw)}" for {label} of {cmd.name}: expected {expected}') from None


def _apply_context(cmd: Command, values: dict[str, Any], context: dict[str, Any]) -> None:
    """Fill options from the context unless the line gave them (or another of their group)."""
    if cmd.context_with and not any(_dest(cmd, n) in values for n in cmd.context_with):
        return
    if any(_dest(cmd, n) in values for n in cmd.context_without):
        return
    for dest, value in context.items():
        opt = next((o for o in cmd.options if o.dest == dest), None)
        if opt is None or value is None or dest in values:
            continue
        group = next((g for g in (*cmd.required_groups, *cmd.exclusive_groups) if opt.name in g), ())
        if any(_dest(cmd, n) in values for n in group):
            continue
        value = _convert(cmd, opt, value) if isinstance(value, str) else value   # typed as if typed on the line
        values[dest] = [value] if opt.repeatable else value


def _dest(cmd: Command, name: str) -> str:
    opt = cmd.option(name)
    return opt.dest if opt else name


def _check_groups(cmd: Command, values: dict[str, Any]) -> None:
    for group in (*cmd.required_groups, *cmd.exclusive_groups):
        present = [n for n in group if _dest(cmd, n) in values]
        if len(present) > 1:
            raise UsageError(f"Options {' and '.join(present)} of {cmd.name} cannot be used together "
                             f"(pick one)")
    for group in cmd.required_groups:
        if not any(_dest(cmd, n) in values for n in group):
            raise UsageError(f"{cmd.name} needs one of {', '.join(group)} (see {cmd.name} --help)")


# ---------------------------------------------------------------------------------------------
# Help text


def _metavar(opt: Option) -> str:
    if opt.metavar:
        return opt.metavar
    if opt.choices:
        return "|".join(opt.choices)
    metavars: dict[Callable[[str], Any], str] = {int: "INT", float: "NUM"}
    return metavars.get(opt.type, opt.dest.upper())


def usage(cmd: Command) -> str:
    return " ".join(_usage_parts(cmd))


def _usage_parts(cmd: Command) -> list[str]:
    parts = [cmd.name]
    for o in cmd.options:
        if o.hidden:
            continue
        text = o.name.upper() if o.positional else o.name if o.flag else f"{o.name} {_metavar(o)}"
        if o.repeatable:   # a positional takes more words; an option is given again for each value
            text += " ..." if o.positional else f" [{o.name} ...]"
        parts.append(text if o.required else f"[{text}]")
    return parts


# argparse's layout: help text in a column of its own, which starts at most this far in; a longer
# label puts its help on the next line.
MAX_HELP_POSITION = 32
MIN_WIDTH = 40


def terminal_width() -> int:
    """The width help is wrapped to: the terminal's (COLUMNS first), 80 when there is none."""
    import shutil
    return max(shutil.get_terminal_size((80, 24)).columns, MIN_WIDTH)


def _wrap(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """Words never cut (not even at their hyphens: "--bootstrap-server" stays whole)."""
    import textwrap  # help text only
    return textwrap.wrap(text, width, initial_indent=indent if first is None else first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [first or ""]


def _pack(parts: list[str], width: int, prefix: str) -> list[str]:
    """Usage parts ("[--topic NAME]") on as few lines as fit, none split, as argparse does."""
    indent = " " * (len(prefix) + len(parts[0]) + 1)
    if len(indent) + max(map(len, parts)) > width:   # too far in: the options go under the name
        indent = " " * len(prefix)
    lines = [f"{prefix}{parts[0]}"]
    for part in parts[1:]:
        if len(lines[-1]) + 1 + len(part) > width and lines[-1].strip() != "":
            lines.append(indent + part)
        else:
            lines[-1] += " " + part
    return lines


def wrap_lines(lines: list[str], width: int | None = None) -> list[str]:
    """Each line longer than `width` wrapped, its continuation lines indented as it is."""
    width = width or terminal_width()
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        more = indent + "  " if indent else ""   # an indented line (an example) continues further in
        first, *rest = _wrap(line.strip(), width - len(more))
        out += [indent + first, *(more + r for r in rest)]
    return out


def format_entries(entries: list[tuple[str, str] | None], width: int | None = None,
                   max_position: int = MAX_HELP_POSITION) -> list[str]:
    """(label, help) rows as argparse formats options: labels indented by 2, help wrapped in a
    column of its own; None is a blank line."""
    width = width or terminal_width()
    labels = [e[0] for e in entries if e is not None]
    position = min(max(map(len, labels), default=0) + 4, max_position, width // 2)
    out: list[str] = []
    for entry in entries:
        if entry is None:
            out.append("")
            continue
        label, text = entry
        head = f"  {label}"
        body = _wrap(text, width - position) if text else []
        if len(head) + 2 > position and body:
            out += [head, *(" " * position + b for b in body)]
        else:
            out.append((head.ljust(position) + (body[0] if body else "")).rstrip())
            out += [" " * position + b for b in body[1:]]
    return out


def help_text(cmd: Command, width: int | None = None) -> str:
    width = width or terminal_width()
    lines = _pack(_usage_parts(cmd), width, "Usage: ")
    for text in (cmd.help, cmd.description):
        for paragraph in filter(None, text.split("\n")):
            lead = paragraph[:len(paragraph) - len(paragraph.lstrip())]   # an indented item stays in
            lines += ["", *_wrap(paragraph.strip(), width, lead + "  " if lead else "", lead)]
    if cmd.required_groups:
        lines += ["", *(line for g in cmd.required_groups for line in _wrap(f"Give exactly one of: {', '.join(g)}", width))]
    opts = [o for o in cmd.options if not o.hidden]
    if opts:
        entries: list[tuple[str, str] | None] = []
        for o in opts:
            entries.append((_option_label(o), " ".join([o.help, *_annotations(cmd, o)]).strip()))
        lines += ["", "Options:", *format_entries(entries, width)]
    if cmd.examples:
        lines += ["", "Examples:", *wrap_lines([f"  {e}" for e in cmd.examples], width)]
    return "\n".join(line.rstrip() for line in lines)


def _annotations(cmd: Command, o: Option) -> list[str]:
    """What help adds to an option's own text: its choices, default, repeatability, need and
    aliases, each unless the text says it already."""
    said = o.help.lower()
    notes = []
    if o.choices and not all(c.lower() in said for c in o.choices):
        notes.append(f"(one of: {', '.join(o.choices)})")
    if o.default not in (None, False) and "default" not in said:
        notes.append(f"(default: {o.default})")
    if o.repeatable and "repeatable" not in said:
        notes.append("(repeatable)")
    if o.required and not (cmd.topic_context and o.dest == "topic"):  # the context may give it
        notes.append("(required)")
    if o.aliases:
        notes.append(f"(alias: {', '.join(o.aliases)})")
    return notes


def _option_label(o: Option) -> str:
    if o.positional:
        return o.name.upper()
    return o.name if o.flag else f"{o.name} {_metavar(o)}"
