"""The Streamable HTTP transport: `POST /mcp`, `GET /health`, and the guards in front of them.

Owns the MCP app: the SDK's stateless JSON app at `/mcp` (a fresh transport for each POST; any
other method on /mcp is 405, there being no stream to open), `/health`, the SDK's limit on a
body streamed without a length, and responses that never carry a stack trace. In front of it
the shared gate (`tether.httpserve.GateMiddleware` running `tether.httpgate`'s checks: Host and
Origin against DNS rebinding, the bearer token on `/mcp`, required when the address is not
loopback, the declared body length and JSON content type); it listens and runs as the viewer
does (`tether.httpserve`). Every request goes to one shared `Runtime`, so `memory://`
executions live as long as the server. It does not own the tools (`tether.mcp.tools`) or option
parsing (`tether.mcp.cli`).
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.httpgate import ListenOptions, require_token
from tether.httpserve import GateMiddleware, bind, run
from tether.mcp.server import build_server
from tether.verbs import Runtime

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
TOKEN_ENV = "TETHER_MCP_TOKEN"
DEFAULT_PORT = 3001


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


def guarded_app(server: Server[Any], options: ListenOptions) -> ASGIApp:
    """Any MCP server (the runtime's, a bot's) as a stateless JSON app at /mcp, with /health,
    behind the Host/Origin checks, the token and the body limit."""
    require_token(options.host, options.token, TOKEN_ENV)
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
    return GateMiddleware(_PostOnly(app), options.gate())


async def serve_http(runtime: Runtime, options: ListenOptions) -> None:
    """Serve the runtime tools until interrupted."""
    await serve(build_server(runtime), options)


async def serve(server: Server[Any], options: ListenOptions, label: str = "tether mcp") -> None:
    """Serve `server` (see `guarded_app`) until interrupted; the URL, with the port actually
    bound, is logged on stderr as "LABEL: serving URL"."""
    app = guarded_app(server, options)
    sock = bind(options)
    sys.stderr.write(
        f"{label}: serving {options.url(sock.getsockname()[1])}{MCP_PATH}"
        f" (auth: {'bearer token' if options.token else 'none, loopback only'})\n"
    )
    sys.stderr.flush()
    await run(app, sock)
