"""`tether bot tools` and `tether bot build` as a user runs them: JSON out, errors with codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot.botkit import EXAMPLE_FOLDER, EXAMPLE_TREE
from tether.errors import EXIT_INVALID, EXIT_OK, EXIT_USAGE

TETHER = [sys.executable, "-m", "tether.cli.main"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TETHER, *args], capture_output=True, text=True, timeout=60)


def test_tools_lists_the_tools_of_a_tree_file_and_of_a_folder_alike() -> None:
    from_file = _run("bot", "tools", str(EXAMPLE_TREE))
    from_folder = _run("bot", "tools", str(EXAMPLE_FOLDER))
    assert from_file.returncode == EXIT_OK, from_file.stderr
    listing = json.loads(from_file.stdout)
    assert listing["count"] == 19 and listing["bot"] == "story-mapping"
    assert listing["tools"][6] == {
        "name": "story_mapping_shape_gather_context",
        "kind": "action",
        "phase": "shape",
        "action": "gather_context",
        "description": listing["tools"][6]["description"],
    }
    assert json.loads(from_folder.stdout)["tools"] == listing["tools"]


def test_tools_names_fit_the_server_name_the_client_uses() -> None:
    default = json.loads(_run("bot", "tools", str(EXAMPLE_TREE)).stdout)["tools"]
    named = _run("bot", "tools", str(EXAMPLE_TREE), "--name", "plugin_tether_story_mapping_bot")
    assert named.returncode == EXIT_OK, named.stderr
    tools = json.loads(named.stdout)["tools"]
    prefix = "mcp__plugin_tether_story_mapping_bot__"
    assert all(len(prefix + t["name"]) <= 64 for t in tools)
    assert any(len("mcp__tether__" + t["name"]) <= 64 < len(prefix + t["name"]) for t in default)
    refused = _run("bot", "tools", str(EXAMPLE_TREE), "--name", "bad name")
    assert refused.returncode == EXIT_USAGE
    assert json.loads(refused.stderr)["error"]["code"] == "usage"


def test_build_writes_the_tree_file(tmp_path: Path) -> None:
    out = tmp_path / "built.yaml"
    done = _run("bot", "build", str(EXAMPLE_FOLDER), "-o", str(out))
    assert done.returncode == EXIT_OK, done.stderr
    assert json.loads(done.stdout) == {
        "status": "built",
        "tree": str(out),
        "bot": "story-mapping",
        "phases": 3,
        "actions": 12,
        "independent": 1,
        "tools": 19,
    }
    assert out.read_text(encoding="utf-8") == EXAMPLE_TREE.read_text(encoding="utf-8")


def test_build_needs_an_output_and_a_good_folder(tmp_path: Path) -> None:
    missing = _run("bot", "build", str(EXAMPLE_FOLDER))
    assert missing.returncode == EXIT_USAGE
    assert "needs -o TREE" in json.loads(missing.stderr)["error"]["message"]
    bad = tmp_path / "bad"
    (bad / "shape").mkdir(parents=True)
    refused = _run("bot", "build", str(bad), "-o", str(tmp_path / "t.yaml"))
    assert refused.returncode == EXIT_INVALID
    error = json.loads(refused.stderr)["error"]
    assert error["code"] == "invalid_tree" and error["file"] == str(bad / "shape")
    assert not (tmp_path / "t.yaml").exists()


def test_tools_refuses_a_tree_that_is_not_a_bot() -> None:
    hello = EXAMPLE_TREE.parent / "hello-world.yaml"
    refused = _run("bot", "tools", str(hello))
    assert refused.returncode == EXIT_INVALID
    assert "is not a bot (phases of actions)" in json.loads(refused.stderr)["error"]["message"]


def test_an_unknown_bot_command_is_a_usage_error() -> None:
    refused = _run("bot", "serve")
    assert refused.returncode == EXIT_USAGE
    assert "the commands are tools and build" in refused.stderr
