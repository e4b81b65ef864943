"""How a request is served: `dispatch` checks the API and version a listener serves, decodes the
request, forwards what a KRaft broker forwards to the active controller, runs the handler with
its `RequestContext`, waits for the journal, and encodes the answer (with injected faults).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec, definitions
from kafka_shell.protocol.authorization import OPERATIONS_NOT_REQUESTED, SUPPORTED_OPERATIONS
from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey, Error
from kafka_shell.sandbox import apis, control, handlers, propagation
from kafka_shell.sandbox.authorizer import API_NEEDS, CLUSTER_NAME
from kafka_shell.sandbox.config import PLAINTEXT
from kafka_shell.sandbox.model import Broker, ClusterState, Controller

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

API_VERSIONS_KEY = ApiKey.API_VERSIONS
# What a KRaft broker forwards to the active controller (KafkaApis' maybeForwardToController,
# forwardToControllerOrFail and the config APIs' forwarding).
FORWARDED_APIS = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DESCRIBE_QUORUM,
    ApiKey.UNREGISTER_BROKER, ApiKey.UPDATE_FEATURES, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS,
    ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER,
    ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.UNREGISTER_CONTROLLER})
# Kafka's forwarding channel gives up after 60 s (BrokerServer's retryTimeoutMs) with
# REQUEST_TIMED_OUT; the sandbox also stops at the request's own timeout when it is shorter.
FORWARD_TIMEOUT_S = 60.0
FORWARD_POLL_S = 0.02

Node = Broker | Controller | control.ControlNode

ANONYMOUS = "User:ANONYMOUS"  # Kafka's principal for a connection that did not authenticate


@dataclass
class RequestContext:
    sandbox: Sandbox
    broker: Broker | Controller   # the node whose listener took the request (broker or controller)
    header: Any
    request: Any   # the decoded kio request entity of `version`
    api_key: int
    version: int
    # For a request a KRaft broker forwards: whether the active controller took it (None: not
    # forwarded).
    forwarded: bool | None = None
    # Who sent it, as Kafka's KafkaPrincipal string: the SASL or TLS identity of the connection.
    principal: str = ANONYMOUS
    # The listener it came in on: Metadata and the like advertise that listener's endpoints.
    listener: str = PLAINTEXT
    client_host: str = "127.0.0.1"   # the client's address, which ACL hosts match
    token_authenticated: bool = False   # logged in with a delegation token (sandbox.tokens)
    connection: object = None   # the client connection it came on (state tied to it ends with it)
    # The cluster as this broker knows it, when its metadata lags (sandbox.propagation).
    view: ClusterState | None = None

    @property
    def cluster(self) -> ClusterState:
        return self.view if self.view is not None else self.sandbox.cluster

    def authorize(self, op: AclOperation, resource_type: AclResourceType, name: str = CLUSTER_NAME) -> bool:
        """Whether the authorizer (if any) lets this request's principal do `op` on the resource."""
        auth = self.sandbox.authorizer
        return auth is None or auth.authorize(self.cluster, self.principal, self.client_host, op,
                                              resource_type, name)

    def authorized_operations(self, asked: bool, resource_type: AclResourceType, name: str = CLUSTER_NAME) -> int:
        """An `*_authorized_operations` field: when `asked`, the bit field of the operations allowed
        on the resource, of those its type has (all of them without an authorizer, as Kafka
        answers); else Kafka's "not requested" value."""
        if not asked:
            return OPERATIONS_NOT_REQUESTED
        allowed = [op for op in SUPPORTED_OPERATIONS[resource_type] if self.authorize(op, resource_type, name)]
        return sum(1 << op for op in allowed)

    def permits(self, resource_type: AclResourceType, name: str = CLUSTER_NAME) -> bool:
        """`authorize` with the operation this request's API needs on that resource type
        (authorizer.API_NEEDS)."""
        return self.authorize(API_NEEDS[self.api_key][resource_type], resource_type, name)

    @property
    def on_controller_listener(self) -> bool:
        return isinstance(self.broker, Controller)

    @property
    def is_controller(self) -> bool:
        """Whether the active controller serves this request: a forwarded one once a controller
        took it, else the node itself being the active controller."""
        if self.forwarded is not None:
            return self.forwarded
        return self.broker.id == self.cluster.controller_id

    def served_apis(self) -> dict[int, range]:
        """What this listener's ApiVersions lists: api key -> versions."""
        return served_apis(self.sandbox, self.broker)

    def port_of(self, broker: Broker) -> int:
        """The broker's port on the listener this request came in on (as Kafka advertises the
        endpoints of the client's listener)."""
        return broker.listener_ports.get(self.listener, broker.port)

    def advertised_controller_id(self) -> int:
        """The `controller_id` of Metadata and DescribeCluster: the controller broker in zk mode;
        through a KRaft broker a random live broker, drawn per request (KRaftMetadataCache);
        on a controller listener the active controller (KIP-919)."""
        if not self.cluster.kraft or self.on_controller_listener:
            return self.cluster.controller_id
        live = [b.id for b in self.cluster.live_brokers()]
        return random.choice(live) if live else -1


def listener_kind(sandbox: Sandbox, node: Broker | Controller) -> str:
    if isinstance(node, Controller):
        return definitions.CONTROLLER
    return definitions.BROKER if sandbox.cluster.kraft else definitions.ZK_BROKER

def served_apis(sandbox: Sandbox, node: Broker | Controller) -> dict[int, range]:
    """What a node's listener lists in ApiVersions: api key -> versions (sandbox.apis)."""
    return apis.listed(sandbox.cluster.kafka_version, listener_kind(sandbox, node), sandbox.seed_apis, sandbox.handlers)

async def dispatch(sandbox: Sandbox, broker: Node, body: bytes, principal: str = ANONYMOUS,
                   listener: str = PLAINTEXT, client_host: str = "127.0.0.1",
                   token_authenticated: bool = False, connection: object = None) -> bytes | None:
    api_key, version, correlation_id = codec.peek_header(body)
    if api_key == control.SANDBOX_CONTROL_KEY and sandbox.control_server is not None:
        return await control.serve(sandbox, body, correlation_id)
    if isinstance(broker, control.ControlNode):
        raise codec.ProtocolError("the control listener serves only the sandbox control API")
    api = sandbox.handlers.get(api_key)
    listed, accepted = apis.versions(sandbox.cluster.kafka_version, listener_kind(sandbox, broker), api_key,
                                     api.versions, sandbox.seed_apis) if api is not None else (None, None)
    if api is None or listed is None or accepted is None:
        # Kafka closes the connection on an API key it does not know (or that this
        # listener does not serve).
        raise codec.ProtocolError(f"unknown api key {api_key}")
    if version not in accepted:
        if api_key == API_VERSIONS_KEY:
            # Answer in v0 so any client can read it, then it retries with a version we list.
            return _api_versions_v0_error(correlation_id, listed)
        raise codec.ProtocolError(f"unsupported {codec.api_name(api_key)} v{version}")
    header, request = codec.decode_request(body)
    if broker.delay_ms:
        await asyncio.sleep(broker.delay_ms / 1000)
    ctx = RequestContext(sandbox, broker, header, request, api_key, version, principal=principal,
                         listener=listener, client_host=client_host, token_authenticated=token_authenticated,
                         connection=connection)
    if isinstance(broker, Broker):
        ctx.view = propagation.view(sandbox.cluster, broker.id, api_key)
    if sandbox.cluster.kraft and isinstance(broker, Broker) and api_key in FORWARDED_APIS:
        ctx.forwarded = await _await_controller(sandbox, request)
    result = api.handler(ctx)
    if asyncio.iscoroutine(result):
        result = await result
    propagation.observe(sandbox.cluster)
    if sandbox.journal is not None:
        await sandbox.journal.sync()  # what this answer acknowledges is on disk first
    if result is None:
        return None  # e.g. Produce with acks=0
    if ctx.forwarded is False:
        # Kafka's ForwardingManager.onTimeout: the request's error response, REQUEST_TIMED_OUT.
        result = _with_error(result, Error.request_timed_out)
    injected = broker.failures.get(api_key)
    if injected is not None:
        result = _with_error(result, injected)
    cls = codec.response_schema(api_key, version)
    return codec.encode_response(codec.build(cls, result), correlation_id)

async def _await_controller(sandbox: Sandbox, request: object) -> bool:
    """Wait, as a KRaft broker's forwarding does, for an active controller, and for its
    answer when it is slow (its `delay`); False when none came within the request's own
    timeout (at most FORWARD_TIMEOUT_S)."""
    if sandbox.cluster.controller_available and not _active_controller_delay_s(sandbox.cluster):
        return True
    timeout = getattr(request, "timeout", None)
    wait_s = FORWARD_TIMEOUT_S
    if timeout is not None:
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout / 1000
        wait_s = min(wait_s, max(seconds, 0.0))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while not sandbox.cluster.controller_available:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(min(FORWARD_POLL_S, max(deadline - loop.time(), 0.0)))
    slow_s = _active_controller_delay_s(sandbox.cluster)
    if slow_s:
        await asyncio.sleep(min(slow_s, max(deadline - loop.time(), 0.0)))
        return loop.time() < deadline
    return True


def _active_controller_delay_s(cluster: ClusterState) -> float:
    """How late the active KRaft controller answers what brokers forward to it (`delay`)."""
    active = cluster.controllers.get(cluster.controller_id)
    return active.delay_ms / 1000 if active is not None else 0.0

def _api_versions_v0_error(correlation_id: int, served: range) -> bytes:
    cls = codec.response_schema(API_VERSIONS_KEY, 0)
    entity = codec.build(cls, {
        "error_code": ErrorCode.unsupported_version,
        "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": served.start,
                      "max_version": served.stop - 1}],
    })
    return codec.encode_response(entity, correlation_id)


def _with_error(tree: object, code: int) -> object:
    """The response with every error_code in it set to `code` (Kafka's getErrorResponse does the
    same: the error on every element the request named)."""
    if isinstance(tree, dict):
        out = {k: _with_error(v, code) for k, v in tree.items()}
        if "error_code" in out or not any(isinstance(v, (list, dict)) for v in tree.values()):
            out["error_code"] = code
        return out
    if isinstance(tree, list):
        return [_with_error(v, code) for v in tree]
    return tree


def error_name(code: int) -> str:
    try:
        return Error(code).name.upper()
    except ValueError:
        return str(code)


def api_key_of(api: int | str) -> int:
    """An API key from a number or a name like `Metadata`, `metadata` or `CREATE_TOPICS`."""
    if isinstance(api, int) or str(api).isdigit():
        return int(api)
    wanted = str(api).replace("_", "").replace("-", "").lower()
    for key in handlers.HANDLERS:
        if codec.api_name(key).lower() == wanted:
            return key
    raise ValueError(f"unknown API {api!r}: use a name such as Metadata or CreateTopics, or a key")


def error_code_of(error: int | str) -> int:
    """An error code from a number or a name like `NOT_CONTROLLER` / `not_controller`."""
    if isinstance(error, int) or str(error).lstrip("-").isdigit():
        return int(error)
    try:
        return int(ErrorCode[str(error).lower()])
    except KeyError:
        raise ValueError(f"unknown error {error!r}: use a Kafka error name such as NOT_CONTROLLER") from None
