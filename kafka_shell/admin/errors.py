"""The one way an error code of an answer becomes a line saying what happened and what to do.

An authorization error names the operation and resource that were refused
(`authorization.authorization_message`); a group's error its group template; any other code its
line from `errors.kafka_error_message`, with the context given (`topic`, `entity`, `rf`...).
"""

from __future__ import annotations

from typing import Any

from kafka_shell.protocol.authorization import authorization_message, is_authorization_error
from kafka_shell.protocol.codes import Error
from kafka_shell.base.errors import KafkaCallError, kafka_error_message, shown

# One line per group error code, saying what to do.
GROUP_ERRORS: dict[int, str] = {
    Error.group_id_not_found: "Consumer group '{group}' does not exist (see list-groups).",
    Error.non_empty_group: "Consumer group '{group}' is not empty: stop its consumers first.",
    Error.group_subscribed_to_topic: ("Consumer group '{group}' is subscribed to the topic: stop its "
                                      "consumers (or change their subscription) first."),
    Error.invalid_group_id: "'{group}' is not a valid group id.",
    Error.group_authorization_failed: "Not authorized to access group '{group}': ask an administrator for the ACL.",
    Error.not_coordinator: "The coordinator of group '{group}' moved and did not settle in time: retry.",
    Error.coordinator_load_in_progress: "The coordinator of group '{group}' is still loading: retry shortly.",
    Error.coordinator_not_available: ("No coordinator is available for group '{group}' (its __consumer_offsets "
                                      "partition has no leader): bring brokers back, then retry."),
    Error.unknown_member_id: "Consumer group '{group}' has active members: stop its consumers first.",
    Error.rebalance_in_progress: "Consumer group '{group}' is rebalancing: stop its consumers first.",
}


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
    return kafka_error_message(code, name, message or "", **context)


def response_error(api_key: int, code: int, message: str | None = None, purpose: str | None = None,
                   **context: Any) -> KafkaCallError:
    """`error_line` as the error that fails a command."""
    return KafkaCallError(error_line(api_key, code, message, purpose, **context), code=code)


def group_line(code: int, group: str, detail: str | None = None, **context: Any) -> str:
    """The line for a group's error code: its template, else the usual line naming the group."""
    template = GROUP_ERRORS.get(code)
    if template is not None:
        return template.format(group=shown(group))
    return f"Group '{shown(group)}': " + kafka_error_message(code, code_name(code), detail or "", **context)


def partition_line(key: tuple[str, int], code: int) -> str:
    """`topic-3: <the line for code>`."""
    return f"{key[0]}-{key[1]}: " + kafka_error_message(code, code_name(code), "", topic=key[0])
