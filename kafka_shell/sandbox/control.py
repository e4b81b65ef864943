"""The control endpoint of a `kafka-shell sandbox` server: fault injection from another process.

`kafka-shell --bootstrap-server <a sandbox server> --command "sandbox stop-broker 2"` drives the
server through `RemoteSandbox`, which has the fault methods of `Sandbox`, so the shell's
`sandbox` commands use one interface for an embedded sandbox and for a server.

Wire format: Kafka's framing (int32 size, then a v1 request header: int16 api key, int16
version, int32 correlation id, nullable int16-length client id) with the sandbox-only API key
SANDBOX_CONTROL_KEY, version 0, and a JSON body `{"method": NAME, "args": [...]}`. The answer
is framed as well: int32 correlation id, then `{"result": ...}` or `{"error": "message"}`.

Served, only when the server enables it (`Sandbox(serve_control=True)`), on its own control
listener (on the nodes' address: loopback unless --listen; --data-dir keeps its port),
announced at start and by `status`, and on every broker and controller listener, so that a
client that knows only the bootstrap servers can find it: `attach` asks the bootstrap
servers for `status` and then talks to the control listener, which no fault ever closes. A
Kafka broker closes the connection on this unknown key, which tells the client it is no sandbox.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_shell.errors import ShellError, UsageError

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox
    from kafka_shell.session import Target

# Far above Kafka's keys (0..92 today) and GetReplicaLogInfo's 1000 (protocol_ext).
SANDBOX_CONTROL_KEY = 1999
VERSION = 0
# Where to find the control listener when no broker of --bootstrap-server is up (host:port).
CONTROL_ENV = "KAFKA_SHELL_SANDBOX_CONTROL"


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
_CLIENT_ID = b"kafka-shell-sandbox-control"


@dataclass
class ControlNode:
    """The listener node of the control endpoint (served by the same loop as the brokers)."""
    host: str
    port: int
    id: int = -1
    delay_ms: int = 0
    failures: dict[int, int] = field(default_factory=dict)


class ControlError(Exception):
    """The address did not answer the control API (refused, closed, silent, not a sandbox)."""


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


# -- client side -----------------------------------------------------------------------------


def _request(address: tuple[str, int], method: str, args: list, timeout_s: float) -> object:
    """One call on a fresh connection; ControlError when the address does not serve the API,
    ValueError with the server's message when the call itself was refused."""
    call = json.dumps({"method": method, "args": args}).encode()
    header = struct.pack(">hhih", SANDBOX_CONTROL_KEY, VERSION, 1, len(_CLIENT_ID)) + _CLIENT_ID
    payload = header + call
    try:
        with socket.create_connection(address, timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            (size,) = struct.unpack(">i", _read(sock, 4))
            answer = _read(sock, size)
    except (OSError, EOFError) as exc:
        raise ControlError(_why(exc)) from None
    try:
        decoded = json.loads(answer[4:].decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ControlError("answered something that is not the sandbox control API") from None
    if "error" in decoded:
        raise ValueError(decoded["error"])
    return decoded.get("result")


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _why(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "refused the connection"
    if isinstance(exc, socket.timeout):
        return "did not answer in time"
    if isinstance(exc, EOFError | ConnectionResetError):
        return "closed the connection (not a kafka-shell sandbox server?)"
    return str(exc)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f'Invalid address "{text}": expected HOST:PORT')
    return host, int(port)


class RemoteSandbox:
    """A `kafka-shell sandbox` server seen through its control listener: the fault injection
    methods of `Sandbox` (each returns once the server has done it) and `status()`."""

    def __init__(self, address: tuple[str, int], timeout_s: float = 10.0):
        self.address = address
        self.timeout_s = timeout_s

    def _call(self, method: str, *args: object) -> object:
        try:
            return _request(self.address, method, list(args), self.timeout_s)
        except ControlError as exc:
            host, port = self.address
            raise ShellError(f"The sandbox control endpoint {host}:{port} {exc}: is the "
                             "kafka-shell sandbox server still running?") from None

    def status(self) -> dict:
        return self._call("status")  # type: ignore[return-value]

    def stop_broker(self, broker_id: int) -> None:
        self._call("stop_broker", broker_id)

    def start_broker(self, broker_id: int) -> None:
        self._call("start_broker", broker_id)

    def kill_controller(self) -> int:
        return self._call("kill_controller")  # type: ignore[return-value]

    def stop_controller(self, controller_id: int) -> None:
        self._call("stop_controller", controller_id)

    def start_controller(self, controller_id: int) -> None:
        self._call("start_controller", controller_id)

    def delay(self, broker_id: int, ms: int) -> None:
        self._call("delay", broker_id, ms)

    def fail(self, broker_id: int, api: int | str, error: int | str) -> None:
        self._call("fail", broker_id, api, error)

    def heal(self) -> None:
        self._call("heal")

    def set_log_end_offset(self, topic: str, partition: int, broker_id: int, offset: int,
                           epoch: int | None = None) -> None:
        self._call("set_log_end_offset", topic, partition, broker_id, offset, epoch)

    def set_replication_rate(self, bytes_per_second: int | None) -> None:
        self._call("set_replication_rate", bytes_per_second)

    def replace_broker(self, broker_id: int, host_name: str | None = None, lose_disk: bool = False) -> tuple[int, str]:
        answer: list = self._call("replace_broker", broker_id, host_name, lose_disk)  # type: ignore[assignment]
        return answer[0], answer[1]

    def add_controller(self, controller_id: int | None = None, directory_id: str | None = None) -> dict:
        return self._call("add_controller", controller_id, directory_id)  # type: ignore[return-value]

    def stop(self) -> None:
        """Nothing to release: the server keeps running (the shell calls this at exit)."""


def attach(target: Target | None) -> RemoteSandbox:
    """The control endpoint of the `kafka-shell sandbox` server the shell is connected to: asked
    of $KAFKA_SHELL_SANDBOX_CONTROL, then of each bootstrap server in turn."""
    candidates = []
    if os.environ.get(CONTROL_ENV):
        candidates.append(_address(os.environ[CONTROL_ENV]))
    if target is not None:
        candidates += [_address(a) for a in target.bootstrap.split(",") if a.strip()]
    if not candidates:
        raise UsageError("sandbox commands need kafka-shell --sandbox, or --bootstrap-server of a "
                         "kafka-shell sandbox server")
    timeout_s = min(target.timeout_s if target else 10.0, 5.0)
    problems = []
    for address in candidates:
        try:
            status = _request(address, "status", [], timeout_s)
        except (ControlError, ValueError) as exc:
            problems.append(f"{address[0]}:{address[1]} {exc}")
            continue
        control = status.get("control") if isinstance(status, dict) else None
        return RemoteSandbox(_address(control) if control else address, timeout_s)
    raise UsageError("sandbox commands need kafka-shell --sandbox or a kafka-shell sandbox server "
                     f"(none answered the sandbox control API: {'; '.join(problems)}; with every "
                     f"broker stopped, set {CONTROL_ENV}=HOST:PORT to the server's control address)")
