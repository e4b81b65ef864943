"""Delegation tokens (KIP-48; `kafka-delegation-tokens`): create, renew, expire and describe,
over SASL connections only (Kafka refuses them elsewhere). The HMAC is returned by `create` for
the caller to show once; nothing here keeps or logs it. Kafka answers a refused Create, Renew or
Expire with -1 times, which the shell reads as int64 (protocol.client_response_schema)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_shell.protocol.codes import ApiKey

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager


@dataclass(frozen=True)
class Token:
    token_id: str
    owner: str
    requester: str | None
    renewers: tuple[str, ...]
    issued_ms: int
    expiry_ms: int
    max_ms: int


def security_protocol(conn: ConnectionManager) -> str:
    """The connection's security.protocol: Kafka serves delegation tokens only to a SASL one
    (the caller says so before asking)."""
    return conn.properties.get("security.protocol", "PLAINTEXT").upper()


def _require_api(conn: ConnectionManager, action: str) -> None:
    conn.require(ApiKey.CREATE_DELEGATION_TOKEN, action)


Principal = tuple[str, str]   # (type, name): User:alice is ("User", "alice")


def _principal(who: Principal) -> dict:
    return {"principal_type": who[0], "principal_name": who[1]}


def _ms(value: Any) -> int:
    return value if isinstance(value, int) else int(value.timestamp() * 1000)


def _check(api_key: int, answer: Any) -> Any:
    if answer.error_code:
        raise response_error(api_key, answer.error_code, getattr(answer, "error_message", None),
                             entity="the delegation token")
    return answer


def create(conn: ConnectionManager, owner: Principal | None, renewers: list[Principal],
           max_life_ms: int) -> tuple[Token, str]:
    """A new token and its HMAC (base64, as clients log in with it)."""
    _require_api(conn, "Creating a delegation token")
    body = {"renewers": [_principal(r) for r in renewers], "max_lifetime": max_life_ms,
            "owner_principal_type": owner[0] if owner else None, "owner_principal_name": owner[1] if owner else None}
    conn.debug(f"CreateDelegationToken request: {len(renewers)} renewer(s)")
    a = _check(ApiKey.CREATE_DELEGATION_TOKEN, conn.any_broker_request(ApiKey.CREATE_DELEGATION_TOKEN, body,
                                                                       mutation=True))
    requester = getattr(a, "token_requester_principal_name", None)
    token = Token(a.token_id, f"{a.principal_type}:{a.principal_name}",
                  f"{a.token_requester_principal_type}:{requester}" if requester else None,
                  tuple(f"{kind}:{name}" for kind, name in renewers),
                  _ms(a.issue_timestamp), _ms(a.expiry_timestamp), _ms(a.max_timestamp))
    return token, base64.b64encode(a.hmac).decode("ascii")


def renew(conn: ConnectionManager, hmac: bytes, period_ms: int) -> int:
    """The token's new expiry time (epoch ms)."""
    return _new_expiry(conn, ApiKey.RENEW_DELEGATION_TOKEN, "Renewing", {"hmac": hmac, "renew_period": period_ms})


def expire(conn: ConnectionManager, hmac: bytes, period_ms: int) -> int:
    """The token's new expiry time (epoch ms); a negative period expires it now."""
    return _new_expiry(conn, ApiKey.EXPIRE_DELEGATION_TOKEN, "Expiring", {"hmac": hmac, "expiry_time_period": period_ms})


def _new_expiry(conn: ConnectionManager, api_key: int, doing: str, body: dict) -> int:
    _require_api(conn, f"{doing} a delegation token")
    conn.debug(f"{ApiKey(api_key).name} request")
    return _ms(_check(api_key, conn.any_broker_request(api_key, body, mutation=True)).expiry_timestamp)


def describe(conn: ConnectionManager, owners: list[Principal] | None) -> list[Token]:
    """The tokens the principal may see (of these owners; all without), never their HMACs."""
    _require_api(conn, "Describing delegation tokens")
    conn.debug("DescribeDelegationToken request")
    a = _check(ApiKey.DESCRIBE_DELEGATION_TOKEN, conn.any_broker_request(
        ApiKey.DESCRIBE_DELEGATION_TOKEN, {"owners": [_principal(o) for o in owners] if owners else None}))
    out = []
    for t in a.tokens:
        requester = getattr(t, "token_requester_principal_name", None)
        out.append(Token(t.token_id, f"{t.principal_type}:{t.principal_name}",
                         f"{t.token_requester_principal_type}:{requester}" if requester else None,
                         tuple(f"{r.principal_type}:{r.principal_name}" for r in t.renewers),
                         _ms(t.issue_timestamp), _ms(t.expiry_timestamp), _ms(t.max_timestamp)))
    return sorted(out, key=lambda t: (t.owner, t.issued_ms))
