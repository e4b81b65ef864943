"""Kafka's rules for topic names, and the patterns that select topics (Java regular expressions as
Kafka's tools take them, globs where they cannot be read as one): checked before anything is
sent, by option types and admin functions alike."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import NamedTuple

from kafka_shell.base.errors import UsageError, shown
from kafka_shell.base.limits import MAX_TOPIC_NAME

_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
_GLOB = re.compile(r"[A-Za-z0-9._*?\[\]!-]+")
_PRINTABLE_ASCII = re.compile(r"[ -~]+")   # what a pattern that can match a legal name is written in


class TopicPartitions(NamedTuple):
    """Kafka's `--topic t` (every partition of t: `partitions` None) or `--topic t:0,2` (those)."""
    topic: str
    partitions: tuple[int, ...] | None = None

    def __str__(self) -> str:
        return self.topic if self.partitions is None else f"{self.topic}:{','.join(map(str, self.partitions))}"


def check_topic_name(name: str) -> None:
    if (not name or len(name) > MAX_TOPIC_NAME or name in (".", "..")
            or not _LEGAL_NAME.fullmatch(name)):
        raise UsageError(f'Invalid topic name "{shown(name)}": use up to {MAX_TOPIC_NAME} letters, digits, '
                         f'".", "_" or "-"')


def valid_topic_name(name: str) -> bool:
    try:
        check_topic_name(name)
    except UsageError:
        return False
    return True


def has_collision_chars(name: str) -> bool:
    """kafka-topics warns about names with '.' or '_' (Topic.hasCollisionChars)."""
    return "." in name or "_" in name


def is_pattern(name: str) -> bool:
    """Whether `name` selects topics by a pattern: it is no legal topic name. A legal name (a '.'
    included, which Kafka's tools would read as any character) is that one topic."""
    return not _LEGAL_NAME.fullmatch(name)


MAX_PATTERN = 1000
PATTERN_HELP = ("a Java regular expression selects many, as in Kafka's tools: 'logs-.*'; a glob such as '*-logs' "
                "where it is no regular expression; a plain name is that topic only")


def _regex(text: str) -> re.Pattern[str] | None:
    """The Java regular expression `text` is, as Kafka's tools read --topic (commas are
    alternatives), or None when it is none."""
    from kafka_shell.base.regex import compile_kafka_regex
    try:
        return compile_kafka_regex(text.replace(",", "|"))
    except ValueError:
        return None


def topic_pattern(text: str) -> str:
    """A topic name, or a pattern of them: a Java regular expression as Kafka's tools take it
    (`orders-.*`, matched against the whole name), or a glob where it cannot be read as one
    (`*-events`); ValueError says what is expected."""
    if not text or len(text) > MAX_PATTERN or not _PRINTABLE_ASCII.fullmatch(text) \
            or not (_regex(text) is not None or _GLOB.fullmatch(text)):
        raise ValueError("a topic name or a Java regular expression as Kafka's tools take it ('orders-.*'; a glob "
                         "such as '*-events' where it is no regular expression)")
    return text


def check_pattern(name: str) -> None:
    try:
        topic_pattern(name)
    except ValueError as exc:
        raise UsageError(f'Invalid topic pattern "{shown(name)}": expected {exc}') from None


def matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a topic name is selected by `pattern` (see topic_pattern)."""
    if not is_pattern(pattern):
        return pattern.__eq__
    regex = _regex(pattern)
    if regex is not None:
        return lambda name: regex.fullmatch(name) is not None
    return lambda name: fnmatch.fnmatchcase(name, pattern)


def glob_reading(pattern: str, names: list[str]) -> str | None:
    """A line for a pattern that reads otherwise as a glob (`orders-*`: as a regular expression
    "orders" and any number of "-"), when the glob would select other topics of `names`."""
    if not is_pattern(pattern) or _regex(pattern) is None or not _GLOB.fullmatch(pattern) \
            or re.search(r"\.[*?]", pattern):   # `.*` is written by someone who means a regular expression
        return None
    as_regex = {n for n in names if matcher(pattern)(n)}
    as_glob = {n for n in names if fnmatch.fnmatchcase(n, pattern)}
    if as_glob == as_regex:
        return None
    regex = pattern.replace(".", "\\.").replace("*", ".*").replace("?", ".")
    return (f"'{shown(pattern)}' is a regular expression, as in Kafka's tools: it selects {len(as_regex)} topic(s); "
            f"as a glob it would select {len(as_glob)} ('{shown(regex)}' says that as a regular expression).")


def pattern_notes(patterns: list[str], names: list[str]) -> list[str]:
    """glob_reading's line of each pattern that reads otherwise as a glob."""
    return [n for n in (glob_reading(p, names) for p in patterns) if n]
