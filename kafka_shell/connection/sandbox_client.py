"""The shell's side of a `kafka-shell sandbox` server's control endpoint: fault injection from
another process (the server side is kafka_shell/sandbox/control.py; the shell never imports the
sandbox to drive one).

`kafka-shell --bootstrap-server <a sandbox server> --command "sandbox stop-broker 2"` drives the
server through `RemoteSandbox`, which has the fault methods of the embedded `Sandbox`, so the
shell's `sandbox` commands use one interface for both. Wire format: Kafka's framing (int32
size, then a v1 request header: int16 api key, int16 version, int32 correlation id, nullable
int16-length client id) with the sandbox-only API key SANDBOX_CONTROL_KEY, and a JSON body
`{"method": NAME, "args": [...]}`; the answer is framed too: int32 correlation id, then
`{"result": ...}` or `{"error": "message"}`. A Kafka broker closes the connection on this
unknown key, which tells the client it is no sandbox.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import TYPE_CHECKING

from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.protocol.seed_apis import SANDBOX_CONTROL_KEY, SANDBOX_CONTROL_VERSION

if TYPE_CHECKING:
    from kafka_shell.connection.session import Target

# Where to find the control listener when no broker of --bootstrap-server is up (host:port).
CONTROL_ENV = "KAFKA_SHELL_SANDBOX_CONTROL"
_CLIENT_ID = b"kafka-shell-sandbox-control"


class ControlError(Exception):
    """The address did not answer the control API (refused, closed, silent, not a sandbox)."""


def _request(address: tuple[str, int], method: str, args: list, timeout_s: float) -> object:
    """One call on a fresh connection; ControlError when the address does not serve the API,
    ValueError with the server's message when the call itself was refused."""
    call = json.dumps({"method": method, "args": args}).encode()
    header = struct.pack(">hhih", SANDBOX_CONTROL_KEY, SANDBOX_CONTROL_VERSION, 1, len(_CLIENT_ID)) + _CLIENT_ID
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

    def lag_metadata(self, broker_id: int, ms: int) -> None:
        self._call("lag_metadata", broker_id, ms)

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


def attach(target: Target | None, most_s: float = 5.0) -> RemoteSandbox:
    """The control endpoint of the `kafka-shell sandbox` server the shell is connected to: asked
    of $KAFKA_SHELL_SANDBOX_CONTROL, then of each bootstrap server in turn (each within
    --timeout, at most `most_s`)."""
    candidates = []
    if os.environ.get(CONTROL_ENV):
        candidates.append(_address(os.environ[CONTROL_ENV]))
    if target is not None:
        candidates += [_address(a) for a in target.bootstrap.split(",") if a.strip()]
    if not candidates:
        raise UsageError("sandbox commands need kafka-shell --sandbox, or --bootstrap-server of a "
                         "kafka-shell sandbox server")
    timeout_s = min(target.timeout_s if target else 10.0, most_s)
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


def controller_changes(target: Target | None, sandbox: object = None) -> list[dict] | None:
    """The sandbox's own record of its controller changes (time, from, to, epoch), from the
    embedded `sandbox` or a server's control endpoint; None when the cluster is no sandbox."""
    if sandbox is None:
        try:   # a detail beside an answer: a bootstrap address that does not answer costs a second
            sandbox = attach(target, most_s=1.0)
        except ShellError:  # UsageError too: no sandbox answered
            return None
    changes = sandbox.status().get("controller_changes")  # type: ignore[attr-defined]
    return [e for e in changes if isinstance(e, dict) and isinstance(e.get("time"), (int, float))] \
        if isinstance(changes, list) else None
