"""The Streamable HTTP transport: `POST /mcp`, `GET /health`, and the guards in front of them.

Owns the HTTP app: the checks of `tether.httpgate` in front of every route (Host and Origin
against DNS rebinding, the bearer token on `/mcp`, required when the address is not loopback,
the declared body length and JSON content type), the SDK's limit on a body streamed without a
length, and responses that never carry a stack trace. The server is stateless per request
(a fresh transport for each POST, answered as JSON; any other method on /mcp is 405, there
being no stream to open) and every request goes to one shared
`Runtime`, so `memory://` executions live as long as the server. It does not own the tools
(`tether.mcp.tools`) or option parsing (`tether.mcp.cli`).
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.errors import TetherError
from tether.httpgate import Gate, host_name, require_token
from tether.mcp.server import build_server
from tether.verbs import Runtime

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
TOKEN_ENV = "TETHER_MCP_TOKEN"
DEFAULT_PORT = 3001
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HttpOptions:
    """How the HTTP server listens and whom it lets in."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


class _Guard:
    """Answers a request the gate refuses; lets every other through to the app."""

    def __init__(self, app: ASGIApp, gate: Gate):
        self._app = app
        self._gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._gate.refusal(scope["method"], scope["path"], Headers(scope=scope).get)
            if refusal is not None:
                response = Response(
                    refusal.body(),
                    status_code=refusal.status,
                    headers=refusal.headers,
                    media_type="application/json",
                )
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


class _PostOnly:
    """`/mcp` takes POST only. The server is stateless: it offers no SSE stream to GET (the
    SDK's would stay open, silent, for ever) and no session to DELETE, so any other method is
    answered 405 with `Allow: POST`, as the MCP specification has servers without a stream do."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH and scope["method"] != "POST":
            refusal = PlainTextResponse(
                f"Method Not Allowed: {MCP_PATH} takes POST only (this server offers no stream)",
                status_code=405,
                headers={"Allow": "POST"},
            )
            await refusal(scope, receive, send)
            return
        await self._app(scope, receive, send)


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "ok": True})


def guarded_app(server: Server[Any], options: HttpOptions) -> ASGIApp:
    """Any MCP server (the runtime's, a bot's) as a stateless JSON app at /mcp, with /health,
    behind the Host/Origin checks, the token and the body limit."""
    require_token(options.host, options.token, TOKEN_ENV)
    gate = Gate(options.host, options.token, options.allowed_hosts, options.max_body_bytes)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        max_request_body_size=options.max_body_bytes,
        # The gate checks Host and Origin (the SDK's own check would accept `localhost:1@evil`).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=options.host,
        custom_starlette_routes=[Route(HEALTH_PATH, _health, methods=["GET"])],
    )
    return _Guard(_PostOnly(app), gate)


def bind(options: HttpOptions) -> socket.socket:
    """A listening socket on the address (port 0 picks a free port): connections made as soon
    as the URL is logged wait in the backlog until the server accepts them."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            options.host.strip("[]"), options.port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        raise TetherError(
            "usage", f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
        ) from None
    return sock


async def serve_http(runtime: Runtime, options: HttpOptions) -> None:
    """Serve the runtime tools until interrupted."""
    await serve(build_server(runtime), options)


async def serve(server: Server[Any], options: HttpOptions, label: str = "tether mcp") -> None:
    """Serve `server` (see `guarded_app`) until interrupted; the URL, with the port actually
    bound, is logged on stderr as "LABEL: serving URL"."""
    app = guarded_app(server, options)
    sock = bind(options)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    sys.stderr.write(
        f"{label}: serving http://{host_name(options.host)}:{port}{MCP_PATH}"
        f" (auth: {'bearer token' if options.token else 'none, loopback only'})\n"
    )
    sys.stderr.flush()
    await uvicorn.Server(config).serve(sockets=[sock])
