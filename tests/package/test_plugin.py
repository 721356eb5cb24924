"""The Claude Code plugin (`.claude-plugin/plugin.json`, `.claude-plugin/marketplace.json`, the
skill under `skills/`) against Claude Code's plugin reference, and what it starts.

The rules come from Claude Code's documentation:
- the manifest reference, https://code.claude.com/docs/en/plugins/manifest-reference (and the
  plugin-dev copy in github.com/anthropics/claude-code,
  plugins/plugin-dev/skills/plugin-structure/references/manifest-reference.md): `name` is
  required, kebab-case (`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`); `version` is MAJOR.MINOR.PATCH;
  `author` is an object with a required `name` (and `email`, `url`); `homepage` and
  `repository` are URLs; `license` an SPDX identifier; `keywords` an array of strings;
  `hooks` and `mcpServers` a `./` path or an inline object; every component path starts with
  `./`, has no `..` and uses forward slashes; components live at the plugin root, not in
  `.claude-plugin/`;
- the marketplace reference, https://code.claude.com/docs/en/plugins/marketplace-reference:
  the file is `.claude-plugin/marketplace.json` at the marketplace root; `name`, `owner`
  (`{name, email?}`) and `plugins` are required; each entry needs `name` and `source`, a
  relative source starts with `./` (`./` for a plugin at the marketplace root) and resolves
  from the marketplace root; official names (claude-code-plugins, anthropic-plugins, ...) are
  reserved;
- the hooks reference, https://code.claude.com/docs/en/hooks: hooks are event -> matcher groups
  -> handlers of `type` `command` with `command` and `timeout` in seconds; tool events take a
  `matcher`; plugin hooks have the same shape as the settings' `hooks` key;
- the skills reference, https://code.claude.com/docs/en/skills: `skills/<name>/SKILL.md` with
  frontmatter `name` (lower-case letters, digits and hyphens, the folder's name, at most 64
  characters) and `description` (what it does and when to use it, at most 1024 characters).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tether import __version__
from tether.guard.harness.claude import EVENTS, TOOL_EVENTS

REPO = Path(__file__).resolve().parents[2]
PLUGIN = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
MARKET = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
SKILL = REPO / "skills" / "tether" / "SKILL.md"
LAUNCHER = "${CLAUDE_PLUGIN_ROOT}/scripts/claude-plugin"
# This installation's `tether` on PATH, as after `pipx install` of a clone.
ON_PATH = f"{Path(sys.executable).parent}:/usr/bin:/bin"

KEBAB = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
SEMVER = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$"
PATH = {"type": "string", "pattern": r"^\./(?!(.*/)?\.\.(/|$))[^\\]*$"}
URL = {"type": "string", "pattern": r"^https://"}
AUTHOR = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1}, "email": {}, "url": URL},
    "additionalProperties": False,
}
HANDLER = {
    "type": "object",
    "required": ["type", "command"],
    "properties": {
        "type": {"const": "command"},
        "command": {"type": "string", "minLength": 1},
        "timeout": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}
HOOKS = {
    "type": "object",
    "propertyNames": {"enum": list(EVENTS)},
    "additionalProperties": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["hooks"],
            "properties": {
                "matcher": {"type": "string"},
                "hooks": {"type": "array", "minItems": 1, "items": HANDLER},
            },
            "additionalProperties": False,
        },
    },
}
MCP_SERVERS = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "required": ["command"],
        "properties": {
            "command": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "additionalProperties": False,
    },
}
PATHS = {"anyOf": [PATH, {"type": "array", "items": PATH}]}
METADATA = {
    "description": {"type": "string", "minLength": 1},
    "version": {"type": "string", "pattern": SEMVER},
    "author": AUTHOR,
    "homepage": URL,
    "repository": URL,
    "license": {"type": "string", "pattern": r"^[A-Za-z0-9.+-]+$"},
    "keywords": {"type": "array", "items": {"type": "string"}},
}
PLUGIN_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": KEBAB},
        **METADATA,
        "commands": PATHS,
        "agents": PATHS,
        "skills": PATHS,
        "hooks": {"anyOf": [PATH, HOOKS]},
        "mcpServers": {"anyOf": [PATH, MCP_SERVERS]},
    },
    "additionalProperties": False,
}
RESERVED = {
    "claude-code-marketplace",
    "claude-code-plugins",
    "claude-plugins-official",
    "anthropic-marketplace",
    "anthropic-plugins",
    "agent-skills",
    "anthropic-agent-skills",
}
MARKET_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "owner", "plugins"],
    "properties": {
        "name": {"type": "string", "pattern": KEBAB, "not": {"enum": sorted(RESERVED)}},
        "owner": AUTHOR,
        "metadata": {
            "type": "object",
            "properties": {
                "description": {"type": "string"},
                "version": {"type": "string", "pattern": SEMVER},
                "pluginRoot": PATH,
            },
            "additionalProperties": False,
        },
        "plugins": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "source"],
                "properties": {
                    "name": {"type": "string", "pattern": KEBAB},
                    "source": PATH,
                    **METADATA,
                    "category": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "strict": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}
GUARD_CONFIG = '"$CLAUDE_PROJECT_DIR/.tether/guard.yaml"'


def test_plugin_json_follows_the_manifest_reference() -> None:
    jsonschema.Draft202012Validator.check_schema(PLUGIN_SCHEMA)
    jsonschema.Draft202012Validator(PLUGIN_SCHEMA).validate(PLUGIN)
    assert PLUGIN["name"] == "tether"
    assert PLUGIN["version"] == __version__
    # Only the manifest lives in .claude-plugin/; the skill sits at the plugin root.
    assert sorted(os.listdir(REPO / ".claude-plugin")) == ["marketplace.json", "plugin.json"]


def test_marketplace_json_follows_the_marketplace_reference() -> None:
    jsonschema.Draft202012Validator.check_schema(MARKET_SCHEMA)
    jsonschema.Draft202012Validator(MARKET_SCHEMA).validate(MARKET)
    (entry,) = MARKET["plugins"]
    assert entry["name"] == PLUGIN["name"]
    assert entry["version"] == PLUGIN["version"] == MARKET["metadata"]["version"]
    # A relative source resolves from the marketplace root: this folder holds the plugin.
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


@pytest.mark.parametrize(
    ("document", "schema", "broken"),
    [
        (PLUGIN, PLUGIN_SCHEMA, {"name": "Tether Plugin"}),
        (PLUGIN, PLUGIN_SCHEMA, {"version": "1.0"}),
        (PLUGIN, PLUGIN_SCHEMA, {"hooks": "hooks/hooks.json"}),
        (PLUGIN, PLUGIN_SCHEMA, {"mcpServers": "./../elsewhere/.mcp.json"}),
        (PLUGIN, PLUGIN_SCHEMA, {"author": "someone"}),
        (PLUGIN, PLUGIN_SCHEMA, {"hooks": {"PreToolUse": [{"hooks": [{"type": "cmd"}]}]}}),
        (MARKET, MARKET_SCHEMA, {"name": "claude-code-plugins"}),
        (MARKET, MARKET_SCHEMA, {"owner": {}}),
        (MARKET, MARKET_SCHEMA, {"plugins": [{"name": "tether", "source": "."}]}),
    ],
)
def test_the_schemas_refuse_what_the_reference_refuses(
    document: dict[str, Any], schema: dict[str, Any], broken: dict[str, Any]
) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({**document, **broken})


def test_the_plugin_installs_the_guards_hooks_and_the_mcp_server() -> None:
    hooks = PLUGIN["hooks"]
    assert tuple(hooks) == EVENTS  # every event `tether guard install claude` hooks
    for event, groups in hooks.items():
        (group,) = groups
        assert group.get("matcher") == ("*" if event in TOOL_EVENTS else None)
        (handler,) = group["hooks"]
        assert handler["timeout"] == 30
        assert handler["command"] == f'"{LAUNCHER}" hook', handler["command"]
    server = PLUGIN["mcpServers"]["tether"]
    assert [server["command"], *server["args"]] == [LAUNCHER, "mcp"]


def test_the_skill_has_the_frontmatter_claude_code_loads() -> None:
    text = SKILL.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front, body = text[4:].split("\n---\n", 1)
    meta = yaml.safe_load(front)
    assert set(meta) == {"name", "description"}
    assert meta["name"] == SKILL.parent.name == "tether"
    assert len(meta["name"]) <= 64
    assert 0 < len(meta["description"]) <= 1024
    assert len(body.splitlines()) < 500
    assert "## Drive a tree" in body and "## Write a tree" in body


def _launched(command: str, root: Path) -> list[str]:
    """A plugin command as Claude Code runs it: `${CLAUDE_PLUGIN_ROOT}` is the plugin's folder."""
    return ["sh", "-c", command.replace("${CLAUDE_PLUGIN_ROOT}", str(root))]


def _hook(
    command: str, project: Path, payload: dict[str, Any], root: Path = REPO, path: str = ON_PATH
) -> Any:
    env = {
        **os.environ,
        "PATH": path,
        "CLAUDE_PROJECT_DIR": str(project),
        "TETHER_GUARD_STATE": str(project / "state"),
    }
    return subprocess.run(
        _launched(command, root),
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_plugins_hook_guards_a_project_with_a_guard_config_and_no_other(
    tmp_path: Path,
) -> None:
    command = PLUGIN["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    project = tmp_path / "project"
    project.mkdir()
    payload = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "none.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
        "tool_use_id": "t1",
    }
    quiet = _hook(command, project, payload)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert list(project.iterdir()) == []
    (project / ".tether").mkdir()
    (project / ".tether" / "guard.yaml").write_text("security:\n  behavior:\n    profile: dev\n")
    guarded = _hook(command, project, payload)
    assert guarded.returncode == 0, guarded.stderr
    decision = json.loads(guarded.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "confirm_destructive" in decision["permissionDecisionReason"]


@pytest.mark.anyio
async def test_the_plugins_mcp_server_starts_and_initialises(tmp_path: Path) -> None:
    server = PLUGIN["mcpServers"]["tether"]
    params = StdioServerParameters(
        command=server["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(REPO)),
        args=server["args"],
        env={**os.environ, "PATH": ON_PATH},
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        assert client.server_info is not None and client.server_info.name == "tether"
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"start_execution", "next_step", "submit"} <= tools
        assert [p.name for p in (await client.list_prompts()).prompts] == [
            "drive_tree",
            "write_tree",
        ]


def test_a_plugin_that_cannot_start_tether_blocks_tool_calls_and_says_why(tmp_path: Path) -> None:
    root = tmp_path / "plugin"  # a copy with no .venv, run where no tether is on PATH
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "claude-plugin").write_bytes(
        (REPO / "scripts" / "claude-plugin").read_bytes()
    )
    (root / "scripts" / "claude-plugin").chmod(0o755)
    project = tmp_path / "project"
    (project / ".tether").mkdir(parents=True)
    command = PLUGIN["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    base = {"session_id": "s1", "cwd": str(project), "transcript_path": str(tmp_path / "t")}
    pre = {**base, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {}}
    assert _hook(command, project, pre, root, "/usr/bin:/bin").returncode == 0  # no config
    (project / ".tether" / "guard.yaml").write_text("security:\n  behavior:\n    profile: dev\n")
    blocked = _hook(command, project, pre, root, "/usr/bin:/bin")
    assert blocked.returncode == 2 and blocked.stdout == "", blocked
    assert "cannot start tether" in blocked.stderr and str(root) in blocked.stderr
    stop = {**base, "hook_event_name": "Stop", "stop_hook_active": False}
    told = _hook(command, project, stop, root, "/usr/bin:/bin")
    assert told.returncode == 0, told
    assert "cannot start tether" in json.loads(told.stdout)["systemMessage"]


def test_r13_the_plugins_hook_guards_a_project_that_lost_its_configuration(
    tmp_path: Path,
) -> None:
    """R13: `mv .tether/guard.yaml x`. The launcher finds the plan Tether kept of that file, so
    Tether runs and goes on under it (saying so) instead of the hooks exiting 0 for everything;
    a project that never had a configuration stays quiet."""
    command = PLUGIN["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    project = tmp_path / "project"
    (project / ".tether").mkdir(parents=True)
    (project / ".tether" / "guard.yaml").write_text("security:\n  behavior:\n    profile: dev\n")
    payload = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "none.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
        "tool_use_id": "t1",
    }
    assert "confirm_destructive" in _hook(command, project, payload).stdout
    (project / ".tether" / "guard.yaml").rename(project / "x")
    lost = _hook(command, project, {**payload, "tool_use_id": "t2"})
    assert lost.returncode == 0, lost.stderr
    out = json.loads(lost.stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "confirm_destructive" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "last good configuration" in out["systemMessage"]
    other = tmp_path / "other"
    (other / ".tether").mkdir(parents=True)
    quiet = _hook(command, other, payload)
    assert (quiet.returncode, quiet.stdout) == (0, "")
