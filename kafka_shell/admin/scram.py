"""SCRAM users (DescribeUserScramCredentials, AlterUserScramCredentials). A password is salted
and hashed here, as Kafka's admin client does it: only the salted password leaves the shell."""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.protocol.codes import ApiKey, ScramMechanism
from kafka_shell.base.errors import shown

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

MECHANISMS = {m.mechanism_name: m for m in ScramMechanism if m != ScramMechanism.UNKNOWN}
_HASHES = {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}


class Credential(NamedTuple):
    user: str
    mechanism: str      # SCRAM-SHA-256, or the number of one the shell does not know
    iterations: int


def describe(conn: ConnectionManager, users: list[str] | None = None) -> list[Credential]:
    """Every SCRAM user's credentials (or only `users`'), never the secrets."""
    conn.debug("DescribeUserScramCredentials request")
    # No users: an empty list, which Kafka reads as "every user" as it does null; but with null a
    # principal without DESCRIBE on the cluster gets no answer at all (Kafka 4.4's error response
    # iterates the null list and fails), instead of CLUSTER_AUTHORIZATION_FAILED.
    answer = conn.any_broker_request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                     {"users": [{"name": u} for u in users or ()]})
    if answer.error_code:
        raise response_error(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, answer.error_code, answer.error_message)
    out = []
    for r in answer.results:
        if r.error_code:
            raise response_error(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, r.error_code, r.error_message,
                                 entity=f'The SCRAM user "{shown(r.user)}"')
        for c in r.credential_infos:
            known = c.mechanism in tuple(ScramMechanism)
            out.append(Credential(r.user, ScramMechanism(c.mechanism).mechanism_name if known else str(c.mechanism),
                                  c.iterations))
    return sorted(out, key=lambda c: (c.user, c.mechanism))   # Kafka answers in no stable order


def salted_password(mechanism: str, password: str, iterations: int) -> tuple[bytes, bytes]:
    """(salt, SaltedPassword) as Kafka's admin client sends them: the password never leaves."""
    salt = os.urandom(32)
    return salt, hashlib.pbkdf2_hmac(_HASHES[MECHANISMS[mechanism]], password.encode(), salt, iterations)


def upsert(conn: ConnectionManager, user: str, mechanism: str, password: str, iterations: int) -> None:
    salt, salted = salted_password(mechanism, password, iterations)
    _alter(conn, {"deletions": [], "upsertions": [{"name": user, "mechanism": MECHANISMS[mechanism],
                                                   "iterations": iterations, "salt": salt, "salted_password": salted}]})


def delete(conn: ConnectionManager, user: str, mechanism: str) -> None:
    _alter(conn, {"deletions": [{"name": user, "mechanism": MECHANISMS[mechanism]}], "upsertions": []})


def _alter(conn: ConnectionManager, body: dict) -> None:
    conn.debug("AlterUserScramCredentials request")
    answer = conn.controller_request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body, mutation=True)
    for r in answer.results:
        if r.error_code:
            raise response_error(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, r.error_code, r.error_message)
