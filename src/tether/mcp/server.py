"""The MCP server object and the stdio transport.

Owns building the server (its name, version, and the protocol as its instructions, followed by
the mapping from the protocol's verbs to the tool names) with the runtime tools registered, and
serving it over stdin/stdout. It does not own the tools (`tether.mcp.tools`), the HTTP transport
(`tether.mcp.http`) or option parsing (`tether.mcp.cli`). Logging goes to stderr only: stdout
carries the protocol.
"""

from __future__ import annotations

import asyncio
import os
import stat
from contextlib import AsyncExitStack
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from tether import __version__
from tether.engine.protocol import PROTOCOL_TEXT
from tether.mcp.guidance import register_guidance
from tether.mcp.tools import register_tools
from tether.verbs import Runtime

SERVER_NAME = "tether"
_MAX_LINE = 64 * 1024 * 1024  # the longest protocol message read from stdin, in bytes

INSTRUCTIONS = (
    PROTOCOL_TEXT
    + "\n\nOver MCP the verbs are tools: next is next_step, eval and submit answer, var is "
    "var_read / var_write, $CONST is const_read, think records a checkpoint. --set is the "
    '`values` object of submit and eval ({"time_of_day": "morning"}): with it and the `next` '
    "of each result, a step is one call. No tool answers a human request: tell the user, who "
    "answers it with tether approve or reject, or in the viewer, and wait. fork_execution goes "
    "back to any earlier point of a trace. Every tool takes trace_output, the execution's URI; "
    "start one with start_execution, whose `current` is the first request."
)


def build_server(runtime: Runtime) -> Server[Any]:
    """A server carrying the runtime tools, every call going to `runtime`."""
    server: Server[Any] = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)
    register_tools(server, runtime)
    register_guidance(server)
    # Tether emits no OpenTelemetry spans: leave out the SDK's per-message span middleware, a
    # no-op without an exporter that still costs a fifth of a millisecond per call.
    server.middleware[:] = [
        m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"
    ]
    return server


async def serve_stdio(runtime: Runtime) -> None:
    """Serve the runtime tools over stdin/stdout until the client closes stdin."""
    await run_stdio(build_server(runtime))


async def run_stdio(server: Server[Any]) -> None:
    """Serve any MCP server (the runtime's, a bot's) over stdin/stdout until stdin closes."""
    async with AsyncExitStack() as stack:
        pipes = await _pipes() if _piped() else None
        if pipes is not None:
            stack.callback(pipes.close)
        streams = stdio_server(*pipes.streams()) if pipes else stdio_server()
        read_stream, write_stream = await stack.enter_async_context(streams)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _piped() -> bool:
    """Whether stdin and stdout are pipes or sockets, which the event loop can watch."""
    try:
        modes = [os.fstat(fd).st_mode for fd in (0, 1)]
    except OSError:
        return False
    return all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in modes)


class _Pipes:
    """The protocol's stdin and stdout served by the event loop itself.

    The SDK's default reads and writes the standard streams through a worker thread, a thread
    hand-off per line each way; on pipes the loop can wait on them directly, which takes that
    off every tool call. As the SDK does, fds 0 and 1 are pointed away (at /dev/null and at
    stderr) while serving, so stray prints cannot corrupt the protocol, and restored after.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._saved = [os.dup(0), os.dup(1)]
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)

    def streams(self) -> tuple[Any, Any]:
        return _Lines(self.reader), _Writer(self.writer)

    def close(self) -> None:
        self.writer.close()
        for fd, saved in enumerate(self._saved):
            os.dup2(saved, fd)
            os.close(saved)


class _Lines:
    """Lines of the protocol's input, as the SDK's stdio transport iterates them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writer:
    """The protocol's output, as the SDK's stdio transport writes it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


async def _pipes() -> _Pipes:
    loop = asyncio.get_running_loop()
    wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    reader = asyncio.StreamReader(limit=_MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), wire_in)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, wire_out)
    return _Pipes(reader, asyncio.StreamWriter(transport, protocol, None, loop))
