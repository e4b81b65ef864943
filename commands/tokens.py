"""Delegation tokens, like kafka-delegation-tokens: create-delegation-token (the HMAC is shown
once, never stored or logged), renew-delegation-token, expire-delegation-token and
describe-delegation-token. SASL connections only, as Kafka allows them."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from kafka_shell.admin import tokens
from kafka_shell.base.errors import UsageError
from kafka_shell.declarations.option_types import principal
from kafka_shell.declarations.registry import INT64_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

COLUMNS = ["TokenId", "Owner", "Requester", "Renewers", "IssueDate", "ExpiryDate", "MaxDate"]
KINDS = {"IssueDate": "datetime", "ExpiryDate": "datetime", "MaxDate": "datetime"}
period = int_range(-1, INT64_MAX, "a period in ms (-1: the broker's default)")
HMAC = Option("--hmac", required=True, metavar="HMAC", help="The token's HMAC (base64), as create-delegation-token printed it.")


def _hmac(text: str) -> bytes:
    """The token's HMAC as create-delegation-token printed it (base64). Not an option type: the
    parser's line would show the value, and an HMAC is a secret."""
    try:
        return base64.b64decode(text.strip(), validate=True)
    except ValueError:
        raise UsageError("Invalid --hmac: give the token's HMAC in base64, as create-delegation-token printed it") from None


def _require_sasl(session: Session, action: str) -> None:
    """Kafka refuses delegation tokens on a connection without SASL: said before anything is sent."""
    protocol = tokens.security_protocol(session.conn)
    if not protocol.startswith("SASL"):
        raise UsageError(f"{action} needs a SASL connection (Kafka refuses delegation tokens on {protocol}): "
                         "set security.protocol=SASL_SSL or SASL_PLAINTEXT with its sasl.* settings")


def _row(t: tokens.Token) -> list:
    return [t.token_id, t.owner, t.requester, list(t.renewers), t.issued_ms, t.expiry_ms, t.max_ms]


@command("create-delegation-token",
         Option("--owner-principal", type=principal, metavar="TYPE:NAME",
                help="Whose token (default: the logged-in principal)."),
         Option("--renewer-principal", type=principal, repeatable=True, metavar="WHO",
                help="A principal who may renew it, TYPE:NAME like User:bob (repeatable)."),
         Option("--max-life-time-period", type=period, default=-1, metavar="MS",
                help="Its longest life in ms (default: the broker's delegation.token.max.lifetime.ms)."),
         help="Create a delegation token (kafka-delegation-tokens --create); its HMAC is shown this once.",
         examples=("create-delegation-token --renewer-principal User:alice --max-life-time-period 86400000",), tables=("token",))
def create_delegation_token(session: Session, args: dict) -> Result:
    _require_sasl(session, "Creating a delegation token")
    token, hmac = tokens.create(session.conn, args["owner_principal"], args["renewer_principal"] or [],
                                args["max_life_time_period"])
    columns = ["TokenId", "Hmac", *COLUMNS[1:]]
    row = _row(token)
    return Result(tables=[Table(columns, [[row[0], hmac, *row[1:]]], name="token", kinds=KINDS)],
                  messages=[f"Created delegation token {token.token_id}: keep its HMAC now, it is not shown again."])


@command("renew-delegation-token", HMAC,
         Option("--renew-time-period", type=period, default=-1, metavar="MS",
                help="How much longer it lives, in ms (default: the broker's delegation.token.expiry.time.ms)."),
         help="Renew a delegation token (kafka-delegation-tokens --renew).",
         examples=("renew-delegation-token --hmac <HMAC> --renew-time-period 3600000",), tables=("token",))
def renew_delegation_token(session: Session, args: dict) -> Result:
    hmac = _hmac(args["hmac"])
    _require_sasl(session, "Renewing a delegation token")
    expiry = tokens.renew(session.conn, hmac, args["renew_time_period"])
    return Result.table(["ExpiryDate"], [[expiry]], "Renewed the delegation token.", name="token", kinds=KINDS)


@command("expire-delegation-token", HMAC,
         Option("--expiry-time-period", type=int_range(-1, INT64_MAX, "a period in ms"), default=-1, metavar="MS",
                help="Expire it this many ms from now (default -1: now)."),
         confirm=Confirm(),
         help="Expire a delegation token (kafka-delegation-tokens --expire): at once by default.",
         examples=("expire-delegation-token --hmac <HMAC> --yes",), tables=("token",))
def expire_delegation_token(session: Session, args: dict) -> Result:
    hmac = _hmac(args["hmac"])
    _require_sasl(session, "Expiring a delegation token")
    expiry = tokens.expire(session.conn, hmac, args["expiry_time_period"])
    return Result.table(["ExpiryDate"], [[expiry]], "Expired the delegation token." if args["expiry_time_period"] < 0
                        else "Changed the delegation token's expiry.", name="token", kinds=KINDS)


@command("describe-delegation-token",
         Option("--owner-principal", type=principal, repeatable=True, metavar="TYPE:NAME",
                help="Only these owners' tokens (repeatable)."),
         help="The delegation tokens this principal may see, without their HMACs (kafka-delegation-tokens --describe).",
         examples=("describe-delegation-token", "describe-delegation-token --owner-principal User:alice"), tables=("tokens",))
def describe_delegation_token(session: Session, args: dict) -> Result:
    _require_sasl(session, "Describing delegation tokens")
    rows = [_row(t) for t in tokens.describe(session.conn, args["owner_principal"])]
    return Result.table(COLUMNS, rows, name="tokens", kinds=KINDS)
