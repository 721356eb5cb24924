"""`tether.httpserve`: the one gate middleware, socket and uvicorn start-up of Tether's ASGI
servers, tested on a real server on 127.0.0.1 in its own process. A refused request never
reaches the app (its body unread); a server's own statuses and headers apply to refusals too."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator

import pytest

_SERVER = """
import asyncio, sys
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from tether.httpgate import ListenOptions
from tether.httpserve import GateMiddleware, bind, run

async def echo(request: Request) -> JSONResponse:
    print("app", request.method, flush=True)  # the app saw it
    return JSONResponse({"read": len(await request.body())})

options = ListenOptions(max_body_bytes=64)
sock = bind(options)
print(sock.getsockname()[1], flush=True)
app = Starlette(routes=[Route("/", echo, methods=["GET", "POST"])])
statuses = {"forbidden": 403, "invalid_value": 400} if sys.argv[1] == "mapped" else None
headers = {"X-Content-Type-Options": "nosniff"}
gated = GateMiddleware(app, options.gate(length_required=True), statuses=statuses, headers=headers)
asyncio.run(run(gated, sock))
"""


class Served:
    def __init__(self, mode: str) -> None:
        self.mapped = mode == "mapped"
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, mode], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def ask(
        self, method: str, headers: dict[str, str], body: bytes | Iterable[bytes] | None = None
    ) -> tuple[int, dict[str, str], dict[str, object]]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request(method, "/", body=body, headers=headers)
        response = connection.getresponse()
        answer = json.loads(response.read())
        connection.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, answer

    def seen(self) -> list[str]:
        """What the app saw, once the server has stopped."""
        self.process.terminate()
        out, _ = self.process.communicate(timeout=10)
        return [line for line in out.splitlines() if line.startswith("app")]


@pytest.fixture(params=["own", "mapped"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    server = Served(request.param)
    yield server
    if server.process.poll() is None:
        server.process.kill()


def test_refusals_never_reach_the_app_and_carry_the_servers_statuses(served: Served) -> None:
    mapped = served.mapped
    here = f"127.0.0.1:{served.port}"
    json_kind = {"Content-Type": "application/json"}
    refused = [
        ({"Host": "evil.example"}, None, 403 if mapped else 421, "forbidden"),
        ({"Host": f"localhost:{served.port}@evil.example"}, None, 403 if mapped else 421, None),
        ({"Host": here, "Origin": "http://evil.example"}, None, 403, "forbidden"),
        ({"Host": here, **json_kind}, b"x" * 65, 400 if mapped else 413, "invalid_value"),
        ({"Host": here, "Content-Type": "text/plain"}, b"{}", 400 if mapped else 415, None),
    ]
    for headers, body, status, code in refused:
        method = "GET" if body is None else "POST"
        got, answer_headers, answer = served.ask(method, headers, body)
        assert got == status, headers
        assert answer_headers["x-content-type-options"] == "nosniff"
        error = answer["error"]
        assert isinstance(error, dict)
        assert code is None or error["code"] == code
    chunked = served.ask("POST", {"Host": here, **json_kind}, iter([b"{}"]))
    assert chunked[0] == (400 if mapped else 411)
    ok = served.ask("POST", {"Host": here, **json_kind}, b"{}")
    assert (ok[0], ok[2], ok[1]["x-content-type-options"]) == (200, {"read": 2}, "nosniff")
    assert served.seen() == ["app POST"], "only the request the gate let in reached the app"
