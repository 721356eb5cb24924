"""Arize Phoenix, the OpenTelemetry receiver the tests send spans to, run as a user runs it.

Owns `Phoenix`: `phoenix serve` from the venv `scripts/install-test-deps-otel` made under
.cache/phoenix, on 127.0.0.1 on free ports with a working folder of its own (SQLite), and the
spans it stored, read back through its REST API (`/v1/projects/default/spans`). Also `walk`, the
execution every OpenTelemetry test drives: a retried action with a check, tool evidence and a
refused stop, a loop of two items, a thought and a person's answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from support.postgres import free_port
from tether.verbs import Runtime

REPO = Path(__file__).resolve().parents[2]
# Phoenix's own interpreter, run as `python -m phoenix.server.main`: the `phoenix` script names
# the interpreter by the path its venv was made at, which a moved or linked checkout breaks.
PHOENIX = REPO / ".cache" / "phoenix" / "bin" / "python"

TREE = """\
name: otel-demo
version: 2
tree:
  type: sequence
  name: Root
  children:
    - type: action
      name: Gather
      retries: 1
      steps:
        - instruct: Measure x and store it at $VAR.x.
          writes: [x]
        - check: $VAR.x > 1
    - type: action
      name: Each
      for_each: {in: '["a", "b"]', as: item}
      steps:
        - evaluate: Is $ITEM ready?
    - type: action
      name: Approve
      steps:
        - human: Ship it?
"""


def write_tree(folder: Path) -> Path:
    path = folder / "otel-demo.yaml"
    path.write_text(TREE)
    return path


def walk(rt: Runtime, tree: Path, uri: str, *, approve: bool = True) -> list[str]:
    """Drive `uri` through the demo tree (the last answer a person's: approved, else
    rejected, which fails the execution); the step tokens of the requests answered, in order."""
    rt.start(str(tree), uri)
    rt.submit(uri, "success")
    answered = []

    def token() -> str:
        step: str = rt.next(uri)["step"]
        answered.append(step)
        return step

    rt.record_tool(uri, "Bash", {"command": "make measure"}, ok=True, step=token())
    rt.stop(uri, cap=3)
    rt.submit(uri, "success", values={"x": 1}, note="too low", step=answered[-1])
    rt.submit(uri, "success", values={"x": 2}, note="measured again", step=token())
    rt.eval(uri, True, note="a is ready", step=token())
    rt.eval(uri, True, step=token())
    rt.think(uri, "waiting for a person")
    human = rt.approve if approve else rt.reject
    human(uri, note="ship it" if approve else "not today", step=token())
    return answered


class Phoenix:
    """A running Phoenix server and what it stored."""

    def __init__(self, folder: Path) -> None:
        if not PHOENIX.exists():
            raise AssertionError(f"{PHOENIX} is missing: run scripts/install-test-deps-otel")
        port, grpc = free_port(), free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(folder),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self.log = (folder / "phoenix.log").open("w")
        self.process = subprocess.Popen(
            [str(PHOENIX), "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while not self._healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(
                    f"Phoenix did not start: {(folder / 'phoenix.log').read_text()[-3000:]}"
                )
            time.sleep(0.5)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as response:
            return json.loads(response.read())

    def spans(self, uri: str) -> list[dict[str, Any]]:
        """Every span Phoenix stored for the execution `uri`, oldest first."""
        found, cursor = [], ""
        while True:
            page = self.get(f"/v1/projects/default/spans?limit=1000{cursor}")
            found += page["data"]
            if not page.get("next_cursor"):
                break
            cursor = f"&cursor={page['next_cursor']}"
        mine = [s for s in found if s["attributes"].get("tether.execution.uri") == uri]
        return sorted(mine, key=_began)

    def wait_spans(self, uri: str, count: int, seconds: float = 60) -> list[dict[str, Any]]:
        """The spans of `uri` once there are `count` of them, checked again a moment later so
        that one too many would show."""
        deadline = time.monotonic() + seconds
        while len(self.spans(uri)) < count and time.monotonic() < deadline:
            time.sleep(0.3)
        time.sleep(1.5)
        return self.spans(uri)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _began(span: dict[str, Any]) -> tuple[str, int]:
    """When a span began, and its first entry's seq for spans that began in the same
    millisecond (the root, with no entries of its own, before them)."""
    events = span["events"]
    first = min((e["attributes"]["tether.seq"] for e in events), default=-1)
    return span["start_time"], -1 if span["parent_id"] is None else first
