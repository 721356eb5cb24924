"""Gemini CLI against the scripted model: the Gemini API's wire format, and the CLI run headless.

Owns `GeminiModel`, the scripted model speaking the API as Gemini CLI 0.61 calls it (`POST
/v1beta/models/MODEL:generateContent` and `:streamGenerateContent?alt=sse`, each answered with
a `GenerateContentResponse`: a turn's `Call`s as `functionCall` parts, a `Text` as a text part),
and `run`, which starts the real CLI (`gemini -p PROMPT --output-format stream-json --yolo`) with
a fresh `HOME` that selects API-key auth and points the CLI at the model. Before each turn the
CLI asks a small model to route it (a `generateContent` whose `generationConfig` asks for JSON
by `responseJsonSchema`); such a request is answered with a value of that schema and takes no
turn of the script. What the model was told is read back from the requests it kept:
`user_texts` (prompts, hook context, a refused stop's reason) and `function_responses` (what
each tool call returned, a denied call's reason included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from field.scripted import Call, Reply, Request, ScriptedModel, Text

ROOT = Path(__file__).resolve().parents[2]
GEMINI = ROOT / ".cache" / "harnesses" / "node_modules" / ".bin" / "gemini"
INSTALL = "scripts/install-test-deps-harnesses"


def _value(schema: dict[str, Any]) -> Any:
    """A value of a JSON schema as the API spells it (`OBJECT`, `STRING`, ...): the first of an
    enum, the least number, each required property of an object."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _value(props[k]) for k in schema.get("required", props) if k in props}
    return {"string": "scripted", "integer": 1, "number": 1, "boolean": False}.get(kind, [])


class GeminiModel(ScriptedModel):
    """The scripted model as the Gemini API."""

    def answer(self, request: Request) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema:  # routing (or another structured side request): not a turn of the script
            parts: list[dict[str, Any]] = [{"text": json.dumps(_value(schema))}]
        else:
            turn = self.next_turn()
            if isinstance(turn, Text):
                parts = [{"text": turn.text}]
            else:
                parts = [{"functionCall": {"name": c.name, "args": c.input}} for c in turn]
        content = {"role": "model", "parts": parts}
        usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
        response = {
            "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
        }
        data = json.dumps(response).encode()
        if ":streamGenerateContent" in request.path:
            return Reply(content_type="text/event-stream", chunks=[b"data: " + data + b"\r\n\r\n"])
        return Reply(chunks=[data])

    def turns(self) -> list[dict[str, Any]]:
        """The bodies of the requests that took a turn of the script (routing left out)."""
        return [
            r.body
            for r in self.requests
            if isinstance(r.body, dict)
            and not (r.body.get("generationConfig") or {}).get("responseJsonSchema")
        ]

    def user_texts(self) -> list[str]:
        """Every text the user side of the conversation carried, in the last turn's history."""
        turns = self.turns()
        contents = turns[-1].get("contents", []) if turns else []
        return [
            part["text"]
            for content in contents
            if content.get("role") == "user"
            for part in content.get("parts", [])
            if isinstance(part.get("text"), str)
        ]

    def function_responses(self) -> list[dict[str, Any]]:
        """Each tool call's result as the model was given it (`{name, response}`), in order."""
        turns = self.turns()
        contents = turns[-1].get("contents", []) if turns else []
        return [
            part["functionResponse"]
            for content in contents
            for part in content.get("parts", [])
            if "functionResponse" in part
        ]


@dataclass
class Run:
    """One headless run: its exit code, its stream-json events, its stderr."""

    code: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]


def installed() -> Path:
    """The Gemini CLI the field tests run; failing, with what to run, when it is missing."""
    if not GEMINI.exists():
        raise AssertionError(f"Gemini CLI is not installed at {GEMINI}: run {INSTALL}")
    return GEMINI


def run(project: Path, home: Path, model: GeminiModel, prompt: str, timeout: int = 180) -> Run:
    """`gemini -p PROMPT` headless in `project`, with `home` as a fresh HOME (the guard's state
    lands under it), talking to `model`. The project's hooks load (`GEMINI_CLI_TRUST_WORKSPACE`),
    and `tether` on PATH is the one beside this interpreter."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    env = {
        **os.environ,
        "HOME": str(home),
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": model.url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    }
    # Nothing of the machine's own: no other credentials, no state or configuration elsewhere.
    for name in ("GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI"):
        env.pop(name, None)
    for name in [n for n in env if n.startswith(("XDG_", "TETHER_GUARD_"))]:
        del env[name]
    done = subprocess.run(
        [str(installed()), "-p", prompt, "--output-format", "stream-json", "--yolo"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return Run(done.returncode, events, done.stderr)


__all__ = ["Call", "GeminiModel", "Run", "Text", "installed", "run"]
