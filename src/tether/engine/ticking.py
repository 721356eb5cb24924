"""The node semantics: ticking the tree from the root along the entered frames.

Owns: what each node type does (sequence, selector, parallel, action), the modifiers (`retries`,
`optional`, `when`, `for_each`, `repeat`, `invert`; their order on one node is in `Ticker.tick`
and docs/semantics.md), entering and finishing nodes (frames created and dropped, `events`),
`check` steps and modifier conditions with their `check` trace entries, the open requests and
step tokens a tick produces, the loop items a node sees, the work one answer's ticking may do
(`MAX_VISITS` nodes visited, `MAX_ENTRIES` trace entries; past either, `work_limit` names the
loops it was in), the tree navigation helpers (`node_at`, `tool_policy`, `write_scope`, node
keys), the injected CEL evaluators (`Condition`) and `judge`, the one evaluation of a check or
condition (a close's checks go through it too).

It does not own the phase and status a tick leaves (`tether.engine.phases.settle`), the answers
that move a frame before a tick (`tether.engine.applying`), nor how a trace entry is numbered
(`tether.engine.trace`). Pure: no I/O, no clock; the
CEL library is loaded only when a tree uses a condition.
"""

from __future__ import annotations

from collections.abc import Callable

from tether.engine.deadlines import deadline_after
from tether.engine.names import LEVELS, Key, Kind, RequestType, Result
from tether.engine.phases import settle
from tether.engine.trace import attempt_tools, node_key, record, step_token
from tether.engine.varpath import named_values
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The members read on every node visited, bound once: on Python 3.11 reading a member off its
# enum class costs three times a global (`EnumType.__getattr__` keeps the lookup uncached).
RUNNING, SUCCESS, FAILURE, SKIPPED = Result.RUNNING, Result.SUCCESS, Result.FAILURE, Result.SKIPPED
CHILD, RESULTS, STEP, OPENED, FAILING = Key.CHILD, Key.RESULTS, Key.STEP, Key.OPENED, Key.FAILING
BEGAN = Key.BEGAN
RETRIES, ITEMS, ITEM, RUNS, DEADLINE = Key.RETRIES, Key.ITEMS, Key.ITEM, Key.RUNS, Key.DEADLINE

# The work one answer may do, counted (never timed, so replay decides alike): the nodes its
# ticking visits and the trace entries it writes (those written before the tick included).
# Loops (`for_each`, `repeat`) are what can reach them; an answer that would pass either is
# refused whole with `work_limit`.
MAX_VISITS = 20_000
MAX_ENTRIES = 2_000

# An evaluator of CEL conditions: (expression, var, const, tools, names) -> bool, raising an
# exception whose str() is the reason when the expression cannot be evaluated. `tools` is what
# the expression sees as TOOLS: the tool calls recorded during the enclosing action's attempt,
# each {tool, input, ok, seq} (empty for `when`, `until`). `names` are the further names it
# sees: ITEM, ITEM_INDEX, ITEMS inside a `for_each` (empty elsewhere). Injected so the engine
# stays pure and the CEL library is loaded only when a tree uses `check`, `when` or `repeat`. A
# `for_each` list is evaluated by `default_list`, loaded the same way.
# (`object` for any JSON value: the alias is evaluated when the module loads, without `typing`.)
Condition = Callable[
    [str, dict[str, object], dict[str, object], list[dict[str, object]], dict[str, object]], bool
]


def default_condition(
    expression: str,
    var: dict[str, Any],
    const: dict[str, Any],
    tools: list[dict[str, Any]],
    names: dict[str, Any],
) -> bool:
    from tether.tree.expressions import evaluate_condition

    return evaluate_condition(expression, var, const, tools, names)


def default_list(
    expression: str, var: dict[str, Any], const: dict[str, Any], names: dict[str, Any]
) -> list[Any]:
    """A `for_each` list: the value of `expression`, which must be a list of JSON values."""
    from tether.tree.expressions import evaluate_list

    return evaluate_list(expression, var, const, names)


class Ticker:
    """Walks the tree from the root along the entered frames, finishing what can finish and
    collecting the open requests. One instance per answer."""

    def __init__(
        self,
        tree: dict[str, Any],
        state: dict[str, Any],
        now: str,
        entries: list[dict[str, Any]],
        condition: Condition,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.tree = tree
        self.tools = tools or []
        self.state = state
        self.runtime: dict[str, dict[str, Any]] = state["runtime"]
        self.now = now
        self.entries = entries
        self.condition = condition
        self.open: list[dict[str, Any]] = []
        self.finished: dict[str, str] = {}
        self.events: list[tuple[str, str]] = []
        self.reasons: list[str] = []
        self.retried: list[str] = []
        self.looped: list[str] = []
        self.visits = 0

    def _finish(self, key: str, result: str) -> None:
        self.finished[key] = result
        self.events.append((key, result))

    def run(self) -> Ticker:
        """Tick the tree on from its root and settle the state; this ticker tells what happened."""
        result = self.tick(self.tree["root"], "", [])
        settle(self.state, self.open, result, self.reasons, self.tree["root"]["name"])
        return self

    def tick(self, node: dict[str, Any], key: str, path: list[int]) -> str:
        """Tick a node through its modifiers, innermost first: the node's type runs, `invert`
        swaps its result, `retries` runs a failure again, `repeat` runs a success again while
        `until` is false, `optional` makes a failure count as success (a failed `for_each` item
        included: the loop goes on), `for_each` runs all that once per item, and `when`,
        checked once as the node is first reached, skips the lot."""
        self.visits += 1
        if self.visits > MAX_VISITS:
            raise self._over(path, f"visit more than {MAX_VISITS:,} nodes")
        frame = self.runtime.get(key)
        if frame is None:
            skipped = self._skipped(node, key, path)
            if skipped is not None:
                return skipped
            frame = self.runtime[key] = {}
        if "for_each" in node and ITEMS not in frame:
            listed = self._for_each(node, path, frame)
            if listed != RUNNING:
                return self._done(node, key, listed)
        result = (
            self._fan(node, key, path, frame) if fans(node) else self._runs(node, key, path, frame)
        )
        if result == RUNNING:
            return RUNNING
        return self._done(node, key, result)

    def _runs(self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]) -> str:
        """The node's runs in its frame: its type, then `invert`, `retries`, `repeat` and the
        items of a `for_each` run in order; RUNNING while a step is open, else the result."""
        while True:
            result = self._tick_type(node, key, path, frame)
            if result == RUNNING:
                return RUNNING
            if node.get("invert"):
                result = FAILURE if result == SUCCESS else SUCCESS
            used = frame.get(RETRIES, 0)
            if result == FAILURE and used < node.get("retries", 0):
                self.retried.append(f"{node['name']!r} attempt {used + 2} of {node['retries'] + 1}")
                frame = self._restart(key, frame, result, "retry", RETRIES, used + 1)
                continue
            if result == SUCCESS and "repeat" in node:
                result = self._until(node, path, frame)
                if result == RUNNING:
                    runs = frame.get(RUNS, 0) + 1
                    frame = self._restart(key, frame, SUCCESS, "repeat", RUNS, runs)
                    continue
            if ITEMS in frame:
                following = self._next_item(node, key, frame, result)
                if following is not None:
                    frame = following
                    continue
            return result

    def _fan(self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]) -> str:
        """A `for_each` with `parallel: true`: every item runs as a branch of its own (key
        `KEY.i`, path `[*path, i]`: the item's index stands in the path where a child's would),
        decided by the loop's `policy` as a `parallel` node's; a failed item counts as success
        under `optional`."""

        def item(i: int) -> str:
            self.visits += 1
            if self.visits > MAX_VISITS:
                raise self._over([*path, i], f"visit more than {MAX_VISITS:,} nodes")
            at = child_key(key, i)
            result = self._runs(node, at, [*path, i], self.runtime.setdefault(at, {}))
            if result == RUNNING:
                return RUNNING
            self._drop(at)
            self._finish(at, result)
            return SUCCESS if result == FAILURE and node.get("optional") else result

        policy = node["for_each"]["policy"]
        return self._branches(key, path, frame, len(frame[ITEMS]), policy, item)

    def _skipped(self, node: dict[str, Any], key: str, path: list[int]) -> str | None:
        """What a node first reached returns without running, by its `when` (None: it runs):
        SUCCESS when `when` is false (the node is SKIPPED), FAILURE when it cannot be evaluated
        (SUCCESS if `optional`)."""
        when = node.get("when")
        if when is None:
            return None
        verdict = self._condition(node, path, None, when, ("entered", "skipped"), [])
        if verdict is None:
            self._finish(key, FAILURE)
            return SUCCESS if node.get("optional") else FAILURE
        if not verdict:
            self._finish(key, SKIPPED)
            return SUCCESS
        return None

    def _next_item(
        self, node: dict[str, Any], key: str, frame: dict[str, Any], result: str
    ) -> dict[str, Any] | None:
        """After a run of a `for_each` node over one item ended with `result`: the frame of the
        run over the next item, or None when the loop ends (its reason told on a failure that
        is not `optional`)."""
        if result == SUCCESS or node.get("optional"):
            n = frame[ITEM] + 1
            if n < len(frame[ITEMS]):
                self.looped.append(f"{node['name']!r} item {n + 1} of {len(frame[ITEMS])}")
                return self._restart(key, frame, result, "item", ITEM, n)
        if result == FAILURE and not node.get("optional"):
            where = f"item {frame[ITEM] + 1} of {len(frame[ITEMS])}"
            self.reasons.append(f"{node['name']!r} failed at {where}.")
        return None

    def _done(self, node: dict[str, Any], key: str, result: str) -> str:
        """The node is finished with its own `result`: what its parent sees."""
        self._drop(key)
        self._finish(key, result)
        if result == FAILURE and node.get("optional"):
            return SUCCESS
        return result

    def _restart(
        self, key: str, frame: dict[str, Any], result: str, event: str, level: str, value: int
    ) -> dict[str, Any]:
        """End one run of a node with `result` and start another (`event`): its subtree is
        reset, the loop keys outside `level` are kept, and `level` becomes `value`."""
        self._finish(key, result)
        self._drop(key)
        self.events.append((key, event))
        kept: dict[str, Any] = {k: frame[k] for k in LEVELS[: LEVELS.index(level)] if k in frame}
        frame = self.runtime[key] = {**kept, level: value}
        return frame

    def _until(self, node: dict[str, Any], path: list[int], frame: dict[str, Any]) -> str:
        """After a successful run of a `repeat` node, check `until` (recorded `on: until`):
        SUCCESS when it holds, RUNNING when it does not and a run is left (run again), FAILURE
        when none is left or it cannot be evaluated."""
        repeat = node["repeat"]
        runs = frame.get(RUNS, 0) + 1
        left = runs < repeat["max"]
        words = ("passed", "repeat" if left else "failed")
        verdict = self._condition(node, path, None, repeat["until"], words, [], on="until")
        if verdict is None:
            return FAILURE
        if verdict:
            return SUCCESS
        if left:
            self.looped.append(f"{node['name']!r} run {runs + 1} of {repeat['max']}")
            return RUNNING
        self.reasons.append(
            f"{node['name']!r} ran {runs} times and its until {repeat['until']!r} is still false."
        )
        return FAILURE

    def _for_each(self, node: dict[str, Any], path: list[int], frame: dict[str, Any]) -> str:
        """Evaluate a `for_each` list as its node is entered, and record it as a `check` entry
        (`on: for_each`, with the item `count`): RUNNING with the list kept in the frame (its
        first item comes next), SUCCESS for an empty list, FAILURE for a list that cannot be
        evaluated or is longer than `max`."""
        loop = node["for_each"]
        names = loop_names(loop_items(self.tree, self.runtime, path))
        problem = None
        try:
            items = default_list(loop["in"], self.state["var"], self.state["const"], names)
        except Exception as exc:  # the evaluator's reason goes to the trace, whatever it is
            items, problem = [], str(exc) or type(exc).__name__
        if problem is None and len(items) > loop["max"]:
            problem = f"the list has {len(items)} items, more than its max {loop['max']}"
        need = loop.get("policy")
        if problem is None and items and isinstance(need, int) and len(items) < need:
            problem = f"the list has {len(items)} items, fewer than its policy {need} needs"
        if problem is not None:
            self._check(node, path, None, loop["in"], "error", on="for_each", note=problem)
            self.reasons.append(f"The for_each of {node['name']!r} failed: {problem}.")
            return FAILURE
        outcome = "entered" if items else "empty"
        self._check(node, path, None, loop["in"], outcome, on="for_each", count=len(items))
        if not items:
            return SUCCESS
        frame.update({ITEMS: items} if fans(node) else {ITEMS: items, ITEM: 0})
        return RUNNING

    def _tick_type(
        self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]
    ) -> str:
        kind = node["type"]
        if kind == "action":
            return self._action(node, key, path, frame)
        if kind == "parallel":
            return self._parallel(node, key, path, frame)
        stop_on = FAILURE if kind == "sequence" else SUCCESS
        children = node["children"]
        i = frame.get(CHILD, 0)
        while i < len(children):
            result = self.tick(children[i], child_key(key, i), [*path, i])
            if result == RUNNING:
                frame[CHILD] = i
                return RUNNING
            if result == stop_on:
                return result
            i += 1
        return SUCCESS if kind == "sequence" else FAILURE

    def _parallel(
        self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]
    ) -> str:
        children = node["children"]

        def child(i: int) -> str:
            return self.tick(children[i], child_key(key, i), [*path, i])

        return self._branches(key, path, frame, len(children), node.get("policy", "all"), child)

    def _branches(
        self,
        key: str,
        path: list[int],
        frame: dict[str, Any],
        n: int,
        policy: str | int,
        branch: Callable[[int], str],
    ) -> str:
        """`n` branches ticked side by side (`branch(i)` ticks the i-th), each result kept in
        the frame: SUCCESS once `policy` (all, any, N) is met, FAILURE once it no longer can
        be (the branches still running are halted), else RUNNING."""
        need = n if policy == "all" else 1 if policy == "any" else int(policy)
        results: list[bool | None] = frame.get(RESULTS) or [None] * n
        frame[RESULTS] = results
        ok, pending = results.count(True), results.count(None)  # kept as branches finish
        for i in range(n):
            if results[i] is None:
                result = branch(i)
                if result != RUNNING:
                    results[i] = result == SUCCESS
                    ok, pending = ok + (result == SUCCESS), pending - 1
            if ok >= need or ok + pending < need:
                self._halt(key, path, results)
                return SUCCESS if ok >= need else FAILURE
        return RUNNING

    def _halt(self, key: str, path: list[int], results: list[bool | None]) -> None:
        for i, r in enumerate(results):
            if r is None:
                self._drop(child_key(key, i))
                prefix = [*path, i]
                self.open = [o for o in self.open if o["path"][: len(prefix)] != prefix]

    def _action(
        self, node: dict[str, Any], key: str, path: list[int], frame: dict[str, Any]
    ) -> str:
        if frame.pop(FAILING, None):
            return FAILURE
        steps = node["steps"]
        if STEP not in frame and OPENED not in frame:  # the attempt's first tick
            frame.setdefault(BEGAN, self.state["seq"])
        k = frame.get(STEP, 0)
        while k < len(steps):
            step = steps[k]
            if "check" in step:
                seen = attempt_tools(frame, self.tools)
                if not self._condition(node, path, k, step["check"], ("passed", "failed"), seen):
                    return FAILURE
                k += 1
                continue
            frame[STEP] = k
            if OPENED not in frame:
                frame[OPENED] = self.state["seq"]
                if "timeout" in step:  # measured from the time of the answer that opened it
                    frame[DEADLINE] = deadline_after(self.now, step["timeout"])
            self.open.append(self._request(node, path, k, step, frame))
            return RUNNING
        return SUCCESS

    def _request(
        self,
        node: dict[str, Any],
        path: list[int],
        k: int,
        step: dict[str, Any],
        frame: dict[str, Any],
    ) -> dict[str, Any]:
        token = step_token(path, k, frame, self.state["salt"])
        if "evaluate" in step:
            req: dict[str, Any] = {
                "type": RequestType.EVALUATE,
                "name": node["name"],
                "expression": step["evaluate"],
            }
        elif "human" in step:
            req = {"type": RequestType.HUMAN, "name": node["name"], "prompt": step["human"]}
            shows = named_values(step["human"], self.state)
            if shows:
                req["shows"] = shows
            if DEADLINE in frame:
                req.update(deadline=frame[DEADLINE], on_timeout=step["on_timeout"])
        else:
            req = {
                "type": RequestType.INSTRUCT,
                "name": node["name"],
                "instruction": step["instruct"],
            }
            if step.get("writes"):
                req["writes"] = list(step["writes"])
        req.update(step=token, path=list(path), index=k)
        policy = tool_policy(self.tree, path)
        if policy is not None:
            req["tools"] = policy
        scope = write_scope(self.tree, path)
        if scope is not None:
            req["scope"] = scope
        items = loop_items(self.tree, self.runtime, path)
        if items:
            req["item"] = items[-1]
        return req

    def _condition(
        self,
        node: dict[str, Any],
        path: list[int],
        k: int | None,
        expression: str,
        words: tuple[str, str],
        tools: list[dict[str, Any]],
        on: str = "when",
    ) -> bool | None:
        """Evaluate a `check` step (k is its index; `tools` is its TOOLS) or a modifier's
        condition (k is None, `on` names it: when, until); record it in the trace. Returns the
        verdict, or None when the expression could not be evaluated."""
        names = loop_names(loop_items(self.tree, self.runtime, path))
        scopes = (self.state["var"], self.state["const"], tools)
        verdict, why = judge(self.condition, expression, scopes, names)
        if verdict is None:
            self._check(node, path, k, expression, "error", on=on, note=why)
            where = on if k is None else "check"
            self.reasons.append(f"The {where} of {node['name']!r} could not be evaluated: {why}.")
        elif verdict or k is None:
            self._check(node, path, k, expression, words[0] if verdict else words[1], on=on)
        else:
            self._check(node, path, k, expression, words[1], on=on, note=why or None)
            self.reasons.append(
                f"Check {expression!r} of {node['name']!r} is false{': ' + why if why else ''}."
            )
        return verdict

    def _check(
        self,
        node: dict[str, Any],
        path: list[int],
        k: int | None,
        expression: str,
        outcome: str,
        on: str,
        **fields: Any,
    ) -> None:
        """Record a `check` entry: of a check step (k is its index) or of the modifier `on`."""
        items = loop_items(self.tree, self.runtime, path)
        entry = record(
            self.state,
            self.now,
            Kind.CHECK,
            {"path": list(path), "step": k},
            node["name"],
            submitted=expression,
            item=items[-1]["index"] if items else None,
            on=on if k is None else None,
            outcome=outcome,
            **fields,
        )
        self.entries.append(entry)
        if len(self.entries) > MAX_ENTRIES:
            raise self._over(path, f"write more than {MAX_ENTRIES:,} trace entries")

    def _over(self, path: list[int], what: str) -> TetherError:
        """The refusal of an answer whose ticking would `what`, naming the loops it was in at
        `path` (innermost first: the one that hit the limit) and the item or run each was at."""
        loops = self._loops(path)
        where = " inside ".join(
            f"{loop['name']!r} ({loop['kind']} {loop['at']}, path {loop['path']})" for loop in loops
        )
        return TetherError(
            "work_limit",
            f"this answer would {what}, more than one answer may; it is refused whole and "
            f"nothing changed ({f'in the loop {where}' if loops else 'outside any loop'}): give "
            "the loop fewer items or runs, or a step for the agent to answer",
            loop=loops[0]["name"] if loops else None,
            loops=loops,
        )

    def _loops(self, path: list[int]) -> list[dict[str, Any]]:
        """The `for_each` and `repeat` loops at and above `path`, innermost first, each with
        the item or run it is at."""
        loops: list[dict[str, Any]] = []
        for depth, (node, item) in enumerate(chain(self.tree, path)):
            frame = self.runtime.get(node_key(path[:depth]), {})
            if "for_each" in node and ITEMS in frame and not item:
                n = path[depth] if fans(node) and depth < len(path) else frame.get(ITEM, 0)
                at = f"item {n + 1} of {len(frame[ITEMS])}"
                loops.insert(
                    0, {"name": node["name"], "path": path[:depth], "kind": "for_each", "at": at}
                )
            if "repeat" in node and (item or not fans(node)):
                at = f"run {frame.get(RUNS, 0) + 1} of {node['repeat']['max']}"
                loops.insert(
                    0, {"name": node["name"], "path": path[:depth], "kind": "repeat", "at": at}
                )
        return loops

    def _drop(self, key: str) -> None:
        if not key:
            self.runtime.clear()
            return
        prefix = key + "."
        for k in [k for k in self.runtime if k == key or k.startswith(prefix)]:
            del self.runtime[k]


def fans(node: dict[str, Any]) -> bool:
    """Whether `node` is a `for_each` fanned out (`parallel: true`): its items run side by
    side, and in a path the element after it is an item's index, not a child's."""
    return "parallel" in node.get("for_each", ())


def chain(tree: dict[str, Any], path: list[int]) -> list[tuple[dict[str, Any], bool]]:
    """The nodes from the root along `path`, one more than its elements, each with whether it
    stands for one item of a fanned-out `for_each` (the element before it was the item's
    index, and the node repeats); `invalid_value` when `path` names no node."""
    out = [(tree["root"], False)]
    for depth, i in enumerate(path):
        node, item = out[-1]
        fan = fans(node) and not item
        count = node["for_each"]["max"] if fan else len(node.get("children", []))
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < count:
            what = "item" if fan else "child"
            raise TetherError(
                "invalid_value",
                f"path {path} names no node: {node['name']!r} has no {what} {i} "
                f"(at depth {depth + 1})",
                path=path,
            )
        out.append((node, True) if fan else (node["children"][i], False))
    return out


def node_at(tree: dict[str, Any], path: list[int]) -> dict[str, Any]:
    """The node at `path` (child indices from the root, an item's index after a fanned-out
    `for_each`); `invalid_value` if there is none."""
    return chain(tree, path)[-1][0]


def side_by_side(links: list[tuple[dict[str, Any], bool]]) -> list[int]:
    """The depths, along a node's `chain`, of the nodes above it that run their children or
    items side by side (a `parallel`, a fanned-out `for_each`) and so may halt it."""
    return [d for d, (n, _) in enumerate(links[:-1]) if n["type"] == "parallel" or fans(n)]


def attempt_began(
    tree: dict[str, Any], runtime: dict[str, dict[str, Any]], path: list[int]
) -> int | None:
    """The seq at which the current attempt of the action at `path` began (`Key.BEGAN`), when
    no earlier attempt of it can have been left open by a `parallel` (or fanned-out `for_each`)
    that finished and was entered again with no entry saying so: nothing at or above its
    innermost such node was retried, or went on to an item past the first of a loop but the
    innermost (whose index its entries carry). A `repeat` run says so (its `check` entry,
    `trace.runs_again`). None when its frame does not say (begun before Tether kept it) or such
    an attempt may lie before it."""
    began = runtime.get(node_key(path), {}).get(BEGAN)
    links = chain(tree, path)
    halts = side_by_side(links)
    if began is None or not halts:
        return began
    loops = [d for d, (n, item) in enumerate(links) if "for_each" in n and not item]
    numbered = loops[-1] if loops and not fans(links[loops[-1]][0]) else None
    for depth in range(halts[-1] + 1):
        frame = runtime.get(node_key(path[:depth]))
        if frame is None or frame.get(RETRIES):
            return None
        if frame.get(ITEM) and depth != numbered:
            return None
    return began


def tree_path(tree: dict[str, Any], path: list[int]) -> list[int]:
    """`path` without the item indices of fanned-out loops: the node's place in the tree file,
    where each of its items' runs is counted and drawn."""
    links = chain(tree, path)
    return [i for i, (_, item) in zip(path, links[1:], strict=True) if not item]


def tool_policy(tree: dict[str, Any], path: list[int] | None) -> dict[str, Any] | None:
    """The `tools` policy that applies while the step at `path` is open: that of the nearest
    node at or above it that declares one, with the node's name as `node`; None when no node
    does (and for the protocol gate, which has no path). An open request carries it as
    `tools`, so a hook reads it from the state alone."""
    node = _nearest(tree, path, "tools")
    return None if node is None else {**node["tools"], "node": node["name"]}


def write_scope(tree: dict[str, Any], path: list[int] | None) -> dict[str, Any] | None:
    """The files an agent may write while the step at `path` is open: the `writes` globs of the
    nearest node at or above it that declares them, as `{"writes": [...], "node": name}`; None
    when no node does. An open request carries it as `scope`, beside `tools`."""
    node = _nearest(tree, path, "writes")
    return None if node is None else {"writes": list(node["writes"]), "node": node["name"]}


def _nearest(tree: dict[str, Any], path: list[int] | None, key: str) -> dict[str, Any] | None:
    """The nearest node at or above the step at `path` that declares `key`, or None."""
    if path is None:
        return None
    return next((node for node, _ in reversed(chain(tree, path)) if key in node), None)


def reads_tools(action: dict[str, Any]) -> bool:
    """Whether an action has a `check` that reads `TOOLS` (only such actions mark where their
    attempt's tool calls begin)."""
    return any("TOOLS" in step.get("check", "") for step in action["steps"])


def loop_items(
    tree: dict[str, Any], runtime: dict[str, dict[str, Any]], path: list[int]
) -> list[dict[str, Any]]:
    """The current items of the `for_each` loops at and above the node at `path`, outermost
    first, each `{name, index, value}` (a loop whose list is not evaluated yet has none)."""
    out = []
    for depth, (node, item) in enumerate(chain(tree, path)):
        frame = runtime.get(node_key(path[:depth])) if "for_each" in node and not item else None
        if frame is not None and ITEMS in frame:
            n = path[depth] if fans(node) and depth < len(path) else frame.get(ITEM)
            if n is not None:
                out.append({"name": node["for_each"]["as"], "index": n, "value": frame[ITEMS][n]})
    return out


def loop_names(items: list[dict[str, Any]]) -> dict[str, Any]:
    """What CEL sees of the loop items: ITEM and ITEM_INDEX (the innermost loop's), ITEMS (each
    loop's item by its name; an inner name hides an outer one)."""
    if not items:
        return {}
    inner = items[-1]
    return {
        "ITEM": inner["value"],
        "ITEM_INDEX": inner["index"],
        "ITEMS": {item["name"]: item["value"] for item in items},
    }


def judge(
    condition: Condition,
    expression: str,
    scopes: tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]],
    names: dict[str, Any],
) -> tuple[bool | None, str]:
    """The one evaluation of a `check` (or a modifier's condition): its verdict on `scopes`
    (var, const, the tool records it sees as TOOLS) with the loop `names`, and why: for None
    (it could not be evaluated) the evaluator's reason, for False that TOOLS was empty when the
    expression reads it and saw none (else "")."""
    var, const, tools = scopes
    try:
        verdict = bool(condition(expression, var, const, tools, names))
    except Exception as exc:  # the evaluator's reason is the verdict's reason, whatever it is
        return None, str(exc) or type(exc).__name__
    if verdict or tools or "TOOLS" not in expression:
        return verdict, ""
    return False, (
        "TOOLS is empty, no tool call was recorded during this attempt of the action "
        "(tool calls are recorded only from an agent session bound to the execution)"
    )


def child_key(key: str, i: int) -> str:
    return f"{key}.{i}" if key else str(i)
