"""A recorded session's workflow binding, replayed on executions of its own, in memory.

Owns: what `tether guard replay` does for the `workflow` section. The executions the transcript
starts or forks through Tether (an MCP `…start_execution` or `…fork_execution`, a shell `tether
start` or `tether fork`) are made again, from the same tree files, as `memory://` executions, and
every Tether call the transcript makes on them (MCP tools, `tether` commands) is made again there,
through the same verbs. The session is bound to them as it was (`bind: auto`), and a `Binder`
over a scratch state folder then answers each event as the hooks would: the context at each
prompt, a `deny` for a call outside the open step's policy, evidence for each call, a refused
`Stop` where a turn ended. So a transcript tests the whole feature, and nothing is read but the
tree files it starts from and the executions it resumes, inside the project (the transcript's
`cwd`), and nothing written outside a scratch folder.

An execution the transcript resumes without having started it (a session that goes on with
an earlier one's work) is copied into memory as it stood when resumed, read only from a file
inside the project, and replayed there like the others. The configured `trace` is not replayed
(it names a real execution, which replay never writes). It does not read the transcript
(`replay`) or decide anything itself (`binding`).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from typing import Any

from tether.engine.names import Kind
from tether.errors import TetherError
from tether.files import is_inside
from tether.guard.binding.binder import Binder, Binding, resolve, result_uri
from tether.guard.binding.steptools import MCP_TOOLS, is_own_tool, simple_commands, tether_args

SESSION = "replay"
_OPENERS = ("start", "resume", "start_execution", "resume_execution")
_FORKS = ("fork", "fork_execution")
_counter = itertools.count()


def _in(project: str, tree: str) -> str | None:
    """A tree file named by a recorded call (relative to the project), or None when it lies
    outside the project, however it climbs out (`..`, a symbolic link): a transcript names no
    file that replay reads beyond the project's own."""
    from tether.verbs import file_of

    named = file_of(tree) if tree.startswith("file:") else tree
    path = os.path.realpath(os.path.join(project, named))
    return path if is_inside(path, project) else None


def _opened(result: Any) -> int | None:
    """The trace seq at which the request a recorded resume answered with was opened (the
    fourth part of its step token), when the answer was recorded."""
    if isinstance(result, list):  # an MCP result's text blocks
        result = next((b.get("text") for b in result if isinstance(b, dict)), None)
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return None
    current = result.get("current") if isinstance(result, dict) else None
    step = current.get("step") if isinstance(current, dict) else None
    parts = step.rsplit(":", 2) if isinstance(step, str) else []
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


class RecordedBinding:
    """The in-memory executions of one replay, and the binder that answers for them."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self._folder = tempfile.mkdtemp(prefix="tether-replay-")
        self.binder = Binder({**settings, "trace": None}, self._folder)
        self.auto = settings["bind"] == "auto"
        self.executions: dict[str, str] = {}  # the recorded execution's URI -> its replay

    def close(self) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)

    def context(self, project: str) -> str | None:
        return self.binder.context(SESSION, project)

    def pre_tool(self, project: str, tool: str, params: dict[str, Any]) -> str | None:
        return self.binder.pre_tool(SESSION, project, tool, params)

    def stop(self, project: str) -> dict[str, Any] | None:
        return self.binder.stop(SESSION, project)

    def post_tool(
        self, project: str, tool: str, params: dict[str, Any], result: Any, ok: bool | None
    ) -> None:
        """A call that ran: Tether's own is made again on the replay's executions, any other
        is evidence."""
        if not is_own_tool(tool, params, project):
            self.binder.post_tool(SESSION, project, tool, params, result, ok=ok)
        elif ok and tool.startswith("mcp__"):
            self._mcp(project, tool.rsplit("__", 1)[-1], params, result)
        elif ok:
            for words in simple_commands(str(params.get("command"))) or []:
                args = tether_args(words)
                if args:
                    self._shell(project, args, result)

    def _replayed(self, name: str, given: Any, project: str, result: Any = None) -> str | None:
        """The replay's URI for the execution a call names (a new one for a start)."""
        if not isinstance(given, str):
            return None
        if name in ("start", "start_execution"):
            return self._fresh(given, project, result)
        recorded = (name in _OPENERS and result_uri(result)) or resolve(given, project)
        if recorded not in self.executions and name in ("resume", "resume_execution"):
            return self._copy(recorded, project, result)
        return self.executions.get(recorded)

    def _copy(self, recorded: str, project: str, result: Any) -> str | None:
        """An in-memory copy of an execution the transcript resumes without having started it,
        read only from a file inside the project (never through a link out of it): its trace
        up to the opening of the request the resume answered with (all of it when the answer
        was not recorded), taking the step tokens the session answered it with."""
        path = _in(project, recorded) if recorded.startswith("file:") else None
        if path is None:
            return None
        runtime = self.binder.runtime
        try:
            entries = runtime.trace(path)
            opened = _opened(result)
            at = len(entries) if opened is None else sum(e["seq"] < opened for e in entries)
            copy = f"memory://tether-replay-{os.getpid()}-{next(_counter)}"
            runtime.fork(path, copy, at=at, same_tokens=True)
        except TetherError:
            return None
        self.executions[recorded] = copy
        return copy

    def _fresh(self, given: Any, project: str, result: Any = None) -> str | None:
        """A new in-memory execution standing for the one a start or a fork made, so a
        replay never writes where the recorded call did."""
        if not isinstance(given, str):
            return None
        recorded = result_uri(result) or resolve(given, project)
        self.executions[recorded] = f"memory://tether-replay-{os.getpid()}-{next(_counter)}"
        return self.executions[recorded]

    def _mcp(self, project: str, name: str, params: dict[str, Any], result: Any) -> None:
        from tether.mcp.tools import TOOLS

        if name not in MCP_TOOLS:
            return
        trace = self._replayed(name, params.get("trace_output"), project, result)
        if trace is None:
            return
        args = {**params, "trace_output": trace}
        if name == "fork_execution":
            new = self._fresh(params.get("new_trace_output"), project, result)
            if new is None:
                return
            args["new_trace_output"] = trace = new
        if isinstance(args.get("tree_uri"), str):
            args["tree_uri"] = _in(project, args["tree_uri"])
            if args["tree_uri"] is None:
                return
        spec = next(t for t in TOOLS if t.name == name)
        made = self._made(lambda: spec.handler(self.binder.runtime, args))
        if made and name in (*_OPENERS, *_FORKS):
            self._bind(trace, "mcp")

    def _shell(self, project: str, args: list[str], result: Any) -> None:
        from tether.command.args import parse
        from tether.command.verb_table import COMMANDS, HANDLERS

        command = COMMANDS.get(args[0])
        if command is None or "TRACE" not in command.positionals:
            return
        try:
            parsed = parse(command, args[1:])
        except TetherError:
            return
        trace = self._replayed(args[0], parsed.args.get("TRACE"), project, result)
        if trace is None:
            return
        parsed.args["TRACE"] = trace
        if args[0] == "fork":
            new = self._fresh(parsed.args.get("NEW"), project)
            if new is None:
                return
            parsed.args["NEW"] = trace = new
        tree = parsed.args.get("TREE")
        if tree is not None:
            parsed.args["TREE"] = _in(project, tree)
            if parsed.args["TREE"] is None:
                return
        if self._made(lambda: HANDLERS[args[0]](parsed)) and args[0] in (*_OPENERS, *_FORKS):
            self._bind(trace, "shell")

    @staticmethod
    def _made(call: Any) -> bool:
        """Make a recorded Tether call again; a refusal is what happened then too."""
        try:
            call()
        except TetherError:
            return False
        return True

    def _bind(self, trace: str, via: str) -> None:
        if self.auto:
            self.binder.bind(SESSION, Binding(trace, via))

    def report(self) -> list[dict[str, Any]]:
        """Each replayed execution: where it was recorded, how it ended, the `stop` and `tool`
        entries the binding added, and whether its trace verifies."""
        runtime = self.binder.runtime
        out = []
        for recorded, trace in self.executions.items():
            try:
                state = runtime.next(trace)
            except TetherError:
                continue  # its start was refused, as it was in the recording
            entries = runtime.trace(trace)
            out.append(
                {
                    "recorded": recorded,
                    "current": state,
                    "failure": runtime.get(trace).get("failure"),
                    "entries": [e for e in entries if e["kind"] in (Kind.STOP, Kind.TOOL)],
                    "verified": runtime.verify(trace)["ok"],
                }
            )
        return out
