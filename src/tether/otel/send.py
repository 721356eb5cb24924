"""Sending an execution's spans over OTLP with the OpenTelemetry SDK (the `otel` extra).

Owns the SDK side: the OTLP/HTTP exporter, configured by the standard `OTEL_EXPORTER_OTLP_*`
variables (or an endpoint given on the command line), the resource (`service.name` is `tether`
unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` say otherwise), the making of SDK spans
from `tether.otel.spans` with their recorded ids and times (a `Tracer` whose id generator hands
out the ids the spans were given), and its two uses:

- `export`: `tether export otel`, every finished execution of a place (or one execution), sent
  in batches, each batch's failure reported (`export_failed`);
- `emit`: the live emission the verb layer calls after a commit that finished a node, when an
  OTLP endpoint is configured: the spans that commit completed (without what the agent or a
  person wrote unless `TETHER_OTEL_CONTENT=1`) go to a bounded outbox whose daemon thread sends
  them, so a step never waits on the network; what is left at exit is posted by a fresh child
  process that holds none of the command's output, giving up after `FLUSH_SECONDS`
  (`TETHER_OTEL_FLUSH_SECONDS`), so the command ends at once whether the receiver answers or
  not. A failure never fails a step; the process says once on stderr that it cannot send.

It does not decide the span structure (`tether.otel.spans`) or read arguments (`tether.export`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from typing import Any

from tether.engine.names import Status
from tether.errors import TetherError
from tether.otel.spans import Span, spans, tail_spans, without_content

# The longest the child process that sends them at exit waits for the spans emitted live.
FLUSH_SECONDS = 10.0
_BATCH = 256  # spans per export request
_QUEUE = 2048  # live spans waiting to be sent, at most
_EVENTS = 10_000  # events a span keeps unless OTEL_SPAN_EVENT_COUNT_LIMIT says otherwise
_TRACES = "/v1/traces"
_BACK = 16  # entries before a commit's first that live emission reads at first
_DEFAULT = "http://localhost:4318"  # the OTLP/HTTP default


def traces_endpoint(base: str) -> str:
    """The OTLP/HTTP traces URL for `base` (a collector's address, as
    `OTEL_EXPORTER_OTLP_ENDPOINT` takes it; a URL already ending in /v1/traces is kept)."""
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise TetherError(
            "usage",
            f"the OTLP endpoint is an http:// or https:// URL (http://127.0.0.1:4318), "
            f"not {base!r}",
        )
    return base if parts.path.endswith(_TRACES) else base.rstrip("/") + _TRACES


class Sender:
    """Makes SDK spans of Tether's spans and keeps them for `export` or the live emission's
    `_Outbox` to send."""

    def __init__(self, endpoint: str | None = None) -> None:
        protocol = os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        )
        if protocol not in (None, "", "http/protobuf"):
            raise TetherError(
                "usage",
                f"OTEL_EXPORTER_OTLP_PROTOCOL is {protocol!r}: Tether sends OTLP over HTTP "
                "(http/protobuf); point it at the collector's HTTP port (4318)",
            )
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        except ModuleNotFoundError as exc:
            from tether.installation import missing_extra

            raise missing_extra("otel", exc.name, "OpenTelemetry export and emission") from None

        self.endpoint = _endpoint(endpoint)
        self.exporter = OTLPSpanExporter(endpoint=self.endpoint)
        self.kept: list[Any] = []
        self._ids = _ids()
        limits = None if os.environ.get("OTEL_SPAN_EVENT_COUNT_LIMIT") else _EVENTS
        resource = Resource.create({})  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": "tether"}))
        provider = TracerProvider(
            resource=resource,
            id_generator=self._ids,
            span_limits=SpanLimits(max_events=limits),
            shutdown_on_exit=False,
        )
        self.processor = _keeper(self.kept)
        provider.add_span_processor(self.processor)
        self._tracer = provider.get_tracer("tether")
        self._lock = threading.Lock()

    def take(self) -> list[Any]:
        """The SDK spans made so far, handed over once."""
        with self._lock:
            taken = self.kept[:]
            self.kept.clear()
        return taken

    def add(self, tid: int, made: Iterable[Span]) -> None:
        """Make an SDK span of each of `made` (trace `tid`) and end it."""
        from opentelemetry import trace
        from opentelemetry.context import Context
        from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode
        from opentelemetry.trace import TraceFlags as Flags

        codes = {"ok": StatusCode.OK, "error": StatusCode.ERROR, "unset": StatusCode.UNSET}
        with self._lock:
            for span in made:
                context = Context()
                if span.parent_id is not None:
                    parent = SpanContext(tid, span.parent_id, False, Flags(Flags.SAMPLED))
                    context = trace.set_span_in_context(NonRecordingSpan(parent), context)
                self._ids.next = (tid, span.span_id)
                made_span = self._tracer.start_span(
                    span.name, context, attributes=span.attributes, start_time=span.start
                )
                for event in span.events:
                    made_span.add_event(event.name, event.attributes, event.time)
                message = span.message if span.status == "error" else None
                made_span.set_status(Status(codes[span.status], message))
                made_span.end(span.end)


def _ids() -> Any:
    """An id generator that hands out the ids set in its `next` (trace id, span id)."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class Recorded(IdGenerator):
        next: tuple[int, int] = (0, 0)

        def generate_trace_id(self) -> int:
            return self.next[0]

        def generate_span_id(self) -> int:
            return self.next[1]

    return Recorded()


def _keeper(kept: list[Any]) -> Any:
    """A span processor that appends every span that ends to `kept`, for `export` to send."""
    from opentelemetry.sdk.trace import SpanProcessor

    class Keep(SpanProcessor):
        def on_end(self, span: Any) -> None:
            kept.append(span)

    return Keep()


def _endpoint(given: str | None) -> str:
    """The traces URL: `given`, else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
    `OTEL_EXPORTER_OTLP_ENDPOINT` with /v1/traces, else the OTLP default on localhost."""
    if given:
        return traces_endpoint(given)
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    return traces_endpoint(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or _DEFAULT)


def export(where: str, endpoint: str | None = None) -> dict[str, Any]:
    """Send the finished executions at `where` (a folder, a database without `#name`), or the
    one execution it names (finished or not: a running one sends the attempts it has settled),
    to `endpoint` (else the `OTEL_EXPORTER_OTLP_*` variables'). Raises `export_failed` when the
    receiver refuses or cannot be reached."""
    from tether.store import store_for

    sender = Sender(endpoint)  # first: without the extra, that is the error to give
    from opentelemetry.sdk.trace.export import SpanExportResult

    _quiet()  # what failed is the command's error, not the exporter's log lines
    store = store_for(where)
    place, name = store.place(where)
    if name is None:
        listed = store.list(place)
        uris = [s.uri for s in listed if s.status in (Status.COMPLETE, Status.FAILED)]
        running = [s.uri for s in listed if s.status == Status.RUNNING]
    else:
        uris, running = [store.canonical(where)], []
    for uri in uris:
        state, entries = store.read_execution(uri)
        tid, made = spans(state, store.load_tree(uri), entries)
        sender.add(tid, (span for span in made if span.done))
    sent = sender.kept
    for at in range(0, len(sent), _BATCH):
        if sender.exporter.export(sent[at : at + _BATCH]) != SpanExportResult.SUCCESS:
            raise TetherError(
                "export_failed",
                f"the OTLP receiver at {sender.endpoint} did not take the spans "
                f"(sent {at} of {len(sent)}): is it running, and is this its HTTP endpoint?",
                endpoint=sender.endpoint,
            )
    return {
        "status": "exported",
        "endpoint": sender.endpoint,
        "executions": uris,
        "spans": len(sent),
        "running_left_out": running,
    }


_live: _Live | None = None
_said = False  # whether this process said it cannot send (it says so once)


def emit(store: Any, uri: str, tree: dict[str, Any], since: int, before: dict[str, Any]) -> None:
    """Send the spans of `uri` that the commit whose first entry is `since` completed (`before`:
    the state before it), read from the trace's tail (`_completed`), without waiting:
    the outbox's thread sends them (its queue is bounded). Without `TETHER_OTEL_CONTENT=1`
    they carry no notes, values, loop items, tool inputs or thoughts (`spans.without_content`).
    Never raises: the step it follows has committed whatever happens here; a failure is said
    once on stderr (`_cannot_send`)."""
    global _live
    try:
        tid, ready = _completed(store, uri, tree, since, before)
        if not ready:
            return
        if os.environ.get("TETHER_OTEL_CONTENT") != "1":
            ready = without_content(ready)
        if _live is None:
            _live = _start_live()
        _live.add(tid, ready)
        _live.outbox.put(_live.take())
    except Exception as exc:  # no extra, a bad endpoint, a store that moved on: the step stands
        _cannot_send(exc)


def _completed(
    store: Any, uri: str, tree: dict[str, Any], since: int, before: dict[str, Any]
) -> tuple[int, list[Span]]:
    """The spans the commit whose first entry is `since` completed, read from the trace's tail
    (`Store.read_tail`): from `_BACK` entries before `since`, then eight times further back
    each time the tail begins too late to tell (`spans.tail_spans`: an attempt it completes
    began before it, or its retry number is not sure), and from the first entry once the
    execution finished (its root span holds every entry outside an action)."""
    back = _BACK
    while True:
        state, tail = store.read_tail(uri, since - back)
        first = int(state["seq"]) - store.trace_length(state)
        made = tail_spans(state, tree, tail, since, first, before)
        if made is not None:
            return made
        back = back * 8 if state["status"] == Status.RUNNING else since - first


def _cannot_send(reason: Any) -> None:
    """Say on stderr, once per process, that live spans cannot be sent, and why."""
    global _said
    if _said:
        return
    _said = True
    message = getattr(reason, "message", None) or str(reason) or type(reason).__name__
    print(f"tether: cannot send OpenTelemetry spans live: {message}", file=sys.stderr)


class _Outbox:
    """The live spans waiting to be sent, at most `_QUEUE` (the oldest dropped past it), and
    the daemon thread that sends them a batch at a time, so that no step waits on the
    receiver; a batch the receiver does not take is said once on stderr (`_cannot_send`)."""

    def __init__(self, exporter: Any, endpoint: str) -> None:
        from collections import deque

        self.exporter, self.endpoint = exporter, endpoint
        self.pending: deque[Any] = deque(maxlen=_QUEUE)
        self.sending: list[Any] = []
        self._wake = threading.Event()
        threading.Thread(target=self._run, name="tether-otel", daemon=True).start()

    def put(self, made: list[Any]) -> None:
        self.pending.extend(made)
        self._wake.set()

    def rest(self) -> list[Any]:
        """What is not sent yet: the batch on its way, then the waiting spans."""
        return [*self.sending, *self.pending]

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while self.pending:
                count = min(len(self.pending), _BATCH)
                self.sending = [self.pending.popleft() for _ in range(count)]
                send(self.exporter, self.sending, self.endpoint)
                self.sending = []


def send(exporter: Any, batch: list[Any], endpoint: str) -> None:
    """Export `batch`; a receiver that refuses it or cannot be reached is said once."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    try:
        if exporter.export(batch) == SpanExportResult.SUCCESS:
            return
        reason = f"the receiver at {endpoint} did not take them"
    except Exception as exc:
        reason = f"the receiver at {endpoint}: {exc}"
    _cannot_send(reason)


# The child `_flush` leaves at exit: it posts the encoded spans it reads on its stdin.
_POST = """
import json, sys, urllib.request
url, headers, seconds = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
body = sys.stdin.buffer.read()
urllib.request.urlopen(urllib.request.Request(url, body, headers, method="POST"), timeout=seconds)
"""


def _flush(outbox: _Outbox, seconds: float) -> None:
    """At exit, the spans not sent yet (the batch on its way included) are encoded and handed
    to a fresh child process that posts them, holding none of the command's output or its
    terminal, so that the command ends at once whether the receiver answers or not (one that
    never answered delayed each step); the child gives up after `seconds`. Never raises."""
    rest = outbox.rest()
    if not rest:
        return
    import json

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tether import detached

    try:
        body = encode_spans(rest).SerializeToString()
        headers = {"Content-Type": "application/x-protobuf", **_headers()}
        failed = detached.start(
            ["-c", _POST, outbox.endpoint, json.dumps(headers), str(seconds)], body
        )
    except Exception as exc:
        failed = exc
    if failed is not None:
        _cannot_send(failed)


def _headers() -> dict[str, str]:
    """The headers `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (else `OTEL_EXPORTER_OTLP_HEADERS`)
    names, `key=value` pairs split by commas, URL-encoded."""
    from urllib.parse import unquote

    given = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    pairs = (item.partition("=") for item in given.split(",") if "=" in item)
    return {unquote(k).strip(): unquote(v).strip() for k, _, v in pairs}


def _quiet() -> None:
    """Keep the SDK's log lines (a receiver that cannot be reached) off stderr."""
    import logging

    logger = logging.getLogger("opentelemetry")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


class _Live(Sender):
    """The process's live sender and its outbox."""

    def __init__(self) -> None:
        super().__init__()
        self.outbox = _Outbox(self.exporter, self.endpoint)


def _start_live() -> _Live:
    """The process's live sender, silent, its spans left at exit to a child (`_flush`)."""
    import atexit

    _quiet()
    sender = _Live()
    seconds = float(os.environ.get("TETHER_OTEL_FLUSH_SECONDS", FLUSH_SECONDS))
    atexit.register(_flush, sender.outbox, seconds)
    return sender
