"""Errors the shell reports as one line (no traceback unless --debug), with their exit codes.

Exit codes: 0 ok, 1 failed, 2 usage error (bad command line or input). Commands raise these; the
mode that runs them prints `str(error)` on stderr and returns `error.exit_code`.
"""

from __future__ import annotations

from typing import Any
import re


# C0 and C1 control characters (NUL, ESC, newlines...) and the surrogates Python uses for bytes
# that are not UTF-8: never written raw to a terminal.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
MAX_SHOWN = 80   # longest user value quoted back in a message


def printable(text: str) -> str:
    """`text` safe to print as one line: control characters escaped (`\\x00`, `\\n`)."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1] if m.group() in "\t\n\r"
                            else f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", text)


def shown(value: str) -> str:
    """A user's value to quote in a message: printable, and cut short when long."""
    value = printable(value)
    return value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN] + f"... ({len(value)} characters)"


MAX_SUGGESTED = 100   # longer words get no "did you mean": no command, option or config is near that long


def suggest(word: str, candidates: list[str]) -> str:
    """' (did you mean X?)' for the closest candidate, or ''."""
    if len(word) > MAX_SUGGESTED:  # difflib is quadratic: a pasted megabyte would take seconds
        return ""
    import difflib  # only a mistyped word pays for it
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class ShellError(Exception):
    """A failure to report as one line: what happened and what to do."""
    exit_code = 1


class UsageError(ShellError):
    """Bad input: unknown command or option, wrong type, missing value. Nothing was sent."""
    exit_code = 2


class ClusterUnreachable(ShellError):
    """No broker of the bootstrap list answered in time."""


class NotSupported(ShellError):
    """The cluster lacks the API (or version) a command needs."""


class KafkaCallError(ShellError):
    """A Kafka request failed with an error code."""

    def __init__(self, message: str, code: int | None = None, retriable: bool = False):
        super().__init__(message)
        self.code = code
        self.retriable = retriable


# ---------------------------------------------------------------------------------------------
# Kafka error codes -> one line saying what happened and what to do.
#
# Templates may use {topic}, {entity}, {detail} (the broker's own message), {rf}, {brokers},
# {partitions}, {api}; a template whose context is missing falls back to the generic line.
# Codes are plain ints (Kafka's protocol numbers) so this module stays import-cheap.

KAFKA_ERRORS: dict[int, str] = {
    3: 'Topic "{topic}" does not exist (check the name with list-topics, or use --if-exists).',
    5: 'Partition leader of "{topic}" is not available: a broker may be down (see describe-topic).',
    6: 'The broker is not the leader of "{topic}" any more: retry the command.',
    7: "The request timed out: the cluster may be busy, a broker down, or in KRaft mode the controller the "
       "brokers forward it to (describe-quorum tells); retry or raise --timeout.",
    8: "Broker not available: check it with list-brokers and retry.",
    13: "Network error talking to the cluster: retry the command.",
    17: 'Invalid topic name "{topic}": use up to 249 letters, digits, ".", "_" or "-".',
    19: 'Not enough in-sync replicas for "{topic}": bring brokers back or lower min.insync.replicas.',
    29: 'Not authorized to access topic "{topic}": ask an administrator for the ACL.',
    31: "Not authorized for this cluster operation: ask an administrator for the ACL.",
    35: "{api} is not supported by this cluster.",
    36: 'Topic "{topic}" already exists (use --if-not-exists).',
    37: 'Invalid partition count for "{topic}": {detail}',
    38: ('Replication factor {rf} of "{topic}" is larger than the {brokers} available broker(s): '
         'use --replication-factor {brokers} or fewer.'),
    39: 'Invalid replica assignment for "{topic}": {detail}',
    40: "Invalid config for {entity}: {detail}",
    41: "The controller moved while the request ran: retry the command.",
    42: "The cluster rejected the request as invalid: {detail}",
    44: "The cluster's policy rejected the change to {entity}: {detail}",
    54: "This cluster has security disabled: the operation needs an authorizer (Kafka: authorizer.class.name; "
        "a sandbox: start it with kafka-shell sandbox --authorizer).",
    55: "Not attempted because another part of the request failed: fix that part and retry.",
    56: 'Storage error on a broker holding "{topic}": check the broker\'s log directories.',
    60: "A partition reassignment is in progress: wait for it (or cancel it) and retry.",
    73: "Topic deletion is disabled on this cluster (delete.topic.enable=false).",
    80: 'The preferred leader of "{topic}" is not available: bring that broker back first.',
    83: 'No eligible leader for "{topic}": bring an in-sync replica back first.',
    84: 'A valid leader is already elected for "{topic}": nothing to do.',
    85: "No reassignment is in progress for {entity}.",
    89: "The cluster throttled the request (quota exceeded): retry later.",
    91: "{entity} does not exist.",
    100: 'Topic id of "{topic}" is unknown: the topic may have been deleted; refresh and retry.',
    # CONTROLLER_ID_NOT_REGISTERED (Kafka 4.4, KIP-1312; kio does not name it).
    136: "{detail} describe-cluster with --bootstrap-controller lists the registered ones.",
}


# Codes whose broker message is more precise than our template (Kafka's "Topic 'my_topic'
# collides with existing topic: my.topic" beats "Invalid topic name"): the broker's text wins.
BROKER_TEXT_WINS = {17}


class _Context(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def kafka_error_message(code: int, name: str = "", detail: str = "", **context: object) -> str:
    """One line for a Kafka error `code` (`name` and the broker's `detail` as a fallback)."""
    if name.startswith("_"):  # librdkafka's local errors: their text says it, their names are internal
        entity = context.get("entity")
        return f"{entity}: {detail}" if entity else (detail or "The request failed in the client.")
    template = KAFKA_ERRORS.get(code)
    if code in BROKER_TEXT_WINS and detail and detail.lower() != name.lower():
        return detail
    # KIP-1066: Kafka 4.3+ names cordons whatever the cause; when too few brokers are the cause,
    # our line says so, else the brokers are there but cordoned and take nothing new.
    rf, brokers = context.get("rf"), context.get("brokers")
    too_few = isinstance(rf, int) and isinstance(brokers, int) and rf > brokers
    if code == 38 and "cordoned" in detail and not too_few:
        return f"{detail} (uncordon brokers with uncordon, or ask for fewer replicas)"
    ctx = _Context(context, detail=detail or name or f"error {code}")
    ctx.setdefault("entity", f'topic "{context["topic"]}"' if "topic" in context else "the resource")
    if template is not None:
        try:
            return template.format_map(ctx)
        except KeyError:
            pass
    label = (name or f"error {code}").upper()
    return f"{label}: {detail}" if detail and detail != name else f"The cluster answered {label}."


# librdkafka's refusal of a SASL mechanism its build lacks (confluent-kafka's wheels: GSSAPI).
NO_SASL_PROVIDER = "No provider for SASL mechanism"
_NO_SASL_PROVIDER = re.compile(NO_SASL_PROVIDER + r" (\S+?):")


def librdkafka_cannot_log_in(mechanism: str) -> str:
    """What cannot run, when librdkafka (producing and consuming records) lacks the SASL
    mechanism that the shell's own connection logs in with."""
    return (f"This command uses librdkafka (confluent-kafka), which cannot log in with SASL {mechanism}: the "
            "installed build lacks it (it has PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER). Commands "
            f"served by the shell's own connection work (every admin command); for records use a client "
            f"with SASL {mechanism} (e.g. Kafka's own tools).")


def from_kafka_exception(exc: BaseException, **context: object) -> KafkaCallError:
    """A KafkaCallError from confluent-kafka's KafkaException (or KafkaError), with context."""
    err: Any = exc.args[0] if exc.args else None
    if not hasattr(err, "code"):
        return KafkaCallError(str(exc))
    code = err.code()
    detail = (err.str() or "").strip()
    lacking = _NO_SASL_PROVIDER.search(detail)
    if lacking:
        return KafkaCallError(librdkafka_cannot_log_in(lacking.group(1)), code)
    if code < 0:  # librdkafka's local errors (timeouts, transport): its own text says it best
        return KafkaCallError(f"{detail or err.name()} (retry, or raise --timeout)", code,
                              retriable=bool(err.retriable()))
    msg = kafka_error_message(code, err.name(), detail, **context)
    return KafkaCallError(msg, code, retriable=bool(err.retriable()))
