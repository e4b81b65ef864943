"""The one place an admin call's AdminErrors (kafka_shell/answers.py) become the lines people read,
with what to do: a target that did not answer is named once, with what it was asked about
("Broker 1 (leader of keyed-0) did not answer ListOffsets within 3 s"); a thing answered with an
error code gets its own line ("keyed-0: ...", "Consumer group 'app' does not exist (see
list-groups).").

Commands (and the pipeline) call these; the admin layer returns the errors as values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka_shell.admin.errors import code_name
from kafka_shell.answers import AdminError
from kafka_shell.codes import Error
from kafka_shell.errors import kafka_error_message

Key = tuple[str, int]


def partition_name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def partition_line(key: Key, code: int, detail: str = "") -> str:
    """`topic-3: <the line for code>`."""
    return f"{partition_name(key)}: " + kafka_error_message(code, code_name(code), detail, topic=key[0])


def lines(errors: Mapping[Any, AdminError], answered: Callable[[Any, AdminError], str]) -> list[str]:
    """One line per target that did not answer (once, however many things it was asked), and
    `answered(key, error)` for each thing answered with an error code, in the order given."""
    out: list[str] = []
    said: set[int] = set()
    for key, error in errors.items():
        if error.code is not None:
            out.append(answered(key, error))
        elif id(error) not in said:
            said.add(id(error))
            out.append(str(error))
    return out


def partition_lines(errors: Mapping[Key, AdminError],
                    answered: Callable[[Key, AdminError], str] | None = None) -> list[str]:
    """`lines` of partitions: by default `topic-3: <the line for its code>`."""
    return lines(errors, answered or (lambda key, e: partition_line(key, e.code or 0)))


# -- per request: the lines that say what to do -------------------------------------------------


def deletion_lines(errors: Mapping[Key, AdminError], wanted: Mapping[Key, int]) -> list[str]:
    """DeleteRecords: an offset past the end, or a compacted topic, says what to do instead."""
    def line(key: Key, e: AdminError) -> str:
        if e.code == Error.offset_out_of_range:
            return (f"{partition_name(key)}: offset {wanted[key]} is beyond the high watermark: give a lower "
                    "--before-offset (see get-offsets)")
        if e.code == Error.policy_violation:
            return (f"{partition_name(key)}: the topic is compacted (cleanup.policy without delete): Kafka "
                    "deletes records only from delete-policy topics")
        return partition_line(key, e.code or 0)
    return partition_lines(errors, line)
