"""The security admin APIs: CreateAcls, DescribeAcls, DeleteAcls (over `sandbox.authorizer`),
DescribeUserScramCredentials and AlterUserScramCredentials (over `security.scram_store`, which
SCRAM logins read), DescribeClientQuotas and AlterClientQuotas, with Kafka's validation and
messages (AclControlManager, ScramControlManager, ClientQuotaControlManager) and the CLUSTER
permissions `authorizer.API_NEEDS` lists. Quotas are kept, not enforced.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclOperation, AclPermission, AclResourceType, ApiKey, PatternType, QuotaMatch, ScramMechanism
from kafka_shell.sandbox import authorizer, client_quotas, replay, security
from kafka_shell.sandbox.client_quotas import QuotaEntity, quota_store
from kafka_shell.sandbox.authorizer import AclBinding, AclFilter, acl_store, binding_problem
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.records import RemoveUserScramCredentialRecord

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

NO_AUTHORIZER = "No Authorizer is configured on the broker"   # DescribeAcls' words
NO_AUTHORIZER_TO_CHANGE = "No Authorizer is configured."      # CreateAcls' and DeleteAcls'


def _enum(enum: type, value: int):  # an unknown number reads as UNKNOWN (Kafka's fromCode)
    try:
        return enum(value)
    except ValueError:
        return enum(0)


def _filter(r) -> AclFilter:
    return AclFilter(_enum(AclResourceType, r.resource_type_filter), r.resource_name_filter,
                     _enum(PatternType, r.pattern_type_filter),
                     r.principal_filter, r.host_filter, _enum(AclOperation, r.operation),
                     _enum(AclPermission, r.permission_type))


def _binding_fields(b: AclBinding) -> dict:
    return {"resource_type": b.resource_type, "resource_name": b.name, "pattern_type": b.pattern_type,
            "principal": b.principal, "host": b.host, "operation": b.operation, "permission_type": b.permission}


# -- ACLs ---------------------------------------------------------------------------------------


@api(ApiKey.DESCRIBE_ACLS)
def describe_acls(ctx: RequestContext) -> dict:
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "resources": []}
    if ctx.sandbox.authorizer is None:
        return {"error_code": ErrorCode.security_disabled, "error_message": NO_AUTHORIZER, "resources": []}
    wanted = _filter(ctx.request)
    problem = wanted.problem()
    if problem:
        return {"error_code": ErrorCode.invalid_request, "error_message": problem, "resources": []}
    by_resource: dict[tuple, list[dict]] = {}
    for b in acl_store(ctx.cluster):
        if wanted.matches(b):
            by_resource.setdefault((b.resource_type, b.name, b.pattern_type), []).append(
                {"principal": b.principal, "host": b.host, "operation": b.operation,
                 "permission_type": b.permission})
    return {"error_code": 0, "error_message": None, "resources": [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in by_resource.items()]}


@api(ApiKey.CREATE_ACLS)
def create_acls(ctx: RequestContext) -> dict:
    refusal = _acl_refusal(ctx)
    if refusal:
        return {"results": [refusal for _ in ctx.request.creations]}
    results, created = [], []
    for c in ctx.request.creations:
        b = AclBinding(_enum(AclResourceType, c.resource_type), c.resource_name,
                       _enum(PatternType, c.resource_pattern_type),
                       c.principal, c.host, _enum(AclOperation, c.operation), _enum(AclPermission, c.permission_type))
        problem = binding_problem(b)
        if problem:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": problem})
            continue
        created.append(b)
        results.append({"error_code": 0, "error_message": None})
    replay.apply_all(ctx.cluster, authorizer.creations(ctx.cluster, created))
    return {"results": results}


@api(ApiKey.DELETE_ACLS)
def delete_acls(ctx: RequestContext) -> dict:
    refusal = _acl_refusal(ctx)
    if refusal:
        return {"filter_results": [{**refusal, "matching_acls": []} for _ in ctx.request.filters]}
    results = []
    for f in ctx.request.filters:
        wanted = _filter(f)
        problem = wanted.problem()
        if problem:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": problem, "matching_acls": []})
            continue
        gone = [b for b in acl_store(ctx.cluster) if wanted.matches(b)]
        replay.apply_all(ctx.cluster, authorizer.deletions(ctx.cluster, gone))
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, **_binding_fields(b)} for b in gone]})
    return {"filter_results": results}


def _standby(ctx: RequestContext) -> bool:
    """A write sent to a KRaft voter that is not the active controller (NOT_CONTROLLER)."""
    return ctx.on_controller_listener and not ctx.is_controller


def _acl_refusal(ctx: RequestContext) -> dict | None:
    """Kafka asks ALTER on the cluster first (always allowed without an authorizer)."""
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
    if _standby(ctx):
        return {"error_code": ErrorCode.not_controller, "error_message": None}
    if ctx.sandbox.authorizer is None:
        return {"error_code": ErrorCode.security_disabled, "error_message": NO_AUTHORIZER_TO_CHANGE}
    return None


# -- SCRAM credentials --------------------------------------------------------------------------

SCRAM_MECHANISMS = {int(m): m.mechanism_name for m in ScramMechanism if m != ScramMechanism.UNKNOWN}
MECHANISM_IDS = {name: i for i, name in SCRAM_MECHANISMS.items()}


@api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
def describe_user_scram_credentials(ctx: RequestContext) -> dict:
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "results": []}
    store = security.scram_store(ctx.cluster)
    names = [u.name for u in ctx.request.users] if ctx.request.users else sorted(u for u in store if store[u])
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        result: dict[str, object] = {"user": name, "error_code": 0, "error_message": None, "credential_infos": []}
        if counts[name] > 1:
            result.update(error_code=ErrorCode.duplicate_resource, error_message=
                          f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}")
        elif not store.get(name):
            result.update(error_code=ErrorCode.resource_not_found,
                          error_message=f"Attempt to describe a user credential that does not exist: {name}")
        else:
            result["credential_infos"] = [{"mechanism": MECHANISM_IDS[m], "iterations": c.iterations}
                                          for m, c in sorted(store[name].items())]
        results.append(result)
    return {"error_code": 0, "error_message": None, "results": results}


@api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def alter_user_scram_credentials(ctx: RequestContext) -> dict:
    """KRaft's ScramControlManager: a user may appear once per request (deletion or upsertion,
    whatever the mechanism); each user succeeds or fails alone."""
    req = ctx.request
    refused = ErrorCode.cluster_authorization_failed if not ctx.permits(AclResourceType.CLUSTER) else \
        ErrorCode.not_controller if _standby(ctx) else None
    if refused is not None:
        users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
        return {"results": [{"user": u, "error_code": refused, "error_message": None} for u in users]}
    store = security.scram_store(ctx.cluster)
    deletions: dict[str, Any] = {}    # user -> its kio deletion / upsertion
    upsertions: dict[str, Any] = {}
    errors: dict[str, tuple[int, str]] = {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = DUPLICATE
            continue
        problem = _scram_problem(d.name, d.mechanism, None)
        if problem is None and SCRAM_MECHANISMS[d.mechanism] not in store.get(d.name, {}):
            problem = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        if problem:
            errors[d.name] = problem
        else:
            deletions[d.name] = d
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = DUPLICATE
            continue
        problem = _scram_problem(u.name, u.mechanism, u.iterations)
        if problem:
            errors[u.name] = problem
        else:
            upsertions[u.name] = u
    replay.apply_all(ctx.cluster, [
        *(RemoveUserScramCredentialRecord(d.name, SCRAM_MECHANISMS[d.mechanism]) for d in deletions.values()),
        *(security.credential_record(u.name, security.ScramCredential.from_salted_password(
            SCRAM_MECHANISMS[u.mechanism], u.salted_password, u.salt, u.iterations)) for u in upsertions.values())])
    return {"results": [*({"user": n, "error_code": 0, "error_message": None} for n in [*deletions, *upsertions]),
                        *({"user": n, "error_code": c, "error_message": m} for n, (c, m) in errors.items())]}


DUPLICATE = (ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")


def _scram_problem(user: str, mechanism: int, iterations: int | None) -> tuple[int, str] | None:
    if not user:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in SCRAM_MECHANISMS:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    if iterations is not None and iterations < security.SCRAM_MIN_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if iterations is not None and iterations > security.SCRAM_MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    return None


# -- client quotas ----------------------------------------------------------------------------

USER, CLIENT_ID, IP = "user", "client-id", "ip"
# Kafka's QuotaConfig: the keys each kind of entity takes, with the bound of a whole-number key
# (None: a double).
CLIENT_QUOTA_KEYS: dict[str, tuple[str, float] | None] = {
    "producer_byte_rate": ("a LONG", 2.0**63 - 1), "consumer_byte_rate": ("a LONG", 2.0**63 - 1),
    "request_percentage": None, "controller_mutation_rate": None}
IP_QUOTA_KEYS: dict[str, tuple[str, float] | None] = {"connection_creation_rate": ("an INT", 2.0**31 - 1)}

def _entity_text(entity: dict[str, str | None]) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(f"{k}={v}" for k, v in entity.items()) + "})"


def _entity_problem(pairs: list[tuple[str, str | None]]) -> str | None:
    """KRaft's ClientQuotaControlManager.validateEntity and configKeysForEntityType."""
    if not pairs:
        return "Invalid empty client quota entity"
    seen: set[str] = set()
    for kind, name in pairs:
        if kind in seen:
            return f"Invalid client quota entity, duplicate entity entry {kind}"
        seen.add(kind)
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
        if name == "":
            return f"Empty {kind} not supported"
    entity = dict(pairs)
    if IP in entity and len(entity) > 1:
        return "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    ip = entity.get(IP)
    if ip is not None:
        try:
            ipaddress.ip_address(ip)   # (Kafka also resolves host names; the sandbox does not)
        except ValueError:
            return f"{ip} is not a valid IP or resolvable host."
    return None


def _value_problem(keys: dict[str, tuple[str, float] | None], key: str, value: float) -> str | None:
    if key not in keys:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    whole = keys[key]
    if whole is not None:
        kind, bound = whole
        if value > bound:
            return f"Proposed value for {key} is too large for {kind}."
        if abs(value % 1.0) > 1e-6:
            return f"{key} cannot be a fractional value."
    return None


@api(ApiKey.ALTER_CLIENT_QUOTAS)
def alter_client_quotas(ctx: RequestContext) -> dict:
    req = ctx.request
    refused = ErrorCode.cluster_authorization_failed if not ctx.permits(AclResourceType.CLUSTER) else \
        ErrorCode.not_controller if _standby(ctx) else None
    results = []
    for e in req.entries:
        pairs = [(d.entity_type, d.entity_name) for d in e.entity]
        answer = {"entity": [{"entity_type": t, "entity_name": n} for t, n in pairs],
                  "error_code": 0, "error_message": None}
        results.append(answer)
        if refused is not None:
            answer["error_code"] = refused
            continue
        entity = dict(pairs)
        keys = [op.key for op in e.ops]
        duplicate = next((k for k in keys if keys.count(k) > 1), None)
        problem = f"Duplicate quota key {duplicate} not updating quota for this entity {_entity_text(entity)}" \
            if duplicate else _entity_problem(pairs)
        if problem is None:
            allowed = IP_QUOTA_KEYS if IP in entity else CLIENT_QUOTA_KEYS
            problem = next((p for op in e.ops if not op.remove
                            for p in [_value_problem(allowed, op.key, op.value)] if p), None)
        if problem:
            answer.update(error_code=ErrorCode.invalid_request, error_message=problem)
            continue
        if req.validate_only:
            continue
        key: QuotaEntity = tuple(sorted(entity.items()))
        replay.apply_all(ctx.cluster, client_quotas.changes(
            ctx.cluster, key, [(op.key, None if op.remove else op.value) for op in e.ops]))
    return {"entries": results}


@api(ApiKey.DESCRIBE_CLIENT_QUOTAS)
def describe_client_quotas(ctx: RequestContext) -> dict:
    """As a KRaft broker answers from its metadata image (ClientQuotasImage.describe)."""
    req = ctx.request
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "entries": None}
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for c in req.components:
        code, problem = ErrorCode.invalid_request, None
        if not c.entity_type:
            problem = "Invalid empty entity type."
        elif c.entity_type in exact or c.entity_type in typed:
            problem = f"Entity type {c.entity_type} cannot appear more than once in the filter."
        elif c.entity_type not in (USER, CLIENT_ID, IP):
            code, problem = ErrorCode.unsupported_version, f"Unsupported entity type {c.entity_type}"
        elif c.match_type == QuotaMatch.EXACT and c.match is None:
            problem = "Request specified MATCH_TYPE_EXACT, but set match string to null."
        elif c.match_type == QuotaMatch.DEFAULT and c.match is not None:
            problem = "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
        elif c.match_type == QuotaMatch.SPECIFIED and c.match is not None:
            problem = "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
        elif c.match_type not in tuple(QuotaMatch):
            problem = f"Unknown match type {c.match_type}"
        if problem:
            return {"error_code": code, "error_message": problem, "entries": None}
        if c.match_type == QuotaMatch.SPECIFIED:
            typed.add(c.entity_type)
        else:
            exact[c.entity_type] = c.match
    if IP in exact or IP in typed:
        if {USER, CLIENT_ID} & (set(exact) | typed):
            return {"error_code": ErrorCode.invalid_request, "entries": None, "error_message":
                    "Invalid entity filter component combination. IP filter component should not be used "
                    "with user or clientId filter component."}
    entries = []
    for key, values in quota_store(ctx.cluster).items():
        entity = dict(key)
        if req.strict and len(entity) != len(exact) + len(typed):
            continue
        if all(k in entity and entity[k] == v for k, v in exact.items()) and typed <= set(entity):
            entries.append({"entity": [{"entity_type": t, "entity_name": n} for t, n in key],
                            "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
    return {"error_code": 0, "error_message": None, "entries": entries}
