"""Completion stage 2: typed suggestions -> candidates from the metadata cache.

A `KafkaCompleter` is built from one immutable ClusterSnapshot and never changes; when the cache
refreshes, the REPL builds a new one and swaps it in with one assignment (pgcli's refresher), so a
keystroke never waits on the cluster and never sees a half-built index.
"""

from __future__ import annotations

import functools
import os
import shlex
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from kafka_shell import acl, config_keys
from kafka_shell.metadata import EMPTY, ClusterSnapshot
from kafka_shell.registry import Registry
from kafka_shell.repl import suggest as s

# More candidates than this are not worth showing in a menu; capping keeps a keystroke fast with
# 100,000 topics cached.
MAX_CANDIDATES = 200


def starting_with(items: Sequence[str], prefix: str, limit: int = MAX_CANDIDATES) -> Iterator[str]:
    """The items of a sorted sequence that start with `prefix`, found by bisection."""
    i = bisect_left(items, prefix)
    end = min(len(items), i + limit)
    while i < end and items[i].startswith(prefix):
        yield items[i]
        i += 1


class KafkaCompleter(Completer):
    def __init__(self, registry: Registry, snapshot: ClusterSnapshot = EMPTY,
                 clusters: Iterable[str] = (), acls: acl.Seen = acl.SEEN):
        self.registry = registry
        self.acls = acls                       # principals and resources ACL listings named
        self.snapshot = snapshot
        self.clusters = sorted(clusters)       # named clusters (clusters.json), read once
        self.topics = snapshot.topic_names()
        self.groups = sorted(snapshot.groups)
        self.brokers = sorted(str(b) for b in snapshot.brokers)
        self.commands = registry.names()

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
                for name in starting_with(self.commands, prefix):
                    cmd = self.registry.get(name)
                    assert cmd is not None, "self.commands are the registry's own names"
                    yield name, cmd.help
            case s.OptionName(command, exclude):
                yield from self._options(command, exclude, prefix)
            case s.Topic():
                for name in starting_with(self.topics, prefix):
                    yield name, f"{len(self.snapshot.topics[name].partitions)} partitions"
            case s.Broker():
                for bid in starting_with(self.brokers, prefix):
                    yield bid, self.snapshot.brokers[int(bid)].address
            case s.Group():
                for name in starting_with(self.groups, prefix):
                    yield name, "group"
            case s.ConfigKey(entity, suffix) if entity is not None:  # None: a type with no known keys
                for key in starting_with(config_keys.keys(entity), prefix):
                    yield key + suffix, config_keys.describe(entity, key)
            case s.ConfigValue(entity, key) if entity is not None:
                yield from _prefixed(config_keys.values(entity, key), prefix, key)
            case s.Choice(choices):
                yield from _prefixed(choices, prefix, "")
            case s.Path():
                yield from _paths(prefix)
            case s.Cluster():
                yield from _prefixed(self.clusters, prefix, "cluster")
            case s.Api():
                yield from _prefixed(_api_names(), prefix, "API")
            case s.ErrorName():
                yield from _prefixed(_error_names(), prefix, "error")
            case s.Principal():
                yield from _prefixed(sorted(self.acls.principals), prefix, "principal")
            case s.AclResource(kind):
                known = self.topics if kind == "topic" else self.groups if kind == "group" else []
                yield from _prefixed(sorted(set(known) | self.acls.names(kind)), prefix, kind.replace("_", " "))

    def _options(self, command: str, exclude: frozenset[str], prefix: str) -> Iterator[tuple[str, str]]:
        cmd = self.registry.get(command)
        assert cmd is not None, "OptionName names a registered command"
        # "part" finds --partitions too: users often skip the dashes.
        bare = prefix.lstrip("-")
        for o in cmd.options:
            if o.positional or o.hidden or o.name in exclude:
                continue
            if o.name.startswith(prefix) or (not prefix.startswith("-") and o.name[2:].startswith(bare)):
                yield o.name, o.help

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


def _prefixed(items: Iterable[str], prefix: str, meta: str) -> Iterator[tuple[str, str]]:
    return ((item, meta) for item in items if item.startswith(prefix))


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
    from kafka_shell.protocol import api_key_map, api_name
    return sorted(api_name(key) for key in api_key_map)


@functools.cache
def _error_names() -> list[str]:
    from kio.schema.errors import ErrorCode
    return sorted(e.name.upper() for e in ErrorCode)
