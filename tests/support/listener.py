"""A stand-in for a host a client must not make a server reach: a plain TCP listener on
127.0.0.1 that accepts every connection and records what it receives, and a port on which
nothing listens.

Owns the listener's thread and its record (`connections`, `received`). It speaks just enough
PostgreSQL to be worth reaching: it declines encryption and answers a start-up packet by asking
for the password in clear, so a client that connects sends it (as a PostgreSQL server run by
whoever named the host would). Everything is recorded; nothing else is answered.
"""

from __future__ import annotations

import socket
import struct
import threading
from types import TracebackType


class Listener:
    """A TCP listener on a free loopback port that records each connection and its bytes."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        self.port: int = self._socket.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            self._open.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            self.received += data
            conn.sendall(_reply(data))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self._open:
            conn.close()
        self._socket.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_ENCRYPTION_REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest
_PROTOCOL_3 = 196608
_ASK_CLEARTEXT_PASSWORD = b"R" + struct.pack("!ii", 8, 3)


def _reply(data: bytes) -> bytes:
    """What a PostgreSQL server would say to `data`: no encryption, then "your password"."""
    code = struct.unpack("!i", data[4:8])[0] if len(data) >= 8 else None
    if code in _ENCRYPTION_REQUESTS:
        return b"N"
    if code == _PROTOCOL_3:
        return _ASK_CLEARTEXT_PASSWORD
    return b""


def closed_port() -> int:
    """A loopback port on which nothing listens (bound once, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
