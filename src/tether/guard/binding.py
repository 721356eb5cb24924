"""Binding an agent session to an execution: the hooks hold the agent to its workflow.

Owns: which execution a session is bound to (the `workflow` section's `trace`, or the execution
the session itself started, resumed or forked through Tether, `bind: auto`), kept per
`session_id` in the guard's state folder (`bindings/<session>.json`, beside `sessions/`, so that
it outlives `SessionEnd` for a resumed session); and what a bound session gets at each hook
event:

- `Stop`: refused (`{"decision": "block", "reason"}`) while the execution runs, through the
  runtime's `stop` verb, which records every refusal and the stop let through after
  `max_stop_blocks` refusals in a row (a `stop` entry). While every open step is a human step
  the stop is let through at once (recorded, with why) and the user is told that a person must
  answer it (`systemMessage`: `tether approve`/`reject`, or the viewer). `stop: warn` only tells
  the user (`systemMessage`; Claude Code's Stop output has no context field), `off` does nothing.
- `SessionStart`, `UserPromptSubmit`: the current request as context (under 1,000 characters).
- `PreToolUse`: a shell line that runs `tether approve` or `tether reject` is denied (only a
  person answers a human step; read by `shell.answers_for_a_person`, wrappers and nested
  commands included); then the `tools` policy of each open step (`steptools`); a call no open
  step allows is denied with the reason.
- `PostToolUse`, `PostToolUseFailure`: auto-binding (by a call that did not fail; with no sign
  of success, only to the execution its answer names), then evidence: every call but Tether's
  own is recorded through the `record_tool` verb (a `tool` entry, `ok` as `hooks.tool_ok` read
  it: true, false or null).

Every read and write of the execution goes through the verb layer (`tether.verbs.Runtime`),
which, like the policy matching (`steptools`), is imported only when a session is bound or a
call may bind it, so an unbound hook stays as fast as before. Payload
shapes are Claude Code's (https://code.claude.com/docs/en/hooks). It does not decide rules
(`engine`), speak the hook protocol (`hooks`) or match policies (`steptools`).
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from tether.errors import TetherError
from tether.files import write_atomic
from tether.guard.session_store import safe_name

if TYPE_CHECKING:
    from tether.verbs import Runtime

CONTEXT_LIMIT = 1000
_TEXT_KEYS = ("instruction", "expression", "prompt")
_SENTENCE_END = re.compile(r"(?<=[^\d\s])[.!?](?=\s|$)")  # not "1." of a list


class Binding(NamedTuple):
    """A session's execution: its URI and how it was bound (`config`, `mcp`, `shell`)."""

    trace: str
    via: str


def project_dir(payload: dict[str, Any]) -> str:
    """The project: `$CLAUDE_PROJECT_DIR`, else the payload's `cwd`, else the current folder."""
    cwd = payload.get("cwd")
    return os.environ.get("CLAUDE_PROJECT_DIR") or (cwd if isinstance(cwd, str) else os.getcwd())


def resolve(trace: str, project: str) -> str:
    """A URI as given (`postgresql://…`, `file://…`), or a path made absolute against
    `project`, as the file store spells it (`file:///abs/path`)."""
    if "://" in trace or trace.startswith("file:"):
        return trace
    return "file://" + os.path.normpath(os.path.join(project, os.path.expanduser(trace)))


def gist(request: dict[str, Any], limit: int) -> str:
    """A request's text (its instruction, expression or prompt) with its lines joined, in at
    most `limit` characters: whole when it fits, else its whole sentences that fit, else cut at
    a word and marked `…`; so it never stops mid-sentence and runs into the words after it."""
    for key in _TEXT_KEYS:
        text = request.get(key)
        if isinstance(text, str) and text.strip():
            flat = " ".join(text.split())
            if len(flat) <= limit:
                return flat
            ends = [m.end() for m in _SENTENCE_END.finditer(flat, 0, limit)]
            if ends:
                return flat[: ends[-1]]
            return flat[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_uri(response: Any) -> str | None:
    """The `uri` a start or resume answered with, however the harness wrapped the result: the
    object itself, MCP structured content, text blocks, or a shell tool's stdout."""
    if isinstance(response, str):
        try:
            return result_uri(json.loads(response))
        except ValueError:
            return None
    if isinstance(response, list):
        for block in response:
            found = result_uri(block.get("text") if isinstance(block, dict) else None)
            if found:
                return found
        return None
    if not isinstance(response, dict):
        return None
    uri = response.get("uri")
    if isinstance(uri, str) and uri:
        return uri
    for key in ("structuredContent", "structured_content", "content", "stdout"):
        if key in response:
            found = result_uri(response[key])
            if found:
                return found
    return None


def started(
    tool: str, params: dict[str, Any], response: Any, project: str, ok: bool | None
) -> Binding | None:
    """The execution a call that did not fail started, resumed or forked through Tether: an
    MCP tool named `…start_execution` / `…resume_execution` / `…fork_execution` on any server,
    or a shell line running `tether start TREE TRACE` / `tether resume TRACE` / `tether fork
    TRACE NEW` (the fork is the one bound). The URI is the one the call answered with, else,
    when the call is known to have succeeded (`ok`), its argument resolved against the project."""
    if tool.startswith("mcp__"):
        name = tool.rsplit("__", 1)[-1]
        if name not in ("start_execution", "resume_execution", "fork_execution"):
            return None
        given = params.get("new_trace_output" if name == "fork_execution" else "trace_output")
        via = "mcp"
    else:
        command = params.get("command")
        if not isinstance(command, str) or "tether" not in command:
            return None
        from tether.guard.steptools import simple_commands

        given = None
        for words in simple_commands(command) or []:
            found = _shell_trace(words)
            if found is not None:
                given = found
        if given is None:
            return None
        via = "shell"
    known = resolve(given, project) if ok and isinstance(given, str) else None
    uri = result_uri(response) or known
    if uri is None or uri.startswith("memory:"):  # a memory execution lives in another process
        return None
    return Binding(uri, via)


def _shell_trace(words: list[str]) -> str | None:
    from tether.cli.args import parse
    from tether.cli.main import COMMANDS
    from tether.guard.steptools import tether_args

    args = tether_args(words)
    if not args or args[0] not in ("start", "resume", "fork"):
        return None
    try:
        parsed = parse(COMMANDS[args[0]], args[1:])
    except TetherError:
        return None
    return parsed.args.get("NEW" if args[0] == "fork" else "TRACE")


class Binder:
    """The `workflow` settings of one configuration, the bindings kept under `root`, and the
    runtime that reads and records bound executions (made on first use, kept warm by `serve`)."""

    def __init__(self, settings: dict[str, Any], root: str) -> None:
        self.settings = settings
        self.folder = os.path.join(root, "bindings")
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            from tether.verbs import Runtime

            self._runtime = Runtime()
        return self._runtime

    # -- the binding ---------------------------------------------------------------------------

    def path(self, session_id: str) -> str:
        return os.path.join(self.folder, safe_name(session_id) + ".json")

    def bound(self, session_id: str, project: str) -> Binding | None:
        """The session's own binding, else the configured `trace`, else None."""
        try:
            with open(self.path(session_id), encoding="utf-8") as handle:
                data = json.loads(handle.read())
            return Binding(str(data["trace"]), str(data["via"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        trace = self.settings["trace"]
        return Binding(resolve(trace, project), "config") if trace else None

    def bind(self, session_id: str, binding: Binding) -> None:
        os.makedirs(self.folder, exist_ok=True)
        path = self.path(session_id)
        data = {"session": session_id, "trace": binding.trace, "via": binding.via}
        write_atomic(path, json.dumps(data))

    def sessions(self) -> list[dict[str, Any]]:
        """Every session bound by its own start or resume, as stored."""
        out = []
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return []
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(self.folder, name), encoding="utf-8") as handle:
                    out.append(json.loads(handle.read()))
            except (OSError, ValueError):
                continue
        return out

    def status(self, session_id: str, project: str) -> dict[str, Any]:
        """What `tether guard status --session` shows: the binding and its execution now."""
        binding = self.bound(session_id, project)
        out: dict[str, Any] = {"session": session_id, "bound": None}
        if binding is None:
            return out
        out["bound"] = {"trace": binding.trace, "via": binding.via}
        view = self._read(self.runtime.open_steps, binding.trace)
        if view is None:
            out["execution"] = {"status": "not_found"}
            return out
        out["execution"] = view
        return out

    def _read(self, read: Any, *args: Any, **kw: Any) -> Any:
        """A verb's answer, or None when the bound execution is gone or finished."""
        try:
            return read(*args, **kw)
        except TetherError as exc:
            if exc.code in ("not_found", "execution_finished"):
                return None
            raise

    # -- what a bound session gets -------------------------------------------------------------

    def context(self, session_id: str, project: str) -> str | None:
        """The current request, for `SessionStart` and `UserPromptSubmit`."""
        binding = self.bound(session_id, project) if self.settings["context"] else None
        if binding is None:
            return None
        current = self._read(self.runtime.next, binding.trace)
        if current is None:
            return None
        head = f"[Tether] This session is bound to the execution {binding.trace}."
        if "status" in current:
            text = f"{head} It is {'done' if current['status'] == 'done' else 'failed'}."
            return _cut(text, CONTEXT_LIMIT)
        lines = [
            head,
            f"Current request: {current['type']} {current['name']!r} (step {current['step']}).",
            gist(current, 400)
            if current.get("path") is not None
            else "Read the protocol (MCP next_step, or tether next) and accept it: submit success.",
            _ONLY_A_PERSON + " Tell the user what it asks and wait."
            if current["type"] == "human"
            else "Answer it through Tether (MCP eval/submit or the tether command, with the step "
            "token) before you stop; the hooks refuse a stop while it is open.",
        ]
        return _cut("\n".join(line for line in lines if line), CONTEXT_LIMIT)

    def pre_tool(
        self, session_id: str, project: str, tool: str, params: dict[str, Any]
    ) -> str | None:
        """Why a call may not run while the open steps are open (None: it may). A call runs
        when Tether's own, or when any open step has no policy or a policy that allows it."""
        binding = self.bound(session_id, project)
        if binding is None:
            return None
        from tether.guard.steptools import SHELL_TOOLS, is_own_tool, refusal
        from tether.guard.triggers import canonical

        command = params.get("command")
        if canonical(tool) in SHELL_TOOLS and isinstance(command, str):
            from tether.guard.shell import answers_for_a_person

            answer = answers_for_a_person(command)
            if answer is not None:
                return (
                    f"[Tether] {answer} is a person's answer, not an agent's: {_ONLY_A_PERSON} "
                    "Tell the user what the step asks and leave the answer to them."
                )
        if is_own_tool(tool, params, project):
            return None
        view = self._read(self.runtime.open_steps, binding.trace)
        if view is None or view["status"] != "running":
            return None
        refusals = []
        for request in view["open"]:
            policy = request.get("tools")
            why = None if policy is None else refusal(policy, tool, params, project)
            if why is None:
                return None
            refusals.append((request, policy, why))
        request, policy, why = refusals[0]
        allowed = ", ".join(policy.get("allow", [])) or "every tool"
        denied = f" and denies {', '.join(policy['deny'])}" if policy.get("deny") else ""
        return (
            f"[Tether] {tool} may not run while the {request['type']} {request['name']!r} is "
            f"open ({why}): the tools policy of {policy['node']!r} allows {allowed}{denied}. "
            f"Use an allowed tool, or finish the step and answer it through Tether first "
            f"(step {request['step']} of {binding.trace})."
        )

    def post_tool(
        self,
        session_id: str,
        project: str,
        tool: str,
        params: dict[str, Any],
        response: Any,
        *,
        ok: bool | None,
    ) -> None:
        """Bind the session to an execution it started or resumed (`bind: auto`), else record
        the call as evidence in the bound execution (`evidence`), unless it is Tether's own.
        `ok`: how the call went, None when the harness gave no sign (`hooks.tool_ok`)."""
        if ok is not False and self.settings["bind"] == "auto":
            found = started(tool, params, response, project, ok)
            if found is not None:
                self.bind(session_id, found)
                return
        binding = self.bound(session_id, project) if self.settings["evidence"] else None
        if binding is None:
            return
        from tether.guard.steptools import is_own_tool

        if not is_own_tool(tool, params, project):
            self._read(self.runtime.record_tool, binding.trace, tool, params, ok=ok)

    def stop(self, session_id: str, project: str) -> dict[str, Any] | None:
        """Claude Code's output for a `Stop` of a bound session (None: let it stop quietly)."""
        mode = self.settings["stop"]
        binding = self.bound(session_id, project) if mode != "off" else None
        if binding is None:
            return None
        if mode == "warn":
            view = self._read(self.runtime.open_steps, binding.trace)
            if view is None or view["status"] != "running":
                return None
            from tether.engine.core import waits_on_person

            if waits_on_person(view["open"]):
                return {"systemMessage": _for_a_person(binding.trace, view["open"])}
            return {"systemMessage": _open_step(binding.trace, view["current"])}
        answer = self._read(
            self.runtime.stop, binding.trace, cap=int(self.settings["max_stop_blocks"])
        )
        if answer is None:
            return None
        current = answer["current"]
        if answer.get("waiting") == "person":
            return {"systemMessage": _for_a_person(binding.trace, [current])}
        if answer["status"] == "allowed":
            return {
                "systemMessage": f"[Tether] Stop let through after {answer['cap']} refusals in a "
                f"row; {_open_step(binding.trace, current)}"
            }
        return {
            "decision": "block",
            "reason": f"{_open_step(binding.trace, current)} {_how(binding.trace, current)} "
            f"(Stop refused {answer['blocks']} of {answer['cap']} times in a row.)",
        }


_ONLY_A_PERSON = (
    "Only a person answers a human step: with `tether approve` or `tether reject` in their own "
    "terminal, or Approve / Reject in the viewer (`tether view`)."
)


def _for_a_person(trace: str, requests: list[dict[str, Any]]) -> str:
    """What the user is told when the agent stops while the execution waits on them."""
    asks = "; ".join(f"{r['name']!r} asks: {gist(r, 200)} (step {r['step']})" for r in requests)
    from tether.person import command_line

    approve, reject = (command_line("tether", verb, trace) for verb in ("approve", "reject"))
    return (
        f"[Tether] The execution {trace} waits on a person, so the agent may stop. {asks}. "
        f"Answer it with `{approve}` or `{reject}` (with --step when several wait), or in the "
        "viewer; the agent cannot."
    )


def _open_step(trace: str, current: dict[str, Any]) -> str:
    # The protocol gate's text is the protocol itself: its name says enough.
    text = gist(current, 200) if current.get("path") is not None else ""
    return (
        f"[Tether] The execution {trace} is still running; its open step is the "
        f"{current['type']} {current['name']!r}" + (f": {text}" if text else ".")
    )


def _how(trace: str, current: dict[str, Any]) -> str:
    from tether.person import command_line

    token = current["step"]
    if current.get("path") is None:
        submit = command_line("tether", "submit", trace, "success", "--step", token)
        return (
            f"Accept the protocol first: submit success for step {token} (MCP submit, or "
            f"`{submit}`), then work through the steps."
        )
    if current["type"] == "evaluate":
        answer = command_line("tether", "eval", trace, "true", "--step", token)
        return (
            f"Judge it and answer with eval true or false for step {token} (MCP eval, or "
            f"`{answer}`)."
        )
    submit = command_line("tether", "submit", trace, "success", "--step", token)
    return (
        f"Do the work, then answer with submit success (or failure) for step {token} (MCP "
        f"submit, or `{submit}`)."
    )
