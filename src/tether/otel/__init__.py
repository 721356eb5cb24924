"""OpenTelemetry for Tether: an execution as a trace, exported or emitted as it goes.

`tether.otel.spans` reads a stored execution as spans (pure, no OpenTelemetry import);
`tether.otel.send` sends them with the OpenTelemetry SDK and its OTLP exporter (the `otel`
extra), for `tether export otel` and for the live emission the verb layer calls after a commit
when an OTLP endpoint is configured. Nothing here is imported otherwise. The command line is
`tether.export`, a command family kept outside this package: the verb layer imports this one, so
it imports nothing of the command frame.
"""
