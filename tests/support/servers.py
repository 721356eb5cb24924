"""Real MCP HTTP servers for the tests: `tether mcp --http` and `tether mcp --bot ... --http`
run as subprocesses on a free loopback port, with raw HTTP requests and tool calls to them.

Owns starting a server and reading the URL it logs, raw requests (any method, headers left out
or overridden), and stopping the process. It knows nothing of the tools beyond `tools/call`.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class HttpServer:
    """`tether mcp --http` (or `--bot ... --http`) running in a subprocess on a free loopback
    port, its stderr collected in `log`."""

    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url
        self.base = url.removesuffix("/mcp")
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])
        self.log: list[str] = []
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)

    def stop(self) -> None:
        stop(self.process)
        self._drain.join(timeout=10)

    def request(
        self,
        method: str,
        path: str = "/mcp",
        body: Any = None,
        headers: dict[str, str | None] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        """One raw HTTP request (a dict body is sent as JSON); `headers` override the defaults
        (Host, Content-Type, Accept), and None leaves a header out. Returns (status, headers,
        body text)."""
        with self._exchange(method, path, body, headers) as response:
            return response.status, dict(response.headers), response.read().decode()

    def head(
        self, method: str, path: str = "/mcp", headers: dict[str, str | None] | None = None
    ) -> tuple[int, dict[str, str]]:
        """As `request`, without a body, reading only the status and headers of the answer (so
        a response that streams for ever cannot hang the test)."""
        with self._exchange(method, path, None, headers) as response:
            return response.status, dict(response.headers)

    @contextmanager
    def _exchange(
        self, method: str, path: str, body: Any, headers: dict[str, str | None] | None
    ) -> Iterator[http.client.HTTPResponse]:
        data = (
            body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
        )
        sent: dict[str, str | None] = {
            "Host": f"127.0.0.1:{self.port}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Content-Length": str(len(data)),
            **(headers or {}),
        }
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in sent.items():
                if value is not None:
                    connection.putheader(name, value)
            connection.endheaders(data)
            yield connection.getresponse()
        finally:
            connection.close()

    def call(self, tool: str, headers: dict[str, str | None] | None = None, **args: Any) -> Any:
        """A raw `tools/call`; returns (HTTP status, the JSON-RPC reply or the body text)."""
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        status, _, text = self.request("POST", body=message, headers=headers)
        return status, json.loads(text) if status == 200 else text


def start_server(command: list[str], env: dict[str, str] | None = None) -> HttpServer:
    """Start an MCP HTTP server (`command`, which must pass `--port 0`) and wait (bounded) for
    the URL it logs on stderr."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        match = re.search(r"serving (http://\S+/mcp)", line)
        if match:
            return HttpServer(process, match.group(1))
        if not line and process.poll() is not None:
            break
    stop(process)
    raise AssertionError("the HTTP server did not report its URL")


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
