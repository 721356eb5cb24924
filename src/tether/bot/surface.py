"""The bot tool surface of a tree: its phases, their actions, and the tool names they yield.

Owns the shape a tree must have to be served as a bot (the root a `sequence` of phases, each
phase a `sequence` of actions, no action opening with a `check`, `require_all` on the root
only), what each action tells the agent (its `instruct` texts are the instructions, its
`evaluate` texts the completion criteria, its `check` expressions and `writes` paths what
`close` will hold it to), the independent actions (the tree's `independent` list: tools callable
at any time, outside the workflow), and the tool names: lower-case `[a-z0-9_]`, short enough
that the name a client shows (`mcp__<server>__<tool>`, at most 64 characters) fits, shortened
deterministically and never colliding.

It does not run anything (`tether.bot.session` does, over the verbs), read bot folders
(`tether.bot.folder`) or speak MCP (`tether.mcp.bot`). It imports nothing but the errors.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tether.errors import TetherError

# Clients cap a tool's full name at 64 characters, and Claude Code names a server's tools
# `mcp__<server>__<tool>`: a tool name gets what that prefix leaves for the server in use.
_T = TypeVar("_T", "Phase", "Action")
MAX_NAME = 64
DEFAULT_SERVER = "tether"
MIN_BUDGET = 24
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")
CONTINUE, CLOSE, RESTART, PHASE, ACTION = "continue", "close", "restart", "phase", "action"
INDEPENDENT = "independent"


@dataclass(frozen=True)
class Action:
    """One action of a phase, at `path` ([phase index, action index]) in the tree; or an
    independent action (the tree's `independent` list), with no phase and an empty path."""

    phase: str | None
    name: str
    path: tuple[int, ...]
    tool: str
    description: str | None
    triggers: tuple[str, ...]
    instructions: tuple[str, ...]
    criteria: tuple[str, ...]
    checks: tuple[str, ...]
    writes: tuple[str, ...]
    human: tuple[int, ...] = ()  # the indices of its human steps, which only a person answers


@dataclass(frozen=True)
class Phase:
    """One phase (a root child) and its actions, in order."""

    name: str
    index: int
    tool: str
    description: str | None
    triggers: tuple[str, ...]
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class Tool:
    """One tool of the surface: its name, its kind, the node it is about, its description."""

    name: str
    kind: str
    description: str
    phase: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class Surface:
    """Every tool a bot tree yields, in listing order: continue, close, restart, the phase
    tools, the action tools, then the independent action tools. `require_all` (the root's key)
    holds the workflow open until every action was closed."""

    bot: str
    title: str
    description: str | None
    triggers: tuple[str, ...]
    phases: tuple[Phase, ...]
    tools: tuple[Tool, ...]
    require_all: bool = False
    independent: tuple[Action, ...] = ()

    @property
    def actions(self) -> tuple[Action, ...]:
        """Every action, phase by phase, in order."""
        return tuple(a for phase in self.phases for a in phase.actions)

    def tool(self, kind: str) -> str:
        """The name of the one tool of `kind` (continue, close or restart)."""
        return next(t.name for t in self.tools if t.kind == kind)

    def phase(self, name: str) -> Phase:
        """The phase called `name`; `invalid_value` naming the phases if there is none."""
        return _named(self.phases, name, f"{self.title} has no phase", "its phases are")

    def action(self, phase: str, name: str) -> Action:
        """The action `name` of phase `phase`; `invalid_value` naming the actions otherwise."""
        actions = self.phase(phase).actions
        return _named(actions, name, f"phase {phase!r} has no action", "its actions are")

    def independent_action(self, name: str) -> Action:
        """The independent action `name`; `invalid_value` naming those there are otherwise."""
        where = f"{self.title} has no independent action"
        return _named(self.independent, name, where, "its independent actions:")

    def at(self, path: list[int]) -> Action:
        """The action at a cursor path; `invalid_value` when the path names no bot action."""
        if len(path) == 2 and 0 <= path[0] < len(self.phases):
            actions = self.phases[path[0]].actions
            if 0 <= path[1] < len(actions):
                return actions[path[1]]
        raise TetherError("invalid_value", f"path {path} names no action of {self.title}")


def name_budget(server: str = DEFAULT_SERVER) -> int:
    """The longest tool name that fits when the client knows the server as `server`;
    `usage` when the name is not a client's server name or leaves too little room."""
    if not _SERVER_NAME.fullmatch(server):
        raise TetherError(
            "usage",
            f"server name {server!r} must be letters, digits, '_' and '-' (the name the client "
            "registers the server under)",
        )
    budget = MAX_NAME - len(f"mcp__{server}__")
    if budget < MIN_BUDGET:
        longest = MAX_NAME - len("mcp____") - MIN_BUDGET
        raise TetherError(
            "usage",
            f"server name {server!r} is too long: tool names would have {budget} characters "
            f"left of the client's {MAX_NAME}; use at most {longest} characters",
        )
    return budget


def slug(text: str) -> str:
    """`text` as a tool-name part: lower case, runs of anything but `[a-z0-9]` as one `_`."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def surface_of(
    tree: dict[str, Any], source: str = "the tree", server: str = DEFAULT_SERVER
) -> Surface:
    """The bot surface of a normalised tree (`Tree.data`); `invalid_tree` naming the node and
    what is wrong when the tree is not phases of actions. `source` names the tree in errors;
    `server` is the name the client registers the server under, which bounds the tool names
    (`name_budget`)."""
    root = tree["root"]
    _expect_sequence(root, "tree", "the root", "phases", source)
    phases: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for i, phase in enumerate(root["children"]):
        where = f"tree.children[{i}]"
        _expect_sequence(phase, where, f"phase {phase['name']!r}", "actions", source)
        if phase.get("require_all"):
            raise _not_a_bot(
                source,
                f"{where}.require_all",
                f"phase {phase['name']!r} has require_all, which holds a whole bot open and "
                "belongs on the root",
            )
        for j, action in enumerate(phase["children"]):
            _expect_action(action, phase["name"], f"{where}.children[{j}]", source)
        phases.append((phase, phase["children"]))
    bot = slug(tree["name"]) or "bot"
    namer = _Namer(name_budget(server))
    title = tree["name"]
    tools = [
        _fixed(namer, bot, CONTINUE, "tool", _continue_text(title, tree, root)),
        _fixed(
            namer,
            bot,
            CLOSE,
            "close_current_action",
            _close_text(title, bool(root.get("require_all"))),
        ),
        _fixed(namer, bot, RESTART, "restart", _restart_text(title)),
    ]
    phase_tools = [
        namer.name(f"{bot}_{slug(p['name']) or f'phase{i + 1}'}_tool", f"phase/{p['name']}")
        for i, (p, _) in enumerate(phases)
    ]
    built: list[Phase] = []
    action_tools: list[Tool] = []
    for i, (phase, actions) in enumerate(phases):
        phase_part = slug(phase["name"]) or f"phase{i + 1}"
        members: list[Action] = []
        for j, node in enumerate(actions):
            part = slug(node["name"]) or f"action{j + 1}"
            name = namer.name(
                f"{bot}_{phase_part}_{part}", f"action/{phase['name']}/{node['name']}"
            )
            action = _action(node, phase["name"], (i, j), name)
            members.append(action)
            action_tools.append(
                Tool(name, ACTION, _action_text(title, action), phase["name"], node["name"])
            )
        built.append(
            Phase(
                phase["name"],
                i,
                phase_tools[i],
                phase.get("description"),
                tuple(phase.get("triggers", ())),
                tuple(members),
            )
        )
    for phase_ in built:
        tools.append(Tool(phase_.tool, PHASE, _phase_text(title, phase_), phase_.name))
    tools += action_tools
    independent: list[Action] = []
    for k, node in enumerate(tree.get("independent", ())):
        part = slug(node["name"]) or f"independent{k + 1}"
        action = _action(node, None, (), namer.name(f"{bot}_{part}", f"independent/{node['name']}"))
        independent.append(action)
        tools.append(
            Tool(action.tool, INDEPENDENT, _independent_text(title, action), None, action.name)
        )
    return Surface(
        bot,
        title,
        tree.get("description"),
        tuple(root.get("triggers", ())),
        tuple(built),
        tuple(tools),
        require_all=bool(root.get("require_all")),
        independent=tuple(independent),
    )


# -- shape ------------------------------------------------------------------------------------


def _not_a_bot(source: str, where: str, problem: str) -> TetherError:
    return TetherError(
        "invalid_tree",
        f"{source} is not a bot (phases of actions): {problem} at {where}",
        file=source,
        key=where,
    )


def _expect_sequence(node: dict[str, Any], where: str, what: str, parts: str, source: str) -> None:
    if node["type"] != "sequence":
        raise _not_a_bot(
            source,
            where,
            f"{what} is {_a(node['type'])}; it must be a sequence of {parts}, run in order",
        )


def _expect_action(node: dict[str, Any], phase: str, where: str, source: str) -> None:
    if node["type"] != "action":
        raise _not_a_bot(
            source,
            where,
            f"{node['name']!r} in phase {phase!r} is {_a(node['type'])}; "
            "a phase holds actions only",
        )
    if "check" in node["steps"][0]:
        raise _not_a_bot(
            source,
            f"{where}.steps[0]",
            f"action {node['name']!r} opens with a check, which the runtime would judge on "
            "arrival, before any work; put checks after its instructions",
        )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _action(node: dict[str, Any], phase: str | None, path: tuple[int, ...], tool: str) -> Action:
    steps = node["steps"]
    return Action(
        phase=phase,
        name=node["name"],
        path=path,
        tool=tool,
        description=node.get("description"),
        triggers=tuple(node.get("triggers", ())),
        instructions=tuple(s["instruct"] for s in steps if "instruct" in s),
        criteria=tuple(s["evaluate"] for s in steps if "evaluate" in s),
        checks=tuple(s["check"] for s in steps if "check" in s),
        writes=tuple(w for s in steps for w in s.get("writes", ())),
        human=tuple(i for i, s in enumerate(steps) if "human" in s),
    )


# -- names ------------------------------------------------------------------------------------


class _Namer:
    """Hands out tool names in order: the wanted name when it fits in `budget` characters and is
    free, else the wanted name cut short with a digest of the node's identity (its kind and
    original names), lengthened by a counter in the digest until it is free. Same tree and
    budget, same names."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.taken: set[str] = set()

    def name(self, wanted: str, identity: str) -> str:
        name = wanted
        if len(name) > self.budget or name in self.taken:
            for n in itertools.count():
                digest = hashlib.sha256(f"{identity}#{n}".encode()).hexdigest()[:8]
                name = f"{wanted[: self.budget - len(digest) - 1].rstrip('_')}_{digest}"
                if name not in self.taken:
                    break
        self.taken.add(name)
        return name


def _fixed(namer: _Namer, bot: str, kind: str, suffix: str, description: str) -> Tool:
    return Tool(namer.name(f"{bot}_{suffix}", kind), kind, description)


# -- descriptions -----------------------------------------------------------------------------


def _about(description: str | None, triggers: tuple[str, ...] | list[str]) -> str:
    parts = [description.strip()] if description else []
    if triggers:
        parts.append("Trigger patterns: " + ", ".join(triggers))
    return "".join(f"\n{p}" for p in parts)


def _continue_text(title: str, tree: dict[str, Any], root: dict[str, Any]) -> str:
    phases = ", ".join(p["name"] for p in root["children"])
    return (
        f"Continue the {title} workflow: returns the current phase and action, with its "
        "instructions and completion criteria. Use it when the user wants to go on or asks "
        f"where the work stands. Phases, in order: {phases}."
        + _about(tree.get("description"), root.get("triggers", ()))
    )


def _close_text(title: str, require_all: bool) -> str:
    return (
        f"Mark the current action of {title} done and move to the next action (to the next "
        "phase after a phase's last action). Call it only once the action's completion "
        "criteria are met, ideally confirmed by the user; actions never complete by themselves. "
        "It is refused, with the reason, while a check of the action does not hold or a value "
        "it must write was not written: pass those in `values`. `note` is kept in the trace."
        + (
            f" {title} requires every action closed: closing the last action while another is "
            "not answers `incomplete`, naming the actions left, and moves nothing."
            if require_all
            else ""
        )
    )


def _restart_text(title: str) -> str:
    return (
        f"Reload the {title} tree file after it was edited, keeping the execution (position, "
        "completed actions, values). Refused, with the reason, if the edited tree no longer "
        "fits the execution."
    )


def _phase_text(title: str, phase: Phase) -> str:
    actions = ", ".join(a.name for a in phase.actions)
    return (
        f"Jump into the {phase.name} phase of {title} at its first unfinished action and "
        f"return that action's instructions. Actions: {actions}."
        + _about(phase.description, phase.triggers)
    )


def _action_text(title: str, action: Action) -> str:
    return (
        f"Jump to the {action.name} action of the {action.phase} phase of {title} and return "
        "its instructions and completion criteria." + _about(action.description, action.triggers)
    )


def _independent_text(title: str, action: Action) -> str:
    closing = ""
    if action.checks or action.writes:
        closing = (
            " When its work is done, call it again with `close: true` (and its values in "
            "`values`): the close is refused, writing nothing, while a check does not hold or a "
            "value it must write is missing."
        )
    return (
        f"Independent action {action.name} of {title}, callable at any time: returns its "
        "instructions and completion criteria without moving the workflow (its current action "
        "and completed actions stay as they are)."
        + closing
        + _about(action.description, action.triggers)
    )


def _named(items: Sequence[_T], name: str, missing: str, known: str) -> _T:
    """The item of `items` called `name`, else `invalid_value`: "`missing` 'name'; `known` …"."""
    for item in items:
        if item.name == name:
            return item
    names = ", ".join(item.name for item in items) or "none"
    raise TetherError("invalid_value", f"{missing} {name!r}; {known} {names}")
