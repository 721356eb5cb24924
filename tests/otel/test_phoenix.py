"""Executions sent to a real receiver, Arize Phoenix, and read back through its API: exported
with `tether export otel` from a folder and from PostgreSQL, and emitted live by the `tether`
command as an agent drives it; a receiver that is down never holds a step up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otel.receiver import Phoenix, walk, write_tree
from support.command import TETHER
from support.postgres import free_port, shared_server
from support.servers import start_server
from tether.verbs import Runtime

SRC = str(Path(__file__).resolve().parents[2] / "src")
ATTEMPTS = [
    "invoke_agent Gather",
    "invoke_agent Gather",
    "invoke_agent Each",
    "invoke_agent Each",
    "invoke_agent Approve",
]


def tether(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
    done = subprocess.run(
        [TETHER, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def _check_structure(found: list[dict[str, Any]], uri: str) -> None:
    """One root workflow span and one span per attempt under it, each with its events."""
    roots = [s for s in found if s["parent_id"] is None]
    assert [r["name"] for r in roots] == ["invoke_workflow otel-demo"]
    root = roots[0]
    attempts = [s for s in found if s["parent_id"] == root["context"]["span_id"]]
    assert [s["name"] for s in attempts] == ATTEMPTS
    assert len(found) == 1 + len(ATTEMPTS)
    assert {s["context"]["trace_id"] for s in found} == {root["context"]["trace_id"]}
    for span in found:
        attributes = span["attributes"]
        assert attributes["tether.execution.uri"] == uri
        assert attributes["tether.tree.name"] == "otel-demo"
        assert attributes["tether.tree.hash"].startswith("sha256:")
    assert [s["attributes"]["tether.attempt.retry"] for s in attempts] == [0, 1, 0, 0, 0]
    assert [s["status_code"] for s in attempts] == ["ERROR", "OK", "OK", "OK", "OK"]
    assert [s["attributes"].get("tether.loop.item") for s in attempts] == [None, None, 0, 1, None]
    assert all(s["attributes"]["tether.step.token"] for s in attempts)
    names = [[e["name"] for e in s["events"]] for s in attempts]
    assert names[0] == [
        "tether.tool",
        "tether.stop",
        "tether.var_write",
        "tether.answer",
        "tether.check",
    ]
    assert names[4] == ["tether.think", "tether.human"]
    tool = attempts[0]["events"][0]["attributes"]
    assert (tool["gen_ai.tool.name"], json.loads(tool["gen_ai.tool.call.arguments"])) == (
        "Bash",
        {"command": "make measure"},
    )
    assert attempts[0]["events"][1]["attributes"]["tether.outcome"] == "refused"
    person = attempts[4]["events"][1]["attributes"]
    assert (person["tether.outcome"], person["tether.note"]) == ("success", "ship it")
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_workflow"


def test_export_of_a_folder_sends_its_finished_executions(phoenix: Phoenix, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    tree = write_tree(tmp_path)
    rt = Runtime()
    done, running = (f"file://{runs / name}" for name in ("done.json", "running.json"))
    walk(rt, tree, done)
    rt.start(str(tree), running)
    rt.submit(running, "success")
    sent = tether("export", "otel", str(runs), "--endpoint", phoenix.url)
    assert (sent["executions"], sent["spans"], sent["running_left_out"]) == ([done], 6, [running])
    found = phoenix.wait_spans(done, 6)
    _check_structure(found, done)
    assert phoenix.spans(running) == []

    again = tether("export", "otel", done, "--endpoint", phoenix.url)  # the one execution
    assert again["spans"] == 6
    assert phoenix.wait_spans(done, 7, seconds=3) == found  # the same spans, not new ones


def test_export_from_postgresql(phoenix: Phoenix, tmp_path: Path) -> None:
    uri = shared_server().uri("otel-export")
    walk(Runtime(), write_tree(tmp_path), uri)
    stored = tether("resume", uri)["uri"]
    sent = tether("export", "otel", uri, "--endpoint", phoenix.url)
    assert (sent["executions"], sent["spans"]) == ([stored], 6)
    _check_structure(phoenix.wait_spans(stored, 6), stored)


def test_the_environment_names_the_receiver(phoenix: Phoenix, tmp_path: Path) -> None:
    uri = f"file://{tmp_path / 'run.json'}"
    walk(Runtime(), write_tree(tmp_path), uri)
    sent = tether("export", "otel", uri, env={"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url})
    assert sent["endpoint"] == phoenix.url + "/v1/traces"
    _check_structure(phoenix.wait_spans(uri, 6), uri)


def test_live_emission_as_the_command_drives_an_execution(
    phoenix: Phoenix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "live.json"
    uri = f"file://{run}"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url}
    tether("start", str(write_tree(tmp_path)), str(run), env=env)
    tether("submit", str(run), "success", env=env)
    tether("submit", str(run), "success", "--set", "x=1", env=env)
    gather = phoenix.wait_spans(uri, 1)  # the failed attempt, sent by the step that ended it
    assert [(s["name"], s["status_code"]) for s in gather] == [("invoke_agent Gather", "ERROR")]
    tether("submit", str(run), "success", "--set", "x=3", env=env)
    tether("eval", str(run), "true", env=env)
    tether("eval", str(run), "true", env=env)
    assert len(phoenix.wait_spans(uri, 4)) == 4  # no span yet for what is still open
    # A long-lived process (a server) emits too: its batch goes out within seconds.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url)
    Runtime().approve(str(run), note="ship it")
    live = phoenix.wait_spans(uri, 6)
    _check_shape(live)
    tether("export", "otel", str(run), "--endpoint", phoenix.url)
    assert phoenix.wait_spans(uri, 7, seconds=3) == live  # the export names the same spans


def _check_shape(found: list[dict[str, Any]]) -> None:
    assert [s["name"] for s in found if s["parent_id"] is None] == ["invoke_workflow otel-demo"]
    assert [s["name"] for s in found if s["parent_id"]] == ATTEMPTS


def test_a_receiver_that_is_down_does_not_hold_a_step(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",  # nothing listens
        "OTEL_EXPORTER_OTLP_TIMEOUT": "60",  # the exporter alone would retry for a minute
    }
    tether("start", str(write_tree(tmp_path)), str(run), env=env)
    tether("submit", str(run), "success", env=env)
    answer = tether("submit", str(run), "success", "--set", "x=5", env=env, timeout=20)
    assert answer["status"] == "action_complete"
    assert tether("next", str(run))["name"] == "Each"


def test_without_the_extra_the_error_says_which_to_install(tmp_path: Path) -> None:
    # -S: no site-packages, as in an environment where Tether is installed without `otel`.
    done = subprocess.run(
        [sys.executable, "-S", "-m", "tether", "export", "otel", str(tmp_path / "run.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert (done.returncode, done.stdout) == (1, "")
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "missing_extra"
    assert "the 'otel' extra (opentelemetry is not installed)" in error["message"]
    # the command for this installation (`tests/package/test_extras.py` holds each kind's)
    assert error["command"] in error["message"] and "pip install" in error["command"]


def test_a_receiver_that_cannot_be_reached_fails_the_export(tmp_path: Path) -> None:
    uri = f"file://{tmp_path / 'run.json'}"
    walk(Runtime(), write_tree(tmp_path), uri)
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [TETHER, "export", "otel", uri, "--endpoint", endpoint],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "OTEL_EXPORTER_OTLP_TIMEOUT": "2"},
    )
    assert (done.returncode, done.stdout) == (1, "")
    error = json.loads(done.stderr)["error"]
    assert (error["code"], error["endpoint"]) == ("export_failed", endpoint + "/v1/traces")


def test_otlp_over_grpc_is_refused_with_the_http_port_named(tmp_path: Path) -> None:
    uri = f"file://{tmp_path / 'run.json'}"
    walk(Runtime(), write_tree(tmp_path), uri)
    done = subprocess.run(
        [TETHER, "export", "otel", uri],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
    )
    assert (done.returncode, done.stdout) == (2, "")
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "usage" and "4318" in error["message"]


def test_live_emission_from_the_mcp_server(phoenix: Phoenix, tmp_path: Path) -> None:
    write_tree(tmp_path)
    server = start_server(
        [TETHER, "mcp", "--http", "--port", "0", "--root", str(tmp_path)],
        # the loop items are the execution's values: sent only when the user asks
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url, "TETHER_OTEL_CONTENT": "1"},
    )
    try:

        def call(tool: str, **args: Any) -> Any:
            status, reply = server.call(tool, trace_output="run.json", **args)
            assert status == 200 and not reply["result"].get("isError"), reply
            return reply["result"]["structuredContent"]

        uri = call("start_execution", tree_uri="otel-demo.yaml")["uri"]
        call("submit", status="success")
        call("submit", status="success", values={"x": 5})
        call("eval", result=True)
        call("eval", result=True)
        found = phoenix.wait_spans(uri, 3)  # sent by the server's batch, within seconds
    finally:
        server.stop()
    assert [(s["name"], s["attributes"].get("tether.loop.item")) for s in found] == [
        ("invoke_agent Gather", None),
        ("invoke_agent Each", 0),
        ("invoke_agent Each", 1),
    ]
