"""The shapes of what `tether.Runtime` returns, as `TypedDict`s for type checkers.

Owns the names a Python user's editor and type checker see for the verbs' results: the request
an agent answers (`Request`) and a verb's response (`Started`, `Answered`, `Resumed`,
`Verified`, `Forked`, `Replaced`). Every verb returns a plain `dict` at run time; this module
is imported only under `if TYPE_CHECKING:` (it imports `typing`, which the CLI's step path
never loads: `tests/cli/test_lean_start.py`). It does not build or check anything: the engine
(`tether.engine`) and the verb layer (`tether.verbs`) make the values, and the JSON Schemas
under `schema/` describe the stored documents.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Request(TypedDict, total=False):
    """The open request (`next`, and every answer's `next`), or the end of the execution.

    An open request has `type` (`evaluate`, `instruct` or `human`), `name`, `step` (the token to
    pass back), `path` (child indices from the root; `None` for the protocol gate) and `index`;
    with `type`: `expression` (evaluate), `instruction` and `writes` (instruct), `prompt` and
    `shows` (human), and for a human step with a timeout `deadline` (UTC, when it stops
    waiting) and `on_timeout` (`reject` or `fail`). `item` is the loop item inside a
    `for_each`; `tools` the tool policy that applies, `scope` the files it may write (a node's
    `writes`: `{"writes": [glob, ...], "node"}`); `claim` (`next --all` only) who holds the
    action (`agent`) and until when (`until`). A finished execution's request is
    `{"status": "done"}` or `{"status": "failure"}`.
    """

    type: str
    name: str
    step: str
    path: list[int] | None
    index: int
    expression: str
    instruction: str
    writes: list[str]
    prompt: str
    shows: dict[str, Any]
    deadline: str
    on_timeout: str
    item: dict[str, Any]
    tools: dict[str, Any]
    scope: dict[str, Any]
    claim: dict[str, str]
    status: str


class Started(TypedDict):
    """What `start` returns: the execution's canonical `uri`, its tree's name and hash, and
    `current`, the first request (the protocol gate)."""

    ok: bool
    status: str
    uri: str
    tree: str
    tree_hash: str
    message: str
    current: Request


class Answered(TypedDict, total=False):
    """What an answer returns (`eval`, `submit`, `approve`, `reject`, `think`, `var_write`,
    `reset`, `close`, `jump`, `independent`, `stop`, `record_tool`): always a `status` (such as
    `action_complete`, `evaluation_failed`, `running`, `written`, `recorded`, `reset`); most carry a
    `message` and `next` (the request that now follows) or `current`; `var_write` echoes the
    `path` and `value` written; `stop` adds its refusals in a row (`blocks`) and the `cap`."""

    status: str
    message: str
    next: Request
    current: Request
    path: str
    value: Any
    step: str
    blocks: int
    cap: int
    waiting: str


class Resumed(TypedDict):
    """What `resume` returns: `status` (`resumable`, `complete` or `failed`), the tree's name,
    the execution's phase and revision, and its current request."""

    status: str
    uri: str
    tree: str | None
    phase: str
    revision: int
    current: Request


class Replaced(TypedDict, total=False):
    """What `replace_tree` returns: `status` `replaced` (with `current`) or `unchanged`."""

    status: str
    uri: str
    tree_hash: str
    current: Request


class Verified(TypedDict):
    """What `verify` returns: `ok` when replaying the trace gives the stored state, else each
    difference (`field`, what the state holds, what replay gives)."""

    ok: bool
    uri: str
    entries: int
    revision: int
    differences: list[dict[str, Any]]


class Forked(TypedDict):
    """What `fork` returns: the new execution's `uri`, where it came from, how many trace
    entries it kept and its `next` request."""

    status: str
    uri: str
    forked_from: dict[str, Any]
    entries: int
    next: Request
