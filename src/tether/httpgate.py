"""The gate in front of Tether's local HTTP servers: who may send a request, and how large.

Owns the checks `tether mcp --http` (and a bot's server), `tether guard serve` and `tether view`
share. Each reads plain header values, so a Starlette app and an `http.server` handler run the
same code:

- `Host` (421): a loopback name (`127.0.0.1`, `localhost`, `[::1]`), the bound address or a name
  given with `--allow-host`, with or without a numeric port. Anything else is refused, a Host
  with userinfo (`localhost:80@evil`) included: this is what stops DNS rebinding.
- `Origin` (403): absent, or `http(s)://` one of those names, so a web page from elsewhere
  cannot drive the server from a browser.
- The bearer token (401, with `WWW-Authenticate`): `Authorization: Bearer <token>`, compared in
  constant time, on every path but the open ones (`/health`). `require_token` refuses to serve a
  non-loopback address without one.
- For a POST: the declared `Content-Length` against the limit (413; 411 when the server needs a
  length and none is given) and a JSON `Content-Type` (415), so a cross-site `text/plain` form
  post is refused before its body is read.

It also owns `ListenOptions`, the one record of where such a server listens and whom it lets in
(`--host`, `--port`, `--token`, `--allow-host`, `--max-body-bytes`), read the same way from the
command lines of `tether mcp --http`, a bot's server and `tether guard serve`. It does not read
bodies or send responses: callers turn a `Refusal` into their own response (the ASGI servers
through `tether.httpserve`, `guard serve` in its own handler).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, Self

from tether.errors import TetherError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("", "0.0.0.0", "::")
OPEN_PATHS = ("/health",)
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


class Refusal(NamedTuple):
    """A request turned away: the HTTP status, a stable error code and a message."""

    status: int
    code: str
    message: str

    @property
    def headers(self) -> dict[str, str]:
        if self.status == 401:
            return {"WWW-Authenticate": 'Bearer realm="tether"'}
        return {}

    def body(self) -> bytes:
        return json.dumps({"error": {"code": self.code, "message": self.message}}).encode()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """`host` as it appears in a Host header (an IPv6 literal in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def require_token(host: str, token: str | None, token_env: str) -> None:
    """Refuse to serve a non-loopback address without a bearer token."""
    if token is None and not is_loopback(host):
        raise TetherError(
            "usage",
            f"--host {host} is not a loopback address: serving it needs a bearer token "
            f"(set {token_env} or pass --token)",
            option="--host",
        )


def _authority(value: str) -> str | None:
    """The lower-case host name of `name[:port]`, or None when it is anything else."""
    if not value or any(c in value for c in "@/\\?# \t"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, sep, port = value.partition(":")
        rest = sep + port
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return None
    return name.lower() or None


class Gate:
    """The checks for one server: its address, token, extra names and body limit."""

    def __init__(
        self,
        host: str,
        token: str | None,
        allowed_hosts: tuple[str, ...] = (),
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        length_required: bool = False,
    ) -> None:
        if max_body_bytes <= 0:
            raise TetherError("usage", "--max-body-bytes must be a positive number of bytes")
        names = list(LOOPBACK_NAMES)
        if host not in WILDCARDS:
            names.append(host_name(host))
        names += [host_name(h) for h in allowed_hosts]
        self.names = frozenset(n.lower() for n in names)
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.length_required = length_required

    def refusal(
        self, method: str, path: str, header: Callable[[str], str | None]
    ) -> Refusal | None:
        """Why this request may not go on, or None. `header(name)` reads one request header."""
        refused = self.sender_refusal(path, header)
        if refused is None and method == "POST":
            refused = self.body_refusal(header)
        return refused

    def sender_refusal(self, path: str, header: Callable[[str], str | None]) -> Refusal | None:
        """Why the sender may not ask: its Host, its Origin or its token (a server that judges
        bodies by its own rules, as the viewer does, stops here)."""
        host = header("host") or ""
        if _authority(host) not in self.names:
            return Refusal(421, "forbidden", f"Host {host!r} is not served here")
        origin = header("origin")
        if origin is not None:
            scheme, sep, rest = origin.partition("://")
            if (
                not sep
                or scheme.lower() not in ("http", "https")
                or (_authority(rest) not in self.names)
            ):
                return Refusal(403, "forbidden", f"requests from Origin {origin!r} are refused")
        if self.token is not None and path not in OPEN_PATHS:
            scheme, _, given = (header("authorization") or "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), self.token
            ):
                return Refusal(401, "forbidden", "missing or invalid bearer token")
        return None

    def body_refusal(self, header: Callable[[str], str | None]) -> Refusal | None:
        """Why a POST's body may not be read: its declared length or its content type."""
        length = header("content-length")
        if length is None:
            if self.length_required:
                return Refusal(411, "invalid_value", "a request body needs a Content-Length")
        elif not length.strip().isdigit():
            return Refusal(400, "invalid_value", f"Content-Length {length!r} is not a number")
        elif int(length) > self.max_body_bytes:
            return Refusal(413, "invalid_value", f"request body over {self.max_body_bytes} bytes")
        kind = (header("content-type") or "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            return Refusal(415, "invalid_value", "the request body must be application/json")
        return None


class CommandLine(Protocol):
    """What `ListenOptions.from_command` reads of a parsed command line."""

    @property
    def options(self) -> Mapping[str, str]: ...

    @property
    def multi(self) -> Mapping[str, list[str]]: ...

    def number(self, name: str, default: int | None = None) -> int | None: ...


@dataclass(frozen=True)
class ListenOptions:
    """Where a local HTTP server listens and whom it lets in. `port` 0 picks a free port."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    @classmethod
    def from_command(
        cls, given: CommandLine, token_env: str, *, port: int, max_body_bytes: int, **more: Any
    ) -> Self:
        """The options `--host`, `--port`, `--token` (else `$token_env`), `--allow-host`
        (repeatable) and `--max-body-bytes` of a command line, `port` and `max_body_bytes`
        where they are not given; `more` are the fields a server adds to the record."""
        return cls(
            host=given.options.get("--host", "127.0.0.1"),
            port=given.number("--port", port) or 0,
            token=given.options.get("--token") or os.environ.get(token_env) or None,
            allowed_hosts=tuple(given.multi.get("--allow-host", [])),
            max_body_bytes=given.number("--max-body-bytes", max_body_bytes) or 0,
            **more,
        )

    def gate(self, *, length_required: bool = False) -> Gate:
        """The gate for a server listening with these options."""
        return Gate(self.host, self.token, self.allowed_hosts, self.max_body_bytes, length_required)

    def url(self, port: int) -> str:
        """The server's address, with the port it bound (`port` may have asked for any)."""
        return f"http://{host_name(self.host)}:{port}"
