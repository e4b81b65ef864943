"""UnregisterBroker v0: a controller API (KRaft brokers forward it; a standby voter, or in zk
mode a broker other than the controller, answers NOT_CONTROLLER). See
`replication.unregister_broker`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import replication
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext


@api(ApiKey.UNREGISTER_BROKER)
def unregister_broker(ctx: RequestContext) -> dict:
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
    if not ctx.is_controller:
        return {"error_code": ErrorCode.not_controller,
                "error_message": "This is not the correct controller for this cluster."}
    code, message = replication.unregister_broker(ctx.cluster, ctx.request.broker_id)
    # Kafka 4.4's ControllerApis answers "" where there is no error.
    return {"error_code": code, "error_message": "" if message is None else message}
