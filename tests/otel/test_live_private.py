"""R12: live spans keep what the agent or a person wrote (notes, `$VAR` values, tool inputs)
to themselves unless the user asks (`TETHER_OTEL_CONTENT=1`), a receiver on 127.0.0.1 that
never answers does not keep a step waiting, and a process that cannot send says so once on
stderr."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from otel.receiver import write_tree
from support.command import TETHER
from support.postgres import free_port
from tether.otel import send
from tether.verbs import Runtime

SECRET = "hunter2-the-secret"


class _Recorder(BaseHTTPRequestHandler):
    bodies: list[bytes]
    got: threading.Event

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).bodies.append(body)
        type(self).got.set()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Recorder", (_Recorder,), {"bodies": [], "got": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def _tether(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TETHER, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )


def _drive(run: Path, env: dict[str, str]) -> None:
    """Start the demo tree and answer its first action with a note and a value (a node ends)."""
    assert _tether("start", str(write_tree(run.parent)), str(run), env=env).returncode == 0
    assert _tether("submit", str(run), "success", env=env).returncode == 0
    done = _tether(
        "submit", str(run), "success", "--set", f'x="{SECRET}"', "--note", f"note {SECRET}", env=env
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("content", [False, True])
def test_r12_live_spans_carry_no_values_or_notes_unless_asked(
    tmp_path: Path, recorder: tuple[str, type[_Recorder]], content: bool
) -> None:
    url, handler = recorder
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, **({"TETHER_OTEL_CONTENT": "1"} if content else {})}
    _drive(tmp_path / "run.json", env)
    assert handler.got.wait(60), "no spans arrived"
    sent = b"".join(handler.bodies)
    assert b"invoke_agent Gather" in sent
    assert (SECRET.encode() in sent) is content


def test_r12_a_receiver_that_never_answers_does_not_delay_a_step(tmp_path: Path) -> None:
    """The receiver accepts and reads, never answers; the exporter would wait ten minutes: the
    command ends anyway (a command still waiting fails at its 120 s timeout), and its spans
    reach the receiver, from its sending thread or from the child it leaves at exit."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    arrived = threading.Event()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=read, args=(conn,), daemon=True).start()

    def read(conn: socket.socket) -> None:  # a connection opened and left idle holds no other
        try:
            if b"POST /v1/traces" in conn.recv(65536):
                arrived.set()
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "600",
        "TETHER_OTEL_FLUSH_SECONDS": "600",
    }
    try:
        _drive(tmp_path / "run.json", env)  # each command returns (a 120 s timeout fails it)
        assert arrived.wait(60), "the spans were not sent"
    finally:
        listener.close()
        for conn in held:
            conn.close()


def test_r12_a_process_that_cannot_send_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    monkeypatch.setattr(send, "_live", None)
    monkeypatch.setattr(send, "_said", False)
    rt = Runtime()
    for n in range(2):
        uri = f"file://{tmp_path / f'run{n}.json'}"
        rt.start(str(write_tree(tmp_path)), uri)
        rt.submit(uri, "success")
        rt.submit(uri, "success", values={"x": 5})
    said = ""
    while "cannot send" not in said:  # the outbox's thread finds out; the test waits for it
        said += capsys.readouterr().err
        threading.Event().wait(0.05)
    live = send._live
    assert live is not None
    while live.outbox.rest():
        threading.Event().wait(0.05)
    said += capsys.readouterr().err
    assert said.count("tether: cannot send OpenTelemetry spans live") == 1, said
