"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and DescribeDelegationToken
(sandbox.tokens), with the broker's checks of Kafka 4.4's KafkaApis before the controller's:
token requests are refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on PLAINTEXT listeners, on SSL
without a client certificate and on connections that logged in with a token. A token for
another owner needs CREATE_TOKENS on that user; DescribeDelegationToken lists the tokens the
principal owns or renews, and those it may DESCRIBE (the token) or DESCRIBE_TOKENS (its owner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.sandbox import tokens
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

ANONYMOUS = "User:ANONYMOUS"


def _ms(period: datetime.timedelta) -> int:
    return period // datetime.timedelta(milliseconds=1)


def _allowed(ctx: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests."""
    if ctx.token_authenticated or ctx.listener == "PLAINTEXT":
        return False
    return not (ctx.listener == "SSL" and ctx.principal == ANONYMOUS)


def _principal(kind: str | None, name: str) -> str:
    return f"{kind}:{name}"


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def _create_answer(ctx: RequestContext, code: int, owner: str, requester: str, token: tokens.Token | None = None,
                   unset: int = -1) -> dict:
    """The answer, with `unset` times when there is no token: -1 where the broker refuses
    (CreateDelegationTokenResponse.prepareResponse), 0 where the controller does."""
    (owner_type, owner_name), (requester_type, requester_name) = _split(owner), _split(requester)
    answer = {"error_code": code, "principal_type": owner_type, "principal_name": owner_name,
              "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
              "issue_timestamp": unset, "expiry_timestamp": unset, "max_timestamp": unset, "token_id": "", "hmac": b""}
    if token is not None:
        answer.update(issue_timestamp=token.issued, expiry_timestamp=token.expiry, max_timestamp=token.max_timestamp,
                      token_id=token.token_id, hmac=tokens.hmac_of(ctx.cluster, token))
    return answer


@api(ApiKey.CREATE_DELEGATION_TOKEN)
def create_delegation_token(ctx: RequestContext) -> dict:
    req = ctx.request
    requester = ctx.principal
    owner = _principal(req.owner_principal_type, req.owner_principal_name) if req.owner_principal_name else requester
    renewers = [_principal(r.principal_type, r.principal_name) for r in req.renewers]
    if not _allowed(ctx):
        return _create_answer(ctx, ErrorCode.delegation_token_request_not_allowed, owner, requester)
    if owner != requester and not ctx.authorize(AclOperation.CREATE_TOKENS, AclResourceType.USER, owner):
        return _create_answer(ctx, ErrorCode.delegation_token_authorization_failed, owner, requester)
    if any(_split(r)[0] != tokens.USER for r in renewers):
        return _create_answer(ctx, ErrorCode.invalid_principal_type, owner, requester)
    created = tokens.create(ctx.cluster, owner, requester, renewers, _ms(req.max_lifetime))
    if isinstance(created, tokens.Token):
        return _create_answer(ctx, ErrorCode.none, owner, requester, created)
    return _create_answer(ctx, created, owner, requester, unset=0)


def _change_expiry(ctx: RequestContext, change, period: datetime.timedelta) -> dict:
    """Renew or expire: the token's new expiry timestamp (-1 when refused)."""
    if not _allowed(ctx):
        return {"error_code": ErrorCode.delegation_token_request_not_allowed, "expiry_timestamp": -1}
    code, expiry = change(ctx.cluster, ctx.principal, ctx.request.hmac, _ms(period))
    return {"error_code": code, "expiry_timestamp": expiry}


@api(ApiKey.RENEW_DELEGATION_TOKEN)
def renew_delegation_token(ctx: RequestContext) -> dict:
    return _change_expiry(ctx, tokens.renew, ctx.request.renew_period)


@api(ApiKey.EXPIRE_DELEGATION_TOKEN)
def expire_delegation_token(ctx: RequestContext) -> dict:
    return _change_expiry(ctx, tokens.expire, ctx.request.expiry_time_period)


@api(ApiKey.DESCRIBE_DELEGATION_TOKEN)
def describe_delegation_token(ctx: RequestContext) -> dict:
    if not _allowed(ctx):
        return {"error_code": ErrorCode.delegation_token_request_not_allowed, "tokens": []}
    if not tokens.enabled(ctx.cluster):
        return {"error_code": ErrorCode.delegation_token_auth_disabled, "tokens": []}
    owners = ctx.request.owners
    if owners is not None and not owners:
        return {"error_code": 0, "tokens": []}
    wanted = None if owners is None else [_principal(o.principal_type, o.principal_name) for o in owners]

    def eligible(t: tokens.Token) -> bool:
        if wanted is not None and not any(t.owner_or_renewer(o) for o in wanted):
            return False
        return (t.owner_or_renewer(ctx.principal)
                or ctx.authorize(AclOperation.DESCRIBE, AclResourceType.DELEGATION_TOKEN, t.token_id)
                or ctx.authorize(AclOperation.DESCRIBE_TOKENS, AclResourceType.USER, t.owner))

    return {"error_code": 0, "tokens": [_described(ctx, t) for t in tokens.tokens(ctx.cluster).values() if eligible(t)]}


def _described(ctx: RequestContext, t: tokens.Token) -> dict:
    (owner_type, owner_name), (requester_type, requester_name) = _split(t.owner), _split(t.requester)
    return {"principal_type": owner_type, "principal_name": owner_name,
            "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
            "issue_timestamp": t.issued, "expiry_timestamp": t.expiry, "max_timestamp": t.max_timestamp,
            "token_id": t.token_id, "hmac": tokens.hmac_of(ctx.cluster, t),
            "renewers": [dict(zip(("principal_type", "principal_name"), _split(r))) for r in t.renewers]}
