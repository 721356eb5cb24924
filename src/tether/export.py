"""`tether export otel`: send executions to an OpenTelemetry receiver (a command family).

Owns the command's arguments and its output (what was sent, as JSON). The spans are
`tether.otel.spans`'s and the sending `tether.otel.send`'s; nothing here reads an execution.
"""

from __future__ import annotations

from tether.command.args import Command, Parsed
from tether.command.output import emit, run_family
from tether.errors import EXIT_OK

OTEL = Command(
    "export otel",
    "send executions as OpenTelemetry traces over OTLP/HTTP",
    ("WHERE",),
    1,
    values=("--endpoint",),
    help="WHERE is one execution (a path, file://, postgresql://...#name), sent as it stands "
    "(a running one sends the attempts it has settled), or a place (a folder, a database "
    "without #name), whose finished executions are sent. --endpoint URL is the receiver's "
    "OTLP/HTTP address (http://127.0.0.1:4318; /v1/traces is added); without it the standard "
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT, then localhost:4318. "
    "OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and OTEL_SERVICE_NAME apply. The same execution "
    "always gives the same spans. Needs the otel extra: without it the error (missing_extra) "
    "names the command that installs it for the way Tether was installed (pipx inject, uv "
    "tool install --with, pip).",
)


def main(argv: list[str]) -> int:
    return run_family("export", {"otel": (OTEL, _otel)}, argv)


def _otel(parsed: Parsed) -> int:
    from tether.otel.send import export

    where = parsed.args["WHERE"]
    assert where is not None  # required
    emit(export(where, parsed.options.get("--endpoint")))
    return EXIT_OK
