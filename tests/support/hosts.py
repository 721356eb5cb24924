"""The `Host` headers a local server must refuse, and those it must accept: one table for every
server behind `tether.httpgate` (`tether mcp --http`, `tether guard serve`, `tether view`) and
for the gate's own test (`tests/test_httpgate.py`).

Each entry may hold `{port}`, to be filled with the server's real port: a rebinding attack
names the port the server listens on.
"""

from __future__ import annotations

# Names a DNS-rebinding page could send. The userinfo spellings (`localhost:80@evil`) passed a
# prefix match the MCP SDK once used; none is the server's name.
FOREIGN_HOSTS = (
    "evil.example",
    "evil.example:{port}",
    "127.0.0.1.evil.example",
    "127.0.0.1.evil.example:{port}",
    "localhost.evil:1",
    "",
    "localhost:80@evil",
    "localhost:{port}@evil.example",
    "127.0.0.1:1@evil.example",
    "localhost:x",
    "localhost:80/evil",
)

# The loopback names every server answers, with and without a port.
LOOPBACK_HOSTS = ("127.0.0.1:{port}", "localhost:{port}", "localhost", "127.0.0.1", "[::1]:1")
