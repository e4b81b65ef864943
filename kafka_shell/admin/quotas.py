"""Client quotas of users, client ids and IPs (DescribeClientQuotas, AlterClientQuotas)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.protocol.codes import ApiKey, QuotaMatch
from kafka_shell.base.answers import CONTROLLER, AdminError, Target

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

# kafka-configs' entity types, as the quota APIs name them.
ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
EXACT, DEFAULT, ANY_NAMED = QuotaMatch.EXACT, QuotaMatch.DEFAULT, QuotaMatch.SPECIFIED
Entity = list[tuple[str, "str | None"]]   # (entity type, name; None for the default entity)


class Quota(NamedTuple):
    entity: tuple[tuple[str, str | None], ...]   # (("user", "alice"), ("client-id", None)): None the default
    key: str
    value: float | int


PART_ORDER = {"user": 0, "client-id": 1, "ip": 2}   # how a quota entity is written


def describe(conn: ConnectionManager, components: list[tuple[str, int, str | None]]) -> list[Quota]:
    """The quotas of the entities matching every (entity type, EXACT/DEFAULT/ANY_NAMED, name)
    component (none: every quota), sorted."""
    conn.debug("DescribeClientQuotas request")
    answer = conn.any_broker_request(ApiKey.DESCRIBE_CLIENT_QUOTAS, {
        "components": [{"entity_type": t, "match_type": m, "match": name} for t, m, name in components],
        "strict": False})
    if answer.error_code:
        raise response_error(ApiKey.DESCRIBE_CLIENT_QUOTAS, answer.error_code, answer.error_message)
    out = []
    for e in answer.entries or ():
        # The entity's parts in one order (user, client-id, ip): Kafka answers them in its own.
        parts = sorted(e.entity, key=lambda d: PART_ORDER.get(d.entity_type, len(PART_ORDER)))
        entity = tuple((d.entity_type, d.entity_name) for d in parts)
        for v in e.values:
            out.append(Quota(entity, v.key, int(v.value) if v.value == int(v.value) else v.value))
    return sorted(out, key=lambda q: ([(t, n or "") for t, n in q.entity], q.key))


def alter(conn: ConnectionManager, entity: Entity, ops: list[tuple[str, float | None]], validate_only: bool) -> None:
    """Set (a value) and remove (None) quotas of one entity, in order (validated only, with
    `validate_only`); its refusal is the error the call fails with."""
    error = refusal(conn, entity, ops, validate_only)
    if error is not None:
        raise response_error(ApiKey.ALTER_CLIENT_QUOTAS, error.code or 0, error.message or None)


def refusal(conn: ConnectionManager, entity: Entity, ops: list[tuple[str, float | None]],
            validate_only: bool) -> AdminError | None:
    """`alter`, its refusal (None: done) as a value."""
    body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                         "ops": [{"key": k, "value": v if v is not None else 0.0, "remove": v is None} for k, v in ops]}],
            "validate_only": validate_only}
    conn.debug("AlterClientQuotas request" + (" (validate only)" if validate_only else ""))
    answer = conn.controller_request(ApiKey.ALTER_CLIENT_QUOTAS, body, mutation=not validate_only)
    return next((AdminError(r.error_code, Target(CONTROLLER), r.error_message or "") for r in answer.entries
                 if r.error_code), None)
