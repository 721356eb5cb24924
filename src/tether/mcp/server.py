"""The MCP server object and the stdio transport.

Owns building the server (its name, version, and the protocol as its instructions, followed by
the mapping from the protocol's verbs to the tool names) with the runtime tools registered, and
serving it over stdin/stdout. It does not own the tools (`tether.mcp.tools`), the HTTP transport
(`tether.mcp.http`) or option parsing (`tether.mcp.cli`). Logging goes to stderr only: stdout
carries the protocol.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from tether import __version__
from tether.engine.protocol import PROTOCOL_TEXT
from tether.mcp.tools import register_tools
from tether.verbs import Runtime

SERVER_NAME = "tether"

INSTRUCTIONS = (
    PROTOCOL_TEXT
    + "\n\nOver MCP the verbs are tools: next is next_step, eval and submit answer, var is "
    "var_read / var_write, $CONST is const_read, think records a checkpoint. Every tool takes "
    "trace_output, the execution's URI; start one with start_execution."
)


def build_server(runtime: Runtime) -> Server[Any]:
    """A server carrying the twelve runtime tools, every call going to `runtime`."""
    server: Server[Any] = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)
    register_tools(server, runtime)
    return server


async def serve_stdio(runtime: Runtime) -> None:
    """Serve over stdin/stdout until the client closes stdin."""
    server = build_server(runtime)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
