"""The scripted model server speaking OpenAI Chat Completions, as GitHub Copilot CLI, Qwen Code
and Factory Droid call it.

Owns the wire format only (the server, the script and the kept requests are `scripted`'s):
`POST .../chat/completions` is answered, when the request asks for a stream, as server-sent
`chat.completion.chunk` events (the role, then a `tool_calls` delta per `Call`, its name and
its arguments in two pieces, or a `content` delta for a `Text`; then the `finish_reason`, a
usage chunk and `data: [DONE]`), else as one `chat.completion`. Only a request that offers
`tools` is a turn of the script; a request without them (a title, a summary, a check of the
model) is a side call, answered with a short text that takes no turn. `GET .../models` lists
the one model asked for. It also reads what the model was told (`told`: every message's text
and every tool result of the last turn, in order).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from field.scripted import Reply, Request, ScriptedModel, Text, Turn

_ids = itertools.count(1)


def _chunk(model: str, n: int, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    chunk = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _calls(turn: Turn) -> list[dict[str, Any]]:
    if isinstance(turn, Text):
        return []
    return [
        {
            "id": f"call_{next(_ids):06d}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.input)},
        }
        for call in turn
    ]


def _stream(model: str, n: int, turn: Turn) -> list[bytes]:
    """The chunks of one streamed answer saying `turn`."""
    delta: dict[str, Any] = {"role": "assistant", "content": ""}
    chunks = [_chunk(model, n, [{"index": 0, "delta": delta, "finish_reason": None}])]
    if isinstance(turn, Text):
        pieces: list[dict[str, Any]] = [{"content": turn.text}]
    else:
        pieces = []
        for i, call in enumerate(_calls(turn)):
            head = {"index": i, "id": call["id"], "type": "function"}
            arguments = call["function"]["arguments"]
            half = len(arguments) // 2
            named = {**head, "function": {"name": call["function"]["name"], "arguments": ""}}
            pieces.append({"tool_calls": [named]})
            for part in (arguments[:half], arguments[half:]):
                pieces.append({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
    for piece in pieces:
        chunks.append(_chunk(model, n, [{"index": 0, "delta": piece, "finish_reason": None}]))
    finish = "stop" if isinstance(turn, Text) else "tool_calls"
    chunks.append(_chunk(model, n, [{"index": 0, "delta": {}, "finish_reason": finish}]))
    usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
    chunks.append(_chunk(model, n, [], usage=usage))
    chunks.append(b"data: [DONE]\n\n")
    return chunks


def _whole(model: str, n: int, turn: Turn) -> dict[str, Any]:
    """The same answer as one `chat.completion`."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(turn, Text):
        message["content"] = turn.text
    else:
        message["tool_calls"] = _calls(turn)
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if isinstance(turn, Text) else "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def is_turn(request: Request) -> bool:
    """Whether a request is the agent asking what to do next (it offers tools)."""
    body = request.body
    return (
        request.method == "POST"
        and request.path.split("?")[0].endswith("/chat/completions")
        and isinstance(body, dict)
        and bool(body.get("tools"))
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


class ChatModel(ScriptedModel):
    """The scripted model, speaking OpenAI Chat Completions."""

    def answer(self, request: Request) -> Reply:
        path = request.path.split("?")[0].rstrip("/")
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model") or "scripted")
        if request.method == "GET" and path.endswith("/models"):
            listed = {"object": "list", "data": [{"id": model, "object": "model"}]}
            return Reply(chunks=[json.dumps(listed).encode()])
        if request.method != "POST" or not path.endswith("/chat/completions"):
            return Reply(status=404, chunks=[b'{"error":{"message":"not found"}}'])
        turn = self.next_turn() if is_turn(request) else Text("Scripted session")
        n = len(self.requests)
        if body.get("stream"):
            return Reply(content_type="text/event-stream", chunks=_stream(model, n, turn))
        return Reply(chunks=[json.dumps(_whole(model, n, turn)).encode()])

    @property
    def turns(self) -> list[Request]:
        """The requests that were turns of the script, in order."""
        with self._lock:
            return [r for r in self.requests if is_turn(r)]

    def told(self) -> list[str]:
        """What the model was told in the last turn: the text of every message but its own
        (system, user, tool), in order."""
        turns = self.turns
        if not turns:
            return []
        messages = turns[-1].body.get("messages") or []
        return [
            _text(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") != "assistant"
        ]

    def tool_results(self) -> list[str]:
        """Each tool call's result as the model was given it in the last turn, in order."""
        turns = self.turns
        messages = turns[-1].body.get("messages") or [] if turns else []
        return [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
