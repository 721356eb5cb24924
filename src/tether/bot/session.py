"""The bot tool operations: continue, enter a phase, enter an action, close, restart, and
call an independent action.

Owns what each bot tool does to an execution, in terms of the verbs: every operation reads the
execution document afresh (`Runtime.get`), so there is no workflow state in memory to go stale and
any number of servers can share one execution. On first use it starts the execution from the bot's
tree (`Runtime.start`) and accepts the protocol gate itself (chat clients navigate by intent; the
runtime still enforces order, checks and writes). It never answers an action's steps: moving is
`Runtime.jump`, completing is `Runtime.close`, and nothing else. "Completed" actions are derived
from the trace (a `close` entry, or an answer whose outcome is `action_complete`, since the last
reset). Every result describes where the execution stands: phase, action, instructions,
completion criteria, what `close` will hold the action to, and how many actions were closed and
skipped (passed over without a close, as a jump does) of how many. The close of the last action
does not finish the workflow while a human step of another action has no person's approval
since the last reset (a jump passes a sign-off over, never skips it), nor, when the bot's root
has `require_all`, while another action is not closed: nothing moves, and the answer
(`incomplete`) names what is left.

An independent action (outside the workflow) is called, and closed, through
`Runtime.independent`, which moves nothing.

Restart reloads the tree file and, when it changed, swaps the execution's embedded tree through
`Runtime.replace_tree`, which refuses a tree the execution no longer fits.

It does not own tool names or the bot shape (`tether.bot.surface`), MCP (`tether.mcp.bot`) or
the runtime itself (`tether.verbs`).
"""

from __future__ import annotations

import os
from typing import Any

from tether.bot.surface import CLOSE, DEFAULT_SERVER, Action, Surface, surface_of
from tether.engine.names import Kind, Reply, Result, Status
from tether.errors import TetherError
from tether.values import check_values
from tether.verbs import Runtime

GATE_NOTE = "accepted by the bot server: the agent navigates with bot tools"


class BotSession:
    """The bot tools of the execution at `state` (any store URI), started from the tree file at
    `tree` when it does not exist yet, for a client that knows the server as `server` (which
    bounds the tool names). Holds no state of its own between calls."""

    def __init__(
        self, runtime: Runtime, tree: str, state: str, server: str = DEFAULT_SERVER
    ) -> None:
        self.runtime = runtime
        self.tree = os.path.abspath(tree)
        self.state = state
        self.server = server

    # -- reading --------------------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        """The execution document, after starting it and accepting its gate if need be."""
        try:
            doc = self.runtime.get(self.state)
        except TetherError as exc:
            if exc.code != "not_found":
                raise
            from tether.tree.load import load_tree

            tree = load_tree(self.tree)
            surface_of(tree.data, tree.source)  # refuse a tree that is no bot before storing it
            try:
                self.runtime.start(self.tree, self.state)
            except TetherError as race:  # another server started it, unless files are left over
                if race.code != "already_exists" or "files" in race.details:
                    raise
            doc = self.runtime.get(self.state)
        if doc["status"] == Status.RUNNING and not doc["protocol_accepted"]:
            gate = doc["open"][0]
            try:
                self.runtime.submit(self.state, Result.SUCCESS, note=GATE_NOTE, step=gate["step"])
            except TetherError as race:
                if race.code != "stale_step":
                    raise
            doc = self.runtime.get(self.state)
        return doc

    def surface(self, doc: dict[str, Any] | None = None) -> Surface:
        """The tool surface of the execution's embedded tree."""
        doc = doc if doc is not None else self.document()
        return surface_of(doc["tree"], f"the execution at {doc['uri']}", self.server)

    # -- the tools ------------------------------------------------------------------------------

    def resume(self) -> dict[str, Any]:
        """`{bot}_tool`: where the execution stands."""
        doc = self.document()
        return describe(doc, self.surface(doc), "current")

    def enter_phase(self, phase: str, note: str | None = None) -> dict[str, Any]:
        """`{bot}_{phase}_tool`: jump to the phase's first unfinished action. When every action
        of the phase is complete, nothing moves and the result says so."""
        doc = self.document()
        surface = self.surface(doc)
        target = surface.phase(phase)
        done = completed_paths(doc["trace"])
        first = next((a for a in target.actions if list(a.path) not in done), None)
        if first is None:
            names = ", ".join(a.tool for a in target.actions)
            out = describe(doc, surface, "phase_complete")
            out["message"] = (
                f"Every action of phase {phase!r} is complete; nothing moved. To redo one, call "
                f"its action tool ({names}). " + out["message"]
            )
            return out
        return self._go(doc, surface, first, note)

    def enter_action(self, phase: str, action: str, note: str | None = None) -> dict[str, Any]:
        """`{bot}_{phase}_{action}`: jump to one action (out of order is allowed)."""
        doc = self.document()
        surface = self.surface(doc)
        return self._go(doc, surface, surface.action(phase, action), note)

    def close(
        self, note: str | None = None, values: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{bot}_close_current_action`: write `values` (var path → JSON value), then mark the
        current action done and move on; refused with the reason while its checks or writes do
        not hold (the values stay written)."""
        doc = self.document()
        surface = self.surface(doc)
        _require_running(doc)
        request = doc["open"][0]
        closing = surface.at(request["path"])
        check_values(values)
        for path, value in (values or {}).items():
            self.runtime.var_write(self.state, path, value)
        left = unfinished(doc["trace"], surface, closing)
        if left:
            return _incomplete(self.document(), surface, closing, left)
        closed = self.runtime.close(self.state, note=note, step=request["step"])
        after = self.document()
        out = describe(after, surface, "closed" if after["status"] == Status.RUNNING else "done")
        out["closed"] = {"phase": closing.phase, "action": closing.name}
        out["next"] = closed["current"]
        moved = f"Closed {closing.phase}.{closing.name}."
        if after["status"] == Status.RUNNING and out["phase"] != closing.phase:
            moved += f" Phase {closing.phase!r} is complete; on to phase {out['phase']!r}."
        out["message"] = f"{moved} {out['message']}"
        return out

    def independent(
        self,
        name: str,
        close: bool = False,
        values: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """`{bot}_{action}` of an independent action: its instructions, recorded in the trace,
        the workflow left where it is; with `close`, write `values` and close it, refused
        (writing nothing) while its writes or checks do not hold."""
        doc = self.document()
        surface = self.surface(doc)
        action = surface.independent_action(name)
        _require_running(doc)
        self.runtime.independent(self.state, name, close=close, values=values, note=note)
        out = describe(self.document(), surface, "independent_closed" if close else "independent")
        out["independent"] = {
            "action": action.name,
            **({"description": action.description} if action.description else {}),
            "instructions": list(action.instructions),
            "completion_criteria": list(action.criteria),
            "checks": list(action.checks),
            "writes": list(action.writes),
        }
        did = "Closed" if close else "Here are the instructions of"
        out["message"] = (
            f"{did} the independent action {name} (in `independent`); the workflow did not "
            f"move. {out['message']}"
        )
        return out

    def restart(self) -> dict[str, Any]:
        """`{bot}_restart`: reload the tree file, keeping the execution."""
        from tether.tree.load import load_tree

        doc = self.document()
        new = load_tree(self.tree)
        if new.hash == doc["tree_hash"]:
            out = describe(doc, self.surface(doc), "unchanged")
            out["message"] = f"The tree file is unchanged. {out['message']}"
            return out
        surface = surface_of(new.data, new.source, self.server)
        self.runtime.replace_tree(self.state, new.source)
        after = self.document()
        out = describe(after, surface, "restarted")
        out["message"] = f"Reloaded {os.path.basename(new.source)}. {out['message']}"
        return out

    # -- internals ------------------------------------------------------------------------------

    def _go(
        self, doc: dict[str, Any], surface: Surface, target: Action, note: str | None
    ) -> dict[str, Any]:
        _require_running(doc)
        if doc["open"][0]["path"] == list(target.path):
            return describe(doc, surface, "current")
        self.runtime.jump(self.state, list(target.path), note=note)
        return describe(self.document(), surface, "jumped")


def unfinished(trace: list[dict[str, Any]], surface: Surface, closing: Action) -> list[Action]:
    """What keeps the workflow open when `closing` is closed, if it is the last action: every
    other action with a human step no person approved since the last reset and, with
    `require_all`, every other action not closed."""
    if closing != surface.actions[-1]:
        return []
    trace = _since_reset(trace)
    done, signed = completed_paths(trace), _approved(trace)
    return [
        a
        for a in surface.actions
        if a != closing
        and (
            any((list(a.path), i) not in signed for i in a.human)
            or (surface.require_all and list(a.path) not in done)
        )
    ]


def _incomplete(
    doc: dict[str, Any], surface: Surface, closing: Action, left: list[Action]
) -> dict[str, Any]:
    """The answer to closing the last action while `left` keep the workflow open (see
    `unfinished`): nothing moved, and what is left, with the tools that go there."""
    out = describe(doc, surface, "incomplete")
    out["unclosed"] = [f"{a.phase}.{a.name}" for a in left]
    here = f"{closing.phase}.{closing.name}"
    why = "every action closed (require_all)" if surface.require_all else "every sign-off"
    out["message"] = (
        f"{here} was not closed: {surface.title} requires {why}, and {here} is its last, but "
        f"{len(left)} of {len(surface.actions)} actions are not done: "
        f"{', '.join(_left(a) for a in left)}. Go to each with its tool, then come back to "
        f"{here} ({closing.tool}) and close it."
    )
    return out


def _left(action: Action) -> str:
    """An action that keeps the workflow open, as the message names it."""
    waits = " (a person's sign-off: tell the user, who answers with tether approve)"
    return f"{action.phase}.{action.name} ({action.tool}){waits if action.human else ''}"


def _since_reset(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries after the last reset."""
    since = 0
    for i, entry in enumerate(trace):
        if entry["kind"] == Kind.RESET:
            since = i + 1
    return trace[since:]


def _approved(trace: list[dict[str, Any]]) -> list[tuple[list[int], int]]:
    """The human steps a person approved in `trace`, as (action path, step index)."""
    return [
        (e["cursor"]["path"], e["cursor"]["step"])
        for e in trace
        if e["kind"] == Kind.HUMAN and e.get("outcome") == Result.SUCCESS and e.get("cursor")
    ]


def _require_running(doc: dict[str, Any]) -> None:
    if doc["status"] != Status.RUNNING:
        raise TetherError(
            "execution_finished",
            f"the execution at {doc['uri']} is {doc['status']}; nothing more can move "
            f"(tether reset {doc['uri']} starts it over)",
        )


def completed_paths(trace: list[dict[str, Any]]) -> list[list[int]]:
    """The paths of the actions completed since the last reset, in the order they completed."""
    done: list[list[int]] = []
    for entry in _since_reset(trace):
        closed = entry["kind"] == Kind.CLOSE or entry.get("outcome") == Reply.ACTION_COMPLETE
        if closed and entry.get("cursor") and entry["cursor"]["path"] not in done:
            done.append(entry["cursor"]["path"])
    return done


def skipped_actions(doc: dict[str, Any], surface: Surface, done: list[list[int]]) -> list[Action]:
    """The actions passed over without a close: while the workflow runs, those before the
    current action; once it is over, every one not closed."""
    if doc["status"] == Status.RUNNING:
        here = tuple(doc["open"][0]["path"])
        behind = [a for a in surface.actions if a.path < here]
    else:
        behind = list(surface.actions)
    return [a for a in behind if list(a.path) not in done]


def describe(doc: dict[str, Any], surface: Surface, status: str) -> dict[str, Any]:
    """The result of every bot tool: where the execution stands and what the agent should do."""
    done = completed_paths(doc["trace"])
    skipped = skipped_actions(doc, surface, done)
    out: dict[str, Any] = {
        "status": status,
        "bot": surface.title,
        "completed": [f"{surface.at(p).phase}.{surface.at(p).name}" for p in done],
        "actions": {
            "closed": len(done),
            "skipped": len(skipped),
            "total": len(surface.actions),
        },
    }
    close_tool = surface.tool(CLOSE)
    if doc["status"] == Status.COMPLETE:
        out["status"] = "done"
        out["message"] = f"Every phase of {surface.title} is complete."
        if skipped:
            out["message"] = (
                f"Every phase of {surface.title} is complete, but only {len(done)} of "
                f"{len(surface.actions)} actions were closed; {len(skipped)} were skipped: "
                f"{', '.join(f'{a.phase}.{a.name}' for a in skipped)}."
            )
        return out
    if doc["status"] == Status.FAILED:
        out["status"] = "failed"
        out["message"] = (
            f"The execution has failed: {doc.get('failure') or 'no reason recorded'} "
            f"(tether reset {doc['uri']} starts it over)."
        )
        return out
    action = surface.at(doc["open"][0]["path"])
    phase = surface.phases[action.path[0]]
    out.update(
        phase=action.phase,
        action=action.name,
        position={
            "phase": action.path[0] + 1,
            "phases": len(surface.phases),
            "action": action.path[1] + 1,
            "actions": len(phase.actions),
        },
        instructions=list(action.instructions),
        completion_criteria=list(action.criteria),
        checks=list(action.checks),
        writes=list(action.writes),
    )
    if action.description:
        out["description"] = action.description
    needs = ""
    if action.writes:
        needs = f" with values for {', '.join(action.writes)}"
    out["message"] = (
        f"Now at {action.phase}.{action.name} (action {action.path[1] + 1} of "
        f"{len(phase.actions)} in phase {action.path[0] + 1} of {len(surface.phases)}). Follow "
        f"the instructions; when the completion criteria are met, call {close_tool}{needs}."
    )
    return out
