"""The tree file format as data: which keys each part of a file takes, what kind of value each
key holds, and what it means.

Owns: the field tables (file wrapper, `state`, node types, `$ref`, steps, `tools`, `writes`,
`for_each` and `repeat`), the value kinds with their JSON Schema fragments, the type aliases,
the name, item name, tool entry and path glob patterns, and the loops' default and largest
`max`. It is the one source of truth read by both the validator (`load.py`, which checks values
kind by kind) and the JSON Schema (`schema.py`, which emits each kind's fragment), so the two
cannot drift apart.

Does not own: parsing, error reporting, `$ref` resolution or normalisation (`load.py`), CEL
(`expressions.py`), or the emitted schema document itself (`schema.py`). Imports nothing of
Tether.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

NAME_PATTERN = r"^[^/@]+$"
WRITE_PATH_PATTERN = r"^(\$(VAR|LOCAL)\.)?[^.\s]+(\.[^.\s]+)*$"
# A loop item's name (`for_each.as`): a CEL identifier, as expressions read it from ITEMS.
ITEM_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"

# `max` of a `for_each` (items) and of a `repeat` (runs) when the file gives none, and the
# largest a file may give: a loop's list lives in the execution's state and every item's run in
# its trace, so neither may grow without end.
FOR_EACH_MAX = 100
REPEAT_MAX = 10
LOOP_MAX_LIMIT = 10_000

# A `tools` entry: a tool name in the guard's trigger syntax (`Read`, `filesystem.edit`,
# `mcp__server__tool`, `*`), optionally with a permission-rule argument: `Bash(pytest*)`.
TOOL_ENTRY_PATTERN = r"^(\*|[A-Za-z0-9_.-]+)(\(.+\))?$"
# A `writes` glob of a node: relative to the project, never leaving it (no leading `/` or `~`,
# no `..` part).
PATH_GLOB_PATTERN = r"^(?![/~])(?!(?:.*/)?\.\.(?:/|$)).+$"

# A human step's `timeout`: whole days, hours, minutes and seconds, largest first, at least one
# (`30m`, `4h`, `2d`, `1h30m`); the loader turns it into seconds and refuses zero and anything
# past `TIMEOUT_MAX_SECONDS`. What happens when it passes is `on_timeout`, one of `ON_TIMEOUT`
# (the first is the default).
DURATION_PATTERN = r"^(?=[0-9])([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
TIMEOUT_MAX_SECONDS = 366 * 24 * 3600
ON_TIMEOUT = ("reject", "fail")


@dataclass(frozen=True)
class Field:
    """One key of a mapping in a tree file."""

    kind: str
    description: str
    required: bool = False


SCHEMA_FIELD = Field(
    "uri", "The JSON Schema this file follows (for editors); ignored when the tree is loaded."
)
STATE_FIELD = Field(
    "state",
    "Initial state: `var` (alias `local`) is the per-execution blackboard the agent reads and "
    "writes; `const` (alias `global`) is the read-only world model, fixed at start.",
)

WRAPPER_FIELDS: dict[str, Field] = {
    "$schema": SCHEMA_FIELD,
    "name": Field("tree_name", "The tree's name.", required=True),
    "version": Field("version", "The tree's version (a number is kept as its text)."),
    "description": Field("text", "What the tree is for."),
    "state": STATE_FIELD,
    "tree": Field("node", "The root node.", required=True),
    "independent": Field(
        "independent",
        "Bot trees: actions outside the workflow, each a tool the agent may call at any time "
        "(a lookup, a validation, a render) without moving the workflow; never ticked as part "
        "of `tree`.",
    ),
}

SCOPE_ALIASES: dict[str, str] = {"local": "var", "global": "const"}
STATE_FIELDS: dict[str, Field] = {
    "var": Field("scope", "The per-execution blackboard ($VAR): read and written by the agent."),
    "const": Field("scope", "The read-only world model ($CONST), seeded once at start."),
    "local": Field("scope", "abtree spelling of `var` ($LOCAL)."),
    "global": Field("scope", "abtree spelling of `const` ($GLOBAL)."),
}

TYPE_ALIASES: dict[str, str] = {"fallback": "selector"}
TYPE_DESCRIPTIONS: dict[str, str] = {
    "sequence": "Runs children in order; fails on the first failure, succeeds when all succeed.",
    "selector": "Runs children in order; succeeds on the first success, fails when all fail.",
    "fallback": "Another name for `selector`.",
    "parallel": "Runs every child; succeeds when `policy` is met, fails once it no longer can be.",
    "action": "A leaf: runs its steps in order; fails on a false evaluate or check, a failed "
    "instruct, or a rejected human step.",
}

COMMON_FIELDS: dict[str, Field] = {
    "type": Field("node_type", "The node type.", required=True),
    "name": Field(
        "name",
        "The node's name: any text without `/` or `@` (spaces are fine), unique among its "
        "siblings.",
        required=True,
    ),
    "retries": Field(
        "count",
        "On failure, reset the subtree and try again, up to this many more times.",
    ),
    "optional": Field("flag", "When true, the node's failure counts as success."),
    "when": Field(
        "cel",
        "A CEL condition checked when the node is first reached; false skips the node, which "
        "then counts as success. Sees VAR/CONST (also LOCAL/GLOBAL, or $VAR.x and friends).",
    ),
    "for_each": Field(
        "for_each",
        "Run the node once per element of a CEL list, in order: `in` (the list, evaluated once "
        "when the node is entered), `as` (the item's name), `max` (the longest list allowed). "
        "Inside, CEL sees the item as ITEM (its index as ITEM_INDEX) and texts may say $ITEM.",
    ),
    "repeat": Field(
        "repeat",
        "When the node succeeds and `until` (CEL) is false, reset its subtree and run it again, "
        "up to `max` runs; a failed run fails the node, and so does `until` still false after "
        "the last run.",
    ),
    "invert": Field("flag", "When true, the node's success and failure swap."),
    "description": Field("text", "What the node is for."),
    "triggers": Field(
        "triggers",
        "Phrases a person might say to ask for this node (bot tools list them in their "
        "descriptions as trigger patterns).",
    ),
    "version": Field("version", "Accepted on any node for behaviors-sh files; ignored."),
    "$schema": SCHEMA_FIELD,
    "state": Field(
        "state",
        "Initial state declared on this node (behaviors-sh); merged into the tree's state.",
    ),
    "tools": Field(
        "tool_policy",
        "Which tools an agent session bound to the execution may run while a step beneath this "
        "node is open (the guard enforces it): `allow` and `deny` lists. The nearest node that "
        "declares `tools` applies; `deny` wins over `allow`; Tether's own tools always run.",
    ),
    "writes": Field(
        "path_globs",
        "The files an agent session bound to the execution may write while a step beneath this "
        "node is open (the guard enforces it): globs relative to the project, `**` for any "
        "depth. The nearest node that declares `writes` applies; every other write is denied, "
        "and so is a shell line whose writes the guard cannot read.",
    ),
}

TOOLS_FIELDS: dict[str, Field] = {
    "allow": Field(
        "tool_entries",
        "The tools that may run (when given, only these): names such as Read, "
        "filesystem.edit, mcp__server__tool or *, each optionally with a permission-rule "
        "argument, e.g. Bash(git diff*) or Edit(src/**).",
    ),
    "deny": Field("tool_entries", "The tools that may not run, in the same syntax as allow."),
}

CHILDREN_FIELD = Field("children", "The child nodes, at least one.", required=True)
NODE_FIELDS: dict[str, dict[str, Field]] = {
    "sequence": {
        "children": CHILDREN_FIELD,
        "require_all": Field(
            "flag",
            "Bot trees, on the root: the workflow completes only once every action was closed "
            "(closing the last action while others were skipped answers with what is left).",
        ),
    },
    "selector": {"children": CHILDREN_FIELD},
    "parallel": {
        "children": CHILDREN_FIELD,
        "policy": Field(
            "policy",
            "When the parallel succeeds: `all` children (the default), `any` child, or at "
            "least N children.",
        ),
    },
    "action": {"steps": Field("steps", "The steps, at least one, run in order.", required=True)},
}

FOR_EACH_FIELDS: dict[str, Field] = {
    "in": Field(
        "cel",
        "A CEL expression giving the list to walk (sees VAR/CONST, and the ITEM of an enclosing "
        "for_each).",
        required=True,
    ),
    "as": Field(
        "item_name",
        "The item's name (default `item`): requests carry it in `item.name`; CEL also reads "
        "the item as ITEMS.<name>, which reaches the items of enclosing loops too.",
    ),
    "max": Field(
        "loop_max",
        f"The longest list allowed (default {FOR_EACH_MAX}, at most {LOOP_MAX_LIMIT}); a longer "
        "list fails the node.",
    ),
    "parallel": Field(
        "flag",
        "When true, the items run side by side, one branch per item (each open step claimable "
        "by one agent), instead of one after another.",
    ),
    "policy": Field(
        "policy",
        "With `parallel: true`: when the node succeeds, as a parallel node's policy: `all` "
        "items (the default), `any` item, or at least N items.",
    ),
}

REPEAT_FIELDS: dict[str, Field] = {
    "until": Field(
        "cel",
        "A CEL condition checked after each successful run: true ends the loop (the node "
        "succeeds), false runs the node again. Sees VAR/CONST and the node's ITEM.",
        required=True,
    ),
    "max": Field(
        "loop_max",
        f"The most runs (default {REPEAT_MAX}, at most {LOOP_MAX_LIMIT}); `until` still false "
        "after the last one fails the node.",
    ),
}

REF_FIELDS: dict[str, Field] = {
    "$ref": Field(
        "ref",
        "The node this stands for: a fragment file holding one node, relative to the file that "
        "refers to it (`parts/review.yaml`); a JSON pointer to a node of this file "
        "(`#/tree/children/0`); or both (`parts/review.yaml#/children/1`). A $ref whose target "
        "holds it is a cycle, refused at load.",
        required=True,
    ),
}

STEP_KINDS = ("evaluate", "instruct", "check", "human")
STEP_KINDS_TEXT = ", ".join(STEP_KINDS[:-1]) + " or " + STEP_KINDS[-1]
STEP_FIELDS: dict[str, Field] = {
    "evaluate": Field(
        "step_text",
        "A precondition the agent judges: true advances, false fails the action. Leading and "
        "trailing blank lines and shared indentation are trimmed at load.",
    ),
    "instruct": Field(
        "step_text",
        "Work the agent performs: success advances, failure fails the action, running waits. "
        "Leading and trailing blank lines and shared indentation are trimmed at load.",
    ),
    "check": Field(
        "cel",
        "A CEL precondition the runtime evaluates against VAR and CONST, and TOOLS (the tool "
        "calls a bound agent session made during this attempt of the action, each "
        "{tool, input, ok, seq}): true advances, false fails the action.",
    ),
    "human": Field(
        "step_text",
        "A question only a person answers (tether approve or reject, or the viewer), never the "
        "agent: approval advances, rejection fails the action. Leading and trailing blank lines "
        "and shared indentation are trimmed at load.",
    ),
    "timeout": Field(
        "duration",
        "human only: how long the step waits for a person, from when it opens (`30m`, `4h`, "
        "`2d`, `1h30m`; at most 366 days). Past it, the next read or answer of the execution "
        "records a `timeout` entry and does what `on_timeout` says; a person's answer is then "
        "refused.",
    ),
    "on_timeout": Field(
        "on_timeout",
        "human only, with `timeout`: what happens when it passes: `reject` (the default: as if "
        "the person rejected it, so the action fails and the tree goes on as for a rejection: "
        "`retries`, `optional`, a selector's next child) or `fail` (the whole execution fails "
        "at once, whatever is above the step).",
    ),
    "writes": Field(
        "write_paths",
        "instruct only: var paths the agent must write during this step before success is "
        "accepted (a leading $VAR. or $LOCAL. is dropped).",
    ),
}


# Value kinds: the validator checks a value against its kind (load.py) and the schema emits the
# kind's fragment (schema.py). Structural kinds (node, children, steps, independent, state,
# scope) are validated by recursion in load.py.
KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "node_type": {"enum": [*NODE_FIELDS, *TYPE_ALIASES]},
    "name": {"type": "string", "pattern": NAME_PATTERN},
    "tree_name": {"type": "string", "minLength": 1},
    "text": {"type": "string"},
    "step_text": {"type": "string", "pattern": r"\S"},
    "cel": {"type": "string", "minLength": 1},
    "duration": {"type": "string", "pattern": DURATION_PATTERN},
    "on_timeout": {"enum": list(ON_TIMEOUT)},
    "count": {"type": "integer", "minimum": 0},
    "loop_max": {"type": "integer", "minimum": 1, "maximum": LOOP_MAX_LIMIT},
    "item_name": {"type": "string", "pattern": ITEM_NAME_PATTERN},
    "flag": {"type": "boolean"},
    "version": {"type": ["string", "number"]},
    "uri": {"type": "string"},
    "ref": {"type": "string", "minLength": 1},
    "policy": {
        "anyOf": [
            {"enum": ["all", "any"]},
            {"type": "integer", "minimum": 1},
        ]
    },
    "write_paths": {
        "type": "array",
        "minItems": 1,
        "uniqueItems": True,
        "items": {"type": "string", "pattern": WRITE_PATH_PATTERN},
    },
    "path_globs": {
        "type": "array",
        "minItems": 1,
        "uniqueItems": True,
        "items": {"type": "string", "pattern": PATH_GLOB_PATTERN},
    },
    "triggers": {
        "type": "array",
        "minItems": 1,
        "items": {"type": "string", "minLength": 1},
    },
    "scope": {"type": ["object", "null"]},
    "state": {"$ref": "#/$defs/state"},
    "for_each": {"$ref": "#/$defs/for_each"},
    "repeat": {"$ref": "#/$defs/repeat"},
    "tool_policy": {"$ref": "#/$defs/tools"},
    "tool_entries": {
        "type": "array",
        "items": {"type": "string", "pattern": TOOL_ENTRY_PATTERN},
    },
    "node": {"$ref": "#/$defs/node"},
    "children": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
    "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
    "independent": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/action"}},
}

# How an error message names what a kind expects: "<key> must be <phrase>, got ...".
KIND_PHRASES: dict[str, str] = {
    "node_type": "one of " + ", ".join(KIND_SCHEMAS["node_type"]["enum"]),
    "name": "a non-empty name without '/' or '@'",
    "tree_name": "a non-empty string",
    "text": "a string",
    "step_text": "a string with more than white space in it",
    "cel": "a non-empty CEL expression (a string)",
    "duration": "a duration such as 30m, 4h, 2d or 1h30m (whole days d, hours h, minutes m and "
    "seconds s, largest first)",
    "on_timeout": "one of " + ", ".join(ON_TIMEOUT),
    "count": "a whole number >= 0",
    "loop_max": f"a whole number from 1 to {LOOP_MAX_LIMIT}",
    "item_name": "a name made of letters, digits and '_', not starting with a digit",
    "flag": "true or false",
    "version": "a string or a number",
    "uri": "a string",
    "ref": "a file path, '#' and a JSON pointer, or both",
    "policy": "'all', 'any' or a whole number >= 1",
    "write_paths": "a list of distinct var paths such as 'result' or 'review.notes'",
    "path_globs": "a list of distinct globs relative to the project, such as 'src/**' or "
    "'docs/*.md' (no leading '/' or '~', no '..')",
    "triggers": "a non-empty list of non-empty strings",
    "scope": "a mapping of names to values",
    "state": "a mapping with 'var' and 'const' (or 'local' and 'global')",
    "for_each": "a mapping with 'in' (a CEL list), and optionally 'as', 'max', 'parallel' and "
    "'policy'",
    "repeat": "a mapping with 'until' (a CEL condition), and optionally 'max'",
    "tool_policy": "a mapping with 'allow' and/or 'deny'",
    "tool_entries": "a list of tool names such as Read, mcp__server__tool or Bash(pytest*)",
    "children": "a non-empty list of nodes",
    "steps": "a non-empty list of steps",
    "independent": "a non-empty list of action nodes",
}

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def conforms(value: object, fragment: dict[str, Any]) -> bool:
    """Whether `value` satisfies a kind's schema fragment (the JSON Schema keywords used above;
    `$ref` fragments are structural and checked by the loader, so they pass here)."""
    if "anyOf" in fragment:
        return any(conforms(value, f) for f in fragment["anyOf"])
    if "enum" in fragment:
        return isinstance(value, str) and value in fragment["enum"]
    if "type" in fragment and not _of_type(value, fragment["type"]):
        return False
    if isinstance(value, str):
        return len(value) >= fragment.get("minLength", 0) and (
            "pattern" not in fragment or re.search(fragment["pattern"], value) is not None
        )
    if isinstance(value, list):
        return _list_conforms(value, fragment)
    if isinstance(value, int):
        return bool(fragment.get("minimum", value) <= value <= fragment.get("maximum", value))
    return True


def _of_type(value: object, names: str | list[str]) -> bool:
    """Whether `value` is of one of the JSON types `names` (a bool is not a number)."""
    allowed = [names] if isinstance(names, str) else names
    if isinstance(value, bool) and "boolean" not in allowed:
        return False
    return any(isinstance(value, _JSON_TYPES[t]) for t in allowed)


def _list_conforms(value: list[Any], fragment: dict[str, Any]) -> bool:
    """`conforms` for a list: its length, its items' uniqueness, and each item."""
    if len(value) < fragment.get("minItems", 0):
        return False
    if fragment.get("uniqueItems") and len(set(map(repr, value))) < len(value):
        return False
    items = fragment.get("items", {})
    return all(conforms(v, items) for v in value)
