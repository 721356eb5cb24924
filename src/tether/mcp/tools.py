"""The runtime tools and the one function that registers them on an MCP server.

Owns each tool's name, description, JSON input and output schemas and annotations; the check of
a call's arguments against its input schema (an error names the tool and the argument); the call
of exactly one `Runtime` verb per tool; and the result format: structured content plus the same
JSON as compact text, or a `TetherError` as a tool error carrying the CLI's stable code. Values
that are not objects (a `var` value, trace entries, every open request) are wrapped in an object,
because structured content must be one.

It does not own runtime logic (`tether.verbs`), transports (`tether.mcp.server`,
`tether.mcp.http`) or the protocol text (`tether.engine.protocol`). Both transports call
`register_tools`, so they serve the same tools.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from tether.engine.answers import SUBMIT_STATUSES
from tether.engine.names import Phase, Reply, RequestType, Status
from tether.errors import TetherError
from tether.locking import WouldWait, without_waiting
from tether.values import parse_value
from tether.verbs import LEASE_SECONDS, Runtime

logger = logging.getLogger("tether.mcp")

_T = TypeVar("_T")
Arguments = dict[str, Any]
Handler = Callable[[Runtime, Arguments], Any]

# -- schema pieces ---------------------------------------------------------------------------

_TRACE = {
    "type": "string",
    "minLength": 1,
    "description": (
        "The execution's URI, which is its handle: a path relative to the server's root (e.g. "
        "runs/hello.json), a file:// URI inside that root, or memory://NAME for an execution "
        "kept in the server's memory for as long as it runs."
    ),
}
_STEP = {
    "type": "string",
    "description": (
        "The `step` token of the request you are answering, exactly as next_step returned it. "
        "A stale token is refused with the current request in the error, so a retried answer "
        "never advances twice. Omit it to answer the first open request."
    ),
}
_NOTE = {"type": "string", "description": "A short note recorded with the answer in the trace."}
_AGENT = {
    "type": "string",
    "minLength": 1,
    "description": "Who answers: your agent's name in a team (a session, or a session and a "
    "sub-agent). A branch claimed by an agent (claim_step) takes its answers only.",
}
_SCOPE_PATH = {
    "type": "string",
    "description": "A dotted path such as build.tag (a leading $VAR. or $CONST. is accepted).",
}
# Any JSON value, spelled as single-`type` branches (portable to clients that want a `type`).
_ANY: dict[str, Any] = {
    "anyOf": [{"type": t} for t in ("string", "number", "boolean", "object", "array", "null")]
}


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` or null, spelled with single-`type` branches (portable to every client)."""
    return {"anyOf": [schema, {"type": "null"}]}


_REQUEST_PROPERTIES: dict[str, Any] = {
    "type": {
        "enum": [*RequestType],
        "description": "The kind of open request (human: only a person answers it; tell the "
        "user and wait).",
    },
    "name": {"type": "string", "description": "The action the request belongs to."},
    "expression": {"type": "string", "description": "What to judge (evaluate)."},
    "instruction": {"type": "string", "description": "What to do (instruct)."},
    "prompt": {"type": "string", "description": "What a person is asked (human)."},
    "shows": {
        "type": "object",
        "description": "The value of each $VAR/$CONST path the prompt names (human); the step "
        "token changes when one does.",
    },
    "writes": {
        "type": "array",
        "items": {"type": "string"},
        "description": "$VAR paths to write before submitting success.",
    },
    "step": {"type": "string", "description": "The token to pass back with the answer."},
    "tools": {
        "type": "object",
        "description": "The tools you may run while this request is open ({allow?, deny?, "
        "node}); a guard bound to the execution denies the others.",
    },
    "scope": {
        "type": "object",
        "description": "The files you may write while this request is open ({writes: globs "
        "relative to the project, node}); a guard bound to the execution denies every other "
        "write, and any shell line whose writes it cannot read.",
    },
    "path": _or_null({"type": "array", "items": {"type": "integer"}}),
    "index": {"type": "integer"},
    "item": {
        "type": "object",
        "description": "Inside a for_each loop: the item this request is for ({name, index, "
        "value}); $ITEM in the request's text means this value.",
    },
    "claim": {
        "type": "object",
        "description": "With all=true, on a request whose action an agent holds (claim_step): "
        "{agent, until}; only that agent answers it until then.",
    },
    "status": {
        "enum": [Reply.DONE, Reply.FAILURE],
        "description": "Set when the execution is over.",
    },
    "message": {"type": "string"},
}
_REQUEST = {
    "type": "object",
    "description": "An open request, or {status: done | failure} once the execution is over.",
    "properties": _REQUEST_PROPERTIES,
}
_MESSAGE = {"type": "string", "description": "What happened, and what to do next."}


def _outcome(*statuses: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"status": {"enum": list(statuses)}, "message": _MESSAGE},
        "required": ["status", "message"],
    }


def _answered(*statuses: str) -> dict[str, Any]:
    """An answer's outcome, with `next`: the request that follows it."""
    out = _outcome(*statuses)
    out["properties"]["next"] = {
        **_REQUEST,
        "description": "The request that follows this answer (what next_step now returns): "
        "answer it directly.",
    }
    out["required"].append("next")
    return out


_VALUES = {
    "type": "object",
    "description": "$VAR writes that go with this answer, path to value "
    '({"time_of_day": "morning"}): written in the same commit, before the answer is judged, '
    "so a step's `writes` are met in the same call; refused together with the answer. Values "
    "are taken as var_write takes them.",
}

# What an answer to an evaluate or an instruct may carry besides its result.
_ANSWER = {"note": _NOTE, "step": _STEP, "values": _VALUES, "agent": _AGENT}


def tool_annotations(
    title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False
) -> types.ToolAnnotations:
    """A tool's annotations for MCP clients (never open-world: a tool touches Tether alone)."""
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


# -- the tools -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what the client is told about it and the verb call behind it."""

    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    output: dict[str, Any]
    annotations: types.ToolAnnotations
    handler: Handler

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }

    def to_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.annotations.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output,
            annotations=self.annotations,
        )


def _start(rt: Runtime, a: Arguments) -> Any:
    return rt.start(a["tree_uri"], a["trace_output"], var=a.get("var"), const=a.get("const"))


def _next(rt: Runtime, a: Arguments) -> Any:
    if a.get("all"):
        return {"requests": rt.next(a["trace_output"], all=True)}
    return rt.next(a["trace_output"])


def _scope_value(value: Any) -> Any:
    """A value for $VAR as a client sent it: a string is parsed as JSON when it parses."""
    return parse_value(value) if isinstance(value, str) else value


def _var_write(rt: Runtime, a: Arguments) -> Any:
    return rt.var_write(a["trace_output"], a["path"], _scope_value(a["value"]), step=a.get("step"))


def _values(a: Arguments) -> dict[str, Any] | None:
    values = a.get("values")
    return {path: _scope_value(v) for path, v in values.items()} if values else None


def _answering(verb: Callable[..., Any], field: str) -> Callable[[Runtime, Arguments], Any]:
    """A tool that answers the open request with `verb` (`Runtime.eval`, `Runtime.submit`) and
    the argument `field`, with the note, step, values and agent of `_ANSWER`."""
    return lambda rt, a: verb(
        rt,
        a["trace_output"],
        a[field],
        note=a.get("note"),
        step=a.get("step"),
        values=_values(a),
        agent=a.get("agent"),
    )


def _scope_reader(
    name: str, scope: str, what: str, read: Callable[[Runtime, str, str | None], Any]
) -> ToolSpec:
    return ToolSpec(
        name,
        f"Read {scope}, {what}: the value at path, or the whole scope when path is omitted. "
        "Returns {path, value}.",
        {"trace_output": _TRACE, "path": _SCOPE_PATH},
        ("trace_output",),
        {
            "type": "object",
            "properties": {
                "path": {**_or_null({"type": "string"}), "description": "The path (null: all)."},
                "value": {**_ANY, "description": f"The value in {scope}."},
            },
            "required": ["path", "value"],
        },
        tool_annotations(f"Read {scope}", read_only=True, idempotent=True),
        lambda rt, a: {"path": a.get("path"), "value": read(rt, a["trace_output"], a.get("path"))},
    )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "start_execution",
        "Start a new execution of the behavior tree at tree_uri, stored at trace_output. "
        "Refused if trace_output already exists (use resume_execution or reset_execution). "
        "The first request is always the Acknowledge_Protocol instruct: call next_step next.",
        {
            "tree_uri": {
                "type": "string",
                "minLength": 1,
                "description": "The tree file (YAML or JSON): a path relative to the server's "
                "root or a file:// URI inside it.",
            },
            "trace_output": _TRACE,
            "var": {
                "type": "object",
                "description": "Initial $VAR values that override the tree's, key by key.",
            },
            "const": {
                "type": "object",
                "description": "Initial $CONST values that override the tree's, key by key.",
            },
        },
        ("tree_uri", "trace_output"),
        {
            "type": "object",
            "properties": {
                "ok": {"const": True, "description": "Always true (behaviors-sh clients read it)."},
                "status": {"enum": ["started"]},
                "uri": {"type": "string", "description": "The execution's canonical URI."},
                "tree": {"type": "string"},
                "tree_hash": {"type": "string"},
                "message": _MESSAGE,
                "current": _REQUEST,
            },
            "required": ["status", "uri", "current"],
        },
        tool_annotations("Start an execution", read_only=False),
        _start,
    ),
    ToolSpec(
        "resume_execution",
        "Confirm that the execution at trace_output exists and can be driven, and show its "
        "phase and current request. The tree comes from the execution's embedded copy.",
        {"trace_output": _TRACE},
        ("trace_output",),
        {
            "type": "object",
            "properties": {
                "status": {"enum": ["resumable", Status.COMPLETE, Status.FAILED]},
                "uri": {"type": "string"},
                "tree": _or_null({"type": "string"}),
                "phase": {"enum": [*Phase]},
                "revision": {"type": "integer"},
                "current": _REQUEST,
            },
            "required": ["status", "uri", "phase", "revision", "current"],
        },
        tool_annotations("Resume an execution", read_only=True, idempotent=True),
        lambda rt, a: rt.resume(a["trace_output"]),
    ),
    ToolSpec(
        "reset_execution",
        "Rewind the execution to its start: clear the trace, restore $VAR and $CONST from the "
        "tree, re-arm the protocol gate. Idempotent. Everything recorded so far is discarded.",
        {"trace_output": _TRACE},
        ("trace_output",),
        _outcome(Reply.RESET),
        tool_annotations("Reset an execution", read_only=False, destructive=True, idempotent=True),
        lambda rt, a: rt.reset(a["trace_output"]),
    ),
    ToolSpec(
        "next_step",
        "Return the open request: {type: evaluate} (judge the expression, answer with eval), "
        "{type: instruct} (do the work, answer with submit), {type: human} (only a person "
        "answers it: tell the user what it asks and wait), or {status: done | failure}. Every "
        "answer already returns it as `next`: call this only to look again. "
        "Replay-safe: until you answer, it returns the same request with the same step token. "
        "With all=true, returns {requests: [...]}, every open request (several inside a "
        "parallel node).",
        {
            "trace_output": _TRACE,
            "all": {
                "type": "boolean",
                "description": "Return every open request as {requests: [...]}.",
            },
        },
        ("trace_output",),
        {
            "type": "object",
            "properties": {
                **_REQUEST_PROPERTIES,
                "requests": {
                    "type": "array",
                    "items": _REQUEST,
                    "description": "Every open request (with all=true).",
                },
            },
        },
        tool_annotations("Next request", read_only=True, idempotent=True),
        _next,
    ),
    ToolSpec(
        "eval",
        "Answer the open evaluate request: result=true if the expression holds (the action "
        "goes on), false if not (the action fails and the tree decides what follows). Judge "
        "honestly; pass the request's step token. The result's `next` is the following "
        "request: answer it directly, no next_step needed.",
        {
            "trace_output": _TRACE,
            "result": {"type": "boolean", "description": "Whether the expression holds."},
            **_ANSWER,
        },
        ("trace_output", "result"),
        _answered(Reply.EVALUATION_PASSED, Reply.EVALUATION_FAILED),
        tool_annotations("Answer an evaluate", read_only=False),
        _answering(Runtime.eval, "result"),
    ),
    ToolSpec(
        "submit",
        "Answer the open instruct request once its work is done: success advances (every "
        "$VAR path the request lists in `writes` must be written: pass them in `values`), "
        "failure fails the action, running keeps the step open (record progress with think). "
        "The Acknowledge_Protocol request is answered here too: success accepts it. Pass the "
        "request's step token. The result's `next` is the following request: answer it "
        "directly, no next_step needed.",
        {
            "trace_output": _TRACE,
            "status": {
                "type": "string",
                "enum": [*SUBMIT_STATUSES],
                "description": "success, failure, or running (still working).",
            },
            **_ANSWER,
        },
        ("trace_output", "status"),
        _answered(
            Reply.STEP_COMPLETE,
            Reply.ACTION_COMPLETE,
            Reply.ACTION_FAILED,
            Reply.RUNNING,
            Reply.PROTOCOL_ACCEPTED,
            Reply.PROTOCOL_REJECTED,
        ),
        tool_annotations("Answer an instruct", read_only=False),
        _answering(Runtime.submit, "status"),
    ),
    ToolSpec(
        "claim_step",
        "In a team of agents: claim the action of an open request in a parallel branch or a "
        "for_each item, so that only you answer its steps (pass the request's step token). "
        "The claim lasts `lease` seconds and each of your answers renews it; another agent's "
        "claim is refused (`claimed`, naming the holder) until it lapses, then you may take it "
        "over. Pass the same `agent` with every answer to the claimed action.",
        {
            "trace_output": _TRACE,
            "agent": _AGENT,
            "step": _STEP,
            "lease": {
                "type": "integer",
                "minimum": 1,
                "maximum": 366 * 24 * 3600,
                "description": "Seconds the claim holds without an answer from you (900).",
            },
        },
        ("trace_output", "agent"),
        {
            "type": "object",
            "properties": {
                "status": {"enum": [Reply.CLAIMED, Reply.RENEWED, Reply.TAKEN_OVER]},
                "agent": {"type": "string"},
                "until": {"type": "string"},
                "current": _REQUEST,
            },
            "required": ["status", "agent", "until", "current"],
        },
        tool_annotations("Claim a branch", read_only=False),
        lambda rt, a: rt.claim(
            a["trace_output"], a["agent"], step=a.get("step"), lease=a.get("lease", LEASE_SECONDS)
        ),
    ),
    ToolSpec(
        "think",
        "Record a checkpoint thought in the trace without moving the cursor: use it at "
        "substantive points of a long instruct. Only after the protocol is accepted. In a "
        "parallel, pass the step token of the request you are working on.",
        {
            "trace_output": _TRACE,
            "thought": {"type": "string", "minLength": 1, "description": "The thought."},
            "step": _STEP,
        },
        ("trace_output", "thought"),
        _outcome(Reply.RECORDED),
        tool_annotations("Record a thought", read_only=False),
        lambda rt, a: rt.think(a["trace_output"], a["thought"], step=a.get("step")),
    ),
    _scope_reader("var_read", "$VAR", "the execution's blackboard", Runtime.var_read),
    ToolSpec(
        "var_write",
        "Write $VAR at a dotted path (objects are created on the way). A string value is "
        'parsed as JSON when it parses ("3" stores the number 3, "\\"3\\"" the string "3") '
        "and stored as the text otherwise; any other JSON value is stored as given. Write what "
        "a step's `writes` lists before you submit it. In a parallel, pass the step token of the "
        "request the write belongs to (the trace records it there).",
        {
            "trace_output": _TRACE,
            "path": {**_SCOPE_PATH, "minLength": 1},
            "value": {**_ANY, "description": "The value to store (any JSON value)."},
            "step": _STEP,
        },
        ("trace_output", "path", "value"),
        {
            "type": "object",
            "properties": {
                "status": {"enum": [Reply.WRITTEN]},
                "path": {"type": "string"},
                "value": _ANY,
            },
            "required": ["status", "path", "value"],
        },
        tool_annotations("Write $VAR", read_only=False),
        _var_write,
    ),
    _scope_reader(
        "const_read", "$CONST", "the read-only world model seeded at start", Runtime.const_read
    ),
    ToolSpec(
        "get_execution",
        "Return the whole execution document: status, phase, cursor, open requests, $VAR, "
        "$CONST, the embedded tree, the runtime maps and the trace.",
        {"trace_output": _TRACE},
        ("trace_output",),
        {
            "type": "object",
            "properties": {
                "uri": {"type": "string"},
                "status": {"enum": [*Status]},
                "phase": {"enum": [*Phase]},
                "revision": {"type": "integer"},
                "var": {"type": "object"},
                "const": {"type": "object"},
                "tree": {"type": "object"},
                "trace": {"type": "array", "items": {"type": "object"}},
            },
            "required": ["uri", "status", "phase", "revision", "var", "const", "tree", "trace"],
        },
        tool_annotations("Get an execution", read_only=True, idempotent=True),
        lambda rt, a: rt.get(a["trace_output"]),
    ),
    ToolSpec(
        "read_trace",
        "Return the trace entries with from <= seq < to (either bound may be omitted) as "
        "{entries: [...]}. Entries are numbered from 0 and never rewritten.",
        {
            "trace_output": _TRACE,
            "from": {"type": "integer", "description": "The first seq to include."},
            "to": {"type": "integer", "description": "The first seq to leave out."},
        },
        ("trace_output",),
        {
            "type": "object",
            "properties": {"entries": {"type": "array", "items": {"type": "object"}}},
            "required": ["entries"],
        },
        tool_annotations("Read the trace", read_only=True, idempotent=True),
        lambda rt, a: {
            "entries": rt.trace(a["trace_output"], start=a.get("from"), stop=a.get("to"))
        },
    ),
    ToolSpec(
        "fork_execution",
        "Start a new execution at new_trace_output from the first `at` trace entries of "
        "trace_output (those with seq < at), its state re-derived by replaying them: a way back "
        "to any earlier point to try again. trace_output is not changed; the new execution "
        "records forked_from and its own step tokens. Refused if new_trace_output exists. "
        "at=0 is a fresh start of the same tree.",
        {
            "trace_output": _TRACE,
            "new_trace_output": {
                **_TRACE,
                "description": "Where the new execution goes (any store); it must not exist.",
            },
            "at": {
                "type": "integer",
                "description": "How many trace entries to keep, from 0 to the trace's length.",
            },
        },
        ("trace_output", "new_trace_output", "at"),
        {
            "type": "object",
            "properties": {
                "status": {"enum": ["forked"]},
                "uri": {"type": "string", "description": "The new execution's URI."},
                "forked_from": {
                    "type": "object",
                    "properties": {"uri": {"type": "string"}, "at": {"type": "integer"}},
                },
                "entries": {"type": "integer", "description": "Trace entries kept."},
                "next": {**_REQUEST, "description": "The new execution's open request."},
            },
            "required": ["status", "uri", "forked_from", "entries", "next"],
        },
        tool_annotations("Fork an execution", read_only=False),
        lambda rt, a: rt.fork(a["trace_output"], a["new_trace_output"], at=a["at"]),
    ),
)

_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


# -- arguments -------------------------------------------------------------------------------


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> Arguments:
    """The arguments, checked against the tool's input schema; a `usage` error otherwise.

    Lenient where clients commonly are not exact: "true"/"false" for a boolean, digits for an
    integer, any case for an enum. An optional argument given as null counts as omitted.
    """
    for name in arguments:
        if name not in spec.properties:
            raise _bad(
                spec, name, f"unknown argument {name!r}; it takes {', '.join(spec.properties)}"
            )
    out: Arguments = {}
    for name, schema in spec.properties.items():
        if name not in arguments or (arguments[name] is None and name not in spec.required):
            if name in spec.required:
                raise _bad(spec, name, f"missing required argument {name!r}")
            continue
        out[name] = _coerce(spec, name, schema, arguments[name])
    return out


def _coerce(spec: ToolSpec, name: str, schema: Mapping[str, Any], value: Any) -> Any:
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise _bad(spec, name, f"{name!r} must be a string, got {_shown(value)}")
        if "enum" in schema:
            if value.lower() not in schema["enum"]:
                choices = ", ".join(schema["enum"])
                raise _bad(spec, name, f"{name!r} must be one of {choices}, got {value!r}")
            return value.lower()
        if len(value) < schema.get("minLength", 0):
            raise _bad(spec, name, f"{name!r} must not be empty")
        return value
    if kind == "boolean":
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise _bad(spec, name, f"{name!r} must be true or false, got {_shown(value)}")
        return value
    if kind == "integer":
        if isinstance(value, str) and value.lstrip("-").isdigit():
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _bad(spec, name, f"{name!r} must be a whole number, got {_shown(value)}")
        return value
    if kind == "object" and not isinstance(value, dict):
        raise _bad(spec, name, f"{name!r} must be an object, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _bad(spec: ToolSpec, name: str, message: str) -> TetherError:
    return TetherError("usage", f"{spec.name}: {message}", tool=spec.name, argument=name)


# -- calling ---------------------------------------------------------------------------------


def call_spec(
    spec: ToolSpec, runtime: Runtime, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    """Run one call of any tool (the runtime's, a bot's) to its result: structured content, or
    a tool error for anything refused (and `internal`, without a traceback, for the rest)."""
    try:
        result = spec.handler(runtime, check_arguments(spec, arguments))
    except TetherError as exc:
        # A refused URI is named by the argument that carried it (trace_output, tree_uri...).
        given = [k for k, v in arguments.items() if v == exc.details.get("uri")]
        if given and "argument" not in exc.details:
            exc.details["argument"] = given[0]
        return error_result(exc, runtime.root)
    except WouldWait:
        raise
    except Exception:
        logger.exception("tool %s failed", spec.name)
        return error_result(
            TetherError(
                "internal", f"{spec.name} failed unexpectedly; the server's log has details"
            )
        )
    # Compact JSON: the text is what a model reads, and every byte of it is a token spent.
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=result
    )


def error_result(exc: TetherError, root: str | None = None) -> types.CallToolResult:
    """A tool error whose text is the CLI's error document: {"error": {"code", "message", ...}}.

    With a `root`, what the error says about where is shown relative to it, and `root` itself
    as `.`, so a client learns nothing of the server's filesystem beyond what it may address:
    the message, and each detail that is a path or file URI under `root`. Every other detail
    (the current request, a check, what the client sent) comes back exactly as it is."""
    document = exc.to_dict()
    if root:
        document["message"] = _relative_text(exc.message, root)
        for key, value in exc.details.items():
            if isinstance(value, str):
                document[key] = _relative_path(value, root)
    text = json.dumps({"error": document}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _relative_path(value: str, root: str) -> str:
    """`value`, if it is `root` or a path or file URI under it, relative to `root`."""
    for prefix in (f"file://{root}", root):
        if value == prefix:
            return "."
        if value.startswith(prefix + "/"):
            return value[len(prefix) + 1 :]
    return value


def _relative_text(text: str, root: str) -> str:
    """`text` with every mention of `root` (a path or file URI, not a longer name such as
    `ROOTx`) made relative to it."""
    mention = re.compile(rf"(?:file://)?{re.escape(root)}(?:(/)|(?![\w-]|\.\w))")
    return mention.sub(lambda m: "" if m.group(1) else ".", text)


async def _unless_waiting(work: Callable[..., _T], *args: Any) -> _T:
    """`work(*args)` on the event loop, or on a worker thread if it would have to wait."""
    try:
        with without_waiting():
            return work(*args)
    except WouldWait:
        return await anyio.to_thread.run_sync(work, *args)


def register_tools(server: Server[Any], runtime: Runtime) -> None:
    """Serve the runtime tools on `server`, every call going to `runtime`."""
    serve_tools(server, runtime, lambda: _BY_NAME)


def serve_tools(
    server: Server[Any], runtime: Runtime, specs: Callable[[], Mapping[str, ToolSpec]]
) -> None:
    """Answer `tools/list` and `tools/call` on `server` from `specs()`, read on every request
    (the runtime's fixed set, or a bot's, derived from its execution); every call goes to
    `runtime`. When `specs()` itself is refused, listing is a protocol error and a call is a
    tool error carrying the refusal."""

    # A call runs on the event loop: its work is bounded (CEL expressions and loops have limits)
    # and a thread hop would cost every call more than most calls take. What would stall the
    # loop, and with it every other client, /health included, is waiting: for a lock another
    # process or call holds, or for a database. Such a call is refused before it has done
    # anything (`without_waiting`) and runs again on a worker thread, where it waits alone. Each
    # call holds the store's lock for its execution, so calls on one execution still apply one
    # at a time, in order.
    def listing() -> types.ListToolsResult:
        try:
            return types.ListToolsResult(tools=[s.to_tool() for s in specs().values()])
        except TetherError as exc:
            raise MCPError(types.INTERNAL_ERROR, exc.message) from None

    def answer(name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            found = specs()
        except TetherError as exc:
            return error_result(exc, runtime.root)
        spec = found.get(name)
        if spec is None:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {name!r}; the tools are {', '.join(found)}"
            )
        return call_spec(spec, runtime, arguments)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListToolsResult:
        return await _unless_waiting(listing)

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await _unless_waiting(answer, params.name, params.arguments or {})

    def input_schema(name: str) -> dict[str, Any] | None:
        spec = specs().get(name)
        return spec.input_schema if spec is not None else None

    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call)
    server.get_tool_input_schema = input_schema
