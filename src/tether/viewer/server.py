"""The viewer's web server: the page, its JSON API and live updates, for one place.

Owns the HTTP surface on 127.0.0.1, a Starlette app (sse-starlette's event streams) that
`tether.viewer.cli` imports only for `tether view`, so `show` and `render` never load the HTTP
stack. Its endpoints read what they serve from `request.app.state`: the place (`place`, a
`tether.viewer.place.Place`), its watcher (`tether.viewer.watch`), the page's assets and token:

- `/` the page and `/static/...` its assets, shipped inside the package (no CDN, no build step);
- `/api/runs` a page of the executions in the place (tree, status, phase, open step, progress,
  last update), `?limit=N&offset=K` the page, `&tree=NAME&status=S` a filter; P, the path of
  one, is its name there (a path relative to the folder, or its name in the database);
- `/api/run?path=P` one execution: its nodes, trace, current snapshot and diagram (SVG), and
  where it was forked from;
  `&at=K` the snapshot and diagram after the first K trace entries (a replay, not a stored copy);
  `&since=N&last_seq=S` only the trace entries after the N the page already holds; `&fold=KEYS`
  the diagram with the subtrees under those nodes (comma-separated keys) folded away;
- `/api/overview` the figures of `tether stats` for the place, per tree and per action;
  `/api/heat?tree=NAME&hash=H&measure=M` one tree's diagram as a heat map of M (failures,
  retries, stops_refused, answer_time) with its figures; `/api/behind?tree=NAME&hash=H&key=K&
  measure=M` a page of the executions behind action K's figure, most first, with `limit` and
  `offset` as `/api/runs` takes them (`tether.viewer.insight`);
- `/api/events` and `/api/events?path=P` Server-Sent Events: a message when the listing changes,
  or with the new revision when the execution commits (the watcher, started by the lifespan,
  reads them once per tick for all the pages);
- `POST /api/human` a person's answer to the open human step from the page (`{path, decision:
  approve | reject, note?, step?}`), through the verbs (`approve`/`reject`, `by: viewer`), with
  the process found holding the connection's other end (the browser; `tether.person.sender`),
  so that an answer sent from inside an agent's process tree, or by a sender that cannot be
  found, is refused; the only request that writes;
- `/person?key=K` the one-time link `serve` writes to the controlling terminal of the person who
  started the viewer (never to standard output): its first request spends the key, and a right
  one gives that browser the person's cookie (`tether_person`, HttpOnly, SameSite=Strict), which
  `POST /api/human` requires. With no terminal, no link is shown and no page answers.

Every request first passes the gate the other HTTP servers use (`tether.httpserve.GateMiddleware`
running `tether.httpgate`): a `Host` that is not this machine's loopback name (which stops DNS
rebinding) or an `Origin` from elsewhere is refused with 403, a POST without a JSON content type
or whose declared length is missing or over `MAX_POST_BYTES` with 400, each with a JSON error.
A post is taken only from the server's own page: its `Origin` must be this server, and it must
carry the per-server token written into the page (`X-Tether-Token`); anything else is refused
with 403 before the body is read. Every answer carries a strict Content-Security-Policy,
`nosniff` and `no-store`. Errors are JSON with the status of their code; what the place refuses
(a path outside the folder: 403; a corrupt execution: 409) is `tether.viewer.place`'s to say.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from http import HTTPStatus
from importlib import resources
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from tether.errors import TetherError
from tether.httpgate import ListenOptions
from tether.httpserve import GateMiddleware, bind, run
from tether.store import path_of, scheme_of, store_for
from tether.viewer import insight
from tether.viewer.place import Paging, Place
from tether.viewer.watch import Watcher

HEARTBEAT_SECONDS = 15.0
MAX_POST_BYTES = 16 * 1024
_TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}
_HTTP_STATUS = {
    "forbidden": HTTPStatus.FORBIDDEN,
    "not_found": HTTPStatus.NOT_FOUND,
    "usage": HTTPStatus.BAD_REQUEST,
    "invalid_value": HTTPStatus.BAD_REQUEST,
    "invalid_json": HTTPStatus.BAD_REQUEST,
}
_TOKEN_PLACEHOLDER = b"{{tether-token}}"
PERSON_COOKIE = "tether_person"
_NO_TERMINAL = (
    "off: tether view has no terminal to show its one-time link on, so no page answers a human step"
)
_CSP = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
}


def _json(value: Any, status: int = HTTPStatus.OK) -> Response:
    body = json.dumps(value, ensure_ascii=False).encode()
    return Response(body, status, media_type="application/json; charset=utf-8")


def _error(exc: TetherError) -> Response:
    return _json({"error": exc.to_dict()}, _HTTP_STATUS.get(exc.code, HTTPStatus.CONFLICT))


# -- the endpoints ---------------------------------------------------------------------------------


async def page(request: Request) -> Response:
    return _asset(request, "index.html")


async def static(request: Request) -> Response:
    return _asset(request, request.path_params["name"])


def _asset(request: Request, name: str) -> Response:
    body = request.app.state.assets.get(name)
    if body is None:
        raise TetherError("not_found", f"no asset {name!r}")
    kind = _TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
    return Response(body, media_type=f"{kind}; charset=utf-8")


async def runs(request: Request) -> Response:
    query = dict(request.query_params)
    return _json(await anyio.to_thread.run_sync(request.app.state.place.runs, query))


async def run_document(request: Request) -> Response:
    query = dict(request.query_params)
    place: Place = request.app.state.place
    return _json(await anyio.to_thread.run_sync(place.run, query.get("path", ""), query))


async def overview(request: Request) -> Response:
    return _json(await anyio.to_thread.run_sync(insight.overview, request.app.state.place))


async def inbox(request: Request) -> Response:
    return _json(await anyio.to_thread.run_sync(insight.inbox, request.app.state.place))


async def heat(request: Request) -> Response:
    name, tree_hash, measure = _asked(request, "tree", "hash", "measure")
    place = request.app.state.place
    return _json(await anyio.to_thread.run_sync(insight.heat, place, name, tree_hash, measure))


async def behind(request: Request) -> Response:
    name, tree_hash, key, measure = _asked(request, "tree", "hash", "key", "measure")
    asked = Paging.of(dict(request.query_params))
    place = request.app.state.place
    found = await anyio.to_thread.run_sync(
        lambda: insight.behind(
            place, name, tree_hash, key, measure, offset=asked.offset, limit=asked.limit
        )
    )
    return _json(found)


def _asked(request: Request, *names: str) -> list[str]:
    """The query parameters `names`, each required."""
    missing = [name for name in names if name not in request.query_params]
    if missing:
        raise TetherError("usage", f"{request.url.path} needs {', '.join(missing)}")
    return [request.query_params[name] for name in names]


async def events(request: Request) -> EventSourceResponse:
    place: Place = request.app.state.place
    watcher: Watcher = request.app.state.watcher
    rel = request.query_params.get("path")
    key: str | None = None
    read: Callable[[], Any] = place.listing_signature
    if rel is not None:
        key = await anyio.to_thread.run_sync(place.uri_of, rel)
        read = place.revision_reader(key)

    async def stream() -> AsyncIterator[dict[str, str]]:
        async for value in watcher.follow(key, read):
            # an execution's revision, the number of executions listed, or why not
            payload = value[0] if isinstance(value, tuple) else value
            yield {"data": json.dumps({"value": payload})}

    return EventSourceResponse(
        stream(),
        headers={"Content-Type": "text/event-stream"},
        sep="\n",
        ping=HEARTBEAT_SECONDS,
        shutdown_event=watcher.stopping,
        shutdown_grace_period=1.0,
    )


async def person(request: Request) -> Response:
    """The one-time link shown at the terminal of the person who started the viewer: once,
    it gives the browser that opens it the person's cookie (HttpOnly, never in a page) and
    sends it to the page, which spends the key (a wrong key spends nothing, so no other
    process can use the link up before the person opens it)."""
    state = request.app.state
    key = request.query_params.get("key", "")
    if state.person_key is None or not secrets.compare_digest(
        key.encode(), state.person_key.encode()
    ):
        raise TetherError(
            "forbidden",
            "this link answers nothing: it was used already, or is not the one the viewer "
            "showed at its terminal (restart tether view for a new one)",
        )
    state.person_key = None
    response = Response(status_code=HTTPStatus.SEE_OTHER, headers={"Location": "/"})
    response.set_cookie(PERSON_COOKIE, state.person, httponly=True, samesite="strict", path="/")
    return response


async def human(request: Request) -> Response:
    """A person's answer from this server's own page: its exact Origin, the token written
    into it, and the person's cookie the terminal's one-time link gave this browser (the gate
    has already checked the body's declared length and type)."""
    state = request.app.state
    token = request.headers.get("x-tether-token", "")
    if request.headers.get("origin") not in state.origins or not secrets.compare_digest(
        token.encode(), state.token.encode()
    ):
        raise TetherError("forbidden", "answers are taken only from this viewer's own page")
    cookie = request.cookies.get(PERSON_COOKIE, "")
    if not secrets.compare_digest(cookie.encode(), state.person.encode()):
        raise TetherError(
            "forbidden",
            "answers are taken only from the browser that opened the one-time link tether "
            "view showed at its terminal",
        )
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        raise TetherError("invalid_json", "the body is not JSON") from None
    client_port = request.client.port if request.client else 0
    answered = await anyio.to_thread.run_sync(_answer, state.place, body, client_port, state.port)
    return _json(answered)


def _answer(place: Place, body: Any, client_port: int, port: int) -> dict[str, Any]:
    """`body` answered as sent by the process holding the connection's other end."""
    from tether.person import sender

    return place.answer_human(body, sender(client_port, port) if client_port else None)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, TetherError)
    return _error(exc)


async def _nothing(request: Request, exc: Exception) -> Response:
    verb = "to post " if request.method == "POST" else ""
    return _error(TetherError("not_found", f"nothing {verb}at {request.url.path}"))


async def _internal(request: Request, exc: Exception) -> Response:
    error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}
    return _json({"error": error}, HTTPStatus.INTERNAL_SERVER_ERROR)


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The watcher runs for as long as the server does; once it runs, the server says where it
    listens (`app.state.started`, when set), so that a Ctrl-C from then on finds uvicorn's own
    signal handlers in place and stops it cleanly."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(app.state.watcher.run)
        started = getattr(app.state, "started", None)
        if started is not None:
            started()
        yield
        tasks.cancel_scope.cancel()


routes = [
    Route("/", page),
    Route("/index.html", page),
    Route("/static/{name}", static),
    Route("/api/runs", runs),
    Route("/api/run", run_document),
    Route("/api/events", events),
    Route("/api/overview", overview),
    Route("/api/inbox", inbox),
    Route("/api/heat", heat),
    Route("/api/behind", behind),
    Route("/api/human", human, methods=["POST"]),
    Route("/person", person),
]


def _assets(token: str) -> dict[str, bytes]:
    """The page and its assets, the page carrying the server's token."""
    folder = resources.files("tether.viewer") / "static"
    assets = {item.name: item.read_bytes() for item in folder.iterdir() if item.is_file()}
    assets["index.html"] = assets["index.html"].replace(_TOKEN_PLACEHOLDER, token.encode())
    return assets


def _inner(app: ASGIApp) -> Starlette:
    """The Starlette app inside the gate."""
    inner = app.app if isinstance(app, GateMiddleware) else app
    assert isinstance(inner, Starlette)
    return inner


def _tell_terminal(text: str) -> bool:
    """Write `text` to the controlling terminal of the person who started the viewer (never
    to standard output, which an agent may read); False when there is none."""
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        return False
    with os.fdopen(fd, "wb", buffering=0) as tty:
        tty.write(text.encode("utf-8", "replace"))
    return True


def build_app(place: Place, options: ListenOptions) -> ASGIApp:
    """The viewer's app for `place`, served on 127.0.0.1:`options.port` (the bound port), behind
    the gate."""
    app = Starlette(
        routes=routes,
        exception_handlers={TetherError: _refused, HTTPException: _nothing, Exception: _internal},
        lifespan=lifespan,
    )
    app.state.place = place
    app.state.watcher = Watcher()
    app.state.port = options.port
    app.state.origins = (f"http://127.0.0.1:{options.port}", f"http://localhost:{options.port}")
    app.state.token = secrets.token_urlsafe(32)
    app.state.person_key = secrets.token_urlsafe(32)  # the one-time link's, spent at first use
    app.state.person = secrets.token_urlsafe(32)  # the cookie it gives
    app.state.assets = _assets(app.state.token)
    gate = options.gate(length_required=True)
    return GateMiddleware(app, gate, statuses=_HTTP_STATUS, headers=_HEADERS)


def serve(path: str, *, port: int = 0, ready: Callable[[Any], None]) -> None:
    """Serve the place `path` names — a folder, or a database (`postgresql://…`) — until
    interrupted; given one execution (a state file, `postgresql://…#name`), serve the place that
    holds it and open it. `ready` receives the address once the server has started."""
    store = store_for(path)
    if scheme_of(path) == "file" and not os.path.exists(path_of(path)):
        raise TetherError("not_found", f"{path} does not exist", path=path)
    where, opened = store.place(path)
    if opened is not None and not store.exists(store.locate(where, opened)):
        raise TetherError("not_found", f"no execution at {path}", path=path)
    place = Place(where)
    count = place.count()
    sock = bind(ListenOptions(port=port))
    options = ListenOptions(port=sock.getsockname()[1], max_body_bytes=MAX_POST_BYTES)
    url = options.url(options.port) + "/" + (f"?run={quote(opened)}" if opened else "")
    app = build_app(place, options)
    link = f"{options.url(options.port)}/person?key={_inner(app).state.person_key}"
    shown = _tell_terminal(
        f"To approve or reject human steps from a browser, open this link once in it "
        f"(it is shown only here):\n  {link}\n"
    )
    answers = "the one-time link is shown at the terminal" if shown else _NO_TERMINAL
    address = {"status": "serving", "url": url, "executions": count, "answers": answers}
    _inner(app).state.started = lambda: ready(address)
    try:
        asyncio.run(run(app, sock))
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C is a clean stop, also when it lands before uvicorn has put in its own signal
        # handlers: asyncio.run then cancels the server's task instead.
        pass
    finally:
        sock.close()
