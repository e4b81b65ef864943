"""The control endpoint of a `kafka-shell sandbox` server: fault injection from another process
(the shell's side, `RemoteSandbox`, is kafka_shell/sandbox_client.py; the wire format is
described there).

Served, only when the server enables it (`Sandbox(serve_control=True)`), on its own control
listener (on the nodes' address: loopback unless --listen; --data-dir keeps its port),
announced at start and by `status`, and on every broker and controller listener, so that a
client that knows only the bootstrap servers can find it: the client asks the bootstrap
servers for `status` and then talks to the control listener, which no fault ever closes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_shell.protocol_ext import SANDBOX_CONTROL_KEY

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

__all__ = ["SANDBOX_CONTROL_KEY", "METHODS", "ControlNode", "serve"]

# The Sandbox methods a client may call (the fault injection API and status).
METHODS = ("status", "stop_broker", "start_broker", "kill_controller", "stop_controller",
           "start_controller", "delay", "fail", "heal", "set_log_end_offset", "set_replication_rate",
           "replace_broker")


@dataclass
class ControlNode:
    """The listener node of the control endpoint (served by the same loop as the brokers)."""
    host: str
    port: int
    id: int = -1
    delay_ms: int = 0
    failures: dict[int, int] = field(default_factory=dict)


# -- server side (loop thread) ---------------------------------------------------------------


async def serve(sandbox: Sandbox, body: bytes, correlation_id: int) -> bytes:
    """Run one control request (the Sandbox method in a worker thread: it waits on the loop)."""
    try:
        call = _parse(body)
        method = call.get("method")
        if method not in METHODS:
            raise ValueError(f"unknown sandbox control method {method!r}")
        args = call.get("args") or []
        if not isinstance(args, list):
            raise ValueError("args must be a list")
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, functools.partial(getattr(sandbox, method), *args))
        answer: dict = {"result": result}
    except (ValueError, TypeError) as exc:  # bad arguments: the message says what was wrong
        answer = {"error": str(exc)}
    payload = struct.pack(">i", correlation_id) + json.dumps(answer).encode()
    return struct.pack(">i", len(payload)) + payload


def _parse(body: bytes) -> dict:
    if len(body) < 10:
        raise ValueError("control request shorter than its header")
    (client_id_length,) = struct.unpack_from(">h", body, 8)
    start = 10 + max(client_id_length, 0)
    try:
        call = json.loads(body[start:].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"control request is not JSON: {exc}") from None
    if not isinstance(call, dict):
        raise ValueError("control request must be a JSON object")
    return call
