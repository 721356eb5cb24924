"""Replaying a recorded Claude Code session (its transcript JSONL) through a rule set.

Owns: reading a transcript in order into steps (`read`, with `claude`'s reading of an entry)
and driving the guard by them, one session per agent (`_Driver`): a typed user message starts a
turn, an assistant text block is `on_text`, a `tool_use` block is `pre_tool`, the matching
`tool_result` is `post_tool` (with `error` when it is marked `is_error`; how the call went is
read as the hooks read Claude Code's `PostToolUse`, `claude.tool_ok`). Sub-agent entries
(`isSidechain`) run in their own session, keyed by their `agentId`. It returns every decision,
in order, with the line it came from. It does not judge whether the recorded agent
obeyed: a call the rules would have blocked still ran in the recording, so its result is
recorded as it happened.

The `workflow` binding is replayed too (`recorded`): the executions the transcript starts are run
again in memory, and where the bound session would have been told or refused something, a row
with `workflow` says what: `context` at a prompt, a `pre_tool` outside the step's policy, a
`stop` where a turn of the main agent ended (before the next prompt, and at the end).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tether.errors import TetherError
from tether.guard.binding.recorded import RecordedBinding
from tether.guard.harness.claude import assistant_text, is_user_prompt, tool_ok
from tether.guard.rules.ruleset import Decision, Guard, GuardSession


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
    driver = _Driver(guard, RecordedBinding(guard.plan["workflow"]), explain)
    try:
        for line, agent, cwd, step in read(transcript, lines):
            driver.drive(line, agent, cwd, step)
        return {"transcript": transcript, **driver.report()}
    finally:
        driver.binding.close()


# One step of a transcript, as the guard is driven by it: `("entry",)` opens each user or
# assistant entry, then `("user_message", text)`, `("text", text)`, `("pre_tool", tool, params)`,
# `("answered", calls)` (an assistant entry ends: did it call a tool?) and
# `("post_tool", tool, params, result, error, content)` (a result matched with its call).
Step = tuple[Any, ...]


def read(transcript: str, lines: list[str]) -> Iterator[tuple[int, str, str | None, Step]]:
    """The steps of a transcript in order, each with its line, its agent (`main`, or a
    sub-agent's id) and the entry's `cwd`; a line that is not JSON is `invalid_json`."""
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
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
        cwd = entry.get("cwd")
        for step in _steps(entry, pending):
            yield number, agent, cwd, step


def _steps(entry: dict[str, Any], pending: dict[str, tuple[str, dict[str, Any]]]) -> list[Step]:
    """The steps of one entry; `pending` keeps the calls whose result is still to come."""
    steps: list[Step] = [("entry",)]
    if is_user_prompt(entry):
        return [*steps, ("user_message", _prompt_text(entry))]
    content = entry.get("message", {}).get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if entry["type"] == "assistant":
        text = assistant_text(entry)
        steps += [("text", text)] if text else []
        calls = [b for b in blocks if b.get("type") == "tool_use"]
        for block in calls:
            given = block.get("input")
            params: dict[str, Any] = given if isinstance(given, dict) else {}
            pending[str(block.get("id"))] = (str(block.get("name")), params)
            steps.append(("pre_tool", str(block.get("name")), params))
        return [*steps, ("answered", bool(calls))]
    for block in (b for b in blocks if b.get("type") == "tool_result"):
        call = pending.pop(str(block.get("tool_use_id")), None)
        if call is None:
            continue
        result = entry.get("toolUseResult", block.get("content"))
        error = (block.get("content") or "error") if block.get("is_error") else None
        steps.append(("post_tool", *call, result, error, block.get("content")))
    return steps


class _Driver:
    """The guard's sessions (one per agent) and the recorded binding, driven step by step, and
    every decision and workflow row they made, counted by action."""

    def __init__(self, guard: Guard, binding: RecordedBinding, explain: bool) -> None:
        self.guard = guard
        self.binding = binding
        self.explain = explain
        self.sessions: dict[str, GuardSession] = {}
        self.out: list[dict[str, Any]] = []
        self.counts = {"allow": 0, "remind": 0, "warn": 0, "block": 0}
        self.turn_ended: int | None = None  # the main agent's last answer without a call
        self.project = "."

    def drive(self, line: int, agent: str, cwd: str | None, step: Step) -> None:
        kind, *args = step
        session = self.sessions.get(agent)
        if session is None:
            session = self.sessions[agent] = self.guard.session(agent, cwd=cwd)
        explain = self.explain
        if kind == "entry":
            self.project = str(cwd or ".")
        elif kind == "user_message":
            self.stopped()
            self.turn_ended = None
            self.note(line, kind, session.on_user_message(args[0]), agent)
            self.bound(line, "context", "allow", self.binding.context(self.project))
        elif kind == "text":
            self.note(line, kind, session.on_text(args[0], explain=explain), agent)
        elif kind == "pre_tool":
            tool, params = args
            self.note(line, kind, session.pre_tool(tool, params, explain=explain), agent)
            self.bound(line, kind, "block", self.binding.pre_tool(self.project, tool, params))
        elif kind == "answered":
            if agent == "main":
                self.turn_ended = None if args[0] else line
        else:
            tool, params, result, error, content = args
            event = "PostToolUseFailure" if error else "PostToolUse"
            ok = tool_ok({"hook_event_name": event, "tool_response": result})
            decision = session.post_tool(tool, params, result, error, explain, ok)
            self.note(line, kind, decision, agent)
            self.binding.post_tool(self.project, tool, params, content, ok)

    def bound(self, line: int, event: str, action: str, text: str | None) -> None:
        if text:
            self.counts[action] += 1
            self.out.append({"line": line, "event": event, "action": action, "workflow": text})

    def stopped(self) -> None:
        """Where the main agent's turn ended, what the bound session's `Stop` would have met."""
        held = self.binding.stop(self.project) if self.turn_ended is not None else None
        if held is not None and self.turn_ended is not None:
            blocked = held.get("decision") == "block"
            text = held["reason"] if blocked else held["systemMessage"]
            self.bound(self.turn_ended, "stop", "block" if blocked else "allow", text)

    def note(self, line: int, event: str, decision: Decision, agent: str) -> None:
        row = {"line": line, "event": event, **decision.to_dict(explain=self.explain)}
        if agent != "main":
            row["agent"] = agent
        if decision.text:
            row["text"] = decision.text
        self.counts[decision.action] += 1
        self.out.append(row)

    def report(self) -> dict[str, Any]:
        """The decisions and counts, once the transcript has ended (a last `Stop`)."""
        self.stopped()
        report: dict[str, Any] = {"decisions": self.out, "counts": self.counts}
        executions = self.binding.report()
        if executions:
            report["executions"] = executions
        return report
