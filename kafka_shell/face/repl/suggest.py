"""Completion stage 1: the text before the cursor -> what kind of thing may come next.

Pure functions over the command registry; no metadata, no I/O (like pgcli's sqlcompletion). The
completer (stage 2) turns each suggestion into candidates from the metadata cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_shell.face import config_keys
from kafka_shell.declarations.registry import Command, Option, Registry

# ---------------------------------------------------------------------------------------------
# Suggestion types


@dataclass(frozen=True)
class CommandName:
    pass


@dataclass(frozen=True)
class OptionName:
    command: str
    exclude: frozenset[str] = frozenset()   # options that may not be given again


@dataclass(frozen=True)
class Topic:
    exclude: frozenset[str] = frozenset()   # already listed before the cursor (`a,b,<Tab>`)


@dataclass(frozen=True)
class Broker:
    exclude: frozenset[str] = frozenset()   # already listed before the cursor (`a,b,<Tab>`)


@dataclass(frozen=True)
class Group:
    exclude: frozenset[str] = frozenset()   # already listed before the cursor (`a,b,<Tab>`)


@dataclass(frozen=True)
class TransactionalId:
    pass


@dataclass(frozen=True)
class ConfigKey:
    entity: str | None        # config_keys.TOPIC / BROKER; None: a type we know no keys for
    suffix: str = ""          # "=" when the key starts a key=value assignment
    overrides: bool = False   # only the keys the entity overrides (--delete-config)
    name: str | None = None   # the entity's name when the line gives it ("" the broker default)
    exclude: frozenset[str] = frozenset()   # keys already listed (`k1,k2,<Tab>`)


@dataclass(frozen=True)
class ConfigValue:
    entity: str | None
    key: str


@dataclass(frozen=True)
class Choice:
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Path:
    pass


@dataclass(frozen=True)
class Cluster:
    pass


@dataclass(frozen=True)
class Api:
    pass


@dataclass(frozen=True)
class ErrorName:
    pass


@dataclass(frozen=True)
class Principal:
    """A Kafka principal seen in ACLs this session listed (describe-acls)."""


@dataclass(frozen=True)
class AclResource:
    """A resource name for an ACL: seen in ACLs this session listed, or (topics, groups) known
    to the cluster. `kind` is the option's dest: topic, group or transactional_id."""
    kind: str


@dataclass(frozen=True)
class Context:
    """What to complete at the cursor: `prefix` is the typed part (unquoted) that candidates must
    start with; `replace` the number of characters before the cursor a completion replaces;
    `quote` the quote that opened the word when the whole word is replaced."""
    suggestions: tuple[object, ...]
    prefix: str = ""
    replace: int = 0
    quote: str = ""


# ---------------------------------------------------------------------------------------------
# Tokenizer


@dataclass(frozen=True)
class Word:
    start: int
    end: int
    value: str            # the word with quotes and escapes removed
    open_quote: str = ""  # the quote still open at the end of the text, "" when closed


def split_words(text: str) -> list[Word]:
    return split_line(text)[0]


def split_line(text: str) -> tuple[list[Word], int | None]:
    """Split like shlex (POSIX quotes and backslashes, `#` starts a comment), but tolerate an
    unfinished quote or a trailing backslash instead of raising: the user is in the middle of
    typing. Returns the words and where the comment starts (None without one)."""
    words: list[Word] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        if text[i] == "#":
            return words, i
        start, chars, quote = i, [], ""
        while i < n:
            c = text[i]
            if quote:
                if c == quote:
                    quote = ""
                elif c == "\\" and quote == '"' and i + 1 < n and text[i + 1] in '"\\':
                    i += 1
                    chars.append(text[i])
                else:
                    chars.append(c)
            elif c in "'\"":
                quote = c
            elif c == "\\":
                if i + 1 < n:
                    i += 1
                    if text[i] != "\n":   # a backslash-newline only continues the line
                        chars.append(text[i])
            elif c.isspace() or c == "#":
                break
            else:
                chars.append(c)
            i += 1
        words.append(Word(start, i, "".join(chars), quote))
    return words, None


def is_option(word: str) -> bool:
    """`--partitions` is an option; `-1` (a value) and `-` are not."""
    return word.startswith("-") and len(word) > 1 and not word[1:2].isdigit()


# ---------------------------------------------------------------------------------------------
# Stage 1


def suggest(text: str, registry: Registry) -> Context:
    """Typed suggestions for the word at the end of `text` (the text before the cursor)."""
    words, comment = split_line(text)
    if comment is not None:
        return Context(())
    if not words or (text[-1:].isspace() and not words[-1].open_quote):
        done, current, raw = words, Word(len(text), len(text), ""), ""
    else:
        done, current, raw = words[:-1], words[-1], text[words[-1].start:]
    quote = raw[:1] if raw[:1] in ("'", '"') else ""
    whole = Context((), current.value, len(raw), quote)

    if not done:
        return _with(whole, CommandName())
    cmd = registry.get(done[0].value)
    if cmd is None:
        return Context(())
    tail = next((o for o in cmd.options if o.rest), None)
    if tail is not None:   # `watch CMD ...`: from the command on, the line is that command's
        inner = _inner_start(cmd, done[1:])
        if inner is not None:
            return suggest(text[inner.start:], registry)
        if not is_option(current.value) and _State.walk(cmd, [w.value for w in done[1:]]).pending is None:
            return _with(whole, CommandName(), _State.walk(cmd, [w.value for w in done[1:]]).option_names())
    state = _State.walk(cmd, [w.value for w in done[1:]])

    if state.pending is not None:
        return _value(state, state.pending, whole)
    if is_option(current.value):
        name, eq, _ = current.value.partition("=")
        opt = cmd.option(name)
        if eq and opt is not None and not opt.flag:
            value = raw[raw.index("=") + 1:]
            return _value(state, opt, Context((), current.value[len(name) + 1:], len(value)))
        return _with(whole, state.option_names())
    positional = state.next_positional()
    if positional is None:
        return _with(whole, state.option_names())
    ctx = _value(state, positional, whole)
    if not current.value:   # nothing typed yet: options are as likely as the positional value
        ctx = _with(ctx, *ctx.suggestions, state.option_names())
    return ctx


def _inner_start(cmd: Command, words: list[Word]) -> Word | None:
    """The word that starts the command a `rest` positional takes (after `cmd`'s own options)."""
    i = 0
    while i < len(words):
        opt = cmd.option(words[i].value) if is_option(words[i].value) else None
        if opt is None:
            return None if is_option(words[i].value) else words[i]
        i += 1 if opt.flag or "=" in words[i].value else 2
    return None


def _with(ctx: Context, *suggestions: object) -> Context:
    return Context(tuple(suggestions), ctx.prefix, ctx.replace, ctx.quote)


@dataclass
class _State:
    """What the complete words after the command name gave."""
    cmd: Command
    given: list[str]            # canonical option names, in order
    values: dict[str, str]      # option name -> last value given
    positionals: int            # positional values given
    pending: Option | None      # the option whose value comes next

    @classmethod
    def walk(cls, cmd: Command, words: list[str]) -> _State:
        s = cls(cmd, [], {}, 0, None)
        for w in words:
            if s.pending is not None:
                s.values[s.pending.name] = w
                s.pending = None
            elif is_option(w):
                name, eq, value = w.partition("=")
                opt = cmd.option(name)
                if opt is None:
                    continue          # unknown option: the parser will say so on Enter
                s.given.append(opt.name)
                if opt.flag:
                    continue
                if eq:
                    s.values[opt.name] = value
                else:
                    s.pending = opt
            else:
                positional = s.next_positional()
                if positional is not None:
                    s.values[positional.name] = w
                s.positionals += 1
        return s

    def next_positional(self) -> Option | None:
        positionals = [o for o in self.cmd.options if o.positional]
        if self.positionals < len(positionals):
            return positionals[self.positionals]
        if positionals and positionals[-1].repeatable:
            return positionals[-1]
        return None

    def option_names(self) -> OptionName:
        given = set(self.given)
        exclude = {o.name for o in self.cmd.options if o.name in given and not o.repeatable}
        # Of an exclusive group (or a pick-one required group) only one member may be given.
        for group in (*self.cmd.exclusive_groups, *self.cmd.required_groups):
            if given & set(group):
                exclude |= set(group)
        return OptionName(self.cmd.name, frozenset(exclude))

    def entity_name(self) -> str | None:
        """The entity the line names (`--topic`, `--broker`, `--entity-name`; "" for
        `--entity-default`), None when it names none yet."""
        for option in ("--topic", "--broker", "--entity-name"):
            if option in self.values:
                return self.values[option]
        return "" if "--entity-default" in self.given else None

    def entity(self) -> str | None:
        """Whose config keys apply: `--entity-type` decides, else the options naming the
        entity (`--topic`, `--broker`, `--entity-default`), else the command's name."""
        if "--entity-type" in self.values:
            return config_keys.entity_type(self.values["--entity-type"])
        if "--topic" in self.given:
            return config_keys.TOPIC
        if {"--broker", "--entity-default"} & set(self.given) or "broker" in self.cmd.name:
            return config_keys.BROKER
        return config_keys.TOPIC


_SIMPLE = {"topic": Topic(), "broker": Broker(), "group": Group(), "path": Path(),
           "cluster": Cluster(), "api": Api(), "error": ErrorName(), "principal": Principal(),
           "transactional_id": TransactionalId()}
_LISTED: dict[str, type[Topic | Broker | Group]] = {"topic": Topic, "broker": Broker, "group": Group}
_ENTITY_NAMES = {"topics": Topic(), "topic": Topic(), "brokers": Broker(), "broker": Broker(),
                 "groups": Group(), "group": Group(), "broker-loggers": Broker()}


def _value(state: _State, opt: Option, ctx: Context) -> Context:
    """Suggestions for the value of `opt`, whose typed part is described by `ctx`."""
    if opt.flag:
        return Context(())
    if opt.choices:
        return _with(ctx, Choice(opt.choices))
    kind = opt.completer
    if kind in _LISTED and opt.is_list:
        return _next_item(ctx, _LISTED[kind])
    if kind in _SIMPLE:
        return _with(ctx, _SIMPLE[kind])
    if kind == "acl_resource":
        return _with(ctx, AclResource(opt.dest))
    if kind == "entity_name":
        found = _ENTITY_NAMES.get(state.values.get("--entity-type", "").lower())
        return _with(ctx, found) if found else Context(())
    if kind == "config_value" or (kind == "config_key" and "=" in (opt.metavar or "")):
        return _assignment(state.entity(), ctx, state.entity_name())       # --config KEY=VALUE
    if kind == "config_key":
        return _key_list(state.entity(), state.entity_name(), ctx)   # --delete-config K,K2
    if kind is None and opt.positional and opt.dest == "command":
        return _with(ctx, CommandName())     # `help CMD`
    return Context(())


def _last_item(text: str) -> str:
    """The part after the last comma outside brackets: `a=1,b=[x,y],c` -> `c`."""
    depth, start = 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            start = i + 1
    return text[start:]


def _part(ctx: Context, part: str, *suggestions: object) -> Context:
    """Suggestions that replace only `part`, the tail of the typed word (the whole word, quote
    included, when the part is all of it)."""
    if part == ctx.prefix:
        return _with(ctx, *suggestions)
    return Context(suggestions, part, len(part))


def _key_list(entity: str | None, name: str | None, ctx: Context) -> Context:
    """`key[,key...]` of keys to remove: complete the last key from the entity's overrides."""
    *listed, last = ctx.prefix.split(",")
    return _part(ctx, last, ConfigKey(entity, overrides=True, name=name, exclude=frozenset(listed)))


def _next_item(ctx: Context, kind: type[Topic | Broker | Group]) -> Context:
    """`a,b,<Tab>` in a list of names or ids: the ones not listed yet."""
    *listed, last = ctx.prefix.split(",")
    return _part(ctx, last, kind(exclude=frozenset(listed)))


def _assignment(entity: str | None, ctx: Context, name: str | None = None) -> Context:
    """`key=value[,key=value...]` (a value may be a list `[a,b]`): complete the key of the last
    pair, or its value after `=`. `name`: the entity named (a node's loggers are its own)."""
    key, eq, value = _last_item(ctx.prefix).partition("=")
    if not eq:
        return _part(ctx, key, ConfigKey(entity, suffix="=", name=name))
    if value.startswith("["):
        value = value[1:].rsplit(",", 1)[-1]
    return _part(ctx, value, ConfigValue(entity, key))
