"""What the connection manager needs of confluent-kafka's AdminClient, kept apart so that
commands served by the direct channel alone (list-topics, describe-topic...) never import
confluent-kafka: a one-shot run starts ~30 ms sooner."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from kafka_shell.errors import KafkaCallError

# Failures worth retrying for reads: the request may never have reached a broker.
TRANSPORT_ERRORS = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT}


class AdminError(KafkaCallError, KafkaException):
    """A failed AdminClient result: a KafkaCallError (one-line message, Kafka error code) that
    is also the KafkaException confluent-kafka callers expect (`args[0]` is the KafkaError)."""

    def __init__(self, error: KafkaError, key: object = None, api_key: int | None = None):
        where = f"{key}: " if key is not None else ""
        # librdkafka's own error names (_TIMED_OUT, _TRANSPORT) mean nothing to a user: its text does.
        name = "" if error.name().startswith("_") else f" [{error.name()}]"
        message = f"{where}{error.str()}{name}"
        KafkaCallError.__init__(self, message, code=error.code(), retriable=error.retriable())
        self.args = (error,)
        self.message = message
        self.error = error
        self.api_key = api_key   # the request it failed in, when known (for authorization messages)

    def __str__(self) -> str:
        return self.message


def admin_error(exc: KafkaException, key: object, api_key: int | None = None) -> AdminError:
    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else KafkaError(KafkaError._FAIL, str(exc))
    return AdminError(error, key, api_key)
