"""The Anthropic Messages API on the scripted model server, as Claude Code calls it.

Owns the wire format: `POST /v1/messages` answered as a stream of server-sent events
(`message_start`, a `content_block_start`/`content_block_delta`/`content_block_stop` triple per
text or `tool_use` block, `message_delta` with the stop reason, `message_stop`), or as one JSON
message when the request does not ask for a stream; `POST /v1/messages/count_tokens` answered
with a small count. Only a request that offers tools is a turn of the script (the agent, or a
sub-agent, deciding what to do next); any other model call Claude Code makes on the side (a
title, a summary) gets a short text and leaves the script where it is. It also reads what a
request told the model (`tool_results`, `said`), so a test asserts on what the model saw.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from field.scripted import Reply, Request, ScriptedModel, Text, Turn

_ids = itertools.count(1)


def _events(model: str, turn: Turn) -> list[tuple[str, dict[str, Any]]]:
    """The stream of one assistant message that says `turn`."""
    blocks: list[dict[str, Any]] = []
    deltas: list[dict[str, Any]] = []
    if isinstance(turn, Text):
        blocks.append({"type": "text", "text": ""})
        deltas.append({"type": "text_delta", "text": turn.text})
    else:
        for call in turn:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(_ids):06d}",
                    "name": call.name,
                    "input": {},
                }
            )
            deltas.append({"type": "input_json_delta", "partial_json": json.dumps(call.input)})
    stop = "end_turn" if isinstance(turn, Text) else "tool_use"
    usage = {"input_tokens": 10, "output_tokens": 10}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{next(_ids):06d}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    for index, (block, delta) in enumerate(zip(blocks, deltas, strict=True)):
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": usage,
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _message(model: str, turn: Turn) -> dict[str, Any]:
    """The same message, whole (for a request that does not stream)."""
    events = _events(model, turn)
    message = dict(events[0][1]["message"])
    content = []
    for name, data in events:
        if name == "content_block_start":
            content.append(dict(data["content_block"]))
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                content[-1]["text"] += delta["text"]
            else:
                content[-1]["input"] = json.loads(delta["partial_json"])
        elif name == "message_delta":
            message["stop_reason"] = data["delta"]["stop_reason"]
    message["content"] = content
    return message


def is_turn(request: Request) -> bool:
    """Whether a request is the agent asking what to do next (it offers tools)."""
    body = request.body
    return (
        request.method == "POST"
        and request.path.split("?")[0] == "/v1/messages"
        and isinstance(body, dict)
        and bool(body.get("tools"))
    )


class AnthropicModel(ScriptedModel):
    """The scripted model, speaking the Anthropic Messages API."""

    def answer(self, request: Request) -> Reply:
        path = request.path.split("?")[0]
        body = request.body if isinstance(request.body, dict) else {}
        if path == "/v1/messages/count_tokens":
            return Reply(chunks=[json.dumps({"input_tokens": 100}).encode()])
        if request.method != "POST" or path != "/v1/messages":
            return Reply(
                status=404, chunks=[b'{"type":"error","error":{"type":"not_found_error"}}']
            )
        turn = self.next_turn(request) if is_turn(request) else Text("Scripted session")
        model = str(body.get("model") or "claude-scripted")
        if not body.get("stream"):
            return Reply(chunks=[json.dumps(_message(model, turn)).encode()])
        data = "".join(
            f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in _events(model, turn)
        )
        return Reply(content_type="text/event-stream", chunks=[data.encode()])

    @property
    def turns(self) -> list[Request]:
        """The requests that were turns of the script, in order."""
        with self._lock:
            return [r for r in self.requests if is_turn(r)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(b.get("text") or b.get("content")) for b in content if isinstance(b, dict)
        )
    return ""


def tool_results(request: Request) -> list[dict[str, Any]]:
    """Every tool result the request carries: `{id, is_error, text}`, oldest first."""
    out = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(
                    {
                        "id": block.get("tool_use_id"),
                        "is_error": bool(block.get("is_error")),
                        "text": _text(block.get("content")),
                    }
                )
    return out


def said(request: Request) -> str:
    """All the text the request shows the model: system prompt and every message's text
    (tool results included), joined."""
    body = request.body
    parts = [_text(body.get("system"))]
    parts += [_text(m.get("content")) for m in body.get("messages", [])]
    return "\n".join(parts)
