"""The security admin APIs: CreateAcls, DescribeAcls, DeleteAcls (over `sandbox.authorizer`),
DescribeUserScramCredentials and AlterUserScramCredentials (over `security.scram_store`, which
SCRAM logins read), DescribeClientQuotas and AlterClientQuotas, with Kafka's validation and
messages (AclControlManager, ScramControlManager, ClientQuotaControlManager) and the CLUSTER
permissions `authorizer.API_NEEDS` lists. Quotas are kept, not enforced.
"""

from __future__ import annotations

import ipaddress
from collections import Counter

from kio.schema.errors import ErrorCode

from kafka_shell.codes import AclOperation, AclPermission, AclResourceType, ApiKey, PatternType
from kafka_shell.sandbox import security
from kafka_shell.sandbox.authorizer import AclBinding, AclFilter, acl_store, binding_problem
from kafka_shell.sandbox.handlers import api

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _enum(enum: type, value: int):  # an unknown number reads as UNKNOWN (Kafka's fromCode)
    try:
        return enum(value)
    except ValueError:
        return enum(0)


def _filter(r) -> AclFilter:
    return AclFilter(_enum(AclResourceType, r.resource_type_filter), r.resource_name_filter,
                     _enum(PatternType, getattr(r, "pattern_type_filter", PatternType.LITERAL)),
                     r.principal_filter, r.host_filter, _enum(AclOperation, r.operation),
                     _enum(AclPermission, r.permission_type))


def _binding_fields(b: AclBinding) -> dict:
    return {"resource_type": b.resource_type, "resource_name": b.name, "pattern_type": b.pattern_type,
            "principal": b.principal, "host": b.host, "operation": b.operation, "permission_type": b.permission}


# -- ACLs ---------------------------------------------------------------------------------------


@api(ApiKey.DESCRIBE_ACLS)
def describe_acls(ctx) -> dict:
    if ctx.sandbox.authorizer is None:
        return {"error_code": ErrorCode.security_disabled, "error_message": NO_AUTHORIZER, "resources": []}
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "resources": []}
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
def create_acls(ctx) -> dict:
    refusal = _acl_refusal(ctx)
    if refusal:
        return {"results": [refusal for _ in ctx.request.creations]}
    store = acl_store(ctx.cluster)
    results = []
    for c in ctx.request.creations:
        b = AclBinding(_enum(AclResourceType, c.resource_type), c.resource_name,
                       _enum(PatternType, getattr(c, "resource_pattern_type", PatternType.LITERAL)),
                       c.principal, c.host, _enum(AclOperation, c.operation), _enum(AclPermission, c.permission_type))
        problem = binding_problem(b)
        if problem:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": problem})
            continue
        if b not in store:  # creating an existing binding succeeds and changes nothing
            store.append(b)
        results.append({"error_code": 0, "error_message": None})
    return {"results": results}


@api(ApiKey.DELETE_ACLS)
def delete_acls(ctx) -> dict:
    refusal = _acl_refusal(ctx)
    if refusal:
        return {"filter_results": [{**refusal, "matching_acls": []} for _ in ctx.request.filters]}
    store = acl_store(ctx.cluster)
    results = []
    for f in ctx.request.filters:
        wanted = _filter(f)
        problem = wanted.problem()
        if problem:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": problem, "matching_acls": []})
            continue
        gone = [b for b in store if wanted.matches(b)]
        store[:] = [b for b in store if b not in gone]
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, **_binding_fields(b)} for b in gone]})
    return {"filter_results": results}


def _acl_refusal(ctx) -> dict | None:
    if ctx.sandbox.authorizer is None:
        return {"error_code": ErrorCode.security_disabled, "error_message": NO_AUTHORIZER}
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
    return None


# -- SCRAM credentials --------------------------------------------------------------------------

SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}   # Kafka's ScramMechanism type ids
MECHANISM_IDS = {name: i for i, name in SCRAM_MECHANISMS.items()}


@api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
def describe_user_scram_credentials(ctx) -> dict:
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
def alter_user_scram_credentials(ctx) -> dict:
    req = ctx.request
    users = list(dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions]))
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"results": [{"user": u, "error_code": ErrorCode.cluster_authorization_failed,
                             "error_message": None} for u in users]}
    store = security.scram_store(ctx.cluster)
    pairs = Counter([(d.name, d.mechanism) for d in req.deletions] + [(u.name, u.mechanism) for u in req.upsertions])
    errors: dict[str, tuple[int, str]] = {}
    for (user, _), n in pairs.items():
        if n > 1:
            errors.setdefault(user, (ErrorCode.duplicate_resource,
                                     "A user credential cannot be altered twice in the same request"))
    for d in req.deletions:
        problem = _scram_problem(d.name, d.mechanism, None)
        if problem is None and SCRAM_MECHANISMS[d.mechanism] not in store.get(d.name, {}):
            problem = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        if problem:
            errors.setdefault(d.name, problem)
    for u in req.upsertions:
        problem = _scram_problem(u.name, u.mechanism, u.iterations)
        if problem:
            errors.setdefault(u.name, problem)
    # A user's alterations are applied together, or none of them (an error on any refuses all).
    for d in req.deletions:
        if d.name not in errors:
            store[d.name].pop(SCRAM_MECHANISMS[d.mechanism], None)
    for u in req.upsertions:
        if u.name not in errors:
            mechanism = SCRAM_MECHANISMS[u.mechanism]
            store.setdefault(u.name, {})[mechanism] = security.ScramCredential.from_salted_password(
                mechanism, u.salted_password, u.salt, u.iterations)
    for user in [u for u in store if not store[u]]:
        del store[user]
    return {"results": [{"user": u, "error_code": errors.get(u, (0, None))[0],
                         "error_message": errors.get(u, (0, None))[1]} for u in users]}


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


# -- client quotas ------------------------------------------------------------------------------

USER, CLIENT_ID, IP = "user", "client-id", "ip"
# Kafka's QuotaConfigs: the keys each kind of entity takes, and whether the value is a whole number.
CLIENT_QUOTA_KEYS = {"producer_byte_rate": True, "consumer_byte_rate": True,
                     "request_percentage": False, "controller_mutation_rate": False}
IP_QUOTA_KEYS = {"connection_creation_rate": True}
EXACT, DEFAULT, SPECIFIED = 0, 1, 2   # DescribeClientQuotas match types

Entity = tuple[tuple[str, "str | None"], ...]   # sorted (entity type, name; None: the default)


def quota_store(cluster) -> dict[Entity, dict[str, float]]:
    return cluster.extras.setdefault("client_quotas", {})  # type: ignore[no-any-return]


def _entity_problem(entity: dict[str, str | None], count: int) -> str | None:
    if count != len(entity):
        return "Duplicate entity type"
    if not entity:
        return "Invalid empty client quota entity"
    for kind in entity:
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
    if IP in entity and len(entity) > 1:
        return "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
    ip = entity.get(IP)
    if ip is not None:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            return f"{ip} is not a valid IP or resolvable host."
    return None


@api(ApiKey.ALTER_CLIENT_QUOTAS)
def alter_client_quotas(ctx) -> dict:
    req = ctx.request
    authorized = ctx.permits(AclResourceType.CLUSTER)
    store = quota_store(ctx.cluster)
    results = []
    for e in req.entries:
        entity = {d.entity_type: d.entity_name for d in e.entity}
        answer = {"entity": [{"entity_type": d.entity_type, "entity_name": d.entity_name} for d in e.entity],
                  "error_code": 0, "error_message": None}
        results.append(answer)
        if not authorized:
            answer["error_code"] = ErrorCode.cluster_authorization_failed
            continue
        problem = _entity_problem(entity, len(e.entity)) or _ops_problem(entity, e.ops)
        if problem:
            answer.update(error_code=ErrorCode.invalid_request, error_message=problem)
            continue
        if req.validate_only:
            continue
        key: Entity = tuple(sorted(entity.items(), key=lambda kv: kv[0]))
        values = dict(store.get(key, {}))
        for op in e.ops:
            if op.remove:
                values.pop(op.key, None)
            else:
                values[op.key] = op.value
        if values:
            store[key] = values
        else:
            store.pop(key, None)
    return {"entries": results}


def _ops_problem(entity: dict[str, str | None], ops) -> str | None:
    keys = IP_QUOTA_KEYS if IP in entity else CLIENT_QUOTA_KEYS
    if len({op.key for op in ops}) != len(ops):
        return "Duplicate quota key in the request"
    for op in ops:
        if op.key not in keys:
            return f"Unknown quota key {op.key} for this entity"
        if op.remove:
            continue
        if op.value <= 0:
            return f"Invalid value {op.value} for configuration key {op.key}: must be positive"
        if keys[op.key] and op.value != int(op.value):
            return f"Invalid value {op.value} for configuration key {op.key}, must be a whole number"
    return None


@api(ApiKey.DESCRIBE_CLIENT_QUOTAS)
def describe_client_quotas(ctx) -> dict:
    req = ctx.request
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "entries": None}
    kinds = [c.entity_type for c in req.components]
    problem = None
    if len(set(kinds)) != len(kinds):
        problem = "Duplicate filter component entity type"
    elif IP in kinds and len(kinds) > 1:
        problem = ("Invalid entity filter component combination, IP filter component should not be used "
                   "with user or clientId filter component.")
    elif any(c.match_type not in (EXACT, DEFAULT, SPECIFIED) for c in req.components):
        problem = "Unknown match type"
    if problem:
        return {"error_code": ErrorCode.invalid_request, "error_message": problem, "entries": None}
    entries = []
    for key, values in quota_store(ctx.cluster).items():
        entity = dict(key)
        if req.strict and set(entity) != set(kinds):
            continue
        if all(_component_matches(c, entity) for c in req.components):
            entries.append({"entity": [{"entity_type": t, "entity_name": n} for t, n in key],
                            "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
    return {"error_code": 0, "error_message": None, "entries": entries}


def _component_matches(c, entity: dict[str, str | None]) -> bool:
    if c.entity_type not in entity:
        return False
    name = entity[c.entity_type]
    if c.match_type == EXACT:
        return name == c.match
    if c.match_type == DEFAULT:
        return name is None
    return name is not None
