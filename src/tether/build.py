"""Trees in code: build a behavior tree with Python calls, and walk it in process.

Owns the builders — the composites `sequence`, `selector` and `parallel`, the `action` and its
steps `evaluate`, `instruct`, `check` and `human`, the loops `for_each` and `repeat` — and
`tree`, which checks what they built as a tree file is checked (`tether.tree.load.normalise`:
names, expressions, policies) and returns the normalised tree the engine runs; `document` is
the same tree in the file form, to save as JSON and drive with `tether.Runtime` or the
`tether` command. `Walk` drives a built tree through the pure engine (`tether.engine.public`), as
a py_trees user ticks a tree in a test: no store, no files, the state and the trace in memory.

Modifiers (`retries`, `optional`, `when`, `invert`, `tools`, `description`, `for_each=`,
`repeat=`) are keyword arguments of any node builder, spelt as in a tree file
(`docs/tree-format.md`). It does not persist anything (the stores do), and it is not how a
tree file is read (`tether.load_tree`). Example: `docs/trees-in-code.md`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, TypedDict, Unpack

from tether.engine import public as engine
from tether.tree.canonical import tree_hash
from tether.tree.load import normalise
from tether.verbs import utc_now

Node = dict[str, Any]
Step = dict[str, Any]


def evaluate(text: str) -> Step:
    """A step the agent judges true or false (`eval`)."""
    return {"evaluate": text}


def instruct(text: str, writes: list[str] | None = None) -> Step:
    """A step of work the agent does (`submit`); `writes` are the `$VAR` paths it must write
    before it may succeed."""
    return {"instruct": text, **({"writes": writes} if writes else {})}


def check(expression: str) -> Step:
    """A step the runtime decides itself: a CEL expression over `VAR`, `CONST` (and `TOOLS`)."""
    return {"check": expression}


def human(question: str) -> Step:
    """A step only a person answers (`approve` or `reject`)."""
    return {"human": question}


def action(name: str, *steps: Step, **modifiers: Any) -> Node:
    """A leaf: its `steps` in order, each to be answered (or checked) before the next."""
    return {"type": "action", "name": name, "steps": list(steps), **modifiers}


def sequence(name: str, *children: Node, **modifiers: Any) -> Node:
    """Runs `children` in order; fails on the first that fails."""
    return {"type": "sequence", "name": name, "children": list(children), **modifiers}


def selector(name: str, *children: Node, **modifiers: Any) -> Node:
    """Tries `children` in order; succeeds on the first that succeeds."""
    return {"type": "selector", "name": name, "children": list(children), **modifiers}


def parallel(name: str, *children: Node, policy: Any = "all", **modifiers: Any) -> Node:
    """Opens every child at once; `policy` is `all`, `any` or the number of successes needed."""
    return {
        "type": "parallel",
        "name": name,
        "children": list(children),
        "policy": policy,
        **modifiers,
    }


def for_each(
    expression: str,
    name: str = "item",
    max: int = 100,
    parallel: bool = False,
    policy: str | int = "all",
) -> dict[str, Any]:
    """A `for_each` loop (pass as `for_each=`): the node runs once per item of the CEL list
    `expression`, each request carrying the item as `name`; at most `max` items. With
    `parallel`, the items run side by side, one branch each, decided by `policy` (`all`, `any`
    or N items) as a parallel node is."""
    loop: dict[str, Any] = {"in": expression, "as": name, "max": max}
    return loop | {"parallel": True, "policy": policy} if parallel else loop


def repeat(until: str, max: int = 100) -> dict[str, Any]:
    """A `repeat` loop (pass as `repeat=`): the node runs again until the CEL condition `until`
    holds, at most `max` times."""
    return {"until": until, "max": max}


def document(
    root: Node,
    *,
    name: str = "tree",
    version: str = "1",
    var: dict[str, Any] | None = None,
    const: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The tree with `root` as a tree file holds it (save it as JSON to start it with
    `tether.Runtime` or `tether start`); `var` and `const` are its initial scopes."""
    state = {"var": var or {}, "const": const or {}}
    return {"name": name, "version": version, "state": state, "tree": root}


class Fields(TypedDict, total=False):
    """What a tree document holds besides its root (`document`'s keywords)."""

    name: str
    version: str
    var: dict[str, Any] | None
    const: dict[str, Any] | None


def tree(root: Node, **fields: Unpack[Fields]) -> dict[str, Any]:
    """The tree with `root` and `fields` (as `document` takes them), checked as a tree file is
    and normalised (what `Walk` and the engine run); a mistake is `invalid_tree` (or
    `invalid_expression`), naming where it is."""
    built = document(root, **fields)
    return normalise(built, f"the tree {built['name']!r} built in code")


class Walk:
    """Drives one execution of a normalised tree (`tree(...)`) through the pure engine.

    `state` is the execution's state, `trace` every trace entry so far, `responses` every
    answer's response. With `accept` (the default) the protocol gate is accepted first, so
    `next()` is the tree's first request. `var` and `const` override the tree's initial scopes;
    `clock` gives each entry's timestamp and `salt` the step tokens' (random by default). An
    answer the engine refuses raises `TetherError` and changes nothing.
    """

    def __init__(
        self,
        tree: dict[str, Any],
        accept: bool = True,
        *,
        var: dict[str, Any] | None = None,
        const: dict[str, Any] | None = None,
        clock: Callable[[], str] = utc_now,
        salt: str | None = None,
    ) -> None:
        self.tree = tree
        self.clock = clock
        self.state = engine.initial_state(
            tree,
            uri=f"memory://{tree['name']}",
            tree_uri=f"code:{tree['name']}",
            tree_hash=tree_hash(tree),
            now=clock(),
            salt=salt or secrets.token_hex(4),
            var=var,
            const=const,
        )
        self.trace: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []
        if accept:
            self.submit("success")

    def apply(self, answer: engine.Answer) -> dict[str, Any]:
        """Apply one answer (a `tether.engine.public` answer); its response."""
        tools = engine.tool_records(self.trace, engine.tools_since(self.state))
        outcome = engine.apply(self.tree, self.state, answer, self.clock(), tools=tools)
        if isinstance(answer, engine.Reset) and outcome.entries:
            self.trace = []
        self.trace.extend(outcome.entries)
        self.state = outcome.state
        self.responses.append(outcome.response)
        return outcome.response

    def next(self) -> dict[str, Any]:
        """The open request (the first inside a `parallel`), or `{"status": "done"}` /
        `{"status": "failure"}`."""
        return engine.current(self.state)

    def open(self) -> list[dict[str, Any]]:
        """Every open request."""
        return engine.all_open(self.state)

    def names(self) -> list[str | None]:
        """The names of the open requests (the status, once finished)."""
        return [r.get("name", r.get("status")) for r in self.open()]

    def eval(
        self, result: bool, step: str | None = None, note: str | None = None
    ) -> dict[str, Any]:
        """Answer the evaluate step (or the one whose token is `step`) with `result`."""
        return self.apply(engine.Eval(result, note, step))

    def submit(
        self, status: str, step: str | None = None, note: str | None = None
    ) -> dict[str, Any]:
        """Answer the instruct step (or the gate) with `success`, `failure` or `running`."""
        return self.apply(engine.Submit(status, note, step))

    def approve(self, step: str | None = None, note: str | None = None) -> dict[str, Any]:
        """A person's yes to the open human step."""
        return self.apply(engine.Human(True, "api", note, step))

    def reject(self, step: str | None = None, note: str | None = None) -> dict[str, Any]:
        """A person's no to the open human step: its action fails."""
        return self.apply(engine.Human(False, "api", note, step))

    def write(self, path: str, value: Any) -> dict[str, Any]:
        """Write `value` at the dotted `path` of `$VAR`."""
        return self.apply(engine.VarWrite(path, value))

    def think(self, thought: str) -> dict[str, Any]:
        """Record a checkpoint on the action in flight."""
        return self.apply(engine.Think(thought))

    def reset(self) -> dict[str, Any]:
        """Clear the trace, restore the scopes and re-arm the protocol gate."""
        return self.apply(engine.Reset())

    def asked(self, kind: str | None = None) -> list[str]:
        """The names of the steps answered, in order: evaluate and instruct steps, or the
        trace entries of `kind` (`check`, `human`, ...)."""
        kinds = (kind,) if kind else ("evaluate", "instruct")
        return [e["name"] for e in self.trace if e["kind"] in kinds]
