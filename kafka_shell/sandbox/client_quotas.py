"""Client quotas as the cluster keeps them (Kafka's ClientQuotaControlManager): per entity (a
sorted tuple of (entity type, name; None for the default)), quota key -> value. They change by
ClientQuotaRecords (a key set, or removed); AlterClientQuotas writes them, DescribeClientQuotas
reads them. Kept, not enforced."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.sandbox.records import ClientQuotaRecord, EntityData

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState

QuotaEntity = tuple[tuple[str, "str | None"], ...]   # sorted (entity type, name; None: the default)


def quota_store(cluster: ClusterState) -> dict[QuotaEntity, dict[str, float]]:
    """entity -> quota key -> value."""
    return cluster.client_quotas


def changes(cluster: ClusterState, entity: QuotaEntity, ops: list[tuple[str, float | None]]) -> list[ClientQuotaRecord]:
    """The records of one entity's (key, value; None removes it) operations that change something."""
    current = quota_store(cluster).get(entity, {})
    out = []
    for key, value in ops:
        if value is None:
            if key in current:
                out.append(ClientQuotaRecord(_entity_data(entity), key, 0.0, remove=True))
        elif current.get(key) != value:
            out.append(ClientQuotaRecord(_entity_data(entity), key, value))
    return out


def _entity_data(entity: QuotaEntity) -> tuple[EntityData, ...]:
    return tuple(EntityData(kind, name) for kind, name in entity)


def replay_quota(cluster: ClusterState, record: ClientQuotaRecord) -> None:
    entity: QuotaEntity = tuple(sorted((e.entity_type, e.entity_name) for e in record.entity))
    values = cluster.client_quotas.setdefault(entity, {})
    if record.remove:
        values.pop(record.key, None)
    else:
        values[record.key] = record.value
    if not values:
        del cluster.client_quotas[entity]


def snapshot(cluster: ClusterState) -> list[ClientQuotaRecord]:
    return [ClientQuotaRecord(_entity_data(entity), key, value)
            for entity, values in quota_store(cluster).items() for key, value in values.items()]


REPLAY = {ClientQuotaRecord: replay_quota}
