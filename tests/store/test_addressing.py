"""How a TRACE argument picks its store: schemes, the default store, a missing driver."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tether import store as stores
from tether.errors import TetherError
from tether.verbs import Runtime

HELLO = str(Path(__file__).resolve().parents[2] / "examples" / "hello-world.yaml")


def test_a_folder_as_default_store_holds_plain_names(tmp_path: Path) -> None:
    for spelling in (str(tmp_path), "file://" + str(tmp_path)):
        rt = Runtime(default_store=spelling)
        name = f"run-{len(spelling)}.json"
        started = rt.start(HELLO, name)
        assert started["uri"] == "file://" + str(tmp_path / name)
        assert rt.next(name)["name"] == "Acknowledge_Protocol"


def test_memory_as_default_store_holds_plain_names() -> None:
    rt = Runtime(default_store="memory://")
    assert rt.start(HELLO, "plain")["uri"] == "memory://plain"
    assert rt.next("memory://plain")["name"] == "Acknowledge_Protocol"


def test_the_default_store_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_STORE", str(tmp_path))
    assert Runtime().start(HELLO, "env.json")["uri"] == "file://" + str(tmp_path / "env.json")


def test_a_uri_ignores_the_default_store(tmp_path: Path) -> None:
    rt = Runtime(default_store="memory://")
    uri = "file://" + str(tmp_path / "explicit.json")
    assert rt.start(HELLO, uri)["uri"] == uri


def test_a_database_uri_without_its_driver_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "tether.store.postgres", raising=False)
    monkeypatch.setattr(stores, "_stores", {})
    with pytest.raises(TetherError) as err:
        Runtime().next("postgresql://u@127.0.0.1:1/db#run")
    assert err.value.code == "missing_extra"
    # this installation is a virtual environment: its own interpreter's pip reaches it
    command = f"{sys.executable} -m pip install 'psycopg[binary]>=3.2' 'psycopg-pool>=3.2'"
    assert err.value.details["command"] == command and command in err.value.message


def test_a_tree_swap_in_the_file_store_leaves_the_usual_files(tmp_path: Path) -> None:
    rt = Runtime()
    run = tmp_path / "run.json"
    rt.start(HELLO, str(run))
    edited = tmp_path / "hello.yaml"
    edited.write_text(Path(HELLO).read_text().replace("Greet the user", "Greet everyone"))
    assert rt.replace_tree(str(run), str(edited))["status"] == "replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".tether-index.jsonl",
        "hello.yaml",
        "run.json",
        "run.json.lock",
        "run.json.trace.jsonl",
        "run.json.tree.json",
    ]
    assert "tree_file" not in run.read_text()
    assert rt.get(str(run))["tree"]["description"].startswith("Greet everyone")
