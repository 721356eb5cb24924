"""What notifications cost a step (`tether.notify`): the step that raises an event, timed.

Run: `.venv/bin/python bench/notify_bench.py` (prints a table). Each measured step is a `submit`
that opens a human step (so it raises a `human` event), in process, on the memory store, with
the targets named in the tree:

- none (the commit reads only whether the tree names any);
- a command (`true`);
- a URL on 127.0.0.1 that answers at once, one that holds each request 5 s, and one where
  nothing listens (each try refused).

Delivery happens in a detached child, so the step pays for starting it, never for the receiver.
Steps run back to back (the children of earlier steps still starting beside the step: on a
2-core machine they compete with it for CPU) and 0.5 s apart (as an agent's steps, a model
turn apart, are).
"""

from __future__ import annotations

import http.server
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from tether.verbs import Runtime

STEPS = 30


class _Handler(http.server.BaseHTTPRequestHandler):
    hold = 0.0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(self.hold)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _receiver(hold: float) -> str:
    handler = type("Held", (_Handler,), {"hold": hold})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/hook"


def _closed() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/hook"


def _tree(folder: Path, targets: list[dict[str, object]]) -> str:
    actions = [
        {
            "type": "action",
            "name": f"A{i}",
            "steps": [{"instruct": f"work {i}"}, {"human": f"approve {i}?"}],
        }
        for i in range(STEPS)
    ]
    doc: dict[str, object] = {
        "name": "bench",
        "tree": {"type": "sequence", "name": "S", "children": actions},
    }
    if targets:
        doc["notify"] = targets
    path = folder / f"t{len(list(folder.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _steps(tree: str, pause: float) -> list[float]:
    rt, run = Runtime(), f"memory://bench-{time.monotonic_ns()}"
    rt.start(tree, run)
    rt.submit(run, "success")  # the protocol
    took = []
    for _ in range(STEPS):
        began = time.perf_counter()
        rt.submit(run, "success")  # opens the human step: one `human` event
        took.append((time.perf_counter() - began) * 1000)
        rt.approve(run)
        time.sleep(pause)
    return took


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = {
            "no target": [],
            "command `true`": [{"command": ["true"]}],
            "URL answering at once": [{"url": _receiver(0.0)}],
            "URL holding 5 s": [{"url": _receiver(5.0)}],
            "URL where nothing listens": [{"url": _closed()}],
        }
        print(f"Python {sys.version.split()[0]}; {STEPS} steps each, each raising one event\n")
        print("| targets | steps | median ms | p90 ms | max ms |")
        print("|---|---|---|---|---|")
        for name, targets in cases.items():
            for pause, how in ((0.0, "back to back"), (0.5, "0.5 s apart")):
                took = sorted(_steps(_tree(folder, targets), pause))
                p90 = took[int(len(took) * 0.9) - 1]
                row = f"{statistics.median(took):.2f} | {p90:.2f} | {took[-1]:.2f}"
                print(f"| {name} | {how} | {row} |")


if __name__ == "__main__":
    main()
