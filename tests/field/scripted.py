"""A scripted model server on 127.0.0.1 for driving real agent harnesses without a model.

Owns the part every harness shares: an HTTP server on a free loopback port, run on a thread,
that keeps every request it was sent (`requests`: path and parsed JSON body, in order) and
answers each model call with the next turn of a script. A turn is what the model "says": a list
of tool calls (`Call`) or a final text (`Text`). Each harness's wire format (Anthropic Messages,
Gemini `generateContent`, OpenAI Responses) is a subclass that overrides `answer`; this module
knows none of them. When the script runs out, the model answers with `Text("done")`, so a harness
that asks again (after a refused stop, say) ends its turn instead of hanging.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Call:
    """One tool call: the harness's own tool name and its arguments."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Text:
    """A final answer: the harness ends its turn (and fires its Stop hook)."""

    text: str


Turn = list[Call] | Text


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    status: int = 200
    content_type: str = "application/json"
    chunks: list[bytes] = field(default_factory=list)


# A turn made from the request it answers (what the harness showed the model: a token, a name),
# for a script that reacts; only a subclass that passes the request to `next_turn` takes one.
Reacting = Callable[["Request"], Turn]


class ScriptedModel(ABC):
    """The server; use as a context manager. `url` is its base address. A harness's subclass
    gives `answer`, its wire format."""

    def __init__(self, script: Sequence[Turn | Reacting]) -> None:
        self.script = list(script)
        self.requests: list[Request] = []
        self.turns_taken = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next_turn(self, request: Request | None = None) -> Turn:
        """The next turn of the script (`Text("done")` once it has run out); a `Reacting` one
        made from `request`."""
        with self._lock:
            if self.turns_taken >= len(self.script):
                return Text("done")
            turn = self.script[self.turns_taken]
            self.turns_taken += 1
        if isinstance(turn, (list, Text)):
            return turn
        assert request is not None, "a reacting turn needs the request it answers"
        return turn(request)

    @abstractmethod
    def answer(self, request: Request) -> Reply:
        """The reply to one request, in the harness's wire format."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(self.command, self.path, dict(self.headers), body)
                with model._lock:
                    model.requests.append(request)
                reply = model.answer(request)
                data = b"".join(reply.chunks)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

        return Handler
