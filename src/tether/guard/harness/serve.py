"""`tether guard serve`: a warm local HTTP endpoint for Claude Code's http hooks.

Owns the HTTP surface, on the start-up the MCP server and the viewer share (`tether.httpserve`:
Starlette behind the gate, one uvicorn):
- `POST /hook` takes a hook payload as the request body and answers with the same JSON a command
  hook prints (`{}` when there is nothing to say), through the one hook pipeline
  (`tether.guard.harness.pipeline`); the payload is Claude Code's unless `?harness=codex|gemini|…`
  (or the `X-Tether-Harness` header, or `--harness`) says whose it is, and the answer is then in
  that harness's format;
- `GET /health` answers `{"status": "ok"}`;
- every request first passes `tether.httpgate` (Host, Origin, the bearer token from `--token` or
  `$TETHER_GUARD_TOKEN`, a declared body length within the limit, a JSON content type), a
  refusal answered with its status and a JSON error;
- what a failure becomes over HTTP: a payload the guard cannot decide, or cannot even parse, is
  answered as `failsafe` says (for a `PreToolUse` under `on_error: block`, a 200 with the deny;
  otherwise a 500, or a 400 for a body that is not a JSON object, which Claude Code treats as a
  non-blocking error) and logged.
Sessions are kept in the same on-disk store as command hooks, under the same lock, so command and
http hooks can be mixed and several servers can share a state folder; one workflow binder (and
its runtime, which caches trees) serves every request. It decides nothing itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from tether.guard.binding.binder import Binder
from tether.guard.harness.adapters import HARNESSES
from tether.guard.harness.failsafe import DEFAULT_DEADLINE, Attempt, mode
from tether.guard.harness.pipeline import respond
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.ruleset import Guard
from tether.httpgate import ListenOptions, require_token
from tether.httpserve import GateMiddleware, bind, run

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


def build_app(guard: Guard, state_dir: str, options: ServeOptions) -> ASGIApp:
    """The endpoint's app, behind the gate."""
    require_token(options.host, options.token, TOKEN_ENV)
    store = SessionStore(state_dir)
    binder = Binder(guard.plan["workflow"], state_dir, guard.plan.get("files", ()))

    async def hook(request: Request) -> JSONResponse:
        asked = request.query_params.get("harness") or request.headers.get(HARNESS_HEADER)
        harness = asked or options.harness
        if harness not in HARNESSES:
            return _error(400, "usage", f"harness must be one of {', '.join(HARNESSES)}")
        raw = await request.body()
        attempt = Attempt(store.root, options.on_error, where="serve")
        attempt.configured = guard.plan.get("on_error")
        attempt.started = True  # its configuration was read when it started
        answered = await run_in_threadpool(
            respond,
            harness,
            lambda: raw,
            attempt,
            options.deadline,
            lambda event: (guard, None),
            store,
            binder=binder,
            channel="serve",
            sniff=True,
        )
        if answered.error is None or answered.out is not None:
            return JSONResponse(answered.out or {})
        invalid = answered.error.get("code") == "invalid_json"
        return _error(400 if invalid else 500, answered.error["code"], answered.error["message"])

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        status = getattr(exc, "status_code", 500)
        return _error(status, "not_found" if status == 404 else "usage", str(request.url.path))

    app = Starlette(
        routes=[Route("/hook", hook, methods=["POST"]), Route("/health", health, methods=["GET"])],
        exception_handlers={404: refused, 405: refused},
    )
    return GateMiddleware(app, options.gate(length_required=True))


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def serve(guard: Guard, state_dir: str, options: ServeOptions) -> int:
    """Serve until interrupted; prints the address as JSON once listening."""
    app = build_app(guard, state_dir, options)
    sock = bind(options)
    address = options.url(sock.getsockname()[1])
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
        asyncio.run(run(app, sock))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    finally:
        sock.close()
    return 0
