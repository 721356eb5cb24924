"""The file store's summary index (`.tether-index.jsonl` in each folder that holds executions)
and kept figures (`.tether-figures.jsonl`): the listing and the figures they give equal those
read from every state file and trace, after runs of every kind, after a process killed between
its commit and the index line, in a folder an older Tether wrote (neither file), and when they
are torn, stale or lie."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tether.errors import TetherError
from tether.store import store_for
from tether.store.base import Summary
from tether.store.file import FIGURES, INDEX, SUMS
from tether.store.tally import RECORD_FORMAT, Tally
from tether.verbs import Runtime

HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")


def _from_states(folder: Path) -> list[Summary]:
    """The listing recounted from each execution's state file."""
    store = store_for(str(folder))
    out = []
    for path in sorted(folder.rglob("*.json")):
        if (path.parent / (path.name + ".tree.json")).exists():
            name = path.relative_to(folder).as_posix()
            out.append(Summary.of("file://" + str(path), name, store.load(str(path))))
    return sorted(out, key=lambda s: s.name)


def _fleet(folder: Path) -> None:
    rt = Runtime()
    for name in ("a/run.json", "a/done.json", "b/c/failed.json", "top.json", "reset.json"):
        rt.start(HELLO, str(folder / name))
    rt.submit(str(folder / "a/done.json"), "success")
    rt.submit(str(folder / "a/done.json"), "success", values={"time_of_day": "noon"})
    rt.submit(str(folder / "b/c/failed.json"), "failure")
    rt.submit(str(folder / "reset.json"), "success")
    rt.reset(str(folder / "reset.json"))


def _kept_sums(folder: Path) -> tuple[dict[str, object], dict[str, list[str]]]:
    """The folder's kept sums: its first line (format, trees, cells), and each execution's line
    by name (its stamp and what it shows, its figures per action, its count while it runs)."""
    head, *lines = (folder / SUMS).read_text().splitlines()
    fields = [line.split("\t") for line in lines]
    return json.loads(head), {json.loads(f[0])[0]: f for f in fields}


def _listed(folder: Path) -> list[Summary]:
    return store_for(str(folder)).list(str(folder))


def test_the_index_lists_what_the_state_files_say(tmp_path: Path) -> None:
    _fleet(tmp_path)
    assert (tmp_path / "a" / INDEX).exists() and (tmp_path / INDEX).exists()
    assert _listed(tmp_path) == _from_states(tmp_path)
    running = [s for s in _from_states(tmp_path) if s.status == "running"]
    page = store_for(str(tmp_path)).page(str(tmp_path), status="running", limit=1, offset=1)
    assert page == (running[1:2], len(running), ["hello-world"])


def test_a_folder_without_an_index_is_listed_and_gains_one(tmp_path: Path) -> None:
    _fleet(tmp_path)
    for index in tmp_path.rglob(INDEX):
        index.unlink()  # as an older Tether left the folder
    assert _listed(tmp_path) == _from_states(tmp_path)
    lines = (tmp_path / "a" / INDEX).read_text().splitlines()
    assert sorted(json.loads(line)["name"] for line in lines) == ["done.json", "run.json"]


_KILLED_AFTER_COMMIT = """
import os, signal, sys
from tether.store import file
from tether.verbs import Runtime
def killed(*args):
    os.kill(os.getpid(), signal.SIGKILL)
file._note = killed
Runtime().submit(sys.argv[1], "success")
"""


def test_a_process_killed_between_its_commit_and_the_index_leaves_it_behind_not_wrong(
    tmp_path: Path,
) -> None:
    _fleet(tmp_path)
    run = tmp_path / "a" / "run.json"
    before = Runtime().get(str(run))["revision"]
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER_COMMIT, str(run)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    assert Runtime().get(str(run))["revision"] == before + 1, "the commit was made"
    listed = _listed(tmp_path)
    assert listed == _from_states(tmp_path)
    assert [s.revision for s in listed if s.name == "a/run.json"] == [before + 1]
    last = json.loads((tmp_path / "a" / INDEX).read_text().splitlines()[-1])
    assert (last["name"], last["state"]["revision"]) == ("run.json", before + 1), "caught up"


def test_a_torn_stale_or_lying_index_is_not_believed(tmp_path: Path) -> None:
    _fleet(tmp_path)
    index = tmp_path / "a" / INDEX
    lines = index.read_text().splitlines()
    lie = json.loads(lines[-1])
    lie["state"]["status"] = "failed"
    lie["stamp"] = [0, 0, 0]
    index.write_text("\n".join([*lines, json.dumps(lie), "[1, 2]", '{"name": "run.json", "st']))
    assert _listed(tmp_path) == _from_states(tmp_path)
    (tmp_path / "a" / "run.json").write_text((tmp_path / "a" / "run.json").read_text() + " ")
    assert _listed(tmp_path) == _from_states(tmp_path), "an edit by hand changes the stamp"
    (tmp_path / "top.json").write_text("{not json")
    corrupt = [s for s in _listed(tmp_path) if s.name == "top.json"]
    assert corrupt[0].error is not None and corrupt[0].error["code"] == "corrupt_execution"


def _behind_each(folder: Path) -> None:
    """Every action's executions behind each figure, as the store finds them from what it keeps,
    equal those counted again from every trace."""
    from tether.store.tally import MARKS, behind_of, count_each, marked

    store = store_for(str(folder))
    for tree in _recounted(folder)["trees"]:  # type: ignore[attr-defined]
        for key in tree["actions"]:
            for measure in MARKS:
                asked = (tree["name"], tree["hash"], key, measure, slice(0, 3))
                kept = store.behind(str(folder), *asked)
                assert kept == behind_of(marked(count_each(store, str(folder))), *asked)


def _recounted(folder: Path) -> dict[str, object]:
    """The figures counted again from every execution's trace, tree and refusal log."""
    store = store_for(str(folder))
    count = Tally()
    for summary in _from_states(folder):
        state, entries = store.read_execution(summary.uri)
        count.add(state, store.load_tree(summary.uri), entries, store.refusals(summary.uri))
    return count.result()


def test_the_kept_figures_equal_the_figures_recounted_from_the_traces(tmp_path: Path) -> None:
    _fleet(tmp_path)
    store = store_for(str(tmp_path))
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    assert (tmp_path / SUMS).exists() and (tmp_path / "b" / "c" / FIGURES).exists(), "kept"
    run = tmp_path / "a" / "run.json"
    Runtime().submit(str(run), "success")  # a commit since
    with pytest.raises(TetherError):
        Runtime().submit(str(run), "success", values={"nothing": 1})  # a refusal: no commit
    assert (tmp_path / "a" / "run.json.refused.jsonl").exists()
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER_COMMIT, str(tmp_path / "top.json")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    figures = tmp_path / "b" / "c" / FIGURES
    lie = json.loads(figures.read_text().splitlines()[-1])
    lie["record"]["statuses"] = {"complete": 99}
    lie["stamp"] = [0, 0, 0, 0]
    figures.write_text(figures.read_text() + json.dumps(lie) + "\n{torn")
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    assert store.tally(str(tmp_path), tree="hello-world") == _recounted(tmp_path)
    for kept in tmp_path.rglob(FIGURES):
        kept.unlink()
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)


def test_the_kept_sums_follow_a_settled_execution_that_changes_or_goes(tmp_path: Path) -> None:
    _fleet(tmp_path)
    store = store_for(str(tmp_path))
    failed = tmp_path / "b" / "c" / "failed.json"
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    kept = _kept_sums(tmp_path)[1]
    assert list(kept) == sorted(kept) and {"b/c/failed.json", "a/run.json"} <= kept.keys()
    assert kept["a/run.json"][2] and not kept["b/c/failed.json"][2], "a running one's count"
    Runtime().reset(str(failed))  # a settled execution runs again: its kept count is taken away
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    Runtime().submit(str(failed), "failure")
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    for path in failed.parent.glob("failed.json*"):
        path.unlink()  # removed by hand
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    _behind_each(tmp_path)
    assert "b/c/failed.json" not in _kept_sums(tmp_path)[1]


def test_kept_sums_that_are_torn_or_of_another_version_are_added_up_again(
    tmp_path: Path,
) -> None:
    _fleet(tmp_path)
    store = store_for(str(tmp_path))
    store.tally(str(tmp_path))
    sums = tmp_path / SUMS
    whole = sums.read_text()
    head, first, *rest = whole.splitlines(keepends=True)
    for text in (
        '{"format": 1, "cells": []}',
        whole[:40],
        "[]",
        head + first[:30] + "\n" + "".join(rest),  # a line torn
        head + "".join(rest) + first,  # out of order
        head + first.replace("\t", " "),  # not a kept line
    ):
        sums.write_text(text)
        assert store.tally(str(tmp_path)) == _recounted(tmp_path)
        assert _kept_sums(tmp_path)[0]["format"] == RECORD_FORMAT
        sums.write_text(text)
        _behind_each(tmp_path)
        assert sums.read_text() == whole, "made again as it was"
    older = [tmp_path / ".tether-sums.json", tmp_path / ".tether-marks.json"]
    for path in older:  # what an older Tether kept: the sums are added up again, and they go
        path.write_text('{"format": 3, "added": {}, "marks": {}}')
    sums.unlink()
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)
    assert sums.read_text() == whole and not any(path.exists() for path in older)
    for kept in tmp_path.rglob(FIGURES):  # a settled execution changes, its count gone
        kept.unlink()
    Runtime().reset(str(tmp_path / "b" / "c" / "failed.json"))
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)


_KILLED_WRITING_SUMS = """
import os, signal, sys
from tether.store import file, store_for
written = file.write_atomic
def killed(path, *args, **kwargs):
    if path.endswith(file.SUMS):
        os.kill(os.getpid(), signal.SIGKILL)  # its counts appended, its sums not yet written
    return written(path, *args, **kwargs)
file.write_atomic = killed
store_for(sys.argv[1]).tally(sys.argv[1])
"""


def test_a_reader_killed_before_it_writes_the_sums_leaves_them_behind_not_wrong(
    tmp_path: Path,
) -> None:
    _fleet(tmp_path)
    store = store_for(str(tmp_path))
    store.tally(str(tmp_path))
    Runtime().reset(str(tmp_path / "b" / "c" / "failed.json"))
    Runtime().submit(str(tmp_path / "b" / "c" / "failed.json"), "failure")
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITING_SUMS, str(tmp_path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    assert store.tally(str(tmp_path)) == _recounted(tmp_path)


def test_the_fingerprint_a_viewer_polls_changes_with_every_commit_create_and_removal(
    tmp_path: Path,
) -> None:
    """`fingerprint` re-reads only the folders whose modification time moved, and still sees
    a commit deep down, a new sub-folder, an execution removed, and nothing when nothing
    changed; its count is the listing's."""
    from tether.store.file import FileStore

    _fleet(tmp_path)
    store, where = FileStore(), str(tmp_path)

    def looked() -> tuple[int, object]:
        fingerprint = store.fingerprint(where)
        assert fingerprint[0] == len(_listed(tmp_path))
        return fingerprint

    first = looked()
    assert looked() == first, "nothing changed"
    Runtime().submit(str(tmp_path / "a" / "run.json"), "success")
    second = looked()
    assert second != first and second[0] == first[0]
    Runtime().start(HELLO, str(tmp_path / "d" / "e" / "new.json"))
    third = looked()
    assert third[0] == first[0] + 1
    for path in (tmp_path / "a").glob("done.json*"):
        path.unlink()
    assert looked()[0] == first[0]


def test_the_listing_walked_a_folder_at_a_time_keeps_the_order_of_the_whole_names(
    tmp_path: Path,
) -> None:
    """Files and sub-folders whose names sort around each other's (`x.json`, `x/`, `x-1.json`,
    `x0.json`) list in the order of their whole names, and every page of it is that order's."""
    rt = Runtime()
    names = ["x.json", "x/y.json", "x/y/z.json", "x-1.json", "x0.json", "x0/a.json", "w/q.json"]
    for name in names:
        rt.start(HELLO, str(tmp_path / name))
    rt.submit(str(tmp_path / "x/y.json"), "success")
    listed = _listed(tmp_path)
    assert [s.name for s in listed] == sorted(names) and listed == _from_states(tmp_path)
    store = store_for(str(tmp_path))
    for offset in range(len(names) + 1):
        assert store.page(str(tmp_path), limit=2, offset=offset) == (
            listed[offset : offset + 2],
            len(names),
            ["hello-world"],
        )
    running = [s for s in listed if s.status == "running"]
    assert store.page(str(tmp_path), status="running") == (running, len(running), ["hello-world"])
