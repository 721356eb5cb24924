"""A fork killed at any instant: the new execution is complete (its whole kept trace, verified)
or not there at all, and the same fork run again completes it. A source that does not verify is
not forked."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.trees import SIGN_OFF_YAML
from tether.errors import TetherError
from tether.store import store_for
from tether.verbs import Runtime


def _long_tree(folder: Path, actions: int) -> Path:
    """A sequence of `actions` actions, each an evaluate then an instruct."""
    steps = [{"evaluate": "ready?"}, {"instruct": "do it"}]
    children = [{"type": "action", "name": f"A{i}", "steps": steps} for i in range(actions)]
    path = folder / "long.json"
    tree = {"type": "sequence", "name": "Long", "children": children}
    path.write_text(json.dumps({"name": "long", "version": "1", "tree": tree}))
    return path


FORKER = """
import sys
from tether.verbs import Runtime

rt = Runtime()
source, folder, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
import random
rng = random.Random(seed)
length = len(rt.trace(source))
print("ready", flush=True)
for i in range(1000):
    at = rng.randrange(length + 1)
    print(f"{folder}/f{i}.json {at}", flush=True)
    rt.fork(source, f"{folder}/f{i}.json", at=at)
"""


def _complete(rt: Runtime, source: str, new: str, at: int) -> None:
    report = rt.verify(new)
    assert report["ok"], report["differences"][:3]
    assert report["entries"] == at
    assert rt.get(new)["forked_from"] == {"uri": "file://" + source, "at": at}
    assert rt.trace(new) == rt.trace(source)[:at]


def test_a_fork_killed_at_random_moments_is_whole_or_absent_and_can_be_run_again(
    tmp_path: Path,
) -> None:
    rt = Runtime()
    source = str(tmp_path / "source.json")
    rt.start(str(_long_tree(tmp_path, 400)), source)
    rt.submit(source, "success")
    for _ in range(300):
        request = rt.next(source)
        if request["type"] == "evaluate":
            rt.eval(source, True, step=request["step"])
        else:
            rt.submit(source, "success", step=request["step"])
    forks = tmp_path / "forks"
    forks.mkdir()
    rng = random.Random(11)
    kills = absent = 0
    for round in range(40):
        proc = subprocess.Popen(
            [sys.executable, "-c", FORKER, source, str(forks / str(round)), str(round)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        (forks / str(round)).mkdir()
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0.05, 0.6))  # into the forks
        proc.kill()
        assert proc.wait() == -9, proc.stderr.read() if proc.stderr else ""
        out = proc.stdout.read()  # what the forker said after "ready", read-ahead included
        kills += 1
        begun = [line.split() for line in out.splitlines()]
        *done, (last, at) = begun
        for new, kept in done:
            _complete(rt, source, new, int(kept))
        if not store_for(last).exists(last):
            absent += 1
            with pytest.raises(TetherError) as err_:
                rt.next(last)
            assert err_.value.code == "not_found"
            rt.fork(source, last, at=int(at))  # the same fork, run again
        _complete(rt, source, last, int(at))
    assert kills == 40 and absent > 0, "no kill landed inside a fork"


def test_a_source_that_does_not_verify_is_not_forked(tmp_path: Path) -> None:
    """A human approval appended to the trace by hand (the state not touched) does not become a
    clean execution through fork."""
    (tmp_path / "sign-off.yaml").write_text(SIGN_OFF_YAML)
    rt = Runtime(root=str(tmp_path))
    rt.start("sign-off.yaml", "run.json")
    rt.submit("run.json", "success")
    rt.submit("run.json", "success", values={"notes": "v1"})
    # What a real approval records, taken from a copy, then written into the original by hand.
    rt.fork("run.json", "copy.json", at=len(rt.trace("run.json")))
    rt.approve("copy.json")
    approval = rt.trace("copy.json")[-1]
    assert approval["kind"] == "human" and approval["outcome"] == "success"
    store = store_for(str(tmp_path / "run.json"))
    with store.transaction(str(tmp_path / "run.json")) as tx:
        tx.commit(tx.state, [approval])
    assert not rt.verify("run.json")["ok"]
    length = len(rt.trace("run.json"))
    for at in (length, 0):
        with pytest.raises(TetherError) as refused:
            rt.fork("run.json", f"forged-{at}.json", at=at)
        assert refused.value.code == "corrupt_execution"
        assert "does not verify" in refused.value.message
        assert not (tmp_path / f"forged-{at}.json").exists()
