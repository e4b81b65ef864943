"""Completion stage 2: typed suggestions -> candidates from the metadata cache.

A `KafkaCompleter` is built from one immutable ClusterSnapshot and never changes; when the cache
refreshes, the REPL builds a new one and swaps it in with one assignment (pgcli's refresher), so a
keystroke never waits on the cluster and never sees a half-built index. One exception: the first
Tab after `--delete-config` reads that entity's overrides (one DescribeConfigs, bounded by
--timeout, off the event loop in the ThreadedCompleter), which the REPL keeps briefly.
Matching is fuzzy (repl/fuzzy.py): prefix matches first, then subsequences.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from kafka_shell.face import config_keys
from kafka_shell.connection.session import Seen
from kafka_shell.connection.metadata import EMPTY, ClusterSnapshot
from kafka_shell.declarations.registry import Registry
from kafka_shell.face.repl import fuzzy
from kafka_shell.face.repl import suggest as s

# More candidates than this are not worth showing in a menu; capping keeps a keystroke fast with
# 100,000 topics cached.
MAX_CANDIDATES = 200

# (entity type, entity name) -> the config keys it overrides, or None when they cannot be read.
Overrides = Callable[[str, str], "Sequence[str] | None"]


def matching(items: Sequence[str], typed: str) -> list[str]:
    """The sorted `items` that match `typed`, fuzzily (see repl/fuzzy.py)."""
    return fuzzy.fuzzy_matches(items, typed, MAX_CANDIDATES)


class KafkaCompleter(Completer):
    def __init__(self, registry: Registry, snapshot: ClusterSnapshot = EMPTY,
                 clusters: Iterable[str] = (), overrides: Overrides | None = None,
                 context_topic: Callable[[], str | None] = lambda: None, acls: Seen | None = None):
        self.registry = registry
        self.acls = acls or Seen()             # principals and resources ACL listings named
        self.snapshot = snapshot
        self.clusters = sorted(clusters)       # named clusters (clusters.json), read once
        self.topics = fuzzy.FuzzyIndex(snapshot.topics)
        self.groups = fuzzy.FuzzyIndex(snapshot.groups)
        self.transactional_ids = fuzzy.FuzzyIndex(snapshot.transactional_ids)
        self.brokers = sorted(str(b) for b in snapshot.brokers)
        self.commands = registry.names()
        self.overrides = overrides             # reads an entity's overrides (kept briefly)
        self.context_topic = context_topic     # the REPL's context topic, read at each keystroke

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent | None = None) -> Iterator[Completion]:
        ctx = s.suggest(document.text_before_cursor, self.registry)
        for suggestion in ctx.suggestions:
            for text, meta in self.candidates(suggestion, ctx.prefix):
                yield Completion(self._quoted(text, ctx, isinstance(suggestion, s.Path)),
                                 start_position=-ctx.replace, display=text, display_meta=meta)

    def candidates(self, suggestion: object, prefix: str) -> Iterator[tuple[str, str]]:
        """(candidate, description) pairs for one suggestion, in display order."""
        match suggestion:
            case s.CommandName():
                for name in matching(self.commands, prefix):
                    cmd = self.registry.get(name)
                    assert cmd is not None, "self.commands are the registry's own names"
                    yield name, cmd.help
            case s.OptionName(command, exclude):
                yield from self._options(command, exclude, prefix)
            case s.Topic(exclude):
                for name in self.topics.matches(prefix, MAX_CANDIDATES + len(exclude)):
                    if name not in exclude:
                        yield name, f"{len(self.snapshot.topics[name].partitions)} partitions"
            case s.Broker(exclude):
                for bid in matching(self.brokers, prefix):
                    if bid not in exclude:
                        yield bid, self.snapshot.brokers[int(bid)].address
            case s.Group(exclude):
                for name in self.groups.matches(prefix, MAX_CANDIDATES + len(exclude)):
                    if name not in exclude:
                        yield name, "group"
            case s.TransactionalId():
                for name in self.transactional_ids.matches(prefix, MAX_CANDIDATES):
                    yield name, "transactional id"
            case s.ConfigKey(entity, suffix, overrides, name, exclude) if entity is not None:  # None: no keys known
                # A node's loggers are known only by asking it: every one of them is listed as set.
                keys = self._overrides(entity, name) if overrides or entity == config_keys.LOGGERS else None
                for key in matching(config_keys.keys(entity) if keys is None else keys, prefix):
                    if key not in exclude:
                        yield key + suffix, config_keys.describe(entity, key)
            case s.ConfigValue(entity, key) if entity is not None:
                yield from _matched(config_keys.values(entity, key), prefix, key)
            case s.Choice(choices):
                yield from _matched(choices, prefix, "")
            case s.Path():
                yield from _paths(prefix)
            case s.Cluster():
                yield from _matched(self.clusters, prefix, "cluster")
            case s.Api():
                yield from _matched(_api_names(), prefix, "API")
            case s.ErrorName():
                yield from _matched(_error_names(), prefix, "error")
            case s.Principal():
                yield from _matched(sorted(self.acls.principals), prefix, "principal")
            case s.AclResource(kind):
                known = (self.snapshot.topic_names() if kind == "topic" else sorted(self.snapshot.groups)
                         if kind == "group" else [])
                yield from _matched(sorted(set(known) | self.acls.names(kind)), prefix, kind.replace("_", " "))

    def _overrides(self, entity: str, name: str | None) -> list[str] | None:
        """The keys the entity overrides (what --delete-config can remove), sorted; None when
        unknown (no entity named yet, or no reader): then every key is offered."""
        if name is None and entity == config_keys.TOPIC:
            name = self.context_topic()
        if name is None or self.overrides is None:
            return None
        keys = self.overrides(entity, name)
        return None if keys is None else sorted(keys)

    def _options(self, command: str, exclude: frozenset[str], prefix: str) -> Iterator[tuple[str, str]]:
        cmd = self.registry.get(command)
        assert cmd is not None, "OptionName names a registered command"
        # "part" finds --partitions too: users often skip the dashes.
        # Matched without their dashes ("rf" finds --replication-factor), in declaration order
        # when nothing is typed.
        bare = prefix.lstrip("-")
        options = {o.name[2:] if o.name.startswith("--") else o.name.lstrip("-"): o for o in cmd.options
                   if not (o.positional or o.hidden or o.name in exclude)}
        names = list(options) if not bare else matching(sorted(options), bare)
        for name in names:
            yield options[name].name, options[name].help

    @staticmethod
    def _quoted(text: str, ctx: s.Context, is_path: bool) -> str:
        """Keep the user's opening quote; quote paths that need it. A directory or a `key=` stays
        open so typing can go on inside it."""
        if ctx.quote:
            open_ended = text.endswith("=") or (is_path and text.endswith(os.sep))
            return ctx.quote + text + ("" if open_ended else ctx.quote)
        if is_path and shlex.quote(text) != text:
            return shlex.quote(text)
        return text


def _matched(items: Iterable[str], typed: str, meta: str) -> Iterator[tuple[str, str]]:
    """A short list's matches; all of it, in its own order, when nothing is typed."""
    found = matching(sorted(items), typed) if typed else items
    return ((item, meta) for item in found)


def _paths(prefix: str) -> Iterator[tuple[str, str]]:
    """Files and directories completing a path; directories end with a separator."""
    head, tail = os.path.split(prefix)
    directory = os.path.expanduser(head) or "."
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        if e.name.startswith(tail) and (tail.startswith(".") or not e.name.startswith(".")):
            is_dir = e.is_dir()
            yield os.path.join(head, e.name) + (os.sep if is_dir else ""), "dir" if is_dir else "file"


@functools.cache
def _api_names() -> list[str]:
    from kafka_shell.protocol.codec import api_key_map, api_name
    return sorted(api_name(key) for key in api_key_map)


@functools.cache
def _error_names() -> list[str]:
    from kio.schema.errors import ErrorCode
    return sorted(e.name.upper() for e in ErrorCode)
