"""OpenCode: the guard as a project plugin, `.opencode/plugin/tether.js`, which
`tether guard install opencode` writes.

Owns the plugin's text (`PLUGIN`) and writing it (`install_opencode`). The plugin is the adapter:
it turns each OpenCode hook into the Claude-shaped payload `tether guard hook` reads (marked with
OpenCode's own hook name, `claude.NATIVE`, so a call's outcome is read only from what OpenCode
gives) and acts on the answer:

- `tool.execute.before` -> `PreToolUse`: a deny is thrown as an error carrying the reason (the
  model gets it as the tool's result); a hook that cannot answer denies the call too.
- `tool.execute.after` -> `PostToolUse`, its `metadata.exit` as the exit code: the evidence.
- `chat.message` -> `UserPromptSubmit`: the context it answers is added to that session's system
  prompt (`experimental.chat.system.transform`).
- the `session.idle` event -> `Stop`, marked `hooks.CANNOT_REFUSE`: OpenCode 1.18.33 has no hook
  that can keep a session from ending (`session.idle` only reports it), so a bound session's
  end is recorded (a `stop` entry, outcome `ended`), not refused. Tool names are given Claude Code's
(`bash` -> `Bash`, ...), and `filePath` is `file_path`, so tree policies hold unchanged.
It does not answer events (`hooks` does) or start OpenCode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether.files import write_file

PLUGIN_FILE = str(Path(".opencode") / "plugin" / "tether.js")
MARK = "// Tether's guard for OpenCode"

PLUGIN = """// Tether's guard for OpenCode, written by `tether guard install opencode`: each hook
// goes to `tether guard hook` (COMMAND) as a Claude-shaped event; its answer is acted on.
import { spawnSync } from "node:child_process"

const COMMAND = __COMMAND__
const TOOLS = { bash: "Bash", edit: "Edit", write: "Write", read: "Read", glob: "Glob",
  grep: "Grep", list: "LS", webfetch: "WebFetch", task: "Agent", todowrite: "TodoWrite" }

function input(args) {
  const out = { ...(args || {}) }
  if ("filePath" in out) { out.file_path = out.filePath; delete out.filePath }
  if ("oldString" in out) { out.old_string = out.oldString; delete out.oldString }
  if ("newString" in out) { out.new_string = out.newString; delete out.newString }
  return out
}

function hook(directory, payload) {
  const done = spawnSync("/bin/sh", ["-c", COMMAND], {
    cwd: directory, input: JSON.stringify({ cwd: directory, ...payload }), encoding: "utf8",
    timeout: 30000,
  })
  const text = (done.stdout || "").trim()
  if (done.status !== 0 && !text) {
    const why = (done.stderr || done.error || "").toString().trim()
    return { failed: `[Tether] the guard could not answer: ${why}` }
  }
  try {
    return text ? JSON.parse(text) : {}
  } catch {
    return { failed: `[Tether] the guard's answer is not JSON: ${text}` }
  }
}

export const TetherGuard = async ({ directory }) => {
  const context = {}
  const call = (event, native, i, args) => ({
    hook_event_name: event, harness_event: native, session_id: i.sessionID,
    tool_name: TOOLS[i.tool] || i.tool, tool_input: input(args), tool_use_id: i.callID,
  })
  return {
    "tool.execute.before": async (i, output) => {
      const out = hook(directory, call("PreToolUse", "tool.execute.before", i, output.args))
      const said = out.hookSpecificOutput || {}
      if (said.permissionDecision === "deny") throw new Error(said.permissionDecisionReason)
      if (out.failed) throw new Error(out.failed)
    },
    "tool.execute.after": async (i, output) => {
      const meta = output.metadata || {}
      const response = { output: output.output }
      if (Number.isInteger(meta.exit)) response.exit_code = meta.exit
      const event = call("PostToolUse", "tool.execute.after", i, i.args)
      hook(directory, { ...event, tool_response: response })
    },
    "chat.message": async (i, output) => {
      const texts = (output.parts || []).filter((p) => p.type === "text").map((p) => p.text)
      const out = hook(directory, { hook_event_name: "UserPromptSubmit",
        harness_event: "chat.message", session_id: i.sessionID, prompt: texts.join("\\n") })
      context[i.sessionID] = (out.hookSpecificOutput || {}).additionalContext
    },
    "experimental.chat.system.transform": async (i, output) => {
      if (i.sessionID && context[i.sessionID]) output.system.push(context[i.sessionID])
    },
    event: async ({ event }) => {
      if (event.type !== "session.idle") return
      hook(directory, { hook_event_name: "Stop", harness_event: "session.idle",
        session_id: event.properties.sessionID, stop_cannot_be_refused: true })
    },
  }
}
"""


def plugin_text(command: str) -> str:
    """The plugin, running `command` (a shell command line) for each event."""
    return PLUGIN.replace("__COMMAND__", json.dumps(command))


def install_opencode(file: str | None, command: str) -> dict[str, Any]:
    """Write the plugin to `file` (default `.opencode/plugin/tether.js`), replacing an earlier
    one of Tether's; a file there that is not Tether's is refused, not overwritten."""
    from tether.errors import TetherError

    path = Path(file or PLUGIN_FILE)
    text = plugin_text(command)
    if path.exists():
        old = path.read_text(encoding="utf-8")
        if not old.startswith(MARK):
            raise TetherError(
                "invalid_value", f"{path} exists and is not Tether's plugin", path=str(path)
            )
        if old == text:
            return {"harness": "opencode", "file": str(path), "added": [], "command": command}
    write_file(path, text, root=Path.cwd())
    return {
        "harness": "opencode",
        "file": str(path),
        "added": ["tool.execute.before", "tool.execute.after", "chat.message", "session.idle"],
        "command": command,
        "stop": "OpenCode has no hook that can refuse the end of a session: a bound session's "
        "end is recorded (a stop entry, outcome ended), not refused",
    }
