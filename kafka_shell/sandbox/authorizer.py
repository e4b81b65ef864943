"""The sandbox's authorizer, with the semantics of Kafka's StandardAuthorizer (and AclAuthorizer
before it): ACL bindings of a resource pattern (LITERAL, `*` wildcard, PREFIXED) and an entry
(principal, host, operation, ALLOW/DENY).

A request is allowed when its principal is a super user, or when an ALLOW binding matches and no
DENY binding does (DENY wins). An ALLOW on READ, WRITE, DELETE or ALTER implies DESCRIBE, and
ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL matches every operation. A resource with no binding
at all (for any principal) is allowed only with `allow.everyone.if.no.acl.found`.

`kafka_shell.protocol.authorization.API_NEEDS` is the one table of what each API checks (KafkaApis and
ControllerApis), shared with the shell's messages; handlers ask
`RequestContext.permits(resource_type, name)` (the operation comes from the table) or, for the
checks a table cannot say (auto-creation needs CREATE), `RequestContext.authorize(op, ...)`.
ACLs live on the cluster (`acl_store`), so every broker and controller sees the same ones; they
change by AccessControlEntryRecords and RemoveAccessControlEntryRecords, each naming its ACL by
id, as Kafka's AclControlManager keeps them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell.protocol.authorization import API_NEEDS, CLUSTER_NAME
from kafka_shell.protocol.codes import AclOperation as Op
from kafka_shell.protocol.codes import AclPermission, AclResourceType as Res, PatternType
from kafka_shell.sandbox.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord, ReplayError

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState

__all__ = ["API_NEEDS", "CLUSTER_NAME", "AclBinding", "AclFilter", "Authorizer", "acl_store"]

WILDCARD = "*"                   # a LITERAL name, principal or host matching every one

# What an ALLOW on an operation also allows (Kafka's implied operations).
IMPLIED_BY = {
    Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
    Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS},
}


@dataclass(frozen=True)
class AclBinding:
    resource_type: Res
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Op
    permission: AclPermission

    def applies_to(self, resource_type: Res, name: str) -> bool:
        """Whether this binding's pattern covers the resource (what `authorize` looks at)."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True)
class AclFilter:
    """Kafka's AclBindingFilter: None (or ANY) matches every value. `pattern_type` MATCH selects
    the bindings that would apply to `name` (LITERAL equal or `*`, PREFIXED a prefix of it)."""
    resource_type: Res = Res.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Op = Op.ANY
    permission: AclPermission = AclPermission.ANY

    def matches(self, b: AclBinding) -> bool:
        return self._matches_pattern(b) and (
            self.principal is None or self.principal == b.principal) and (
            self.host is None or self.host == b.host) and (
            self.operation in (Op.ANY, b.operation)) and (
            self.permission in (AclPermission.ANY, b.permission))

    def _matches_pattern(self, b: AclBinding) -> bool:
        if self.resource_type not in (Res.ANY, b.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, b.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, b.pattern_type):
            return self.name == b.name
        # MATCH
        if b.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(b.name)
        return b.name in (self.name, WILDCARD)

    def problem(self) -> str | None:
        """Why Kafka refuses this filter (INVALID_REQUEST, AclControlManager.validateFilter), or None."""
        if Res.UNKNOWN == self.resource_type or PatternType.UNKNOWN == self.pattern_type:
            return "Unknown patternFilter."
        if Op.UNKNOWN == self.operation or AclPermission.UNKNOWN == self.permission:
            return "Unknown entryFilter."
        return None


def binding_problem(b: AclBinding) -> str | None:
    """Why Kafka refuses to create this binding (INVALID_REQUEST), with its messages (AclApis,
    then AclControlManager.validateNewAcl), or None."""
    if b.resource_type == Res.CLUSTER and b.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not b.name:
        return "Invalid empty resource name"
    if b.resource_type in (Res.UNKNOWN, Res.ANY):
        return f"Invalid resourceType {b.resource_type.name}"
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {b.pattern_type.name}"
    if b.operation in (Op.UNKNOWN, Op.ANY):
        return f"Invalid operation {b.operation.name}"
    if b.permission not in (AclPermission.ALLOW, AclPermission.DENY):
        return f"Invalid permissionType {b.permission.name}"
    kind, _, user = b.principal.partition(":")
    if not kind or not user:
        return f"Could not parse principal from `{b.principal}` (no colon is present separating " \
               "the principal type from the principal name)"
    return None


def acl_store(cluster: ClusterState) -> list[AclBinding]:
    """The cluster's ACL bindings, in creation order."""
    return list(cluster.acls.values())


def creations(cluster: ClusterState, bindings: list[AclBinding]) -> list[AccessControlEntryRecord]:
    """The records of the bindings that do not exist yet (creating an existing one changes nothing)."""
    known = set(cluster.acls.values())
    out = []
    for b in bindings:
        if b not in known:
            known.add(b)
            out.append(entry_record(uuid.uuid4(), b))
    return out


def deletions(cluster: ClusterState, gone: list[AclBinding]) -> list[RemoveAccessControlEntryRecord]:
    return [RemoveAccessControlEntryRecord(acl_id) for acl_id, b in cluster.acls.items() if b in gone]


def entry_record(acl_id: uuid.UUID, b: AclBinding) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(acl_id, int(b.resource_type), b.name, int(b.pattern_type), b.principal, b.host,
                                    int(b.operation), int(b.permission))


def replay_entry(cluster: ClusterState, record: AccessControlEntryRecord) -> None:
    try:
        b = AclBinding(Res(record.resource_type), record.resource_name, PatternType(record.pattern_type),
                       record.principal, record.host, Op(record.operation), AclPermission(record.permission_type))
    except ValueError as exc:
        raise ReplayError(f"holds a value no ACL has ({exc})") from None
    problem = binding_problem(b)
    if problem:
        raise ReplayError(f"is an ACL Kafka refuses ({problem})")
    cluster.acls[record.id] = b


def replay_remove(cluster: ClusterState, record: RemoveAccessControlEntryRecord) -> None:
    if cluster.acls.pop(record.id, None) is None:
        raise ReplayError(f"removes ACL {record.id}, which no AccessControlEntryRecord created")


def snapshot(cluster: ClusterState) -> list[AccessControlEntryRecord]:
    return [entry_record(acl_id, b) for acl_id, b in cluster.acls.items()]


REPLAY = {AccessControlEntryRecord: replay_entry, RemoveAccessControlEntryRecord: replay_remove}


class Authorizer:
    """StandardAuthorizer's decision for one request, over the cluster's bindings."""

    def __init__(self, super_users: list[str] | None = None, allow_everyone_if_no_acl_found: bool = False):
        self.super_users = frozenset(super_users or ())
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    def authorize(self, cluster: ClusterState, principal: str, host: str, op: Op, resource_type: Res,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        bindings = [b for b in acl_store(cluster) if b.applies_to(resource_type, name)]
        if not bindings:
            return self.allow_everyone_if_no_acl_found
        mine = [b for b in bindings if b.principal in (principal, "User:*") and b.host in (host, WILDCARD)]
        if any(b.permission == AclPermission.DENY and b.operation in (op, Op.ALL) for b in mine):
            return False
        allowing = {op, Op.ALL} | IMPLIED_BY.get(op, set())
        return any(b.permission == AclPermission.ALLOW and b.operation in allowing for b in mine)


def parse_super_users(text: str) -> list[str]:
    """Kafka's super.users: principals separated by `;` ("User:a;User:b")."""
    return [p.strip() for p in text.split(";") if p.strip()]
