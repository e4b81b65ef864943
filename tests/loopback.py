"""A listening socket on 127.0.0.1 for the tests' small fake brokers: each connection is served
by the subclass's `serve(conn)` on a thread of its own."""

from __future__ import annotations

import socket
import struct
import threading


class LoopbackServer:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.sock.close()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    @staticmethod
    def read_request(conn: socket.socket) -> bytes | None:
        """The next request frame's body (size prefix taken off); None when the client left."""
        head = _read(conn, 4)
        if len(head) < 4:
            return None
        return _read(conn, struct.unpack(">i", head)[0])

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()


def _read(conn: socket.socket, n: int) -> bytes:
    """Up to `n` bytes: fewer only when the peer closed."""
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf
