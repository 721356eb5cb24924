"""Attacks on `tether guard serve`: a web page posting cross-site, a forged `SessionEnd`, a
rebound Host, an oversized body, a non-loopback address without a token. Each is refused by a
real server process on 127.0.0.1, and the session's state is untouched."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.hosts import FOREIGN_HOSTS
from tether.errors import EXIT_USAGE
from tether.guard.harness.session_store import SessionStore

TOKEN = "guard-token-for-tests"
SESSION = "victim"
SERVE = [sys.executable, "-m", "tether.guard.cli", "serve", "--port", "0"]


class Server:
    def __init__(self, port: int, state: Path) -> None:
        self.port = port
        self.state = state

    def request(
        self,
        method: str,
        path: str = "/hook",
        body: bytes | None = None,
        headers: dict[str, str | None] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        sent: dict[str, str | None] = {
            "Host": f"127.0.0.1:{self.port}",
            "Content-Type": "application/json",
            **({} if body is None else {"Content-Length": str(len(body))}),
            **(headers or {}),
        }
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in sent.items():
                if value is not None:
                    connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            data = response.read()
            got = {name.lower(): value for name, value in response.getheaders()}
            # a request the HTTP server itself cannot read (a negative length) gets its text
            read: Any = json.loads(data) if data.startswith(b"{") else data.decode()
            return response.status, got, read
        finally:
            connection.close()

    def hook(self, event: str, headers: dict[str, str | None] | None = None, **fields: Any) -> Any:
        payload = {"session_id": SESSION, "cwd": "/project", "hook_event_name": event, **fields}
        return self.request("POST", body=json.dumps(payload).encode(), headers=headers)

    def calls(self) -> int:
        return SessionStore(str(self.state)).state(SESSION).total_tool_calls


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    procs: list[subprocess.Popen[str]] = []

    state = tmp_path / "state"

    def start(*args: str, env: dict[str, str] | None = None) -> Server:
        clean = {k: v for k, v in os.environ.items() if k != "TETHER_GUARD_TOKEN"}
        proc = subprocess.Popen(
            [*SERVE, "--config", str(tmp_path / "guard.yaml"), "--state-dir", str(state), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**clean, **(env or {})},
        )
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        port = int(json.loads(line)["listening"].rsplit(":", 1)[1])
        return Server(port, state)

    try:
        yield start
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def _read(server: Server, headers: dict[str, str | None] | None = None) -> Any:
    return server.hook(
        "PostToolUse",
        headers=headers,
        tool_name="Read",
        tool_input={"file_path": "/project/a.py"},
        tool_response={},
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/plain", "Origin": "http://evil.example"},
        {"Content-Type": "text/plain;charset=UTF-8"},  # a "simple" request: no preflight
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": None},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
    ],
)
def test_a_cross_site_post_changes_nothing(spawn: Callable[..., Server], headers: Any) -> None:
    server = spawn()
    assert _read(server)[0] == 200
    status, _, body = _read(server, headers)
    assert status in (403, 415)
    assert body["error"]["code"] in ("forbidden", "invalid_value")
    assert server.calls() == 1


def test_a_forged_session_end_without_the_token_is_refused(spawn: Callable[..., Server]) -> None:
    server = spawn(env={"TETHER_GUARD_TOKEN": TOKEN})
    auth: dict[str, str | None] = {"Authorization": f"Bearer {TOKEN}"}
    assert _read(server, auth)[0] == 200
    for forged in (None, f"Bearer {TOKEN}x", "Bearer ", TOKEN, f"Basic {TOKEN}"):
        status, headers, body = server.hook("SessionEnd", headers={"Authorization": forged})
        assert status == 401
        assert headers["www-authenticate"].startswith("Bearer")
        assert body["error"]["code"] == "forbidden"
    assert server.calls() == 1
    assert server.request("GET", "/health")[0] == 200  # health needs no token
    assert server.hook("SessionEnd", headers=auth)[0] == 200
    assert server.calls() == 0


def test_the_token_option_works_on_loopback(spawn: Callable[..., Server]) -> None:
    server = spawn("--token", TOKEN)
    assert _read(server)[0] == 401
    assert _read(server, {"Authorization": f"bearer {TOKEN}"})[0] == 200


def test_an_oversized_body_is_refused(spawn: Callable[..., Server]) -> None:
    server = spawn("--max-body-bytes", "2000")
    status, _, body = server.hook("UserPromptSubmit", prompt="x" * 3000)
    assert (status, body["error"]["code"]) == (413, "invalid_value")
    assert server.hook("UserPromptSubmit", prompt="x" * 100)[0] == 200
    assert server.request("POST", headers={"Content-Length": None})[0] == 411
    assert server.request("POST", headers={"Content-Length": "-5"})[0] == 400


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_foreign_host_is_refused(spawn: Callable[..., Server], host: str) -> None:
    server = spawn()
    host = host.format(port=server.port)
    status, _, body = _read(server, {"Host": host})
    assert (status, body["error"]["code"]) == (421, "forbidden")
    assert server.request("GET", "/health", headers={"Host": host})[0] == 421
    assert server.calls() == 0


def test_loopback_names_and_allowed_hosts_are_accepted(spawn: Callable[..., Server]) -> None:
    server = spawn("--allow-host", "guard.internal")
    for host in ("localhost", f"localhost:{server.port}", "[::1]:1", "guard.internal:80"):
        assert _read(server, {"Host": host})[0] == 200, host
    assert _read(server, {"Origin": f"http://localhost:{server.port}"})[0] == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10"])
def test_a_non_loopback_address_needs_a_token(tmp_path: Path, host: str) -> None:
    (tmp_path / "guard.yaml").write_text("profile: dev\n")
    clean = {k: v for k, v in os.environ.items() if k != "TETHER_GUARD_TOKEN"}
    done = subprocess.run(
        [*SERVE, "--host", host, "--config", str(tmp_path / "guard.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "TETHER_GUARD_TOKEN": ""},
        check=False,
    )
    assert done.returncode == EXIT_USAGE
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "usage"
    assert "TETHER_GUARD_TOKEN" in error["message"]
