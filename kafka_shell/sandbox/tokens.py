"""Delegation tokens (KIP-48), as Kafka 4.4's DelegationTokenControlManager keeps them and its
DelegationTokenManager authenticates them.

Enabled by the static broker config `delegation.token.secret.key` (`--broker-config`); without
it every token request answers DELEGATION_TOKEN_AUTH_DISABLED. A token's id is a random Kafka
Uuid, its HMAC the HmacSHA512 of the id under the secret key. Its expiry is at most
`delegation.token.expiry.time.ms` ahead (renewals move it, up to the token's max timestamp,
`delegation.token.max.lifetime.ms` after its creation or the max life the request asked for).
A client logs in with a token over SCRAM (either mechanism) with the token id as the user name,
the HMAC in base64 as the password and the extension `tokenauth=true`: its principal is the
token's owner, and token requests on that connection are refused, as Kafka refuses them.
Tokens change by DelegationTokenRecords (created, renewed, expired later) and
RemoveDelegationTokenRecords (expired now), as Kafka's controller keeps them; the HMAC is not in
the record but made from the id under the secret key of the running broker (a new secret key
makes the kept tokens' HMACs new, as in Kafka). An expired token stays listed until
ExpireDelegationToken removes it (Kafka's controller also sweeps them every
`delegation.token.expiry.check.interval.ms`, an hour by default).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import uuid
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, replay
from kafka_shell.sandbox.model import ClusterState, now_ms
from kafka_shell.sandbox.records import DelegationTokenRecord, RemoveDelegationTokenRecord, ReplayError

SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME_KEY = "delegation.token.max.lifetime.ms"
EXPIRY_TIME_KEY = "delegation.token.expiry.time.ms"
USER = "User"


@dataclass
class Token:
    token_id: str
    owner: str        # principal strings, "User:alice"
    requester: str
    renewers: tuple[str, ...]
    issued: int
    max_timestamp: int
    expiry: int
    # SCRAM credentials from the HMAC (made on first use, with their own salts).
    scram: dict = field(default_factory=dict, compare=False)

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_timestamp < now or self.expiry < now


def tokens(cluster: ClusterState) -> dict[str, Token]:
    return cluster.delegation_tokens


def secret(cluster: ClusterState) -> str | None:
    return configs.broker_value(cluster, None, SECRET_KEY) or None


def enabled(cluster: ClusterState) -> bool:
    return secret(cluster) is not None


def _setting(cluster: ClusterState, key: str) -> int:
    return int(configs.broker_value(cluster, None, key) or 0)


def hmac_of(cluster: ClusterState, token: Token) -> bytes:
    return hmac.new((secret(cluster) or "").encode(), token.token_id.encode(), hashlib.sha512).digest()


def _kafka_uuid() -> str:
    """Kafka's Uuid.randomUuid().toString(): url-safe base64 without padding, never starting with "-"."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _sum(now: int, duration: int) -> int:
    return min(now + duration, 2**63 - 1)


def by_hmac(cluster: ClusterState, mac: bytes) -> Token | None:
    return next((t for t in tokens(cluster).values() if hmac.compare_digest(hmac_of(cluster, t), bytes(mac))), None)


def create(cluster: ClusterState, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int) -> Token | int:
    """The controller's part of CreateDelegationToken: a new token, or an error code."""
    if not enabled(cluster):
        return ErrorCode.delegation_token_auth_disabled
    if any(not r.startswith(f"{USER}:") for r in renewers):
        return ErrorCode.invalid_principal_type
    now = now_ms()
    max_life = _setting(cluster, MAX_LIFETIME_KEY)
    if max_lifetime_ms > 0:
        max_life = min(max_life, max_lifetime_ms)
    max_timestamp = _sum(now, max_life)
    token_id = _kafka_uuid()
    replay.apply(cluster, DelegationTokenRecord(owner, requester, tuple(renewers), now, max_timestamp,
                                                min(max_timestamp, _sum(now, _setting(cluster, EXPIRY_TIME_KEY))),
                                                token_id))
    return tokens(cluster)[token_id]


def _find(cluster: ClusterState, mac: bytes) -> tuple[int, Token | None]:
    """The token with this HMAC, or why there is none (tokens off, no such token)."""
    if not enabled(cluster):
        return ErrorCode.delegation_token_auth_disabled, None
    token = by_hmac(cluster, mac)
    return (ErrorCode.delegation_token_not_found, None) if token is None else (ErrorCode.none, token)


def renew(cluster: ClusterState, principal: str, mac: bytes, renew_period_ms: int) -> tuple[int, int]:
    """(error code, new expiry timestamp or -1)."""
    code, token = _find(cluster, mac)
    now = now_ms()
    if token is None:
        return code, -1
    if token.expired(now):
        return ErrorCode.delegation_token_expired, -1
    if not token.owner_or_renewer(principal):
        return ErrorCode.delegation_token_owner_mismatch, -1
    period = _setting(cluster, EXPIRY_TIME_KEY)
    if renew_period_ms > 0:
        period = min(period, renew_period_ms)
    return ErrorCode.none, _set_expiry(cluster, token, min(token.max_timestamp, now + period))


def expire(cluster: ClusterState, principal: str, mac: bytes, expiry_period_ms: int) -> tuple[int, int]:
    """(error code, expiry timestamp or -1): a negative period removes the token now."""
    code, token = _find(cluster, mac)
    now = now_ms()
    if token is None:
        return code, -1
    if not token.owner_or_renewer(principal):
        return ErrorCode.delegation_token_owner_mismatch, -1
    if expiry_period_ms < 0:
        replay.apply(cluster, RemoveDelegationTokenRecord(token.token_id))
        return ErrorCode.none, now
    if token.expired(now):
        return ErrorCode.delegation_token_expired, -1
    return ErrorCode.none, _set_expiry(cluster, token, min(token.max_timestamp, _sum(now, expiry_period_ms)))


def _set_expiry(cluster: ClusterState, token: Token, expiry: int) -> int:
    """Kafka's renew and expire: the token's record again with its new expiration timestamp."""
    replay.apply(cluster, dataclasses.replace(record_of(token), expiration_timestamp=expiry))
    return expiry


def record_of(token: Token) -> DelegationTokenRecord:
    return DelegationTokenRecord(token.owner, token.requester, token.renewers, token.issued, token.max_timestamp,
                                 token.expiry, token.token_id)


def replay_token(cluster: ClusterState, record: DelegationTokenRecord) -> None:
    tokens(cluster)[record.token_id] = Token(record.token_id, record.owner, record.requester, record.renewers,
                                             record.issue_timestamp, record.max_timestamp,
                                             record.expiration_timestamp)


def replay_remove(cluster: ClusterState, record: RemoveDelegationTokenRecord) -> None:
    if tokens(cluster).pop(record.token_id, None) is None:
        raise ReplayError(f"removes token {record.token_id}, which no DelegationTokenRecord created")


def snapshot(cluster: ClusterState) -> list[DelegationTokenRecord]:
    return [record_of(t) for t in tokens(cluster).values()]


REPLAY = {DelegationTokenRecord: replay_token, RemoveDelegationTokenRecord: replay_remove}


def scram_credential(cluster: ClusterState, token_id: str, mechanism: str):
    """The SCRAM credential a client logs in with the token as (DelegationTokenManager: the HMAC in
    base64 as the password, each mechanism's minimum iterations), or None."""
    from kafka_shell.sandbox.security import ScramCredential
    token = tokens(cluster).get(token_id)
    if token is None:
        return None
    if mechanism not in token.scram:
        token.scram[mechanism] = ScramCredential.from_password(mechanism, base64.b64encode(hmac_of(cluster, token)).decode())
    return token.scram[mechanism]
