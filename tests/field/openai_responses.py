"""The scripted model server speaking the OpenAI Responses API, as Codex calls it.

Owns the wire format only (the server, the script and the kept requests are `scripted`'s):
`POST .../responses` is answered as server-sent events, `response.created`, one
`response.output_item.done` per item of the turn (a `function_call` per `Call`, or an assistant
`message` for a `Text`) and `response.completed`. A tool the request declares as a custom
(freeform) tool, as Codex declares `apply_patch`, is called with a `custom_tool_call` whose
`input` is the call's `input` argument. Any other request gets an empty JSON object.
"""

from __future__ import annotations

import json
from typing import Any

from field.scripted import Call, Reply, Request, ScriptedModel, Text


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def _custom_tools(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return {
        str(tool.get("name"))
        for tool in tools or []
        if isinstance(tool, dict) and tool.get("type") == "custom"
    }


class OpenAIResponses(ScriptedModel):
    """Answers Codex's model calls with the script's turns."""

    def answer(self, request: Request) -> Reply:
        if request.method != "POST" or not request.path.rstrip("/").endswith("/responses"):
            return Reply(chunks=[b"{}"])
        n = len(self.requests)
        turn = self.next_turn()
        custom = _custom_tools(request.body)
        items: list[dict[str, Any]] = []
        if isinstance(turn, Text):
            content = [{"type": "output_text", "text": turn.text, "annotations": []}]
            items.append(
                {"type": "message", "role": "assistant", "id": f"msg_{n}", "content": content}
            )
        else:
            for i, call in enumerate(turn):
                items.append(_item(call, f"call_{n}_{i}", call.name in custom))
        response = {"id": f"resp_{n}", "object": "response", "status": "in_progress"}
        chunks = [_event("response.created", response=response)]
        for i, item in enumerate(items):
            chunks.append(_event("response.output_item.done", output_index=i, item=item))
        usage = {
            "input_tokens": 0,
            "input_tokens_details": None,
            "output_tokens": 0,
            "output_tokens_details": None,
            "total_tokens": 0,
        }
        done = {**response, "status": "completed", "usage": usage}
        chunks.append(_event("response.completed", response=done))
        return Reply(content_type="text/event-stream", chunks=chunks)


def _item(call: Call, call_id: str, custom: bool) -> dict[str, Any]:
    if custom:
        return {
            "type": "custom_tool_call",
            "id": f"ctc_{call_id}",
            "call_id": call_id,
            "name": call.name,
            "input": str(call.input.get("input", "")),
            "status": "completed",
        }
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": call.name,
        "arguments": json.dumps(call.input),
        "status": "completed",
    }
