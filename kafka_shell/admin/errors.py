"""The one way an error code of an answer becomes a line saying what happened and what to do.

An authorization error names the operation and resource that were refused
(`authorization.authorization_message`); any other code its line from
`errors.kafka_error_message`, with the context given (`topic`, `entity`, `rf`...). This is for
the errors the admin layer raises; the AdminErrors it returns become lines above it
(kafka_shell/declarations/failure_lines.py), and predicates here say what they mean (`gone`, `no_such_group`).
"""

from __future__ import annotations

from typing import Any

from kafka_shell.base.answers import AdminError
from kafka_shell.protocol.authorization import authorization_message, is_authorization_error
from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import Error
from kafka_shell.base.errors import KafkaCallError, kafka_error_message

def gone(error: AdminError | None) -> bool:
    """The error says the topic or partition does not exist (any more)."""
    return error is not None and error.code == Error.unknown_topic_or_partition


def no_such_group(error: AdminError | None) -> bool:
    """The error says the group does not exist (of any type: not a group of another type)."""
    return error is not None and error.code == Error.group_id_not_found and other_type_of(error.code, error.message) is None


OTHER_TYPES = ("share", "streams")


def another_type(kind: str) -> str:
    """The message of a GROUP_ID_NOT_FOUND for a group that exists as a group of another type."""
    return f"is a {kind} group"


def other_type_of(code: int | None, message: str | None) -> str | None:
    """The type of the group of another type that an error (code, message) of a consumer-group
    request names; None for any other error."""
    if code != Error.group_id_not_found:
        return None
    return next((kind for kind in OTHER_TYPES if message == another_type(kind)), None)


def no_such_transactional_id(error: AdminError | None) -> bool:
    return error is not None and error.code == Error.transactional_id_not_found


def code_name(code: int) -> str:
    """Kafka's name of an error code in capitals (NOT_CONTROLLER), or `error N`."""
    try:
        return Error(code).name.upper()
    except ValueError:
        return f"error {code}"


def error_line(api_key: int, code: int, message: str | None = None, purpose: str | None = None,
               **context: Any) -> str:
    """The line for error `code` answered to a request of `api_key` (see the module docstring)."""
    if is_authorization_error(code):
        return authorization_message(api_key, code, context.get("topic"), purpose)
    try:
        name = Error(code).name
    except ValueError:
        name = ""
    line = kafka_error_message(code, name, message or "", **context)
    if code == Error.request_timed_out:   # which request: the broker may have forwarded it to the controller
        return f"{codec.api_name(api_key)}: {line}"
    return line


def response_error(api_key: int, code: int, message: str | None = None, purpose: str | None = None,
                   **context: Any) -> KafkaCallError:
    """`error_line` as the error that fails a command."""
    return KafkaCallError(error_line(api_key, code, message, purpose, **context), code=code)


def partition_line(key: tuple[str, int], code: int) -> str:
    """`topic-3: <the line for code>`."""
    return f"{key[0]}-{key[1]}: " + kafka_error_message(code, code_name(code), "", topic=key[0])
