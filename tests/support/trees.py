"""Builders for normalised trees (the form `tether.tree` produces), and a driver over the pure
engine, so semantics tests read like the tree they exercise."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest

from tether.engine import core
from tether.errors import TetherError

_clock = itertools.count()


def ev(text: str) -> dict[str, Any]:
    return {"evaluate": text}


def ins(text: str, writes: list[str] | None = None) -> dict[str, Any]:
    return {"instruct": text, **({"writes": writes} if writes else {})}


def chk(expression: str) -> dict[str, Any]:
    return {"check": expression}


def action(name: str, *steps: dict[str, Any], **mods: Any) -> dict[str, Any]:
    return {"type": "action", "name": name, "steps": list(steps), **mods}


def seq(name: str, *children: dict[str, Any], **mods: Any) -> dict[str, Any]:
    return {"type": "sequence", "name": name, "children": list(children), **mods}


def sel(name: str, *children: dict[str, Any], **mods: Any) -> dict[str, Any]:
    return {"type": "selector", "name": name, "children": list(children), **mods}


def par(name: str, *children: dict[str, Any], policy: Any = "all", **mods: Any) -> dict[str, Any]:
    return {"type": "parallel", "name": name, "children": list(children), "policy": policy, **mods}


def each(expression: str, name: str = "item", max: int = 100) -> dict[str, Any]:
    """A normalised `for_each` (pass as `for_each=`)."""
    return {"in": expression, "as": name, "max": max}


def tree(
    root: dict[str, Any], var: dict[str, Any] | None = None, const: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "name": "test",
        "version": "1",
        "state": {"var": var or {}, "const": const or {}},
        "root": root,
    }


class Walk:
    """Drives one execution through the pure engine, checking on every answer that the engine
    never mutates the state it was given, and keeping the whole trace for replay checks."""

    def __init__(self, t: dict[str, Any], accept: bool = True, **scopes: Any) -> None:
        self.tree = t
        self.state = core.initial_state(
            t,
            uri="memory://walk",
            tree_uri="file:///tree.yaml",
            tree_hash="sha256:x",
            now=self._now(),
            salt="abcd1234",
            **scopes,
        )
        self.trace: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []
        if accept:
            self.submit("success")

    @staticmethod
    def _now() -> str:
        return f"2026-01-01T00:00:{next(_clock) % 60:02d}.000Z"

    def apply(self, answer: core.Answer) -> dict[str, Any]:
        before = json.dumps(self.state, sort_keys=True)
        snapshot = copy.deepcopy(self.state)
        tools = core.tool_records(self.trace, core.tools_since(self.state))
        outcome = core.apply(self.tree, snapshot, answer, self._now(), tools=tools)
        assert json.dumps(snapshot, sort_keys=True) == before, "engine mutated its input"
        if outcome.entries:
            if isinstance(answer, core.Reset):
                self.trace = []
            self.trace.extend(outcome.entries)
        self.state = outcome.state
        self.responses.append(outcome.response)
        return outcome.response

    def next(self) -> dict[str, Any]:
        return core.current(self.state)

    def open(self) -> list[dict[str, Any]]:
        return core.all_open(self.state)

    def names(self) -> list[str | None]:
        return [r.get("name", r.get("status")) for r in self.open()]

    def eval(
        self, result: bool, step: str | None = None, note: str | None = None
    ) -> dict[str, Any]:
        return self.apply(core.Eval(result, note, step))

    def submit(
        self, status: str, step: str | None = None, note: str | None = None
    ) -> dict[str, Any]:
        return self.apply(core.Submit(status, note, step))

    def write(self, path: str, value: Any) -> dict[str, Any]:
        return self.apply(core.VarWrite(path, value))

    def think(self, thought: str) -> dict[str, Any]:
        return self.apply(core.Think(thought))

    def reset(self) -> dict[str, Any]:
        return self.apply(core.Reset())

    def asked(self, kind: str | None = None) -> list[str]:
        """Names of the steps the agent answered, in order (gate excluded)."""
        return [
            e["name"]
            for e in self.trace
            if e["kind"] in ((kind,) if kind else ("evaluate", "instruct"))
        ]


def refused(code: str, w: Walk, answer: core.Answer) -> TetherError:
    """Apply `answer`, which must be refused with `code` and leave the state as it was."""
    before = copy.deepcopy(w.state)
    with pytest.raises(TetherError) as err:
        w.apply(answer)
    assert err.value.code == code, err.value.message
    assert w.state == before, "a refused answer changed the state"
    return err.value


# A tree file with a human step beside an agent's step: the release notes are drafted, then a
# person signs off while the agent lints them.
SIGN_OFF_YAML = """\
name: sign-off
version: 1
tree:
  type: sequence
  name: Ship
  children:
    - type: action
      name: Draft
      steps:
        - instruct: Write the release notes at $VAR.notes.
          writes: [notes]
    - type: parallel
      name: Checks
      children:
        - type: action
          name: Sign_Off
          steps:
            - human: Read the release notes. Approve to publish.
        - type: action
          name: Lint
          steps:
            - instruct: Lint the notes.
"""
