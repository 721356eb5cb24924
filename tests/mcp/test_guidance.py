"""The runtime server's prompts (drive a tree, write a tree) and its docs as resources, asked for
by the SDK's client over stdio, as a chat client would."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
SKILL = (REPO / "skills" / "tether" / "SKILL.md").read_text(encoding="utf-8")
TREE_FORMAT = (REPO / "docs" / "tree-format.md").read_text(encoding="utf-8")


def _params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.cli.main", "mcp", "--root", str(root)],
        env=dict(os.environ),  # the same Tether as this test process (its PYTHONPATH too)
    )


@pytest.mark.anyio
async def test_prompts_teach_driving_and_writing_a_tree(tmp_path: Path) -> None:
    async with Client(_params(tmp_path)) as client:
        assert client.server_capabilities.prompts is not None
        listed = (await client.list_prompts()).prompts
        assert [p.name for p in listed] == ["drive_tree", "write_tree"]
        drive = await client.get_prompt(
            "drive_tree", {"trace_output": "run.json", "tree_uri": "hello-world.yaml"}
        )
        text = drive.messages[0].content.text  # type: ignore[union-attr]
        assert drive.messages[0].role == "user"
        assert text.startswith("Drive the Tether execution at run.json to its end.")
        assert "start_execution(tree_uri='hello-world.yaml', trace_output='run.json')" in text
        assert "## Drive a tree" in text and "Acknowledge_Protocol" in text
        assert "## Write a tree" not in text
        write = await client.get_prompt("write_tree", {"goal": "triage a bug report"})
        text = write.messages[0].content.text  # type: ignore[union-attr]
        assert text.startswith("Write a Tether tree file for this goal: triage a bug report")
        assert "## Write a tree" in text and text.endswith(TREE_FORMAT)


@pytest.mark.anyio
async def test_a_prompt_without_its_arguments_or_unknown_is_refused(tmp_path: Path) -> None:
    async with Client(_params(tmp_path)) as client:
        with pytest.raises(MCPError, match="needs the argument 'trace_output'"):
            await client.get_prompt("drive_tree", {})
        with pytest.raises(MCPError, match="unknown prompt 'deploy'"):
            await client.get_prompt("deploy", {})


@pytest.mark.anyio
async def test_the_docs_and_the_skill_are_resources(tmp_path: Path) -> None:
    async with Client(_params(tmp_path)) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        docs = sorted(p.name for p in (REPO / "docs").glob("*.md"))
        assert sorted(listed) == sorted(
            ["tether://skill/SKILL.md", *(f"tether://docs/{name}" for name in docs)]
        )
        assert all(r.mime_type == "text/markdown" for r in listed.values())
        skill = await client.read_resource("tether://skill/SKILL.md")
        assert skill.contents[0].text == SKILL  # type: ignore[union-attr]
        tree = await client.read_resource("tether://docs/tree-format.md")
        assert tree.contents[0].text == TREE_FORMAT  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "uri",
    [
        "tether://docs/../../pyproject.toml",
        "tether://docs/viewer.png",
        "tether://docs/%2e%2e/LICENSE",
        "file:///etc/passwd",
        "tether://docs/",
    ],
)
async def test_a_resource_uri_that_names_no_listed_file_reads_nothing(
    tmp_path: Path, uri: str
) -> None:
    async with Client(_params(tmp_path)) as client:
        with pytest.raises(MCPError, match="no resource"):
            await client.read_resource(uri)
