"""Client metrics subscriptions (KIP-714; `kafka-client-metrics`): config resources of type
CLIENT_METRICS holding `metrics` (name prefixes), `interval.ms` and `match` (client selectors).
Listed with ListConfigResources (ListClientMetricsResources before Kafka 4.1), read and changed
through the configs of `configs.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell.protocol.codes import ApiKey, ResourceType
from kafka_shell.base.errors import NotSupported
from kafka_shell.base.answers import Answers

from kafka_shell.admin import configs
from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

METRICS, INTERVAL, MATCH = "metrics", "interval.ms", "match"
KEYS = (INTERVAL, MATCH, METRICS)


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: tuple[str, ...]
    interval_ms: int | None
    match: tuple[str, ...]


def _require(conn: ConnectionManager) -> None:
    if not conn.api_versions().get(ApiKey.LIST_CONFIG_RESOURCES):
        raise NotSupported("Client metrics subscriptions need Kafka 3.7+ (KIP-714: ListClientMetricsResources), "
                           "which this cluster is not.")


def names(conn: ConnectionManager) -> list[str]:
    """The subscriptions' names, sorted."""
    _require(conn)
    conn.debug("ListConfigResources request (client metrics)")
    answer = conn.any_broker_request(ApiKey.LIST_CONFIG_RESOURCES, {"resource_types": [ResourceType.CLIENT_METRICS]})
    if answer.error_code:
        raise response_error(ApiKey.LIST_CONFIG_RESOURCES, answer.error_code, entity="client metrics subscriptions")
    return sorted(r.resource_name for r in answer.config_resources
                  if getattr(r, "resource_type", ResourceType.CLIENT_METRICS) == ResourceType.CLIENT_METRICS)


def _items(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def describe(conn: ConnectionManager, wanted: list[str]) -> list[Subscription]:
    """Each named subscription as the cluster holds it now (a name never set: its defaults)."""
    _require(conn)
    out = []
    for name, entries in configs.describe(conn, configs.CLIENT_METRICS, wanted).items():
        values = {e.name: e.value for e in entries}
        interval = values.get(INTERVAL)
        out.append(Subscription(name, _items(values.get(METRICS)), int(interval) if interval else None,
                                _items(values.get(MATCH))))
    return sorted(out, key=lambda s: s.name)


def alter(conn: ConnectionManager, name: str, metrics: list[str] | None, interval_ms: int | None,
          match: list[str] | None, dry_run: bool) -> Answers[str, None]:
    """Set what is given (an empty list clears metrics or match)."""
    _require(conn)
    changes = {k: ",".join(v) for k, v in ((METRICS, metrics), (MATCH, match)) if v is not None}
    if interval_ms is not None:
        changes[INTERVAL] = str(interval_ms)
    return configs.alter(conn, configs.CLIENT_METRICS, [name], changes, [], dry_run)


def delete(conn: ConnectionManager, name: str, dry_run: bool) -> Answers[str, None]:
    """Remove the subscription: every one of its keys deleted, as kafka-client-metrics --delete does."""
    _require(conn)
    return configs.alter(conn, configs.CLIENT_METRICS, [name], {}, list(KEYS), dry_run)
