"""The file store's `read_tail` reads a trace file backwards from its committed end: it reads
what the tail needs and no more, finds a corrupt entry inside the tail, and trusts a trace file
no more than a whole read does."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.command import HELLO
from tether.errors import TetherError
from tether.store import store_for
from tether.verbs import Runtime


def _run(tmp_path: Path, thoughts: int) -> tuple[str, Path]:
    uri = str(tmp_path / "run.json")
    rt = Runtime()
    rt.start(str(HELLO), uri)
    rt.submit(uri, "success")  # the protocol gate
    for n in range(thoughts):
        rt.think(uri, f"thought {n} " + "x" * 500)
    return uri, tmp_path / "run.json.trace.jsonl"


def test_the_tail_is_read_without_reading_the_start_of_the_trace(tmp_path: Path) -> None:
    uri, trace = _run(tmp_path, 200)  # about 100 KiB: the tail is in the last block
    lines = trace.read_bytes().splitlines(keepends=True)
    broken = b"{" + b" " * (len(lines[0]) - 2) + b"\n"  # same length, no longer JSON
    trace.write_bytes(broken + b"".join(lines[1:]))
    store = store_for(uri)
    since = store.load(uri)["seq"] - 2
    state, tail = store.read_tail(uri, since)
    assert [e["seq"] for e in tail] == [since, since + 1] and state["seq"] == since + 2
    with pytest.raises(TetherError) as err:
        store.read_execution(uri)
    assert err.value.code == "corrupt_execution"


def test_a_corrupt_entry_inside_the_tail_is_corrupt(tmp_path: Path) -> None:
    uri, trace = _run(tmp_path, 5)
    lines = trace.read_bytes().splitlines(keepends=True)
    lines[-2] = b"not json" + b" " * (len(lines[-2]) - 9) + b"\n"
    trace.write_bytes(b"".join(lines))
    store = store_for(uri)
    with pytest.raises(TetherError) as err:
        store.read_tail(uri, store.load(uri)["seq"] - 3)
    assert err.value.code == "corrupt_execution"
    assert str(trace) in err.value.message and "not a JSON trace entry" in err.value.message
    assert len(store.read_tail(uri, store.load(uri)["seq"] - 1)[1]) == 1  # after it: readable


def test_a_trace_file_shorter_than_committed_or_a_link_is_corrupt(tmp_path: Path) -> None:
    uri, trace = _run(tmp_path, 3)
    store = store_for(uri)
    data = trace.read_bytes()
    trace.write_bytes(data[:-10])
    with pytest.raises(TetherError) as err:
        store.read_tail(uri, 0)
    assert err.value.code == "corrupt_execution" and "shorter" in err.value.message
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(data)
    trace.unlink()
    trace.symlink_to(elsewhere)
    with pytest.raises(TetherError) as err:
        store.read_tail(uri, 0)
    assert err.value.code == "corrupt_execution" and "symbolic link" in err.value.message
