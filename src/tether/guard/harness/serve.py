"""`tether guard serve`: a warm local HTTP endpoint for Claude Code's http hooks.

Owns: the HTTP surface: `POST /hook` takes a hook payload as the request body and answers with
the same JSON a command hook prints (`{}` when there is nothing to say); the payload is Claude
Code's unless `?harness=codex|gemini|cursor` (or the `X-Tether-Harness` header, or `--harness`)
says whose it is, and the answer is then in that harness's format (`harness`); `GET /health`
answers `{"status": "ok"}`. Every request first passes `tether.httpgate` (Host, Origin, the
bearer token from `--token` or `$TETHER_GUARD_TOKEN`, a declared body length within the limit,
a JSON content type); a refused request is answered with its status and a JSON error and the
connection is closed. Every other request gets an answer: a payload the guard cannot decide, or
cannot even parse (its event then read from the body's `hook_event_name`), is answered as
`failsafe` says (for a `PreToolUse` under `on_error: block`, a 200 with the deny; otherwise a
500, or a 400 for a body that is not JSON, which Claude Code treats as a non-blocking error) and
logged. Sessions are kept in the same on-disk store as
command hooks, under the same lock, so command and http hooks can be mixed and several servers
can share a state folder; one workflow binder (and its runtime, which caches trees) serves every
request. It does not decide anything itself (hooks.handle does).
"""

from __future__ import annotations

import json
import re
import socket
import sys
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tether.errors import TetherError
from tether.guard.binding.binder import Binder
from tether.guard.harness.adapters import EVENTS, HARNESSES, NATIVE, answer, events, render
from tether.guard.harness.failsafe import DEFAULT_DEADLINE, Attempt, mode
from tether.guard.harness.hooks import handle
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.deadline import within
from tether.guard.rules.ruleset import Guard
from tether.httpgate import ListenOptions, require_token

TOKEN_ENV = "TETHER_GUARD_TOKEN"
HARNESS_HEADER = "X-Tether-Harness"
DEFAULT_PORT = 8977
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ServeOptions(ListenOptions):
    """Where the endpoint listens and whom it lets in (the shared `ListenOptions`), and what it
    does when it cannot decide."""

    port: int = DEFAULT_PORT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    on_error: str | None = None
    deadline: float = DEFAULT_DEADLINE
    harness: str = "claude"  # whose events a request carries, unless it says (`?harness=`)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once: no delayed-ACK stall
    server: GuardServer

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, json.dumps(body).encode())

    def _error(self, status: int, code: str, message: str) -> None:
        self._json(status, {"error": {"code": code, "message": message}})

    def _refused(self) -> bool:
        refusal = self.server.gate.refusal(self.command, self.path, self.headers.get)
        if refusal is None:
            return False
        self.close_connection = True  # an unread body must not be read as the next request
        self._send(refusal.status, refusal.body(), refusal.headers)
        return True

    def do_GET(self) -> None:
        if self._refused():
            return
        if self.path == "/health":
            self._json(200, {"status": "ok"})
        else:
            self._error(404, "not_found", self.path)

    def do_POST(self) -> None:
        if self._refused():
            return
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        url = urlsplit(self.path)
        if url.path != "/hook":
            self._error(404, "not_found", self.path)
            return
        asked = parse_qs(url.query).get("harness") or [self.headers.get(HARNESS_HEADER) or ""]
        harness = asked[0] or self.server.options.harness
        if harness not in HARNESSES:
            self._error(400, "usage", f"harness must be one of {', '.join(HARNESSES)}")
            return
        server = self.server
        attempt = Attempt(server.store.root, server.options.on_error, where="serve")
        attempt.configured = server.guard.plan.get("on_error")
        attempt.started = True  # its configuration was read when it started
        try:
            payload = json.loads(raw or b"{}")
            if not isinstance(payload, dict):
                raise TetherError("invalid_json", "expected an object")
        except (ValueError, RecursionError, TetherError) as exc:
            # Learn the event from the raw text, so that a tool call is still answered.
            attempt.payload = _sniffed(harness, raw)
            unread = exc if isinstance(exc, TetherError) else TetherError("invalid_json", str(exc))
            _, failed, _ = attempt.failed(unread)
            if failed is not None:
                self._json(200, render(harness, attempt.payload or {}, failed) or {})
            else:
                self._error(400, "invalid_json", unread.message)
            return
        try:
            found = events(harness, payload, None)
            attempt.payload = found[0] if found else payload
            out = within(
                server.options.deadline,
                lambda: answer(
                    harness,
                    found,
                    lambda event: handle(event, server.guard, server.store, server.binder, "serve"),
                ),
            )
        except Exception as exc:
            _, failed, error = attempt.failed(exc)
            if failed is None:
                self._json(500, {"error": error})
            else:
                self._json(200, render(harness, attempt.payload or payload, failed) or {})
            return
        self._json(200, out or {})

    def do_PUT(self) -> None:
        self._not_allowed()

    def do_DELETE(self) -> None:
        self._not_allowed()

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._error(405, "usage", f"{self.command} is not served here")

    def log_message(self, format: str, *args: Any) -> None:
        return


_EVENT = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"')


def _sniffed(harness: str, raw: bytes) -> dict[str, Any] | None:
    """The event a body that cannot be parsed names (`{"hook_event_name": ...}`, as Claude Code
    calls it), read from its text; None when it names none."""
    found = _EVENT.search(raw[:65536])
    if found is None:
        return None
    name = found.group(1).decode()
    event = name if harness == "claude" else EVENTS.get(harness, {}).get(name)
    return {"hook_event_name": event, NATIVE: name} if event else None


class GuardServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, guard: Guard, state_dir: str, options: ServeOptions) -> None:
        require_token(options.host, options.token, TOKEN_ENV)
        self.gate = options.gate(length_required=True)
        if ":" in options.host:
            self.address_family = socket.AF_INET6
        try:
            super().__init__((options.host.strip("[]"), options.port), _Handler)
        except OSError as exc:
            raise TetherError(
                "usage", f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
            ) from None
        self.guard = guard
        self.store = SessionStore(state_dir)
        self.binder = Binder(guard.plan["workflow"], state_dir, guard.plan.get("files", ()))
        self.options = options


def serve(guard: Guard, state_dir: str, options: ServeOptions) -> int:
    """Serve until interrupted; prints the address as JSON once listening."""
    server = GuardServer(guard, state_dir, options)
    address = options.url(server.server_address[1])
    sys.stdout.write(
        json.dumps(
            {
                "listening": address,
                "hook": address + "/hook",
                "auth": "bearer token" if options.token else "none (loopback only)",
                "on_error": mode(guard.plan.get("on_error"), options.on_error),
            }
        )
        + "\n"
    )
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
