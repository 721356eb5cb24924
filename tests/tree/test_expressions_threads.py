"""The CEL library's first use from several threads at once (as the MCP servers' worker threads
do) loads it once: initialising the extension twice makes it panic."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh process, so the library is not loaded yet: eight threads compile at the same moment.
FIRST_USE = """
import json, threading
from tether.tree.expressions import check_expression, evaluate

barrier = threading.Barrier(8)
outcomes = []

def first_use(n):
    barrier.wait()
    try:
        check_expression(f"VAR.x == {n}")
        outcomes.append(evaluate(f"VAR.x == {n}", {"x": n}, {}))
    except BaseException as exc:
        outcomes.append(repr(exc))

threads = [threading.Thread(target=first_use, args=(n,)) for n in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(outcomes))
"""


def test_the_first_use_from_eight_threads_at_once_compiles_in_every_one() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_USE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True] * 8
