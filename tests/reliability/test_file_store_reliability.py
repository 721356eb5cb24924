"""The file store under process death and concurrent processes (docs/semantics.md,
"Storage")."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tether.verbs import Runtime

WALKER = """
import json
import sys
from tether.errors import TetherError
from tether.verbs import Runtime

rt = Runtime()
uri = sys.argv[1]
done = {"evaluate": 0, "var_write": 0, "think": 0, "instruct": 0}
while True:
    request = rt.next(uri)
    if "status" in request:
        break
    try:
        if request["type"] == "evaluate":
            rt.eval(uri, True, step=request["step"])
            done["evaluate"] += 1
        else:
            rt.var_write(uri, "last", request["name"])
            done["var_write"] += 1
            rt.think(uri, "working on " + request["name"])
            done["think"] += 1
            rt.submit(uri, "success", step=request["step"])
            done["instruct"] += 1
    except TetherError as exc:
        if exc.code not in ("stale_step", "execution_finished"):
            raise
print(json.dumps(done))
"""


def _long_tree(folder: Path, actions: int) -> Path:
    children = [
        {
            "type": "action",
            "name": f"A{i}",
            "steps": [{"evaluate": f"ready {i}?"}, {"instruct": f"do {i}"}],
        }
        for i in range(actions)
    ]
    path = folder / "long.json"
    path.write_text(
        json.dumps(
            {
                "name": "long",
                "version": "1",
                "tree": {"type": "sequence", "name": "Long", "children": children},
            }
        )
    )
    return path


def _walker(uri: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WALKER, uri],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigkill_at_random_moments_always_leaves_a_verifiable_execution(tmp_path: Path) -> None:
    rt = Runtime()
    uri = str(tmp_path / "run.json")
    rt.start(str(_long_tree(tmp_path, 2000)), uri)
    rt.submit(uri, "success")
    rng = random.Random(7)
    kills = 0
    revisions = [rt.resume(uri)["revision"]]
    for _ in range(40):
        proc = _walker(uri)
        time.sleep(rng.uniform(0.15, 0.45))  # past interpreter start-up, into the walk
        if proc.poll() is not None:
            break
        proc.kill()
        proc.wait()
        kills += 1
        report = Runtime().verify(uri)
        assert report["ok"], report["differences"][:3]
        revisions.append(report["revision"])
    assert kills >= 10, "the walk ended before enough kills to prove anything"
    assert revisions == sorted(revisions) and revisions[-1] > revisions[0], "work went on"
    proc = _walker(uri)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert Runtime().next(uri) == {"status": "done"}
    final = Runtime().verify(uri)
    assert final["ok"]
    trace = Runtime().trace(uri)
    assert [e["seq"] for e in trace] == list(range(len(trace)))
    answered = [e["name"] for e in trace if e["kind"] == "instruct"]
    assert answered == [f"A{i}" for i in range(2000)], "every step answered exactly once"


def test_concurrent_answers_with_one_token_advance_once(tmp_path: Path) -> None:
    rt = Runtime()
    uri = str(tmp_path / "run.json")
    rt.start(str(_long_tree(tmp_path, 5)), uri)
    rt.submit(uri, "success")
    tether = str(Path(sys.executable).with_name("tether"))
    for _ in range(3):
        token = rt.next(uri)["step"]
        procs = [
            subprocess.Popen(
                [tether, "eval", uri, "true", "--step", token],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(8)
        ]
        results = [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]
        assert sorted(code for code, _ in results) == [0] + [5] * 7
        assert all("stale_step" in err for code, err in results if code)
        rt.submit(uri, "success")
    evaluates = [e for e in rt.trace(uri) if e["kind"] == "evaluate"]
    assert [e["name"] for e in evaluates] == ["A0", "A1", "A2"]
    assert rt.verify(uri)["ok"]


def test_concurrent_walkers_lose_no_trace_entry_and_answer_each_step_once(tmp_path: Path) -> None:
    rt = Runtime()
    uri = str(tmp_path / "run.json")
    rt.start(str(_long_tree(tmp_path, 40)), uri)
    rt.submit(uri, "success")
    procs = [_walker(uri) for _ in range(4)]
    succeeded: Counter[str] = Counter()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        succeeded.update(json.loads(out))
    trace = rt.trace(uri)
    assert [e["seq"] for e in trace] == list(range(len(trace)))
    for kind in ("evaluate", "instruct"):
        assert [e["name"] for e in trace if e["kind"] == kind] == [f"A{i}" for i in range(40)]
    in_trace = Counter(e["kind"] for e in trace)
    for kind in ("evaluate", "instruct", "think", "var_write"):
        assert in_trace[kind] == succeeded[kind], f"every accepted {kind} is in the trace"
    assert rt.verify(uri)["ok"]
    assert rt.next(uri) == {"status": "done"}
