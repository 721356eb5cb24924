"""The Streamable HTTP transport: `POST /mcp`, `GET /health`, and the guards in front of them.

Owns the HTTP app and its security: Host and Origin checks against DNS rebinding (every route),
bearer-token authentication (`/mcp`; required when the address is not loopback), the request
body limit, and responses that never carry a stack trace. The server is stateless per request
(a fresh transport for each POST, answered as JSON) and every request goes to one shared
`Runtime`, so `memory://` executions live as long as the server. It does not own the tools
(`tether.mcp.tools`) or option parsing (`tether.mcp.cli`).
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import sys
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.errors import TetherError
from tether.mcp.server import build_server
from tether.verbs import Runtime

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
TOKEN_ENV = "TETHER_MCP_TOKEN"
DEFAULT_PORT = 3001
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARDS = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class HttpOptions:
    """How the HTTP server listens and whom it lets in."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """`host` as it appears in a Host header (an IPv6 literal in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def security_settings(options: HttpOptions) -> TransportSecuritySettings:
    """The Host and Origin values accepted: loopback names, the bound address, `--allow-host`."""
    names = list(_LOOPBACK_NAMES)
    if options.host not in _WILDCARDS:
        names.append(_host_name(options.host))
    names += [_host_name(h) for h in options.allowed_hosts]
    names = list(dict.fromkeys(names))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[p for n in names for p in (n, f"{n}:*")],
        allowed_origins=[
            p for n in names for s in ("http", "https") for p in (f"{s}://{n}", f"{s}://{n}:*")
        ],
    )


class _Guard:
    """Refuses a request with a foreign Host or Origin, or without the bearer token on /mcp."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings, token: str | None):
        self._app = app
        self._checks = TransportSecurityMiddleware(settings)
        self._token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self._refusal(Request(scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self._app(scope, receive, send)

    async def _refusal(self, request: Request) -> Response | None:
        refusal = await self._checks.validate_request(request, is_post=False)
        if refusal is not None:
            return refusal
        if self._token is None or request.url.path == HEALTH_PATH:
            return None
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token):
            return None
        return PlainTextResponse(
            "Missing or invalid bearer token",
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="tether"'},
        )


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "ok": True})


def guarded_app(server: Server[Any], options: HttpOptions) -> ASGIApp:
    """Any MCP server (the runtime's, a bot's) as a stateless JSON app at /mcp, with /health,
    behind the Host/Origin checks, the token and the body limit."""
    if options.token is None and not is_loopback(options.host):
        raise TetherError(
            "usage",
            f"--host {options.host} is not a loopback address: serving it needs a bearer token "
            f"(set {TOKEN_ENV} or pass --token)",
            option="--host",
        )
    if options.max_body_bytes <= 0:
        raise TetherError("usage", "--max-body-bytes must be a positive number of bytes")
    settings = security_settings(options)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        max_request_body_size=options.max_body_bytes,
        transport_security=settings,
        host=options.host,
        custom_starlette_routes=[Route(HEALTH_PATH, _health, methods=["GET"])],
    )
    return _Guard(app, settings, options.token)


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
        f"{label}: serving http://{_host_name(options.host)}:{port}{MCP_PATH}"
        f" (auth: {'bearer token' if options.token else 'none, loopback only'})\n"
    )
    sys.stderr.flush()
    await uvicorn.Server(config).serve(sockets=[sock])
