"""Client metrics subscriptions (KIP-714; config resource CLIENT_METRICS, 16): named sets of
`metrics` (name prefixes, `*` for all), `interval.ms` and `match` (client selectors), which
DescribeConfigs lists (defaults for a name not set), IncrementalAlterConfigs sets and deletes
(on the controller) and ListConfigResources names, checked as Kafka 4.4's ClientMetricsConfigs
checks them. A subscription whose keys are all deleted is gone. Kept by --data-dir.

Kafka's brokers serve GetTelemetrySubscriptions and PushTelemetry only with a metrics reporter
that receives client telemetry configured; Kafka 4.4 lists neither by default, nor does the
sandbox.
"""

from __future__ import annotations

import re

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, replay
from kafka_shell.sandbox.topic_lifecycle import AdminError
from kafka_shell.sandbox.model import ClusterState
from kafka_shell.sandbox.records import CLIENT_METRICS_RESOURCE
from kafka_shell.base.regex import compile_kafka_regex

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
METRICS, INTERVAL, MATCH = "metrics", "interval.ms", "match"
# ConfigDef order (what Kafka parses and checks first), defaults, config types (INT 3, LIST 7),
# documentation.
KEYS = {
    METRICS: ("", 7, "Telemetry metric name prefix list"),
    INTERVAL: ("300000", 3, "Metrics push interval in milliseconds"),
    MATCH: ("", 7, "Client match criteria"),
}
LISTS = (METRICS, MATCH)
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
MATCH_PARAMS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                "client_source_address", "client_source_port")
DEFAULT_SOURCE, SUBSCRIPTION_SOURCE = 5, 7   # ConfigSource DEFAULT_CONFIG, CLIENT_METRICS_CONFIG
INT_PATTERN = re.compile(r"[+-]?\d+")


def subscriptions(cluster: ClusterState) -> dict[str, dict[str, str]]:
    return cluster.client_metrics


def describe(cluster: ClusterState, name: str) -> list[dict]:
    """Every key, set or default (a name never set describes as its defaults)."""
    given = subscriptions(cluster).get(name, {})
    out = []
    for key in sorted(KEYS):
        default, kind, doc = KEYS[key]
        value = given.get(key)
        out.append({"name": key, "value": default if value is None else value, "read_only": False,
                    "config_source": DEFAULT_SOURCE if value is None else SUBSCRIPTION_SOURCE,
                    "is_sensitive": False, "config_type": kind, "documentation": doc,
                    "synonyms": [] if value is None else [{"name": key, "value": value, "source": SUBSCRIPTION_SOURCE}]})
    return out


def alter(cluster: ClusterState, name: str, ops: list, validate_only: bool) -> None:
    """IncrementalAlterConfigs on one subscription (AdminError on the first problem)."""
    new = dict(subscriptions(cluster).get(name, {}))
    for op in ops:
        kind = op.config_operation
        if kind == DELETE:
            new.pop(op.name, None)
        elif kind == SET:
            if op.value is None:
                raise AdminError(ErrorCode.invalid_request, f"Null value not supported for : {op.name}")
            new[op.name] = op.value
        elif kind in (APPEND, SUBTRACT):
            # The controller looks for a LIST type among the broker's and topics' keys.
            verb = "APPEND" if kind == APPEND else "SUBTRACT"
            raise AdminError(ErrorCode.invalid_config, f"Can't {verb} to key {op.name} because its type is not LIST.")
        else:
            raise AdminError(ErrorCode.invalid_request, f"Unknown operation type {kind}")
    validate(name, new)
    if not validate_only:
        replay.apply_all(cluster, configs.config_records(CLIENT_METRICS_RESOURCE, name, subscriptions(cluster).get(name, {}), new))


def validate(name: str, values: dict[str, str]) -> None:
    """ClientMetricsConfigs.validate: the name, known keys, values parsed in ConfigDef order,
    the interval's range, then the match patterns."""
    if not name:
        raise AdminError(ErrorCode.invalid_request, "Subscription name can't be empty")
    for key in values:
        if key not in KEYS:
            raise AdminError(ErrorCode.invalid_request, f"Unknown client metrics configuration: {key}")
    parsed: dict[str, object] = {}
    for key in KEYS:
        if key not in values:
            continue
        value = values[key].strip()
        if key == INTERVAL:
            if not INT_PATTERN.fullmatch(value) or not -2**31 <= int(value) < 2**31:
                raise AdminError(ErrorCode.invalid_config,
                                 f"Invalid value {values[key]} for configuration {key}: Not a number of type INT")
            parsed[key] = int(value)
        else:
            parsed[key] = _list(key, value)
    interval = parsed.get(INTERVAL)
    if isinstance(interval, int) and not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        raise AdminError(ErrorCode.invalid_request, f"Invalid value {interval} for {INTERVAL}, interval must be "
                         f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    for pattern in parsed.get(MATCH, []):  # type: ignore[attr-defined]
        _check_match(pattern)


def _list(key: str, value: str) -> list[str]:
    """ConfigDef's LIST parsing; no empty items (Kafka 4.4 lets duplicates through)."""
    items = re.split(r"\s*,\s*", value) if value else []
    if any(item == "" for item in items):
        raise AdminError(ErrorCode.invalid_config, f"Configuration '{key}' values must not be empty.")
    return items


def _check_match(pattern: str) -> None:
    """name=regex with a known name (Java's split("=") drops trailing empty parts)."""
    parts = pattern.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    illegal = AdminError(ErrorCode.invalid_config, f"Illegal client matching pattern: {pattern}")
    if len(parts) != 2 or parts[0].strip() not in MATCH_PARAMS:
        raise illegal
    try:
        compile_kafka_regex(parts[1].strip())
    except ValueError:
        raise illegal from None
