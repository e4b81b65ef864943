"""Kafka's rules for topic names, and the globs that select topics: checked before anything is
sent, by option types and admin functions alike."""

from __future__ import annotations

import re

from kafka_shell.base.errors import UsageError, shown
from kafka_shell.base.limits import MAX_TOPIC_NAME

_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
_GLOB = re.compile(r"[A-Za-z0-9._*?\[\]!-]+")


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
    return any(c in name for c in "*?[")


def topic_pattern(text: str) -> str:
    """A glob over topic names (legal name characters and * ? [ ] !), no longer than a name,
    so that matching stays cheap whatever the user typed; ValueError says what is expected."""
    if len(text) > MAX_TOPIC_NAME or not _GLOB.fullmatch(text):
        raise ValueError(f"a topic name or glob: up to {MAX_TOPIC_NAME} letters, digits, '.', '_', '-' "
                         "and * ? [ ]")
    return text


def check_pattern(name: str) -> None:
    try:
        topic_pattern(name)
    except ValueError as exc:
        raise UsageError(f'Invalid topic pattern "{shown(name)}": expected {exc}') from None
