"""Binding an agent session to executions: the hooks hold the agent to its workflow.

Owns: which executions a session is bound to (the `workflow` section's `trace`, first and never
displaced, then each running execution the session itself started, resumed, forked or answered
through Tether, `bind: auto`; a binding is only ever added), kept per `session_id` in the guard's
state folder (`bindings/<session>.json`, beside `sessions/`, so that it outlives `SessionEnd` for
a resumed session, with the configured traces the session has seen running and the stops refused
while one could not be read); the sub-agents its hook events named (`<session>.agents`), each
held to the branch it claimed (docs/teams.md); which files a bound session's tools may not write
(`Guarded`); and what a bound session gets at each hook event:

- `Stop`: refused (`{"decision": "block", "reason"}`) while any bound execution runs, through
  the runtime's `stop` verb on each, which records every refusal and the stop after
  `max_stop_blocks` refusals in a row (fewer, before the harness's own cap: `parking_cap`),
  which parks the execution (outcome `parked`; kept in `parked/` for the next session's
  context). A stop while the harness runs background work is let through (`background`).
  While every open step is a human step the stop is let through at once (recorded, with why)
  and the user is told that a person must answer it (`systemMessage`: `tether approve`/`reject`,
  or the viewer). An execution that cannot be read (damaged, or gone once seen running)
  refuses the stop too, counted here against the same cap. `stop: warn` only tells the user
  (`systemMessage`; Claude Code's Stop output has no context field), `off` does nothing.
- `SessionStart`, `UserPromptSubmit`: the current request as context (under 1,000 characters).
  At `UserPromptSubmit`, a person's `tether: approve [STEP]` (or `reject`) answers that open
  human step once (`prompt_answer`, recorded `by: prompt`).
- `PreToolUse`: denied, whatever the policies: a shell line that runs `tether approve` or
  `tether reject` (only a person answers a human step; read by `shell.answers_for_a_person`,
  wrappers and nested commands included), a call that writes a guarded file, a `tether reset` or
  `reset_execution` (it would throw the evidence away) and `tether guard hook`. Then Tether's own
  calls run; any other must be allowed by the `tools` policy of an open step of every running
  execution (`steptools`) and write only inside that step's `writes` scope (`scopes`), and
  while one cannot be read only reading tools run; a call a policy or scope denies is recorded
  through the `deny_tool` verb (the execution's refusal log, for `tether stats`). Relative
  paths start at the hook's `cwd` (the harness's working folder).
- `PostToolUse`, `PostToolUseFailure`: auto-binding (by a call that did not fail; with no sign
  of success, only to the execution its answer names), then evidence: every call but Tether's
  own is recorded through the `record_tool` verb (a `tool` entry, `ok` as `claude.tool_ok` read
  it: true, false or null) in each running execution, for a session the guard has seen before
  (the hooks say which).

Tether's own MCP tools are those on the servers Tether is registered as (`mcp_servers`). Every
read and write of an execution goes through the verb layer (`tether.verbs.Runtime`), which, like
the policy matching (`steptools`), is imported only when a session is bound or a call may bind
it, so an unbound hook stays as fast as before. Payload shapes are Claude Code's
(https://code.claude.com/docs/en/hooks). It does not decide rules (`engine`), speak the hook
protocol (`hooks`), read shell lines (`shell`), match policies (`steptools`) or judge what a
call writes (`scopes`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from tether import appendlog
from tether.engine.names import Reply, RequestType, Status
from tether.errors import TetherError
from tether.files import is_inside, safe_name, write_atomic

if TYPE_CHECKING:
    from tether.verbs import Runtime

# The lowest number of refused stops in a row at which a harness the guard runs in ends the
# turn itself (Qwen Code's 8; Claude Code and Copilot CLI end it at the 9th): a stop is parked
# before it when the harness is not named (the shipped capability table names each one's cap).
HARNESS_STOP_CAP = 8


def parking_cap(max_stop_blocks: int, harness_cap: int | None) -> int:
    """How many stops in a row are refused before the next is parked: `max_stop_blocks`, or
    fewer, so that the parked stop comes before the harness's own cap (`harness_cap`, the
    refusal at which it ends the turn itself; None: it has none)."""
    if harness_cap is None:
        return max_stop_blocks
    return max(1, min(max_stop_blocks, harness_cap - 1))


CONTEXT_LIMIT = 1000
# A person's answer typed into the harness's prompt: `tether: approve [STEP]`.
PROMPT_ANSWER = re.compile(r"tether:\s*(approve|reject)(?:\s+(\S+))?", re.IGNORECASE)
# The MCP servers Tether is registered as, unless `workflow.mcp_servers` says: its own name
# (`tether mcp install`) and its Claude Code plugin's.
DEFAULT_SERVERS = ("tether", "plugin_tether_tether")
_TEXT_KEYS = ("instruction", "expression", "prompt")
_SENTENCE_END = re.compile(r"(?<=[^\d\s])[.!?](?=\s|$)")  # not "1." of a list


class Binding(NamedTuple):
    """A session's execution: its URI and how it was bound (`config`, `mcp`, `shell`)."""

    trace: str
    via: str


def project_dir(payload: dict[str, Any]) -> str:
    """The project: `$CLAUDE_PROJECT_DIR`, else the payload's `cwd`, else the current folder."""
    cwd = payload.get("cwd")
    return os.environ.get("CLAUDE_PROJECT_DIR") or (cwd if isinstance(cwd, str) else os.getcwd())


def resolve(trace: str, project: str) -> str:
    """A URI as given (`postgresql://…`, `file://…`), or a path made absolute against
    `project`, as the file store spells it (`file:///abs/path`)."""
    if "://" in trace or trace.startswith("file:"):
        return trace
    return "file://" + os.path.normpath(os.path.join(project, os.path.expanduser(trace)))


def gist(request: dict[str, Any], limit: int) -> str:
    """A request's text (its instruction, expression or prompt) with its lines joined, in at
    most `limit` characters: whole when it fits, else its whole sentences that fit, else cut at
    a word and marked `…`; so it never stops mid-sentence and runs into the words after it."""
    for key in _TEXT_KEYS:
        text = request.get(key)
        if isinstance(text, str) and text.strip():
            flat = " ".join(text.split())
            if len(flat) <= limit:
                return flat
            ends = [m.end() for m in _SENTENCE_END.finditer(flat, 0, limit)]
            if ends:
                return flat[: ends[-1]]
            return flat[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_uri(response: Any) -> str | None:
    """The `uri` a start or resume answered with, however the harness wrapped the result: the
    object itself, MCP structured content, text blocks, or a shell tool's stdout."""
    if isinstance(response, str):
        try:
            return result_uri(json.loads(response))
        except ValueError:
            return None
    if isinstance(response, list):
        for block in response:
            found = result_uri(block.get("text") if isinstance(block, dict) else None)
            if found:
                return found
        return None
    if not isinstance(response, dict):
        return None
    uri = response.get("uri")
    if isinstance(uri, str) and uri:
        return uri
    for key in ("structuredContent", "structured_content", "content", "stdout"):
        if key in response:
            found = result_uri(response[key])
            if found:
                return found
    return None


# The runtime's MCP tools and shell commands that bind a session (`bind: auto`), with the
# argument naming the execution each binds: opening one, forking one, or driving one (answering
# an execution a person started binds like a resume).
_MCP_BINDERS = {
    "start_execution": "trace_output",
    "resume_execution": "trace_output",
    "fork_execution": "new_trace_output",
    "next_step": "trace_output",
    "eval": "trace_output",
    "submit": "trace_output",
}
_SHELL_BINDERS = {"start": "TRACE", "resume": "TRACE", "fork": "NEW", "next": "TRACE"}
_SHELL_BINDERS.update(eval="TRACE", submit="TRACE")
# Tether's calls that answer or claim a step, each naming its agent (`named_agents`).
_SHELL_ANSWERS = frozenset({"claim", "eval", "submit"})
_MCP_ANSWERS = frozenset({"claim_step", "eval", "submit"})
# How a binding record that cannot be read is bound (`Binding.via`): to the record itself.
_LOST = "lost"
# What the agent's tools may not run while bound: a reset throws the trace (its `stop` and `tool`
# evidence) away, and the guard's own hook takes events only from the harness.
_NOT_THE_AGENTS = {"reset": "tether reset", "guard": "tether guard"}
# Commands that may name a guarded file without writing it (and Tether itself, whose writes are
# its answers); `rm`/`mv` of a folder holding one count as writing it.
_READERS = frozenset(
    (
        *("cat", "head", "tail", "less", "more", "wc", "grep", "egrep", "fgrep", "rg", "jq"),
        *("diff", "cmp", "ls", "stat", "file", "sha256sum", "md5sum"),
    )
)
_GLOB_LIMIT = 1000  # files of one glob looked at
_CD_LIMIT = 16  # folders one shell line may go to (`cd`) before its paths are not followed
# Strict mode: the folder no command of the agent writes (`harness.wall`), and where a strict
# session's executions live in it.
TETHER_FOLDER = ".tether"
RUNS = os.path.join(TETHER_FOLDER, "runs")
_REMOVERS = frozenset({"rm", "mv", "rmdir", "shred", "unlink"})
# `find` with one of these acts on every file below the folders it names, without naming them.
_FIND_ACTIONS = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
# The name a shell line gives with `--agent`, wherever it stands (quoted, nested, in `bash -c`).
_AGENT_OPTION = re.compile(r"--agent(?:=|\s+)['\"]?([^\s'\";|&)]+)")


def _stopped_by(
    found: list[tuple[Binding, dict[str, Any]]], agent: str | None
) -> list[tuple[Binding, dict[str, Any]]]:
    """The bound executions (`found`, from `Binder.views`) a stop meets: each running or
    unreadable one; a sub-agent's (`agent`), each running one where it holds the claim on an
    open step, that step as its `current` and only open one."""
    live = [(b, v) for b, v in found if v["status"] in (Status.RUNNING, "unreadable")]
    if agent is None:
        return live
    held = [(b, held_by(v["open"], agent)[:1]) for b, v in live if v["status"] != "unreadable"]
    return [
        (
            b,
            {
                "status": Status.RUNNING,
                "current": h[0],
                "open": h,
                "for_person": h[0]["type"] == RequestType.HUMAN,
            },
        )
        for b, h in held
        if h
    ]


def held_by(open_: list[dict[str, Any]], agent: str | None) -> list[dict[str, Any]]:
    """The open requests (from `Runtime.open_steps`) whose action `agent` holds the claim on
    (none when no agent is named)."""
    if agent is None:
        return []
    return [r for r in open_ if (r.get("claim") or {}).get("agent") == agent]


def mcp_server(tool: str) -> str | None:
    """The server of an `mcp__<server>__<tool>` name, else None."""
    if not tool.startswith("mcp__") or "__" not in tool[5:]:
        return None
    return tool[5:].rsplit("__", 1)[0]


def started(
    tool: str,
    params: dict[str, Any],
    response: Any,
    project: str,
    ok: bool | None,
    servers: frozenset[str],
) -> Binding | None:
    """The execution a call that did not fail started, resumed, forked or answered through
    Tether, if it did: one of the runtime's MCP tools on a server Tether is registered as
    (`servers`), or a shell line running `tether start|resume|fork|next|eval|submit` (a fork
    binds the fork). The URI is the one the call answered with, else, when the call is known to
    have succeeded (`ok`), its argument resolved against the project; the caller binds it only
    when that execution is there and running."""
    server = mcp_server(tool)
    if server is not None:
        key = _MCP_BINDERS.get(tool.rsplit("__", 1)[-1]) if server in servers else None
        if key is None:
            return None
        given, via = params.get(key), "mcp"
    else:
        command = params.get("command")
        if not isinstance(command, str) or "tether" not in command:
            return None
        from tether.guard.binding.steptools import simple_commands

        given = None
        for words in simple_commands(command) or []:
            found = _shell_trace(words)
            if found is not None:
                given = found
        if given is None:
            return None
        via = "shell"
    known = resolve(given, project) if ok and isinstance(given, str) else None
    uri = result_uri(response) or known
    if uri is None or uri.startswith("memory:"):  # a memory execution lives in another process
        return None
    return Binding(uri, via)


def outside_the_wall(binding: Binding, project: str) -> str | None:
    """Why a strict session may not start or fork the execution `binding` names (None: it
    may): its files must be under `.tether/`, where the agent's commands cannot write them."""
    if "://" in binding.trace and not binding.trace.startswith("file://"):
        return None  # a store of its own (PostgreSQL), which no command of the agent writes
    path = binding.trace.removeprefix("file://")
    if is_inside(os.path.join(project, path), os.path.join(project, TETHER_FOLDER)):
        return None
    name = os.path.join(RUNS, os.path.basename(path))
    return (
        f"[Tether] strict mode: an execution's files live under {RUNS}/, where the agent's "
        f"commands cannot write them; start it as {name} through Tether's MCP tools (the "
        "shell cannot write there either)."
    )


def _shell_verb(words: list[str], verbs: Any) -> tuple[str, Any] | None:
    """The verb of `verbs` a simple command runs through `tether`, and its parsed arguments
    (None: it runs none, or one that does not parse, which fails on its own)."""
    from tether.command.args import parse
    from tether.command.verb_table import COMMANDS
    from tether.guard.binding.steptools import tether_args

    args = tether_args(words)
    if not args or args[0] not in verbs:
        return None
    try:
        return args[0], parse(COMMANDS[args[0]], args[1:])
    except TetherError:
        return None


def _shell_trace(words: list[str]) -> str | None:
    found = _shell_verb(words, _SHELL_BINDERS)
    return None if found is None else found[1].args.get(_SHELL_BINDERS[found[0]])


def named_agents(tool: str, params: dict[str, Any], servers: frozenset[str]) -> list[str | None]:
    """The agent each answer or claim the call makes through Tether names (None: one that
    names none): a shell line's `tether claim|eval|submit --agent NAME`, or the runtime's MCP
    `claim_step`, `eval` or `submit` on a server Tether is registered as (`agent`)."""
    server = mcp_server(tool)
    if server is not None:
        name = tool.rsplit("__", 1)[-1]
        if server not in servers or name not in _MCP_ANSWERS:
            return []
        agent = params.get("agent")
        return [agent if isinstance(agent, str) else None]
    command = params.get("command")
    if not isinstance(command, str) or "tether" not in command:
        return []
    from tether.guard.binding.steptools import simple_commands

    found = (_shell_verb(words, _SHELL_ANSWERS) for words in simple_commands(command) or [])
    return [hit[1].options.get("--agent") for hit in found if hit is not None]


def _not_the_agents(name: str, args: list[str]) -> str | None:
    """A `shell.first` judge: the `tether reset` or `tether guard hook` a command runs."""
    from tether.guard.rules.shell import tether_args

    given = tether_args(name, args)
    if given is None:
        return None
    sub = next((a for a in given if not a.startswith("-")), None)
    if sub == "guard" and "hook" not in given:
        return None
    return _NOT_THE_AGENTS.get(sub or "")


def _redirect_targets(text: str) -> list[str]:
    """The files a line's output redirections write (`> f`, `>> f`, `&> f`, `>| f`)."""
    from tether.guard.rules.shell import tokens

    words = tokens(text)
    return [
        words[i + 1].strip("`)")
        for i, word in enumerate(words[:-1])
        if word in _WRITE_REDIRECTS and not words[i + 1].isdigit() and words[i + 1] != "-"
    ]


def _scope_line(scope: dict[str, Any] | None) -> str:
    """What the context says of a request's file scope (nothing without one)."""
    if not scope:
        return ""
    globs = ", ".join(scope["writes"])
    return f"Write only {globs} while it is open (the writes of {scope['node']!r})."


def _refused(
    request: dict[str, Any], tool: str, params: dict[str, Any], project: str, cwd: str | None
) -> tuple[str, str] | None:
    """Why one open request does not let the call run, and what its node allows instead: its
    `tools` policy refuses it, or the call writes outside its `scope` (relative paths from
    `cwd`, the harness's working folder); None when it may run."""
    from tether.guard.binding import scopes, steptools

    policy: dict[str, Any] = request.get("tools") or {}
    why = steptools.refusal(policy, tool, params, project) if policy else None
    if why is not None:
        allowed = ", ".join(policy.get("allow", [])) or "every tool"
        denied = f" and denies {', '.join(policy['deny'])}" if policy.get("deny") else ""
        return why, (
            f"the tools policy of {policy['node']!r} allows {allowed}{denied}. Use an allowed tool"
        )
    scope: dict[str, Any] = request.get("scope") or {}
    why = scopes.refusal(scope, tool, params, project, cwd) if scope else None
    if why is not None:
        return why, (
            f"{scope['node']!r} writes only {', '.join(scope['writes'])}. Write there with a "
            "file tool or a shell command the guard can read"
        )
    return None


class Guarded:
    """The files a session's tools may not write: while it is bound, each bound execution's (its
    state file and the sidecars named after it), the guard's configuration, its state folder and
    the harnesses' hook registrations (`registrations`); unbound, the rules' own files (the
    configuration and the plan cache)."""

    def __init__(
        self,
        traces: list[str],
        config: frozenset[str],
        state: str,
        hooks: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
    ) -> None:
        """`config`, `state` and `hooks` (files, folders) as they resolve (`os.path.realpath`)."""
        self.executions: list[str] = []
        if traces:
            from tether.verbs import file_of

            self.executions = [
                os.path.realpath(file_of(t)) for t in traces if t.startswith("file:")
            ]
        self.config = config
        self.state = state
        self.hook_files, self.hook_folders = hooks

    def _paths(self) -> list[str]:
        return [*self.executions, *self.config, self.state, *self.hook_files, *self.hook_folders]

    def names(self, project: str) -> tuple[str, ...]:
        """What a shell line must mention to be able to name a guarded file: a part of one's
        path, an output redirection or a glob."""
        parts = {">", "*", "?", "["}
        for path in self._paths():
            relative = os.path.relpath(path, project)
            parts.update(p.lower() for p in relative.split(os.sep) if p not in ("", ".."))
        return tuple(parts)

    def what(self, path: str, project: str) -> str | None:
        """What `path` (relative to `project`; a glob stands for the files it matches) is of
        the guarded files, or None."""
        named = os.path.join(project, os.path.expanduser(path))
        if any(char in path for char in "*?["):
            import glob
            import itertools

            found = map(self._what, itertools.islice(glob.iglob(named), _GLOB_LIMIT))
            return next(filter(None, found), None)
        return self._what(named)

    def _what(self, path: str) -> str | None:
        real = os.path.realpath(path)
        for state in self.executions:
            if real == state or real.startswith(state + "."):
                return f"a file of the bound execution {state}"
        if real in self.config:
            return f"the guard's configuration {real}"
        if is_inside(real, self.state):
            return f"the guard's state folder {self.state}"
        if real in self.hook_files or any(is_inside(real, f) for f in self.hook_folders):
            return f"the hook registration {real}"
        return None

    def holds(self, folder: str, project: str) -> str | None:
        """What guarded file lies inside `folder` (relative to `project`), or None."""
        real = os.path.realpath(os.path.join(project, os.path.expanduser(folder)))
        if real == os.sep or not os.path.isdir(real):
            return "every file" if real == os.sep else None
        for path in self._paths():
            if path != real and is_inside(path, real):
                return self._what(path)
        return None

    def call(self, tool: str, params: dict[str, Any], project: str) -> str | None:
        """What guarded file the call would write, or None: a file tool's path, or a shell
        line's output redirection or a command's argument (bar commands that only read)."""
        from tether.guard.rules.state import WRITTEN_KEYS, reads_only, shell_folder
        from tether.guard.rules.triggers import bare

        command = params.get("command")
        if bare(tool) == "bash" and isinstance(command, str):
            return self._line(command, shell_folder(params, project))
        if reads_only(tool):
            return None
        for key in WRITTEN_KEYS:
            value = params.get(key)
            found = self.what(value, project) if isinstance(value, str) and value else None
            if found:
                return found
        return None

    def _line(self, line: str, project: str) -> str | None:
        from tether.guard.rules.shell import first, tether_args

        bases = [project]  # and each folder a `cd` or `pushd` of the line went to

        def judge(name: str, args: list[str]) -> str | None:
            if name in ("cd", "pushd") and args and not args[-1].startswith("-"):
                if len(bases) >= _CD_LIMIT:
                    return "files past more changes of folder than the guard follows"
                bases.extend(os.path.join(b, os.path.expanduser(args[-1])) for b in list(bases))
                return None
            finds = name == "find" and _FIND_ACTIONS.isdisjoint(args)  # a `find` that lists
            if finds or name in _READERS or tether_args(name, args) is not None:
                return None
            removes = name in _REMOVERS or name == "find"
            found = (self._argument(a, b, removes) for a in args for b in bases)
            return next(filter(None, found), None)

        said = first(line, self.names(project), judge)
        targets = _redirect_targets(line) if ">" in line and said is None else ()
        return said or next(filter(None, (self.what(t, b) for t in targets for b in bases)), None)

    def _argument(self, arg: str, base: str, removes: bool) -> str | None:
        """What guarded file one argument of a command run in `base` writes: a redirection in
        it, the path it is (or holds, for a command that `removes`), or after its `=`."""
        for target in _redirect_targets(arg) if ">" in arg else ():
            found = self.what(target, base)
            if found:
                return found
        for word in (arg, arg.partition("=")[2]):
            if not word or word.startswith("-"):
                continue
            found = self.what(word, base) or (self.holds(word, base) if removes else None)
            if found:
                return found
        return None


class Binder:
    """The `workflow` settings of one configuration, the bindings kept under `root`, and the
    runtime that reads and records bound executions (made on first use, kept warm by `serve`).
    `config` are the configuration's files, which a bound session's tools may not write."""

    def __init__(
        self, settings: dict[str, Any], root: str, config: tuple[str, ...] | list[str] = ()
    ) -> None:
        self.settings = settings
        self.root = root
        self.folder = os.path.join(root, "bindings")
        self.config = tuple(config)
        self.servers = frozenset(settings.get("mcp_servers") or DEFAULT_SERVERS)
        self._runtime: Runtime | None = None

    @functools.cached_property
    def _guarded(self) -> tuple[frozenset[str], str]:
        """The configuration's files and the state folder, as they resolve."""
        real = os.path.realpath
        return frozenset(real(f) for f in self.config), real(self.root)

    def _rules_files(self, tool: str, params: dict[str, Any], project: str) -> str | None:
        """Why an unbound session's call may not run: it writes the rules' own files (the
        configuration or the plan cache)."""
        config, root = self._guarded
        written = Guarded([], config, os.path.join(root, "plans")).call(tool, params, project)
        if written is None:
            return None
        return (
            f"[Tether] {tool} may not write {written}: the guard's rules change only by a "
            "person, in their own editor or terminal."
        )

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            from tether.verbs import Runtime

            self._runtime = Runtime(notify=self.settings.get("notify", ()), log=self.root)
        return self._runtime

    # -- the binding ---------------------------------------------------------------------------

    def path(self, session_id: str) -> str:
        return os.path.join(self.folder, safe_name(session_id) + ".json")

    def _record(self, session_id: str) -> dict[str, Any]:
        """The session's stored binding: `executions` (each `{trace, via}`, bound by its own
        calls), `seen` (the executions last seen running), `unreadable` (stops refused in a row
        while an execution could not be read) and, once the record could not be read, `lost`
        (why). It is
        kept twice: `<session>.json` and its copy `<session>.bound`, which a `find -name
        '*.json' -delete` passes by. A record gone while its copy is there is read from the copy
        and written back; a record, or a lone copy, that cannot be read is lost: the session
        stays bound to what it cannot read (fail closed), never unbound."""
        path = self.path(session_id)
        for file in (path, path.removesuffix(".json") + ".bound"):
            try:
                with open(file, encoding="utf-8") as handle:
                    text = handle.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                return _lost(f"{file}: {exc.strerror or exc}")
            try:
                record = _parsed(text)
            except (ValueError, KeyError, TypeError, AttributeError):
                return _lost(f"{file} is not a binding record")
            if file != path:
                self._write(session_id, record)
            return record
        return {"executions": [], "seen": [], "unreadable": 0}

    def _write(self, session_id: str, record: dict[str, Any]) -> None:
        os.makedirs(self.folder, exist_ok=True)
        executions = [b._asdict() for b in record["executions"]]
        text = json.dumps({"session": session_id, **record, "executions": executions})
        path = self.path(session_id)
        write_atomic(path.removesuffix(".json") + ".bound", text)
        write_atomic(path, text)

    def bound(
        self, session_id: str, project: str, record: dict[str, Any] | None = None
    ) -> list[Binding]:
        """Every execution the session is bound to: the configured `trace` first, then each it
        bound itself, oldest first (`record`: the session's, when already read). A binding is
        never displaced."""
        trace = self.settings.get("trace")
        record = record or self._record(session_id)
        out = [Binding(resolve(trace, project), "config")] if trace else []
        if record.get("lost"):
            out.append(Binding(self.path(session_id), _LOST))
        for binding in record["executions"]:
            if all(binding.trace != b.trace for b in out):
                out.append(binding)
        return out

    def bind(self, session_id: str, binding: Binding) -> None:
        """Add `binding` to the session's, unless it is there already."""
        record = self._record(session_id)
        if all(binding.trace != b.trace for b in record["executions"]):
            record["executions"].append(binding)
            record["seen"].append(binding.trace)
            self._write(session_id, record)

    def sessions(self) -> list[dict[str, Any]]:
        """Every session the binding knows, as stored."""
        out = []
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return []
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(self.folder, name), encoding="utf-8") as handle:
                    out.append(json.loads(handle.read()))
            except (OSError, ValueError):
                continue
        return out

    def views(
        self, session_id: str, project: str, record: dict[str, Any] | None = None
    ) -> list[tuple[Binding, dict[str, Any]]]:
        """Each bound execution with its open steps, or `{"status": "unreadable", "error"}`.
        One that is not there is left out (a configured `trace` not started yet, a finished
        one cleared away), unless it was last seen running: its loss is unreadable too."""
        record = record or self._record(session_id)
        seen = list(record["seen"])
        out = []
        for binding in self.bound(session_id, project, record):
            if binding.via == _LOST:
                error = {"code": "binding_lost", "message": str(record["lost"])}
                out.append((binding, {"status": "unreadable", "error": error, "lost": True}))
                continue
            try:
                view = self.runtime.open_steps(binding.trace)
            except TetherError as exc:
                if exc.code == "not_found" and binding.trace not in seen:
                    continue
                view = {"status": "unreadable", "error": exc.to_dict()}
            else:
                running = view["status"] == Status.RUNNING
                if running != (binding.trace in seen):
                    seen = (
                        [*seen, binding.trace]
                        if running
                        else [t for t in seen if t != binding.trace]
                    )
            out.append((binding, view))
        if seen != record["seen"]:
            self._write(session_id, {**record, "seen": seen})
        return out

    def status(self, session_id: str, project: str) -> dict[str, Any]:
        """What `tether guard status --session` shows: the bindings and their executions now."""
        found = self.views(session_id, project)
        return {
            "session": session_id,
            "bound": [{**b._asdict(), "execution": view} for b, view in found] or None,
        }

    def _running(self, trace: str) -> bool:
        try:
            return self.runtime.open_steps(trace)["status"] == Status.RUNNING
        except TetherError:
            return False

    # -- what a bound session gets -------------------------------------------------------------

    def context(self, session_id: str, project: str) -> str | None:
        """The current request of each running execution, for `SessionStart` and
        `UserPromptSubmit` (the first in full, the others by name)."""
        if not self.settings["context"]:
            return None
        found = self.views(session_id, project)
        parked = self.parked(project)
        text = "\n".join(filter(None, [self._bound_context(found), *parked]))
        return _cut(text, CONTEXT_LIMIT) if text else None

    def subagent_context(self, session_id: str, project: str, agent: str) -> str | None:
        """What a sub-agent (`agent`, as the harness names it) is told as it starts
        (`SubagentStart`) in a session bound to a running execution: its name, how it claims a
        branch and answers under that name, and each open step with its token and holder. The
        name is noted among the session's sub-agents."""
        self._note_agent(session_id, agent)
        if not self.settings["context"]:
            return None
        found = self.views(session_id, project)
        live = [(b, v) for b, v in found if v["status"] == Status.RUNNING]
        if not live:
            return None
        lines = [
            f"[Tether] You are the sub-agent {agent} (the harness names you so). To work on a "
            f"branch of a bound execution, claim its open step under that name (`tether claim "
            f"TRACE --agent {agent} --step TOKEN`, or MCP claim_step) and answer it under the "
            f"same name (--agent {agent}). Once you hold it, your tools meet its tools policy, "
            "your calls are its evidence, and you may not stop until it is answered; until "
            "then you are held to the lead's steps."
        ]
        for binding, view in live:
            steps = "; ".join(
                f"{r['name']!r} (step {r['step']}"
                + (f", claimed by {r['claim']['agent']})" if r.get("claim") else ")")
                for r in view["open"]
            )
            lines.append(f"Open in {binding.trace}: {steps}.")
        return _cut("\n".join(lines), CONTEXT_LIMIT)

    def agents(self, session_id: str) -> list[str]:
        """The sub-agents the harness named in the session's hook events, kept beside its
        binding record (`<session>.agents`, a line each, appended: never a lost update when
        several agents' hooks run at once)."""
        found, _ = appendlog.read(self._agents_file(session_id))
        return [str(r.get("agent")) for r in found]

    def _agents_file(self, session_id: str) -> str:
        return os.path.join(self.folder, safe_name(session_id) + ".agents")

    def _note_agent(self, session_id: str, agent: str | None) -> list[str]:
        """The session's sub-agents, `agent` among them (noted when new)."""
        known = self.agents(session_id)
        if agent is not None and agent not in known:
            os.makedirs(self.folder, exist_ok=True)
            appendlog.append(self._agents_file(session_id), [{"agent": agent}])
            known.append(agent)
        return known

    def _bound_context(self, found: list[tuple[Binding, dict[str, Any]]]) -> str | None:
        """What `context` says of the session's own executions (`found`, from `views`)."""
        live = [(b, v) for b, v in found if v["status"] in (Status.RUNNING, "unreadable")]
        if not live:
            if not found:
                return None
            trace, view = found[0][0].trace, found[0][1]
            done = "done" if view["status"] == Status.COMPLETE else "failed"
            return f"[Tether] This session is bound to the execution {trace}. It is {done}."
        (binding, view), others = live[0], live[1:]
        head = f"[Tether] This session is bound to the execution {binding.trace}."
        if view["status"] == "unreadable":
            lines = [head, _unreadable(binding.trace, view)]
        else:
            current = view["current"]
            lines = [
                head,
                f"Current request: {current['type']} {current['name']!r} (step {current['step']}).",
                gist(current, 400)
                if current.get("path") is not None
                else "Read the protocol (MCP next_step, or tether next) and accept it: "
                "submit success.",
                _ONLY_A_PERSON + " Tell the user what it asks and wait."
                if current["type"] == RequestType.HUMAN
                else "Answer it through Tether (MCP eval/submit or the tether command, with the "
                "step token) before you stop; the hooks refuse a stop while it is open.",
                _scope_line(current.get("scope")),
            ]
        if others:
            lines.append(
                "Also bound to, and still running: " + ", ".join(b.trace for b, _ in others)
            )
        return "\n".join(line for line in lines if line)

    def prompt_answer(self, session_id: str, project: str, prompt: str) -> str | None:
        """A person's answer typed into the harness's prompt (`PROMPT_ANSWER`: `tether: approve
        [STEP]` or `tether: reject [STEP]`, STEP a human step's name or token, needed only when
        several are open), recorded `by: prompt` on the open human step of a running bound
        execution, with the token open now: that step, once. The verbs' person gate takes it
        only from the hook the harness ran for the prompt (`tether.person.harness_prompt`).
        Returns what the agent is told, or None for a prompt that answers nothing."""
        asked = PROMPT_ANSWER.fullmatch(prompt.strip())
        if asked is None:
            return None
        verb, named = asked.group(1), asked.group(2)
        found = [
            (binding.trace, r)
            for binding, view in self.views(session_id, project)
            if view["status"] == Status.RUNNING
            for r in view["open"]
            if r.get("type") == RequestType.HUMAN and named in (None, r.get("name"), r.get("step"))
        ]
        if len(found) != 1:
            which = "no" if not found else "more than one"
            return (
                f"[Tether] '{prompt.strip()}' answered nothing: {which} open human step of "
                "this session's executions matches it (name the step: tether: approve NAME)."
            )
        trace, request = found[0]
        decide = self.runtime.approve if verb == "approve" else self.runtime.reject
        try:
            decide(trace, step=request["step"], by="prompt", note="typed into the prompt")
        except TetherError as exc:
            return f"[Tether] '{prompt.strip()}' answered nothing: {exc.message}"
        done = "approved" if verb == "approve" else "rejected"
        return f"[Tether] The person {done} the human step {request['name']!r} of {trace}."

    def own(self, tool: str, params: dict[str, Any], project: str) -> bool:
        """Whether a call is Tether's own (`steptools.is_own_tool`), its MCP tools counting only
        on a server Tether is registered as."""
        from tether.guard.binding.steptools import is_own_tool

        server = mcp_server(tool)
        return (server is None or server in self.servers) and is_own_tool(tool, params, project)

    def pre_tool(
        self,
        session_id: str,
        project: str,
        tool: str,
        params: dict[str, Any],
        cwd: str | None = None,
        agent: str | None = None,
    ) -> str | None:
        """Why a call may not run while bound (None: it may). Never: a person's answer, a
        write to a guarded file, a reset or the guard's own hook, nor an answer or claim under
        another agent's name (`_not_its_name`). Then a call runs when Tether's own, or when
        every running execution has an open step with no policy or a policy that allows it (a
        sub-agent, `agent` as the harness names it: the open steps it claimed, when it holds
        any; else every open step, as the lead); while one cannot be read, only reading tools
        run. In strict mode a call that would bind an execution outside the wall is refused,
        bound or not. `cwd`: the folder the harness runs the call in (the hook's `cwd`; Claude
        Code's shell keeps the folder a `cd` went to), where relative paths start."""
        walled = self._walled(tool, params, project)
        if walled is not None:
            return walled
        record = self._record(session_id)
        bindings = self.bound(session_id, project, record)
        here = cwd if cwd and os.path.isabs(cwd) else project  # where relative paths start
        if not bindings:
            return self._rules_files(tool, params, here)
        never = self._never(tool, params, project, bindings, here) or self._not_its_name(
            session_id, tool, params, agent
        )
        if never is not None:
            return never
        from tether.guard.rules.state import READ_TOOLS
        from tether.guard.rules.triggers import canonical

        if self.own(tool, params, project):
            return None
        reading = canonical(tool) in READ_TOOLS
        for binding, view in self.views(session_id, project, record):
            if view["status"] == "unreadable":
                if reading:
                    continue
                return f"[Tether] {tool} may not run: {_unreadable(binding.trace, view)}"
            if view["status"] != Status.RUNNING:
                continue
            open_ = held_by(view["open"], agent) or view["open"]
            why = self._policy(binding.trace, open_, tool, params, project, cwd)
            if why is not None:
                with contextlib.suppress(TetherError):  # the denial stands, recorded or not
                    self.runtime.deny_tool(binding.trace, tool, params, reason=why)
                return why
        return None

    def _not_its_name(
        self, session_id: str, tool: str, params: dict[str, Any], agent: str | None
    ) -> str | None:
        """Why a call that answers or claims a step through Tether may not run under the name
        it gives (`named_agents`): a sub-agent (`agent`, from the hook's payload, never from
        its own text) answers and claims under its own name only, and the lead under none of
        its sub-agents' names (those the session's hook events carried)."""
        known = self._note_agent(session_id, agent)
        names = named_agents(tool, params, self.servers)
        line = params.get("command")
        if isinstance(line, str) and "tether" in line:
            names += _AGENT_OPTION.findall(line)  # nested or quoted lines too
        if agent is not None and any(name != agent for name in names):
            return (
                f"[Tether] You are the sub-agent {agent} (the harness names you): claim and "
                f"answer a step under that name only, with --agent {agent} (MCP: agent "
                f"{json.dumps(agent)})."
            )
        taken = [name for name in names if name in known]
        if agent is None and taken:
            return (
                f"[Tether] {taken[0]} is a sub-agent of this session: only it claims and "
                "answers under its name. Answer under your own name, or leave the step to it."
            )
        return None

    def _never(
        self, tool: str, params: dict[str, Any], project: str, bindings: list[Binding], here: str
    ) -> str | None:
        """Why a bound session's call may never run, whatever its step allows: a person's
        answer, a write to a guarded file (its relative paths from `here`, the harness's
        working folder), a reset, or the guard's own hook."""
        from tether.guard.binding.registrations import registrations
        from tether.guard.binding.steptools import SHELL_TOOLS
        from tether.guard.rules.triggers import canonical

        command = params.get("command")
        line = command if canonical(tool) in SHELL_TOOLS and isinstance(command, str) else None
        if line is not None:
            from tether.guard.rules.shell import answers_for_a_person, first

            answer = answers_for_a_person(line)
            if answer is not None:
                return (
                    f"[Tether] {answer} is a person's answer, not an agent's: {_ONLY_A_PERSON} "
                    "Tell the user what the step asks and leave the answer to them."
                )
        traces = [b.trace for b in bindings if b.via != _LOST]
        guarded = Guarded(traces, *self._guarded, hooks=registrations(project))
        written = guarded.call(tool, params, here)
        if written is not None:
            return (
                f"[Tether] {tool} may not write {written} while this session is bound to it: "
                "the execution changes only through Tether's answers, and the guard's files "
                "only by a person."
            )
        server = mcp_server(tool)
        mcp_reset = server in self.servers and tool.endswith("__reset_execution")
        barred = "reset_execution" if mcp_reset else None
        if line is not None and barred is None:
            barred = first(line, ("tether",), _not_the_agents)
        if barred is not None:
            return (
                f"[Tether] {barred} may not run from a bound session: a reset would throw away "
                "the trace and its evidence, and the guard hears its events only from the "
                "harness. Ask the user to run it in their own terminal."
            )
        return None

    def _walled(self, tool: str, params: dict[str, Any], project: str) -> str | None:
        """In strict mode, why a call that would bind an execution outside the wall may not run."""
        if not self.settings.get("strict"):
            return None
        binding = started(tool, params, None, project, True, self.servers)
        return None if binding is None else outside_the_wall(binding, project)

    @staticmethod
    def _policy(
        trace: str,
        open_: list[dict[str, Any]],
        tool: str,
        params: dict[str, Any],
        project: str,
        cwd: str | None = None,
    ) -> str | None:
        """Why no open step of one execution lets the call run (None: one does): its `tools`
        policy refuses it, or it writes outside its `scope` (`scopes`)."""
        refusals = []
        for request in open_:
            refused = _refused(request, tool, params, project, cwd)
            if refused is None:
                return None
            refusals.append((request, refused))
        request, (why, instead) = refusals[0]
        return (
            f"[Tether] {tool} may not run while the {request['type']} {request['name']!r} is "
            f"open ({why}): {instead}, or finish the step and answer it through Tether first "
            f"(step {request['step']} of {trace})."
        )

    def post_tool(
        self,
        session_id: str,
        project: str,
        tool: str,
        params: dict[str, Any],
        response: Any,
        *,
        ok: bool | None,
        known: bool = True,
        agent: str | None = None,
    ) -> None:
        """Bind the session to a running execution it started, resumed, forked or answered
        (`bind: auto`); then record the call as evidence in every running execution it is
        bound to (`evidence`), unless it is Tether's own or the session is not `known` (the
        guard saw no earlier event of it). `ok`: how the call went, None when the harness gave
        no sign (`claude.tool_ok`). A sub-agent's call (`agent`) names it, against the open
        step it claimed there, when it holds one."""
        if ok is not False and self.settings["bind"] == "auto":
            found = started(tool, params, response, project, ok, self.servers)
            if found is not None and self._running(found.trace):
                self.bind(session_id, found)
        if not self.settings["evidence"] or not known or self.own(tool, params, project):
            return
        for binding, view in self.views(session_id, project):
            if view["status"] == Status.RUNNING:
                held = held_by(view["open"], agent)
                step = held[0]["step"] if held else None
                self.runtime.record_tool(binding.trace, tool, params, ok=ok, step=step, agent=agent)

    def stop(
        self,
        session_id: str,
        project: str,
        *,
        harness_cap: int = HARNESS_STOP_CAP,
        background: bool = False,
        agent: str | None = None,
    ) -> dict[str, Any] | None:
        """Claude Code's output for a `Stop` of a bound session (None: let it stop quietly).
        Refused while any bound execution runs, or cannot be read (up to the same cap), and
        parked at the stop after `max_stop_blocks` refusals in a row, or earlier, before the
        harness would end the turn itself at its `harness_cap`-th refusal. While the harness
        runs `background` work the stop is let through, recorded, never counted. A
        sub-agent's `SubagentStop` (`agent`, as the harness names it) is held alike while it
        holds the claim on an open step of a running execution (its refusals counted in its
        claim); one that holds none stops."""
        mode = self.settings["stop"]
        live = _stopped_by(self.views(session_id, project) if mode != "off" else [], agent)
        if not live:
            return None
        if mode == "warn":
            return {"systemMessage": " ".join(_warning(b.trace, v) for b, v in live)}
        parks = self.settings.get("park", True)
        cap = int(self.settings["max_stop_blocks"])
        cap = parking_cap(cap, harness_cap) if parks else cap
        told: list[str] = []
        blocks: list[str] = []
        for binding, view in live:
            if view["status"] == "unreadable":
                continue
            who = {"agent": agent, "step": view["current"]["step"]} if agent else {}
            if background:
                self._stop_background(binding.trace, cap, told, **who)
            else:
                park = project if parks else None
                self._stop_running(binding.trace, cap, told, blocks, park, **who)
        unreadable = [(b, v) for b, v in live if v["status"] == "unreadable"]
        if unreadable:
            self._stop_unreadable(session_id, unreadable, cap, told, blocks)
        out: dict[str, Any] = {"systemMessage": " ".join(told)} if told else {}
        if blocks:
            out.update(decision="block", reason="\n\n".join(blocks))
        return out or None

    def ended(self, session_id: str, project: str) -> None:
        """A bound session ended in a harness that cannot refuse it (OpenCode): each running
        execution it is bound to records the end (a `stop` entry, outcome `ended`)."""
        if self.settings["stop"] == "off":
            return
        cap = int(self.settings["max_stop_blocks"])
        for binding, view in self.views(session_id, project):
            if view["status"] == Status.RUNNING:
                with contextlib.suppress(TetherError):  # finished meanwhile
                    self.runtime.stop(binding.trace, cap=cap, ended=True)

    def _stop_running(
        self,
        trace: str,
        cap: int,
        told: list[str],
        blocks: list[str],
        project: str | None,
        **who: str,
    ) -> None:
        """A `Stop` met by the running execution `trace`: refused (a line on `blocks`), or let
        through with a line on `told` when it waits on a person or the refusals reached `cap`
        (parked, announced for `project`; `allowed` when None); nothing when it finished
        meanwhile. `who`: the sub-agent's `agent` and claimed `step`, for its `SubagentStop`."""
        reason = (
            f"{cap} stops refused in a row without an answer; parked before the harness "
            "ends the turn itself"
        )
        answer = self._stop(trace, cap, park=reason if project else None, **who)
        if answer is None:
            return
        current = answer["current"]
        if answer.get("waiting") == "person":
            told.append(_for_a_person(trace, [current]))
        elif answer["status"] == Reply.ALLOWED:
            told.append(
                f"[Tether] Stop let through after {answer['cap']} refusals in a row; "
                + _open_step(trace, current)
            )
        elif project and answer["status"] == Reply.PARKED:
            self.park(trace, project, current, reason)
            told.append(
                f"[Tether] The execution {trace} is parked after {answer['cap']} refusals in a "
                f"row; a new session in this project is given its open step. "
                + _open_step(trace, current)
            )
        else:
            blocks.append(
                f"{_open_step(trace, current)} {_how(trace, current, who.get('agent'))} "
                f"(Stop refused {answer['blocks']} of {answer['cap']} times in a row.)"
            )

    def _stop_unreadable(
        self,
        session_id: str,
        unreadable: list[tuple[Binding, dict[str, Any]]],
        cap: int,
        told: list[str],
        blocks: list[str],
    ) -> None:
        """A `Stop` met by bound executions that cannot be read: refused (a line each on
        `blocks`) up to `cap` times in a row, counted in the session's record, then let through
        once (a line each on `told`) and counted afresh."""
        record = self._record(session_id)
        count = record["unreadable"] + 1
        record["unreadable"] = 0 if count > cap else count
        self._write(session_id, record)
        for binding, view in unreadable:
            text = _unreadable(binding.trace, view)
            if count > cap:
                told.append(f"[Tether] Stop let through after {cap} refusals in a row; {text}")
            else:
                blocks.append(f"{text} (Stop refused {count} of {cap} times in a row.)")

    def _stop_background(self, trace: str, cap: int, told: list[str], **who: str) -> None:
        """A `Stop` while the harness runs background work: let through, recorded as
        `background` (never counted), the user told the open step."""
        answer = self._stop(trace, cap, background=True, **who)
        if answer is not None:
            told.append(
                "[Tether] Stop let through while background work runs; "
                + _open_step(trace, answer["current"])
            )

    def park(self, trace: str, project: str, current: dict[str, Any], reason: str) -> None:
        """Announce that the execution `trace` was parked at its open step `current`: kept in
        the guard's state folder (`parked/`) for the next session in `project`, which is given
        the open step as context (`context`) while the execution runs. The one place a parked
        execution is announced."""
        folder = os.path.join(self.root, "parked")
        os.makedirs(folder, exist_ok=True)
        name = hashlib.sha256(trace.encode()).hexdigest()[:16] + ".json"
        record = {
            "trace": trace,
            "project": os.path.realpath(project),
            "step": current,
            "reason": reason,
        }
        write_atomic(os.path.join(folder, name), json.dumps(record))

    def parked(self, project: str) -> list[str]:
        """What a session in `project` is told of each execution parked there that still runs
        at the step it was parked at."""
        folder = os.path.join(self.root, "parked")
        lines: list[str] = []
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    record = json.load(f)
                if record["project"] != os.path.realpath(project):
                    continue
                view = self.runtime.open_steps(record["trace"])
            except (OSError, ValueError, KeyError, TetherError):
                continue
            steps = {r["step"] for r in view.get("open", ())}
            if view["status"] == Status.RUNNING and record["step"]["step"] in steps:
                lines.append(
                    f"[Tether] The execution {record['trace']} was parked ({record['reason']}). "
                    + _open_step(record["trace"], record["step"])
                    + " Resume it to answer it (tether resume, or MCP resume_execution)."
                )
        return lines

    def _stop(self, trace: str, cap: int, **how: Any) -> dict[str, Any] | None:
        try:
            return self.runtime.stop(trace, cap=cap, **how)
        except TetherError as exc:
            if exc.code == "execution_finished":
                return None
            raise


_ONLY_A_PERSON = (
    "Only a person answers a human step: with `tether approve` or `tether reject` in their own "
    "terminal, Approve / Reject in the viewer (`tether view`), or by typing `tether: approve` "
    "into this prompt."
)


def _for_a_person(trace: str, requests: list[dict[str, Any]]) -> str:
    """What the user is told when the agent stops while the execution waits on them."""
    asks = "; ".join(f"{r['name']!r} asks: {gist(r, 200)} (step {r['step']})" for r in requests)
    from tether.person import command_line

    approve, reject = (command_line("tether", verb, trace) for verb in ("approve", "reject"))
    return (
        f"[Tether] The execution {trace} waits on a person, so the agent may stop. {asks}. "
        f"Answer it with `{approve}` or `{reject}` (with --step when several wait), or in the "
        "viewer; the agent cannot."
    )


def _lost(why: str) -> dict[str, Any]:
    """The record of a session whose binding record cannot be read."""
    return {"executions": [], "seen": [], "unreadable": 0, "lost": why}


def _parsed(text: str) -> dict[str, Any]:
    """A binding record read from its JSON text (raises when it is not one)."""
    data = json.loads(text)
    record = {
        "executions": [Binding(str(e["trace"]), str(e["via"])) for e in data["executions"]],
        "seen": [str(t) for t in data.get("seen", [])],
        "unreadable": int(data.get("unreadable", 0)),
    }
    return {**record, "lost": str(data["lost"])} if data.get("lost") else record


def _unreadable(trace: str, view: dict[str, Any]) -> str:
    """What a bound session is told while its execution, or its binding record, cannot be
    read."""
    error = view["error"]
    what = "binding record" if view.get("lost") else "execution"
    return (
        f"[Tether] The bound {what} {trace} cannot be read ({error['code']}: "
        f"{_cut(str(error['message']), 200)}). Until a person repairs it (`tether verify`) or "
        "unbinds this session, the session may not stop and only reading tools run."
    )


def _warning(trace: str, view: dict[str, Any]) -> str:
    """What `stop: warn` tells the user of one execution."""
    if view["status"] == "unreadable":
        return _unreadable(trace, view)
    if view["for_person"]:
        return _for_a_person(trace, view["open"])
    return _open_step(trace, view["current"])


def _open_step(trace: str, current: dict[str, Any]) -> str:
    # The protocol gate's text is the protocol itself: its name says enough.
    text = gist(current, 200) if current.get("path") is not None else ""
    return (
        f"[Tether] The execution {trace} is still running; its open step is the "
        f"{current['type']} {current['name']!r}" + (f": {text}" if text else ".")
    )


def _how(trace: str, current: dict[str, Any], agent: str | None = None) -> str:
    from tether.person import command_line

    token = current["step"]
    named = ("--agent", agent) if agent is not None else ()  # a sub-agent answers under its name
    if current.get("path") is None:
        submit = command_line("tether", "submit", trace, "success", "--step", token, *named)
        return (
            f"Accept the protocol first: submit success for step {token} (MCP submit, or "
            f"`{submit}`), then work through the steps."
        )
    if current["type"] == RequestType.EVALUATE:
        answer = command_line("tether", "eval", trace, "true", "--step", token, *named)
        return (
            f"Judge it and answer with eval true or false for step {token} (MCP eval, or "
            f"`{answer}`)."
        )
    submit = command_line("tether", "submit", trace, "success", "--step", token, *named)
    return (
        f"Do the work, then answer with submit success (or failure) for step {token} (MCP "
        f"submit, or `{submit}`)."
    )
