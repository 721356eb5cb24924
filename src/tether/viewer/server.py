"""The viewer's web server: the page, its JSON API and live updates, for one place.

Owns the HTTP surface on 127.0.0.1 (a Starlette app with sse-starlette's event streams, run by
uvicorn; `tether.viewer.cli` imports this module only for `tether view`, so `show` and `render`
never load the HTTP stack) over one place that holds executions — a folder, or a database
(`postgresql://…` without `#name`) — listed and read through its store (`Store.list`,
`Store.revision`), never by reading its files:

- `/` the page and `/static/...` its assets, shipped inside the package (no CDN, no build step);
- `/api/runs` the executions in the place (tree, status, phase, open step, progress, last
  update); P, the path of one, is its name there (a path relative to the folder, or its name in
  the database);
- `/api/run?path=P` one execution: its nodes, trace, current snapshot and diagram (SVG);
  `&at=K` the snapshot and diagram after the first K trace entries (a replay, not a stored copy);
  `&since=N&last_seq=S` only the trace entries after the N the page already holds; `&fold=KEYS`
  the diagram with the subtrees under those nodes (comma-separated keys) folded away;
- `/api/events` and `/api/events?path=P` Server-Sent Events: a message when the listing changes,
  or with the new revision when the execution commits. One watcher per server reads, once per
  tick for all the pages, the revision of each execution some page follows (every 200 ms) and
  the listing while a page shows it (every second), and wakes the streams whose value changed;
- `POST /api/human` a person's answer to the open human step from the page (`{path, decision:
  approve | reject, note?, step?}`), through the verbs (`approve`/`reject`, `by: viewer`), with
  the process found holding the connection's other end (the browser; `tether.person.sender`),
  so that an answer sent from inside an agent's process tree is refused; the only request that
  writes.

Every request first passes the gate the other HTTP servers use (`tether.httpgate`: a `Host` that
is not this machine's loopback name, which stops DNS rebinding, or an `Origin` from elsewhere is
refused with 403 and a JSON error). It confines every path it is asked for to the folder it
serves: absolute paths, `..` and symbolic links that lead outside are refused with 403; in a
database a path is only ever a name in it. The files beside a state file are the store's to find
and refuse (a state file naming another file is `corrupt_execution`, 409). An execution that
cannot be read or shown is reported on its own row of the listing; the others are still listed.
A post is taken only from the server's own page: its `Origin` must be this server, and it must
carry the per-server token written into the page (`X-Tether-Token`); anything else is refused
with 403 before the body is read. It does not derive statuses (`tether.viewer.model`), draw
(`tether.viewer.svg`) or parse command lines (`tether.viewer.cli`).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.errors import TetherError
from tether.files import is_inside
from tether.httpgate import Gate
from tether.store import path_of, scheme_of, store_for
from tether.store.base import Summary
from tether.tree.model import STEP_KINDS
from tether.viewer.model import Timeline, index_tree, progress, snapshot
from tether.viewer.source import Execution, load_execution
from tether.viewer.svg import render_svg

POLL_SECONDS = 0.2  # how often the watcher reads the revisions pages follow
LISTING_TICKS = 5  # and the listing, every fifth tick (once a second)
HEARTBEAT_SECONDS = 15.0
_TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}
_HTTP_STATUS = {
    "forbidden": HTTPStatus.FORBIDDEN,
    "not_found": HTTPStatus.NOT_FOUND,
    "usage": HTTPStatus.BAD_REQUEST,
    "invalid_value": HTTPStatus.BAD_REQUEST,
    "invalid_json": HTTPStatus.BAD_REQUEST,
}
MAX_POST_BYTES = 16 * 1024
_TOKEN_PLACEHOLDER = b"{{tether-token}}"
_DECISIONS = ("approve", "reject")
_CSP = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
}


def _assets() -> dict[str, bytes]:
    folder = resources.files("tether.viewer") / "static"
    return {item.name: item.read_bytes() for item in folder.iterdir() if item.is_file()}


@dataclass
class _Cached:
    """A timeline kept warm for one execution, so a commit costs only its new entries."""

    salt: str
    timeline: Timeline
    fed: int
    last_seq: int | None


class Viewer:
    """What the server knows: the place it serves (`where`: a folder, or a store location such
    as a PostgreSQL database), its store, and a warm timeline per execution."""

    def __init__(self, where: str) -> None:
        self.store = store_for(where)
        self.root = os.path.realpath(path_of(where)) if scheme_of(where) == "file" else None
        self.where = self.root if self.root is not None else where
        self.token = secrets.token_urlsafe(32)
        self.assets = _assets()
        page = self.assets["index.html"]
        self.assets["index.html"] = page.replace(_TOKEN_PLACEHOLDER, self.token.encode())
        self._lock = threading.Lock()
        self._cache: dict[str, _Cached] = {}

    # -- confinement ---------------------------------------------------------------------------

    def confine(self, rel: str) -> str:
        """The path of `rel` inside the served folder, or `forbidden` if it (or, through a
        symbolic link, its real path) is outside. The path keeps a link at its last component,
        for the store to refuse."""
        assert self.root is not None
        if not rel or rel.startswith(("/", "\\")) or os.path.isabs(rel) or "\x00" in rel:
            raise TetherError("forbidden", f"{rel!r} is not a path inside the served folder")
        if ".." in rel.replace("\\", "/").split("/"):
            raise TetherError("forbidden", f"{rel!r} climbs out of the served folder")
        path = os.path.join(self.root, rel)
        if not is_inside(path, self.root):
            raise TetherError("forbidden", f"{rel!r} leads outside the served folder")
        return path

    def uri_of(self, rel: str) -> str:
        """The URI of the execution the page calls `rel`: in the served folder, or by that name
        in the database."""
        if self.root is None:
            return self.store.locate(self.where, rel)
        return self.confine(rel)

    def load(self, rel: str) -> Execution:
        """The execution at `rel`, its path confined to the folder. The store reads it under its
        own rules: names derived from the state file's, no link followed (`tether.store`)."""
        try:
            return load_execution(self.uri_of(rel))
        except TetherError as exc:
            if exc.code != "not_found":
                raise
            raise TetherError("not_found", f"no execution at {rel!r}") from None

    # -- documents -----------------------------------------------------------------------------

    def runs(self) -> dict[str, Any]:
        """The executions in the place, each summarised; unreadable ones say why."""
        out: list[dict[str, Any]] = []
        for listed in self.executions():
            if listed.error is not None:
                out.append({"path": listed.name, "error": listed.error["message"]})
                continue
            try:
                out.append(self._summary(listed.name))
            except TetherError as exc:
                out.append({"path": listed.name, "error": exc.message})
        folder = self.where if self.root is None else os.path.basename(self.root) or self.root
        return {"folder": folder, "runs": out}

    def _summary(self, rel: str) -> dict[str, Any]:
        execution = self.load(rel)
        state = execution.state
        with _shown(rel):
            snap = self._timeline(rel, execution).snapshot()
            summary = Summary.of(rel, rel, state)
            return {
                "path": rel,
                "tree": execution.tree["name"],
                "status": state["status"],
                "phase": state["phase"],
                "open_step": summary.open_step,
                "progress": progress(execution.tree, snap),
                "entries": len(execution.trace),
                "revision": state["revision"],
                "updated_at": state["updated_at"],
            }

    def executions(self) -> list[Summary]:
        """The executions in the place, as its store lists them."""
        return self.store.list(self.where)

    def revision_reader(self, uri: str) -> Callable[[], int | None]:
        """A reader of the revision of the execution at `uri` (from `uri_of`), for its event
        stream (None while it cannot be read: not started yet, corrupt, a database that is
        down)."""

        def revision() -> int | None:
            try:
                return self.store.revision(uri)
            except TetherError:
                return None

        return revision

    def run(self, rel: str, query: dict[str, str]) -> dict[str, Any]:
        execution = self.load(rel)
        with _shown(rel):
            return self._document(rel, execution, query)

    def _document(self, rel: str, execution: Execution, query: dict[str, str]) -> dict[str, Any]:
        tree, trace, state = execution.tree, execution.trace, execution.state
        folded = _folded(tree, query)
        at = _whole(query, "at")
        if at is not None:
            snap = snapshot(tree, state, trace, min(at, len(trace)))
            return {
                "path": rel,
                "revision": state["revision"],
                "total": len(trace),
                "fork": _fork(rel, trace, min(at, len(trace))),
                "progress": progress(tree, snap),
                "snapshot": snap.to_dict(),
                "svg": render_svg(tree, snap, folded=folded, toggles=True),
            }
        snap = self._timeline(rel, execution).snapshot()
        since = _whole(query, "since") or 0
        last_seq = query.get("last_seq")
        keep = 0 < since <= len(trace) and str(trace[since - 1]["seq"]) == last_seq
        offset = since if keep else 0
        return {
            "path": rel,
            "revision": state["revision"],
            "tree": {k: tree.get(k) for k in ("name", "version", "description")},
            "nodes": _nodes(tree),
            "created_at": state["created_at"],
            "updated_at": state["updated_at"],
            "total": len(trace),
            "fork": _fork(rel, trace, len(trace)),
            "trace_offset": offset,
            "trace": trace[offset:],
            "progress": progress(tree, snap),
            "snapshot": snap.to_dict(),
            "svg": render_svg(tree, snap, folded=folded, toggles=True),
        }

    def _timeline(self, rel: str, execution: Execution) -> Timeline:
        """The warm timeline of `rel`, fed up to the execution's trace (rebuilt after a reset
        or if another execution took the path)."""
        state, trace = execution.state, execution.trace
        with self._lock:
            cached = self._cache.get(rel)
            fresh = (
                cached is None
                or cached.salt != state["salt"]
                or cached.fed > len(trace)
                or (cached.fed and trace[cached.fed - 1]["seq"] != cached.last_seq)
            )
            if fresh or cached is None:
                cached = _Cached(state["salt"], Timeline(execution.tree, state), 0, None)
                self._cache[rel] = cached
            cached.timeline.feed(trace[cached.fed :])
            cached.fed = len(trace)
            cached.last_seq = trace[-1]["seq"] if trace else None
            return cached.timeline

    # -- the one write: a person's answer -------------------------------------------------------

    def answer_human(self, body: Any, sent_by: int | None = None) -> dict[str, Any]:
        """Approve or reject the open human step of the execution at `body["path"]`, as a person
        does from the page (`by: viewer`), sent by the process `sent_by` (the browser); the
        verbs refuse what is not open, and an answer sent from inside an agent's process tree."""
        from tether.verbs import Runtime

        if not isinstance(body, dict):
            raise TetherError("usage", "the body must be a JSON object")
        unknown = sorted(set(body) - {"path", "decision", "note", "step"})
        if unknown:
            raise TetherError("usage", f"unknown field {unknown[0]!r}")
        rel, decision = body.get("path"), body.get("decision")
        if not isinstance(rel, str) or decision not in _DECISIONS:
            raise TetherError("usage", "give path (a string) and decision (approve or reject)")
        note, step = body.get("note"), body.get("step")
        for name, value in (("note", note), ("step", step)):
            if value is not None and not isinstance(value, str):
                raise TetherError("usage", f"{name} must be a string")
        self.load(rel)
        target, runtime = self.uri_of(rel), Runtime(root=self.root)
        verb = runtime.approve if decision == "approve" else runtime.reject
        return dict(verb(target, note=note or None, step=step, by="viewer", sent_by=sent_by))

    # -- change signals ------------------------------------------------------------------------

    def listing_signature(self) -> tuple[tuple[str, int | None, str | None], ...] | str:
        """What changes when the listing does: each execution's name and revision (or error),
        or the reason the place cannot be listed."""
        try:
            listed = self.executions()
        except TetherError as exc:
            return exc.message
        return tuple((s.name, s.revision, s.error["message"] if s.error else None) for s in listed)


def _fork(rel: str, trace: list[dict[str, Any]], at: int) -> dict[str, Any]:
    """The command that starts a new execution from the first `at` entries of the one at
    `rel` (beside it, `NAME-fork-K.json`), quoted for a shell. A check entry belongs to the
    answer before it, so a point just before one moves past it."""
    from tether.person import command_line

    point = at
    while point < len(trace) and trace[point].get("kind") == "check":
        point += 1
    stem, suffix = os.path.splitext(rel)
    new = f"{stem}-fork-{point}{suffix}"
    return {"at": point, "command": command_line("tether", "fork", rel, new, "--at", str(point))}


@contextmanager
def _shown(rel: str) -> Iterator[None]:
    """Turn the failure of a stored document that is JSON but not the shape Tether writes (a
    tree with no root, a state without its phase) into `corrupt_execution` for that execution
    alone, rather than a failure of the whole page."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        raise TetherError(
            "corrupt_execution",
            f"{rel} cannot be shown: its stored tree or state is malformed "
            f"({type(exc).__name__}: {exc})",
            path=rel,
        ) from None


def _whole(query: dict[str, str], name: str) -> int | None:
    text = query.get(name)
    if text is None:
        return None
    if not text.isdigit():
        raise TetherError("usage", f"{name} takes a whole number, got {text!r}")
    return int(text)


def _folded(tree: dict[str, Any], query: dict[str, str]) -> frozenset[str]:
    """The node keys of `fold` (comma-separated), each a node below the root with children."""
    text = query.get("fold")
    if not text:
        return frozenset()
    keys = frozenset(text.split(","))
    parents = {key for key, node in index_tree(tree).items() if key and node.children}
    unknown = sorted(keys - parents)
    if unknown:
        raise TetherError(
            "usage", f"fold takes keys of nodes with children below the root, not {unknown[0]!r}"
        )
    return keys


def _nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for node in index_tree(tree).values():
        steps = [
            {
                "kind": kind,
                "text": step[kind],
                **({"writes": step["writes"]} if "writes" in step else {}),
            }
            for step in node.data.get("steps", [])
            for kind in STEP_KINDS
            if kind in step
        ]
        out.append(
            {
                "key": node.key,
                "path": list(node.path),
                "type": node.type,
                "name": node.name,
                "parent": node.parent,
                "children": list(node.children),
                "modifiers": node.modifiers(),
                "retries": node.data.get("retries", 0),
                "description": node.data.get("description"),
                "when": node.data.get("when"),
                "for_each": node.data.get("for_each"),
                "repeat": node.data.get("repeat"),
                "steps": steps,
            }
        )
    return out


# -- the HTTP surface ------------------------------------------------------------------------------

_UNSET = object()


class Watcher:
    """The server's one watcher: every tick it reads, once for all the pages, the revision of
    each execution some page follows, and every `LISTING_TICKS` ticks the listing while some
    page shows it; each stream wakes when a value changes. A key is an execution's URI, or None
    for the listing. When the server stops (sse-starlette sets `stopping`), every stream ends
    at the next tick, its response completed."""

    def __init__(self) -> None:
        self._readers: dict[str | None, Callable[[], Any]] = {}
        self._streams: dict[str | None, int] = {}
        self._values: dict[str | None, Any] = {}
        self._changed = anyio.Event()
        self.stopping = anyio.Event()
        self._closed = False

    async def follow(self, key: str | None, read: Callable[[], Any]) -> AsyncIterator[Any]:
        """The value of `key` at once, then each new one, for as long as the caller listens."""
        self._readers[key] = read
        self._streams[key] = self._streams.get(key, 0) + 1
        try:
            if key not in self._values:
                self._values[key] = await anyio.to_thread.run_sync(read)
            last: Any = _UNSET
            while not self._closed:
                value = self._values.get(key, last)
                if value != last:
                    last = value
                    yield value
                await self._changed.wait()
        finally:
            self._streams[key] -= 1
            if not self._streams[key]:
                for table in (self._streams, self._readers, self._values):
                    table.pop(key, None)

    async def run(self) -> None:
        """Read what the streams follow, tick after tick, until cancelled."""
        tick = 0
        while not self._closed:
            await anyio.sleep(POLL_SECONDS)
            if self.stopping.is_set():
                self._closed = True
                self._wake()
                return
            tick += 1
            due = [
                (key, read)
                for key, read in self._readers.items()
                if key is not None or tick % LISTING_TICKS == 0
            ]
            if not due:
                continue
            fresh = await anyio.to_thread.run_sync(_read_all, due)
            changed = False
            for key, value in fresh:
                if key in self._streams and self._values.get(key, _UNSET) != value:
                    self._values[key] = value
                    changed = True
            if changed:
                self._wake()

    def _wake(self) -> None:
        woken, self._changed = self._changed, anyio.Event()
        woken.set()


def _read_all(due: list[tuple[str | None, Callable[[], Any]]]) -> list[tuple[str | None, Any]]:
    return [(key, read()) for key, read in due]


class _Front:
    """In front of every route: the shared gate's checks of who is asking (Host, Origin), each
    refusal answered 403 as the viewer always has, and the headers every answer carries."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self._app = app
        self._gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        refusal = self._gate.sender_refusal(scope["path"], Headers(scope=scope).get)
        if refusal is not None:
            response = _error(TetherError("forbidden", refusal.message))
            await response(scope, receive, send_with_headers)
            return
        await self._app(scope, receive, send_with_headers)


def _error(exc: TetherError) -> Response:
    return _json({"error": exc.to_dict()}, _HTTP_STATUS.get(exc.code, HTTPStatus.CONFLICT))


def _json(value: Any, status: int = HTTPStatus.OK) -> Response:
    body = json.dumps(value, ensure_ascii=False).encode()
    return Response(body, status, media_type="application/json; charset=utf-8")


def _answering(
    handle: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """`handle`, whatever it raises turned into a JSON error with its HTTP status (the page gets
    a JSON error rather than a dropped connection)."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handle(request)
        except TetherError as exc:
            return _error(exc)
        except Exception as exc:
            error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
            return _json({"error": error}, HTTPStatus.INTERNAL_SERVER_ERROR)

    return endpoint


def build_app(viewer: Viewer, port: int) -> ASGIApp:
    """The viewer's app for a server listening on 127.0.0.1:`port`."""
    watcher = Watcher()
    origins = (f"http://127.0.0.1:{port}", f"http://localhost:{port}")

    async def page(request: Request) -> Response:
        return _asset("index.html")

    async def static(request: Request) -> Response:
        return _asset(request.path_params["name"])

    def _asset(name: str) -> Response:
        body = viewer.assets.get(name)
        if body is None:
            raise TetherError("not_found", f"no asset {name!r}")
        kind = _TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
        return Response(body, media_type=f"{kind}; charset=utf-8")

    async def runs(request: Request) -> Response:
        return _json(await anyio.to_thread.run_sync(viewer.runs))

    async def run(request: Request) -> Response:
        query = dict(request.query_params)
        return _json(await anyio.to_thread.run_sync(viewer.run, query.get("path", ""), query))

    async def events(request: Request) -> Response:
        rel = request.query_params.get("path")
        key: str | None = None
        read: Callable[[], Any] = viewer.listing_signature
        if rel is not None:
            key = await anyio.to_thread.run_sync(viewer.uri_of, rel)
            read = viewer.revision_reader(key)

        async def stream() -> AsyncIterator[dict[str, str]]:
            async for value in watcher.follow(key, read):
                payload = len(value) if isinstance(value, tuple) else value
                yield {"data": json.dumps({"value": payload})}

        return EventSourceResponse(
            stream(),
            headers={"Content-Type": "text/event-stream"},
            sep="\n",
            ping=HEARTBEAT_SECONDS,
            shutdown_event=watcher.stopping,
            shutdown_grace_period=1.0,
        )

    async def human(request: Request) -> Response:
        # Only from this server's own page: its exact Origin and the token written into it.
        if request.headers.get("origin") not in origins:
            raise TetherError("forbidden", "answers are taken only from this viewer's own page")
        token = request.headers.get("x-tether-token", "")
        if not secrets.compare_digest(token.encode(), viewer.token.encode()):
            raise TetherError("forbidden", "answers are taken only from this viewer's own page")
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind != "application/json":
            raise TetherError("usage", "post a JSON body (Content-Type: application/json)")
        length = request.headers.get("content-length", "")
        if not length.isdigit() or int(length) > MAX_POST_BYTES:
            raise TetherError(
                "invalid_value", f"the body must give its length, at most {MAX_POST_BYTES} bytes"
            )
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            raise TetherError("invalid_json", "the body is not JSON") from None
        client = request.client
        return _json(await anyio.to_thread.run_sync(_answer, body, client.port if client else 0))

    def _answer(body: Any, client_port: int) -> dict[str, Any]:
        from tether.person import sender

        return viewer.answer_human(body, sender(client_port, port) if client_port else None)

    async def nothing(request: Request, exc: Exception) -> Response:
        verb = "to post " if request.method == "POST" else ""
        return _error(TetherError("not_found", f"nothing {verb}at {request.url.path}"))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watcher.run)
            yield
            tasks.cancel_scope.cancel()

    routes = [
        Route("/", _answering(page)),
        Route("/index.html", _answering(page)),
        Route("/static/{name}", _answering(static)),
        Route("/api/runs", _answering(runs)),
        Route("/api/run", _answering(run)),
        Route("/api/events", _answering(events)),
        Route("/api/human", _answering(human), methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: nothing}, lifespan=lifespan)
    return _Front(app, Gate("127.0.0.1", None))


def _listen(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: any free one); connections made as soon as the
    address is printed wait in its backlog until the server accepts them."""
    try:
        return socket.create_server(("127.0.0.1", port), backlog=128)
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", port=port
        ) from None


def serve(path: str, *, port: int = 0, ready: Callable[[Any], None]) -> None:
    """Serve the place `path` names — a folder, or a database (`postgresql://…`) — until
    interrupted; given one execution (a state file, `postgresql://…#name`), serve the place that
    holds it and open it. `ready` receives the address once the server listens."""
    store = store_for(path)
    if scheme_of(path) == "file" and not os.path.exists(path_of(path)):
        raise TetherError("not_found", f"{path} does not exist", path=path)
    where, opened = store.place(path)
    if opened is not None and not store.exists(store.locate(where, opened)):
        raise TetherError("not_found", f"no execution at {path}", path=path)
    viewer = Viewer(where)
    count = len(viewer.executions())
    sock = _listen(port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        build_app(viewer, bound),
        log_level="warning",
        access_log=False,
        ws="none",
        timeout_graceful_shutdown=2,
    )
    url = f"http://127.0.0.1:{bound}/" + (f"?run={quote(opened)}" if opened else "")
    try:
        ready({"status": "serving", "url": url, "executions": count})
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C is a clean stop, also when it lands before uvicorn has put in its own signal
        # handlers: asyncio.run then cancels the server's task instead.
        pass
    finally:
        sock.close()
