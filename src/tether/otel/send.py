"""Sending an execution's spans over OTLP with the OpenTelemetry SDK (the `otel` extra).

Owns the SDK side: the OTLP/HTTP exporter, configured by the standard `OTEL_EXPORTER_OTLP_*`
variables (or an endpoint given on the command line), the resource (`service.name` is `tether`
unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` say otherwise), the making of SDK spans
from `tether.otel.spans` with their recorded ids and times (a `Tracer` whose id generator hands
out the ids the spans were given), and its two uses:

- `export`: `tether export otel`, every finished execution of a place (or one execution), sent
  in batches, each batch's failure reported (`export_failed`);
- `emit`: the live emission the verb layer calls after a commit that finished a node, when an
  OTLP endpoint is configured: the spans that commit completed go to a batch processor whose
  worker thread sends them, so a step never waits on the network; at exit the process waits for
  them at most `FLUSH_SECONDS` (`TETHER_OTEL_FLUSH_SECONDS`), whether the receiver is up or not.
  A failure of the emission never fails a step, and nothing is logged to the step's output.

It does not decide the span structure (`tether.otel.spans`) or read arguments (`tether.export`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any

from tether.errors import TetherError
from tether.otel.spans import Span, spans

# The longest a process waits at exit for the spans it emitted live.
FLUSH_SECONDS = 1.0
_BATCH = 256  # spans per export request
_EVENTS = 10_000  # events a span keeps unless OTEL_SPAN_EVENT_COUNT_LIMIT says otherwise
_TRACES = "/v1/traces"
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
    """Makes SDK spans of Tether's spans and hands them to a span processor: a batch processor
    for the live emission (`live`), else one that keeps them for `export` to send itself."""

    def __init__(self, endpoint: str | None = None, *, live: bool = False) -> None:
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
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
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
        self.processor = BatchSpanProcessor(self.exporter) if live else _keeper(self.kept)
        provider.add_span_processor(self.processor)
        self._tracer = provider.get_tracer("tether")
        self._lock = threading.Lock()

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
        uris = [s.uri for s in listed if s.status in ("complete", "failed")]
        running = [s.uri for s in listed if s.status == "running"]
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


_live: Sender | None = None


def emit(store: Any, uri: str, tree: dict[str, Any], since: int) -> None:
    """Send the spans of `uri` that the commit whose first entry is `since` completed. Never
    raises: the step it follows has committed whatever happens here."""
    global _live
    try:
        state, entries = store.read_execution(uri)
        tid, ready = spans(state, tree, entries, since)
        if not ready:
            return
        if _live is None:
            _live = _start_live()
        _live.add(tid, ready)
    except Exception:  # no receiver, no extra, a store that moved on: the step stands
        return


def _flush(processor: Any, seconds: float) -> None:
    """Send what `processor` holds, waiting `seconds` at most: the SDK's flush exports in the
    caller's thread and does not keep to its timeout (a receiver that is down is retried for
    `OTEL_EXPORTER_OTLP_TIMEOUT`), so it runs in a daemon thread, left behind at exit."""
    flushing = threading.Thread(target=processor.force_flush, daemon=True)
    flushing.start()
    flushing.join(seconds)


def _quiet() -> None:
    """Keep the SDK's log lines (a receiver that cannot be reached) off stderr."""
    import logging

    logger = logging.getLogger("opentelemetry")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


def _start_live() -> Sender:
    """The process's live sender, silent, flushed at exit for at most `FLUSH_SECONDS`."""
    import atexit

    _quiet()
    sender = Sender(live=True)
    seconds = float(os.environ.get("TETHER_OTEL_FLUSH_SECONDS", FLUSH_SECONDS))
    atexit.register(_flush, sender.processor, seconds)
    return sender
