"""The security state a cluster keeps, as `--data-dir` saves it: ACL bindings
(`authorizer.acl_store`), SCRAM credentials (`security.scram_store`: salt, StoredKey, ServerKey,
iterations; never a password) and client quotas (`quota_store`).

`snapshot(cluster)` is plain JSON data for the state file and the journal's cluster record;
`restore(cluster, data, check)` puts it back, checked field by field (a bad file is a
StateError naming the field). Handlers that change any of it call `cluster.changed()`, so the
journal writes it before the answer.
"""

from __future__ import annotations

import binascii
from typing import TYPE_CHECKING

from kafka_shell.protocol.codes import AclOperation, AclPermission, AclResourceType, PatternType
from kafka_shell.sandbox.authorizer import AclBinding, acl_store
from kafka_shell.sandbox.security import SCRAM_HASHES, ScramCredential, scram_store

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState
    from kafka_shell.sandbox.persist import Checker

QuotaEntity = tuple[tuple[str, "str | None"], ...]   # sorted (entity type, name; None: the default)


def quota_store(cluster: ClusterState) -> dict[QuotaEntity, dict[str, float]]:
    """entity -> quota key -> value (created empty on first use)."""
    return cluster.client_quotas


def snapshot(cluster: ClusterState) -> dict:
    return {
        "acls": [[b.resource_type.name, b.name, b.pattern_type.name, b.principal, b.host, b.operation.name,
                  b.permission.name] for b in acl_store(cluster)],
        "scram": [[user, c.mechanism, c.salt.hex(), c.iterations, c.stored_key.hex(), c.server_key.hex()]
                  for user, creds in sorted(scram_store(cluster).items()) for c in creds.values()],
        "quotas": [[[list(pair) for pair in entity], dict(values)]
                   for entity, values in quota_store(cluster).items()],
    }


def restore(cluster: ClusterState, data: object, check: Checker) -> None:
    """Put a `snapshot` back (None: a state file from before it was kept)."""
    if data is None:
        return
    data = check.mapping(data, "security")
    acls = []
    for i, row in enumerate(check.array(data.get("acls", []), "security.acls")):
        where = f"security.acls[{i}]"
        fields = check.array(row, where)
        if len(fields) != 7 or not all(isinstance(f, str) for f in fields):
            raise check.fail(where, "7 strings (type, name, pattern, principal, host, operation, permission)")
        try:
            acls.append(AclBinding(AclResourceType[fields[0]], fields[1], PatternType[fields[2]], fields[3], fields[4],
                                   AclOperation[fields[5]], AclPermission[fields[6]]))
        except KeyError:
            raise check.fail(where, "names of Kafka's ACL enums") from None
    scram: dict[str, dict[str, ScramCredential]] = {}
    for i, row in enumerate(check.array(data.get("scram", []), "security.scram")):
        where = f"security.scram[{i}]"
        fields = check.array(row, where)
        if len(fields) != 6 or fields[1] not in SCRAM_HASHES:
            raise check.fail(where, "[user, mechanism, salt, iterations, stored key, server key]")
        try:
            salt, stored, server = (bytes.fromhex(check.text(fields[k], where)) for k in (2, 4, 5))
        except (ValueError, binascii.Error):
            raise check.fail(where, "hex salt and keys") from None
        scram.setdefault(check.text(fields[0], where), {})[fields[1]] = ScramCredential(
            fields[1], salt, check.integer(fields[3], f"{where} iterations", low=1), stored, server)
    quotas: dict[QuotaEntity, dict[str, float]] = {}
    for i, row in enumerate(check.array(data.get("quotas", []), "security.quotas")):
        where = f"security.quotas[{i}]"
        fields = check.array(row, where)
        if len(fields) != 2:
            raise check.fail(where, "[entity, values]")
        entity = []
        for pair in check.array(fields[0], f"{where} entity"):
            pair = check.array(pair, f"{where} entity")
            if len(pair) != 2:
                raise check.fail(f"{where} entity", "[type, name] pairs")
            entity.append((check.text(pair[0], f"{where} entity"), check.optional_text(pair[1], f"{where} entity")))
        values = check.mapping(fields[1], f"{where} values")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.values()):
            raise check.fail(f"{where} values", "numbers")
        quotas[tuple(sorted(entity))] = {k: float(v) for k, v in values.items()}
    cluster.acls, cluster.scram_credentials, cluster.client_quotas = acls, scram, quotas


def copy(source: ClusterState, target: ClusterState) -> None:
    """The security state of `source` onto `target` (a journal's cluster record replayed)."""
    target.acls, target.scram_credentials = source.acls, source.scram_credentials
    target.client_quotas = source.client_quotas
