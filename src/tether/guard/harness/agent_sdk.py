"""The Claude Agent SDK (Python), in process: `agent_options(project)` returns the `hooks` a
`ClaudeAgentOptions` takes, so an agent built on `claude-agent-sdk` is held by the guard.

Owns: one callback per event the guard answers, each handing the SDK's hook input (the same
Claude-shaped payload a command hook reads) to `hooks.handle` on a worker thread, in this process:
no `tether guard hook` process is started per event. The guard's configuration is read once, when
`agent_options` is called (a configuration that cannot be read raises there, saying which file
and why); a change to it applies to the next `agent_options`. The binding, the step's tool
policy, the evidence, the refused stop and the context are those of the command hooks, because
they are the same handlers. The SDK's bundled Claude Code also runs the project's installed
command hooks (`.claude/settings.json`); both share the session store, so an event delivered by
both is handled once (`claude.delivery`). It does not import the SDK at module load (the SDK is
the optional extra `agent-sdk`), parse the SDK's messages, or start the agent.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

from tether.errors import TetherError
from tether.guard.binding.binder import Binder
from tether.guard.harness.claude import EVENTS
from tether.guard.harness.hooks import handle
from tether.guard.harness.session_store import SessionStore
from tether.guard.rules.plan import DEFAULT_CONFIG
from tether.guard.rules.ruleset import Guard
from tether.guardlog import default_state_dir

# The events the SDK delivers to in-process callbacks (it does not deliver SessionStart or
# SessionEnd to them: the session's context comes with its first prompt). SubagentStart is left
# out: its delivery through the SDK is not tested yet.
SDK_EVENTS = tuple(e for e in EVENTS if e not in ("SessionStart", "SubagentStart", "SessionEnd"))

# (payload, tool_use_id, context) -> hook output; the SDK types them as its own TypedDicts.
Callback = Callable[[Any, str | None, Any], Awaitable[Any]]


def callback(guard: Guard, store: SessionStore, binder: Binder) -> Callback:
    """The SDK hook callback that answers every event through the guard's handlers."""

    async def hook(payload: Any, tool_use_id: str | None, context: Any) -> Any:
        out = await asyncio.to_thread(handle, dict(payload), guard, store, binder, "sdk")
        return out or {}

    return hook


def agent_options(
    project: str | os.PathLike[str], config: str | None = None, state_dir: str | None = None
) -> dict[str, Any]:
    """What `ClaudeAgentOptions(**agent_options(project), ...)` needs for the guard to hold the
    agent: `hooks`, one `HookMatcher` per event. `config` defaults to the project's
    `.tether/guard.yaml`; `state_dir` to the guard's state folder (shared with the command
    hooks, so one event is handled once whichever delivers it)."""
    try:
        from claude_agent_sdk import HookMatcher
    except ImportError as exc:
        from tether.installation import missing_extra

        raise missing_extra(
            "agent-sdk", exc.name, "An agent built on the Claude Agent SDK does"
        ) from None
    path = config or os.path.join(os.fspath(project), DEFAULT_CONFIG)
    if not os.path.exists(path):
        raise TetherError("not_found", f"no guard configuration at {path}: run tether init")
    root = state_dir or default_state_dir()
    guard = Guard.from_file(path, cache_dir=os.path.join(root, "plans"))
    store = SessionStore(root)
    binder = Binder(guard.plan["workflow"], store.root, guard.plan.get("files", ()))
    hook = callback(guard, store, binder)
    return {"hooks": {event: [HookMatcher(hooks=[hook])] for event in SDK_EVENTS}}
