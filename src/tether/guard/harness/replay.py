"""Replaying a recorded Claude Code session (its transcript JSONL) through a rule set.

Owns: reading a transcript in order and turning its entries into guard calls: a typed user
message starts a turn, an assistant text block is `on_text`, a `tool_use` block is `pre_tool`,
the matching `tool_result` is `post_tool` (with `error` when it is marked `is_error`; how the
call went is read as the hooks read Claude Code's `PostToolUse`, `claude.tool_ok`). Sub-agent
entries (`isSidechain`) run in their own session, keyed by their `agentId`. It returns every
decision, in order, with the line it came from. It does not judge whether the recorded agent
obeyed: a call the rules would have blocked still ran in the recording, so its result is
recorded as it happened.

The `workflow` binding is replayed too (`sandbox`): the executions the transcript starts are run
again in memory, and where the bound session would have been told or refused something, a row
with `workflow` says what: `context` at a prompt, a `pre_tool` outside the step's policy, a
`stop` where a turn of the main agent ended (before the next prompt, and at the end).
"""

from __future__ import annotations

import json
from typing import Any

from tether.errors import TetherError
from tether.guard.binding.sandbox import Sandbox
from tether.guard.harness.claude import assistant_text, is_user_prompt, tool_ok
from tether.guard.rules.engine import Decision, Guard, GuardSession


def _prompt_text(entry: dict[str, Any]) -> str:
    content = entry["message"]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def replay(guard: Guard, transcript: str, explain: bool = False) -> dict[str, Any]:
    """Every decision the guard makes over `transcript`, and a count by action."""
    try:
        with open(transcript, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise TetherError("not_found", f"transcript not found: {transcript}") from None
    sandbox = Sandbox(guard.plan["workflow"])
    try:
        return _replay(guard, transcript, lines, sandbox, explain)
    finally:
        sandbox.close()


def _replay(
    guard: Guard, transcript: str, lines: list[str], sandbox: Sandbox, explain: bool
) -> dict[str, Any]:
    sessions: dict[str, GuardSession] = {}
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[dict[str, Any]] = []
    counts = {"allow": 0, "remind": 0, "warn": 0, "block": 0}
    turn_ended: int | None = None  # the line of the main agent's last answer without a call
    project = "."

    def bound(line: int, event: str, action: str, text: str | None) -> None:
        if text:
            counts[action] += 1
            out.append({"line": line, "event": event, "action": action, "workflow": text})

    def stopped(project: str) -> None:
        held = sandbox.stop(project) if turn_ended is not None else None
        if held is not None and turn_ended is not None:
            blocked = held.get("decision") == "block"
            text = held["reason"] if blocked else held["systemMessage"]
            bound(turn_ended, "stop", "block" if blocked else "allow", text)

    def note(line: int, event: str, decision: Decision, agent: str) -> None:
        row = {"line": line, "event": event, **decision.to_dict(explain=explain)}
        if agent != "main":
            row["agent"] = agent
        if decision.text:
            row["text"] = decision.text
        counts[decision.action] += 1
        out.append(row)

    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except ValueError:
            raise TetherError(
                "invalid_json", f"{transcript}:{number}: not a JSON line", line=number
            ) from None
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        agent = str(entry.get("agentId") or "sidechain") if entry.get("isSidechain") else "main"
        session = sessions.get(agent)
        if session is None:
            session = guard.session(agent, cwd=entry.get("cwd"))
            sessions[agent] = session
        project = str(entry.get("cwd") or ".")
        if is_user_prompt(entry):
            stopped(project)
            turn_ended = None
            note(number, "user_message", session.on_user_message(_prompt_text(entry)), agent)
            bound(number, "context", "allow", sandbox.context(project))
            continue
        content = entry.get("message", {}).get("content")
        blocks = content if isinstance(content, list) else []
        if entry["type"] == "assistant":
            text = assistant_text(entry)
            if text:
                note(number, "text", session.on_text(text, explain=explain), agent)
            calls = False
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls = True
                    given = block.get("input")
                    params: dict[str, Any] = given if isinstance(given, dict) else {}
                    tool = str(block.get("name"))
                    pending[str(block.get("id"))] = (tool, params)
                    decision = session.pre_tool(tool, params, explain=explain)
                    note(number, "pre_tool", decision, agent)
                    bound(number, "pre_tool", "block", sandbox.pre_tool(project, tool, params))
            if agent == "main":
                turn_ended = None if calls else number
            continue
        for block in blocks:
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                continue
            call = pending.pop(str(block.get("tool_use_id")), None)
            if call is None:
                continue
            result = entry.get("toolUseResult", block.get("content"))
            error = (block.get("content") or "error") if block.get("is_error") else None
            event = "PostToolUseFailure" if error else "PostToolUse"
            ok = tool_ok({"hook_event_name": event, "tool_response": result})
            decision = session.post_tool(call[0], call[1], result, error, explain, ok)
            note(number, "post_tool", decision, agent)
            sandbox.post_tool(project, call[0], call[1], block.get("content"), ok)
    stopped(project)
    report: dict[str, Any] = {"transcript": transcript, "decisions": out, "counts": counts}
    executions = sandbox.report()
    if executions:
        report["executions"] = executions
    return report
