"""ACLs: DescribeAcls (any broker), CreateAcls and DeleteAcls (the controller), with Kafka's
vocabulary for them (resource types, operations, permissions, pattern types)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.protocol.authorization import CLUSTER_NAME, unsupported_operation
from kafka_shell.protocol.codes import AclOperation as Operation
from kafka_shell.protocol.codes import AclPermission as Permission
from kafka_shell.protocol.codes import AclResourceType as ResourceType
from kafka_shell.protocol.codes import ApiKey, PatternType
from kafka_shell.base.answers import CONTROLLER, AdminError, Answers, Target

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

__all__ = ["Binding", "Operation", "Permission", "ResourceType", "PatternType", "CLUSTER_NAME",
           "unsupported_operation", "describe", "create", "delete", "COLUMNS"]

COLUMNS = ["ResourceType", "Name", "PatternType", "Principal", "Host", "Operation", "Permission"]


class Binding(NamedTuple):
    """An ACL, or (with ANY, MATCH and None) a filter of ACLs."""
    resource_type: int
    name: str | None
    pattern: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def row(self) -> list:
        """As kafka-acls lists it (COLUMNS), names for Kafka's numbers."""
        return [_name(ResourceType, self.resource_type), self.name, _name(PatternType, self.pattern), self.principal,
                self.host, _name(Operation, self.operation), _name(Permission, self.permission)]

    def as_filter(self) -> dict:
        return {"resource_type_filter": self.resource_type, "resource_name_filter": self.name,
                "pattern_type_filter": self.pattern, "principal_filter": self.principal, "host_filter": self.host,
                "operation": self.operation, "permission_type": self.permission}


def _name(enum: type, value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def describe(conn: ConnectionManager, wanted: Binding) -> list[Binding]:
    """The ACLs matching the filter `wanted`, as the cluster lists them."""
    conn.debug("DescribeAcls request")
    answer = conn.any_broker_request(ApiKey.DESCRIBE_ACLS, wanted.as_filter())
    if answer.error_code:
        raise response_error(ApiKey.DESCRIBE_ACLS, answer.error_code, answer.error_message)
    return [Binding(r.resource_type, r.resource_name, getattr(r, "pattern_type", PatternType.LITERAL), e.principal,
                    e.host, e.operation, e.permission_type)
            for r in answer.resources for e in r.acls]


def create(conn: ConnectionManager, bindings: list[Binding]) -> Answers[Binding, None]:
    """CreateAcls for `bindings`; each succeeds or fails alone: those added as rows, an
    AdminError for each refused (the same code for all when the request as a whole was)."""
    conn.debug(f"CreateAcls request: {len(bindings)} ACL(s)")
    body = {"creations": [{"resource_type": b.resource_type, "resource_name": b.name,
                           "resource_pattern_type": b.pattern, "principal": b.principal, "host": b.host,
                           "operation": b.operation, "permission_type": b.permission} for b in bindings]}
    answer = conn.controller_request(ApiKey.CREATE_ACLS, body, mutation=True)
    out: Answers[Binding, None] = Answers()
    for b, r in zip(bindings, answer.results):
        if r.error_code:
            out.errors[b] = AdminError(r.error_code, Target(CONTROLLER), r.error_message or "")
        else:
            out.rows[b] = None
    return out


def delete(conn: ConnectionManager, filters: list[Binding]) -> list[Binding]:
    """DeleteAcls of every ACL matching `filters`; the ACLs deleted."""
    conn.debug(f"DeleteAcls request: {len(filters)} filter(s)")
    answer = conn.controller_request(ApiKey.DELETE_ACLS, {"filters": [f.as_filter() for f in filters]}, mutation=True)
    deleted: list[Binding] = []
    for r in answer.filter_results:
        if r.error_code:
            raise response_error(ApiKey.DELETE_ACLS, r.error_code, r.error_message)
        deleted += [Binding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation,
                            m.permission_type) for m in r.matching_acls]
    return deleted
