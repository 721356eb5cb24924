"""Serving an ASGI app on a local address: the gate in front of it, its socket, its server.

Owns what `tether mcp --http` (and a bot's server), `tether view` and `tether guard serve` share
once their Starlette app is built: `GateMiddleware`, which puts `tether.httpgate`'s checks in
front of every HTTP request and answers a refusal as JSON before the app sees it; `bind`, the
listening socket (bound before the address is announced, so a client that connects at once
waits in its backlog); and `run`, the one uvicorn start-up. It does not decide who may ask
(`tether.httpgate`) or build any app (`tether.mcp.http`, `tether.viewer.server`,
`tether.guard.harness.serve`).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

import uvicorn
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.errors import TetherError
from tether.httpgate import Gate, ListenOptions, Refusal


class GateMiddleware:
    """The gate in front of an app: a request the gate refuses (`Gate.refusal`: Host, Origin,
    token, and a POST's declared length and content type) is answered with a JSON error and
    never reaches the app. `statuses` maps a refusal's code to the status the server answers it
    with (the viewer answers every `forbidden` 403); without it a refusal keeps its own (421,
    403, 401, 411, 413, 415). `headers` are added to every answer, refusals included."""

    def __init__(
        self,
        app: ASGIApp,
        gate: Gate,
        *,
        statuses: Mapping[str, int] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.app = app
        self.gate = gate
        self.statuses = statuses
        self.headers = dict(headers or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.headers:
            send = self._with_headers(send)
        refusal = self.gate.refusal(scope["method"], scope["path"], Headers(scope=scope).get)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await self._refused(refusal)(scope, receive, send)

    def _refused(self, refusal: Refusal) -> Response:
        status = refusal.status
        if self.statuses is not None:
            status = self.statuses.get(refusal.code, status)
        return Response(
            refusal.body(),
            status_code=status,
            headers=refusal.headers,
            media_type="application/json",
        )

    def _with_headers(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers.setdefault(name, value)
            await send(message)

        return sending


def bind(options: ListenOptions) -> socket.socket:
    """A listening socket on the options' address (port 0 picks a free port)."""
    sock = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            options.host.strip("[]"), options.port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise TetherError(
            "usage", f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
        ) from None
    return sock


async def run(app: ASGIApp, sock: socket.socket) -> None:
    """Serve `app` on the bound `sock` until interrupted (no access log, no websockets; open
    streams get two seconds to end when it stops)."""
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", timeout_graceful_shutdown=2
    )
    await uvicorn.Server(config).serve(sockets=[sock])
