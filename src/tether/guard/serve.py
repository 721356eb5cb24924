"""`tether guard serve`: a warm local HTTP endpoint for Claude Code's http hooks.

Owns: the HTTP surface: `POST /hook` takes a hook payload as the request body and answers with
the same JSON a command hook prints (`{}` when there is nothing to say); `GET /health` answers
`{"status": "ok"}`. Sessions are kept in the same on-disk store as command hooks, under the same
lock, so command and http hooks can be mixed and several servers can share a state folder; one
workflow binder (and its runtime, which caches trees) serves every request. It does not decide
anything itself (hooks.handle does).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tether.guard.binding import Binder
from tether.guard.engine import Guard
from tether.guard.hooks import handle
from tether.guard.session_store import SessionStore


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once: no delayed-ACK stall
    server: GuardServer

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": {"code": "not_found", "message": self.path}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path != "/hook":
            self._send(404, {"error": {"code": "not_found", "message": self.path}})
            return
        try:
            payload = json.loads(raw or b"{}")
        except ValueError as exc:
            self._send(400, {"error": {"code": "invalid_json", "message": str(exc)}})
            return
        if not isinstance(payload, dict):
            self._send(400, {"error": {"code": "invalid_json", "message": "expected an object"}})
            return
        try:
            out = handle(payload, self.server.guard, self.server.store, self.server.binder)
        except Exception as exc:  # answer, so that Claude Code reports a non-blocking error
            self._send(500, {"error": {"code": "internal", "message": f"{exc}"}})
            return
        self._send(200, out or {})

    def log_message(self, format: str, *args: Any) -> None:
        return


class GuardServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, guard: Guard, state_dir: str, host: str, port: int) -> None:
        super().__init__((host, port), _Handler)
        self.guard = guard
        self.store = SessionStore(state_dir)
        self.binder = Binder(guard.plan["workflow"], state_dir)


def serve(guard: Guard, state_dir: str, host: str, port: int) -> int:
    """Serve until interrupted; prints the address as JSON once listening."""
    server = GuardServer(guard, state_dir, host, port)
    bound_host, bound_port = server.server_address[:2]
    address = f"http://{bound_host!s}:{bound_port}"
    sys.stdout.write(json.dumps({"listening": address, "hook": address + "/hook"}) + "\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
