"""The public builders (`tether.build`) under the short names semantics tests read like the tree
they exercise, and a `Walk` that also checks, on every answer, that the engine never mutates
the state it was given. Trees built here skip the loader's checks (`build.tree` runs them), so a
test may build what a file could not say."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest

from tether import build
from tether.engine import public as engine
from tether.errors import TetherError

ev, ins, chk, each = build.evaluate, build.instruct, build.check, build.for_each
action, seq, sel, par = build.action, build.sequence, build.selector, build.parallel

_clock = itertools.count()


def tree(
    root: dict[str, Any], var: dict[str, Any] | None = None, const: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The normalised tree with `root`, as `build.tree` makes it but unchecked."""
    state = {"var": var or {}, "const": const or {}}
    return {"name": "test", "version": "1", "state": state, "root": root}


def _now() -> str:
    return f"2026-01-01T00:00:{next(_clock) % 60:02d}.000Z"


class Walk(build.Walk):
    """`build.Walk` with fixed step tokens and timestamps, checking on every answer that the
    engine never mutates the state it was given."""

    def __init__(self, t: dict[str, Any], accept: bool = True, **scopes: Any) -> None:
        super().__init__(t, accept, clock=_now, salt="abcd1234", **scopes)

    def apply(self, answer: engine.Answer) -> dict[str, Any]:
        given, before = self.state, json.dumps(self.state, sort_keys=True)
        try:
            return super().apply(answer)
        finally:
            assert json.dumps(given, sort_keys=True) == before, "engine mutated its input"


def refused(code: str, w: build.Walk, answer: engine.Answer) -> TetherError:
    """Apply `answer`, which must be refused with `code` and leave the state as it was."""
    before = copy.deepcopy(w.state)
    with pytest.raises(TetherError) as err:
        w.apply(answer)
    assert err.value.code == code, err.value.message
    assert w.state == before, "a refused answer changed the state"
    return err.value


# A tree file with a human step beside an agent's step: the release notes are drafted, then a
# person signs off while the agent lints them.
# A `parallel` node of two one-step actions: two branches, each a team's agent may claim.
PAIR: dict[str, Any] = {
    "name": "pair",
    "tree": {
        "type": "parallel",
        "name": "Both",
        "children": [
            {"type": "action", "name": "Left", "steps": [{"instruct": "Do the left part."}]},
            {"type": "action", "name": "Right", "steps": [{"instruct": "Do the right part."}]},
        ],
    },
}

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
