"""The control endpoint of a `kafka-shell sandbox` server: fault injection from another process
(the shell's side, `RemoteSandbox`, is kafka_shell/connection/sandbox_client.py; the wire format is
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

from kafka_shell.protocol.seed_apis import SANDBOX_CONTROL_KEY

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

__all__ = ["SANDBOX_CONTROL_KEY", "METHODS", "ControlNode", "serve"]


@dataclass(frozen=True)
class Arg:
    """One argument of a control method: its JSON type(s) and bounds (JSON's true is no number)."""
    name: str
    kinds: tuple[type, ...]
    low: int | None = None
    high: int | None = None
    optional: bool = False   # may be left out, or null

    def check(self, method: str, value: object) -> None:
        if not (value is None and self.optional or self.fits(value)):
            raise ValueError(f"{method}: {self.name} must be {self.expected()}, not {json.dumps(value)[:100]}")

    def fits(self, value: object) -> bool:
        if isinstance(value, bool):
            return bool in self.kinds
        if isinstance(value, int):
            return int in self.kinds and (self.low is None or self.low <= value) \
                and (self.high is None or value <= self.high)
        return isinstance(value, str) and str in self.kinds

    def expected(self) -> str:
        kinds = [f"an integer in {self.low}..{self.high}" if k is int else
                 {str: "a string", bool: "true or false"}[k] for k in self.kinds]
        return " or ".join(kinds) + (" (or null)" if self.optional else "")


INT32, INT64 = 2**31 - 1, 2**63 - 1
NODE = Arg("node id", (int,), 0, INT32)
# The Sandbox methods a client may call (the fault injection API and status), with their arguments.
SIGNATURES: dict[str, tuple[Arg, ...]] = {
    "status": (), "kill_controller": (), "heal": (),
    "stop_broker": (NODE,), "start_broker": (NODE,), "stop_controller": (NODE,), "start_controller": (NODE,),
    "delay": (NODE, Arg("delay in ms", (int,), 0, INT32)),
    "lag_metadata": (NODE, Arg("lag in ms", (int,), 0, INT32)),
    "fail": (NODE, Arg("api", (int, str), 0, 32767), Arg("error", (int, str), -1, 32767)),
    "set_log_end_offset": (Arg("topic", (str,)), Arg("partition", (int,), 0, INT32), NODE,
                           Arg("offset", (int,), 0, INT64), Arg("epoch", (int,), 0, INT32, optional=True)),
    "set_replication_rate": (Arg("bytes per second", (int,), 1, INT64, optional=True),),
    "replace_broker": (NODE, Arg("host name", (str,), optional=True), Arg("lose disk", (bool,), optional=True)),
    "add_controller": (Arg("controller id", (int,), 0, INT32, optional=True), Arg("directory id", (str,), optional=True)),
}
METHODS = tuple(SIGNATURES)


def check_arguments(method: str, args: list) -> None:
    """ValueError (its message for the client) unless `args` fit the method's signature."""
    signature = SIGNATURES[method]
    least = len([a for a in signature if not a.optional])
    if not least <= len(args) <= len(signature):
        count = str(least) if least == len(signature) else f"{least} to {len(signature)}"
        raise ValueError(f"{method} takes {count} argument(s), got {len(args)}")
    for arg, value in zip(signature, args):
        arg.check(method, value)



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
        check_arguments(method, args)
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
