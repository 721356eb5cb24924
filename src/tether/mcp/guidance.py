"""What the MCP server teaches besides its tools: prompts and the docs as resources.

Owns two prompts, `drive_tree` (run an execution to its end through the tools) and `write_tree`
(write a tree file for a goal), both built from the agent skill (`skills/tether/SKILL.md`, the
text `tether install skill` installs and the Claude Code plugin carries), and the resources:
Tether's docs (`tether://docs/NAME.md`) and the skill (`tether://skill/SKILL.md`), read from
the files that ship with the package (`tether.shipped`) when a client asks. It does not own the
tools (`tether.mcp.tools`) or the server (`tether.mcp.server`).
"""

from __future__ import annotations

import os
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from tether import shipped

DOCS = "tether://docs/"
SKILL_URI = "tether://skill/SKILL.md"
MARKDOWN = "text/markdown"

PROMPTS = (
    types.Prompt(
        name="drive_tree",
        title="Drive a Tether tree",
        description="Run a Tether execution to its end: start it if need be, then answer each "
        "request the runtime hands out (next_step, eval, submit, var_write).",
        arguments=[
            types.PromptArgument(
                name="trace_output",
                description="The execution's URI: a path such as run.json, file://... or "
                "memory://NAME",
                required=True,
            ),
            types.PromptArgument(
                name="tree_uri",
                description="The tree file to start it from, when it does not exist yet",
                required=False,
            ),
        ],
    ),
    types.Prompt(
        name="write_tree",
        title="Write a Tether tree",
        description="Write a Tether tree file (YAML) for a goal, following the tree format.",
        arguments=[
            types.PromptArgument(
                name="goal", description="What the workflow should achieve", required=True
            ),
            types.PromptArgument(
                name="file", description="Where to write the tree (default: a name you choose)"
            ),
        ],
    ),
)


def skill_sections() -> dict[str, str]:
    """The skill's text without its frontmatter, by `## ` heading ("" for the part before)."""
    text = shipped.read("skills", "tether", "SKILL.md")
    if text.startswith("---\n"):
        text = text[text.find("\n---\n", 4) + len("\n---\n") :]
    sections: dict[str, str] = {}
    title = ""
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            title = line[3:].strip()
        sections[title] = sections.get(title, "") + line
    return {k: v.strip() + "\n" for k, v in sections.items()}


def prompt_text(name: str, arguments: dict[str, str]) -> str:
    """The user message a prompt yields; `INVALID_PARAMS` for an unknown prompt or a missing
    required argument."""
    found = next((p for p in PROMPTS if p.name == name), None)
    if found is None:
        known = ", ".join(p.name for p in PROMPTS)
        raise MCPError(types.INVALID_PARAMS, f"unknown prompt {name!r}; the prompts are {known}")
    for argument in found.arguments or []:
        if argument.required and not arguments.get(argument.name):
            raise MCPError(
                types.INVALID_PARAMS, f"prompt {name!r} needs the argument {argument.name!r}"
            )
    sections = skill_sections()
    if name == "drive_tree":
        trace = arguments["trace_output"]
        tree = arguments.get("tree_uri")
        start = (
            f"If it does not exist yet, start it with start_execution(tree_uri={tree!r}, "
            f"trace_output={trace!r}); if it exists, go on from next_step."
            if tree
            else "It exists already: go on from next_step."
        )
        return (
            f"Drive the Tether execution at {trace} to its end. {start}\n\n"
            f"{sections['']}\n{sections['Drive a tree']}"
        )
    where = f" and write it to {arguments['file']}" if arguments.get("file") else ""
    return (
        f"Write a Tether tree file for this goal{where}: {arguments['goal']}\n\n"
        f"{sections['Write a tree']}\n"
        "The full tree format follows (also the resource tether://docs/tree-format.md).\n\n"
        + shipped.read("docs", "tree-format.md")
    )


def resources() -> list[types.Resource]:
    """The skill and every shipped doc, as MCP resources."""
    docs = sorted(n for n in os.listdir(shipped.folder("docs")) if n.endswith(".md"))
    out = [
        types.Resource(
            name="skill",
            title="Tether skill: driving and writing trees",
            uri=SKILL_URI,
            mime_type=MARKDOWN,
        )
    ]
    for name in docs:
        out.append(
            types.Resource(
                name=name.removesuffix(".md"),
                title=f"Tether docs: {name}",
                uri=DOCS + name,
                mime_type=MARKDOWN,
            )
        )
    return out


def read_resource(uri: str) -> str:
    """The text of a resource; `INVALID_PARAMS` for a URI that names none (nothing outside the
    listed files is ever read: the URI is matched against the listing, not turned into a path)."""
    for resource in resources():
        if resource.uri == uri:
            if uri == SKILL_URI:
                return shipped.read("skills", "tether", "SKILL.md")
            return shipped.read("docs", uri.removeprefix(DOCS))
    raise MCPError(types.INVALID_PARAMS, f"no resource {uri!r}; resources/list names them")


def register_guidance(server: Server[Any]) -> None:
    """Answer `prompts/list`, `prompts/get`, `resources/list` and `resources/read` on `server`."""

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=list(PROMPTS))

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        text = prompt_text(params.name, dict(params.arguments or {}))
        prompt = next(p for p in PROMPTS if p.name == params.name)
        return types.GetPromptResult(
            description=prompt.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources())

    async def read(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type=MARKDOWN, text=read_resource(uri))
            ]
        )

    server.add_request_handler("prompts/list", types.PaginatedRequestParams, list_prompts)
    server.add_request_handler("prompts/get", types.GetPromptRequestParams, get_prompt)
    server.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    server.add_request_handler("resources/read", types.ReadResourceRequestParams, read)
