"""SaslHandshake and SaslAuthenticate where the SASL layer does not take them (KafkaApis): on a
listener without SASL, and SaslAuthenticate on a SASL connection already authenticated. Both
answer ILLEGAL_SASL_STATE, as Kafka's brokers do; a SASL listener's logins are served by
`kafka_shell.sandbox.authenticator` before requests reach the handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext


@api(ApiKey.SASL_HANDSHAKE)
def sasl_handshake(ctx: RequestContext) -> dict:
    return {"error_code": Error.illegal_sasl_state, "mechanisms": []}


@api(ApiKey.SASL_AUTHENTICATE)
def sasl_authenticate(ctx: RequestContext) -> dict:
    return {"error_code": Error.illegal_sasl_state, "auth_bytes": b"", "session_lifetime": 0,
            "error_message": "SaslAuthenticate request received after successful authentication"}
