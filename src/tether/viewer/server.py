"""The viewer's web server: the page, its JSON API and live updates, for one place.

Owns the HTTP surface on 127.0.0.1 (standard library `ThreadingHTTPServer`) over one place that
holds executions — a folder, or a database (`postgresql://…` without `#name`) — listed and read
through its store (`Store.list`, `Store.revision`), never by reading its files:

- `/` the page and `/static/...` its assets, shipped inside the package (no CDN, no build step);
- `/api/runs` the executions in the place (tree, status, phase, open step, progress, last
  update); P, the path of one, is its name there (a path relative to the folder, or its name in
  the database);
- `/api/run?path=P` one execution: its nodes, trace, current snapshot and diagram (SVG);
  `&at=K` the snapshot and diagram after the first K trace entries (a replay, not a stored copy);
  `&since=N&last_seq=S` only the trace entries after the N the page already holds;
- `/api/events` and `/api/events?path=P` Server-Sent Events: a message when the listing changes
  (the store's listing, read every second), or with the new revision when the execution commits
  (its revision is read every 200 ms per stream; the page then fetches the new document).

- `POST /api/human` a person's answer to the open human step from the page (`{path, decision:
  approve | reject, note?, step?}`), through the verbs (`approve`/`reject`, `by: viewer`); the
  only request that writes.

It confines every path it is asked for to the folder it serves: absolute paths, `..` and
symbolic links that lead outside are refused with 403 and a JSON error, as are requests whose
`Host` is not this server (DNS rebinding); in a database a path is only ever a name in it. The
files beside a state file are the store's to find and refuse (a state file naming another file
is `corrupt_execution`, 409). An execution that cannot be read or shown is reported on its own
row of the listing; the others are still listed. A post is taken only from the server's own
page: its `Origin` must be this server, and it must carry the per-server token written into the
page (`X-Tether-Token`); anything else is refused with 403 before the body is read. It does not
derive statuses (`tether.viewer.model`), draw (`tether.viewer.svg`) or parse command lines
(`tether.viewer.cli`).
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from tether.errors import TetherError
from tether.store import path_of, scheme_of, store_for
from tether.store.base import Summary
from tether.tree.model import STEP_KINDS
from tether.viewer.model import Timeline, index_tree, progress, snapshot
from tether.viewer.source import Execution, load_execution
from tether.viewer.svg import render_svg

POLL_SECONDS = 0.2
LISTING_POLL_SECONDS = 1.0
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
        self.stopping = threading.Event()
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
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.root]) != self.root:
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

    def revision_watch(self, rel: str) -> Callable[[], int | None]:
        """A reader of the execution's revision, for its event stream (None while it cannot be
        read: not started yet, corrupt, a database that is down)."""
        uri = self.uri_of(rel)

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
        at = _whole(query, "at")
        if at is not None:
            snap = snapshot(tree, state, trace, min(at, len(trace)))
            return {
                "path": rel,
                "revision": state["revision"],
                "total": len(trace),
                "progress": progress(tree, snap),
                "snapshot": snap.to_dict(),
                "svg": render_svg(tree, snap),
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
            "trace_offset": offset,
            "trace": trace[offset:],
            "progress": progress(tree, snap),
            "snapshot": snap.to_dict(),
            "svg": render_svg(tree, snap),
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

    def answer_human(self, body: Any) -> dict[str, Any]:
        """Approve or reject the open human step of the execution at `body["path"]`, as a person
        does from the page (`by: viewer`); the verbs refuse what is not open."""
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
        return verb(target, note=note or None, step=step, by="viewer")

    # -- change signals ------------------------------------------------------------------------

    def listing_signature(self) -> tuple[tuple[str, int | None, str | None], ...] | str:
        """What changes when the listing does: each execution's name and revision (or error),
        or the reason the place cannot be listed."""
        try:
            listed = self.executions()
        except TetherError as exc:
            return exc.message
        return tuple((s.name, s.revision, s.error["message"] if s.error else None) for s in listed)


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


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal running `tether view` shows only its address."""

    def do_GET(self) -> None:
        self._answering(self._get)

    def do_POST(self) -> None:
        self.close_connection = True  # the body of a refused post is never read
        self._answering(self._post)

    def _answering(self, handle: Callable[[], None]) -> None:
        """Run `handle`; whatever it raises becomes a JSON error with its HTTP status."""
        try:
            handle()
        except TetherError as exc:
            self._json({"error": exc.to_dict()}, _HTTP_STATUS.get(exc.code, HTTPStatus.CONFLICT))
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as exc:  # the page gets a JSON error rather than a dropped connection
            error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
            self._json({"error": error}, HTTPStatus.INTERNAL_SERVER_ERROR)

    def _get(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        viewer = self.server.viewer
        if not self._host_allowed():
            raise TetherError("forbidden", "this server answers only on its own address")
        if url.path in ("/", "/index.html"):
            self._asset("index.html")
        elif url.path.startswith("/static/"):
            self._asset(url.path[len("/static/") :])
        elif url.path == "/api/runs":
            self._json(viewer.runs())
        elif url.path == "/api/run":
            self._json(viewer.run(query.get("path", ""), query))
        elif url.path == "/api/events":
            self._events(query.get("path"))
        else:
            raise TetherError("not_found", f"nothing at {url.path}")

    def _post(self) -> None:
        if urlsplit(self.path).path != "/api/human":
            raise TetherError("not_found", f"nothing to post at {self.path}")
        self._post_allowed()
        self._json(self.server.viewer.answer_human(self._body()))

    def _post_allowed(self) -> None:
        """Refuse a post that does not come from this server's own page: another `Host` (DNS
        rebinding), another or no `Origin` (another site, a script outside a browser), or
        without the page's token."""
        if not self._host_allowed():
            raise TetherError("forbidden", "this server answers only on its own address")
        if self.headers.get("Origin") not in self._origins():
            raise TetherError("forbidden", "answers are taken only from this viewer's own page")
        token = self.headers.get("X-Tether-Token", "")
        if not secrets.compare_digest(token.encode(), self.server.viewer.token.encode()):
            raise TetherError("forbidden", "answers are taken only from this viewer's own page")

    def _body(self) -> Any:
        kind = self.headers.get("Content-Type", "").split(";")[0].strip()
        if kind != "application/json":
            raise TetherError("usage", "post a JSON body (Content-Type: application/json)")
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > MAX_POST_BYTES:
            raise TetherError(
                "invalid_value", f"the body must give its length, at most {MAX_POST_BYTES} bytes"
            )
        try:
            return json.loads(self.rfile.read(int(length)))
        except (ValueError, UnicodeDecodeError):
            raise TetherError("invalid_json", "the body is not JSON") from None

    def _origins(self) -> tuple[str, ...]:
        port = self.server.server_address[1]
        return (f"http://127.0.0.1:{port}", f"http://localhost:{port}")

    def _host_allowed(self) -> bool:
        host = self.headers.get("Host", "")
        port = self.server.server_address[1]
        return host in (f"127.0.0.1:{port}", f"localhost:{port}")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, value: Any, status: int = HTTPStatus.OK) -> None:
        body = json.dumps(value, ensure_ascii=False).encode()
        self._send(status, "application/json; charset=utf-8", body)

    def _asset(self, name: str) -> None:
        body = self.server.viewer.assets.get(name)
        if body is None:
            raise TetherError("not_found", f"no asset {name!r}")
        kind = _TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
        self._send(HTTPStatus.OK, f"{kind}; charset=utf-8", body)

    def _events(self, rel: str | None) -> None:
        viewer = self.server.viewer
        signal: Callable[[], Any] = viewer.listing_signature
        pause = LISTING_POLL_SECONDS
        if rel is not None:
            signal, pause = viewer.revision_watch(rel), POLL_SECONDS
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for data in _changes(signal, pause, viewer.stopping):
            self.wfile.write(data)
            self.wfile.flush()


def _changes(signal: Callable[[], Any], pause: float, stopping: threading.Event) -> Iterator[bytes]:
    """Server-Sent Events: one when `signal()` changes (the first at once), a comment now and
    then to keep the connection alive, until the server stops."""
    last: Any = object()
    quiet = 0.0
    while not stopping.is_set():
        value = signal()
        if value != last:
            last = value
            quiet = 0.0
            payload = value if not isinstance(value, tuple) else len(value)
            yield f"data: {json.dumps({'value': payload})}\n\n".encode()
        elif quiet >= HEARTBEAT_SECONDS:
            quiet = 0.0
            yield b": alive\n\n"
        stopping.wait(pause)
        quiet += pause


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, viewer: Viewer, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.viewer = viewer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


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
    try:
        server = _Server(viewer, port)
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", port=port
        ) from None
    url = server.url + (f"?run={quote(opened)}" if opened else "")
    try:
        ready({"status": "serving", "url": url, "executions": count})
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        viewer.stopping.set()
        server.server_close()
