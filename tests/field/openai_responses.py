"""The scripted model server speaking the OpenAI Responses API, as Codex calls it.

Owns the wire format only (the server, the script and the kept requests are `scripted`'s):
`POST .../responses` is answered as server-sent events, `response.created`, one
`response.output_item.done` per item of the turn (a `function_call` per `Call`, or an assistant
`message` for a `Text`) and `response.completed`. The request's own tool list decides how a call
is written: a tool declared as a custom (freeform) tool, as Codex declares `apply_patch`, is
called with a `custom_tool_call` whose `input` is the call's `input` argument; a tool declared
inside a namespace (Codex's sub-agent tools) names its namespace. A sub-agent's requests (sent
with `x-openai-subagent`) are answered from a script of their own, `subagent`; a `wait_agent`
call without `targets` waits on every agent the conversation has spawned. Any other request
gets an empty JSON object.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from field.scripted import Call, Reply, Request, ScriptedModel, Text, Turn

USAGE = {
    "input_tokens": 0,
    "input_tokens_details": None,
    "output_tokens": 0,
    "output_tokens_details": None,
    "total_tokens": 0,
}


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


class OpenAIResponses(ScriptedModel):
    """Answers Codex's model calls with the script's turns (a sub-agent's with `subagent`'s)."""

    def __init__(self, script: list[Turn], subagent: list[Turn] | None = None) -> None:
        super().__init__(script)
        self.subagent = list(subagent or [])
        self._subagent_lock = threading.Lock()

    def answer(self, request: Request) -> Reply:
        if request.method != "POST" or not request.path.rstrip("/").endswith("/responses"):
            return Reply(chunks=[b"{}"])
        n = len(self.requests)
        body = request.body if isinstance(request.body, dict) else {}
        headers = {key.lower() for key in request.headers}
        turn = self._subagent_turn() if "x-openai-subagent" in headers else self.next_turn()
        if isinstance(turn, Text):
            content = [{"type": "output_text", "text": turn.text, "annotations": []}]
            items = [{"type": "message", "role": "assistant", "id": f"msg_{n}", "content": content}]
        else:
            items = [_item(call, f"call_{n}_{i}", body) for i, call in enumerate(turn)]
        response = {"id": f"resp_{n}", "object": "response", "status": "in_progress"}
        chunks = [_event("response.created", response=response)]
        for i, item in enumerate(items):
            chunks.append(_event("response.output_item.done", output_index=i, item=item))
        done = {**response, "status": "completed", "usage": USAGE}
        chunks.append(_event("response.completed", response=done))
        return Reply(content_type="text/event-stream", chunks=chunks)

    def _subagent_turn(self) -> Turn:
        with self._subagent_lock:
            return self.subagent.pop(0) if self.subagent else Text("done")


def _declared(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool the request declares, by name, with `namespace` set for a namespace's tools."""
    found: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                found[str(inner.get("name"))] = {**inner, "namespace": tool.get("name")}
        elif tool.get("name"):
            found[str(tool["name"])] = tool
    return found


def _spawned(body: dict[str, Any]) -> list[str]:
    """The agent ids the conversation's `spawn_agent` calls answered with."""
    ids = []
    for item in body.get("input") or []:
        if item.get("type") != "function_call_output":
            continue
        try:
            output = json.loads(item.get("output") or "")
        except (TypeError, ValueError):
            continue
        if isinstance(output, dict) and isinstance(output.get("agent_id"), str):
            ids.append(output["agent_id"])
    return ids


def _item(call: Call, call_id: str, body: dict[str, Any]) -> dict[str, Any]:
    tool = _declared(body).get(call.name, {})
    if tool.get("type") == "custom":
        return {
            "type": "custom_tool_call",
            "id": f"ctc_{call_id}",
            "call_id": call_id,
            "name": call.name,
            "input": str(call.input.get("input", "")),
            "status": "completed",
        }
    arguments = dict(call.input)
    if call.name == "wait_agent" and "targets" not in arguments:
        arguments["targets"] = _spawned(body)
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": call.name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    if tool.get("namespace"):
        item["namespace"] = tool["namespace"]
    return item
