"""`tether.files`: the one atomic write and the no-follow open that the file store, the viewer
(and, in time, every file Tether writes) go through."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.files import TEMPORARY, NotARegularFile, open_regular, read_regular, write_atomic


def test_write_atomic_replaces_a_link_and_never_writes_through_it(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched")
    (tmp_path / "out.txt").symlink_to(target)
    write_atomic(str(tmp_path / "out.txt"), "new")
    assert not (tmp_path / "out.txt").is_symlink()
    assert (tmp_path / "out.txt").read_text() == "new"
    assert target.read_text() == "untouched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.txt", "out.txt"]


def test_write_atomic_keeps_permissions_and_leaves_no_temporary_on_failure(tmp_path: Path) -> None:
    out = tmp_path / "state.json"
    out.write_text("old")
    out.chmod(0o600)
    write_atomic(str(out), b"new")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_bytes() == b"new"
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(str(tmp_path / "folder"), "cannot replace a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "state.json"]


def test_write_atomic_of_chunks_writes_them_all_or_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "sums.jsonl"
    out.write_bytes(b"old")
    chunks = [bytes([65 + n % 26]) * 300_000 for n in range(8)]  # past one gathered write
    write_atomic(str(out), iter(chunks))
    assert out.read_bytes() == b"".join(chunks)

    def torn() -> Iterator[bytes]:
        yield b"x" * 2_000_000
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_atomic(str(out), torn())
    assert out.read_bytes() == b"".join(chunks)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sums.jsonl"]


def test_temporary_names_are_recognised() -> None:
    assert TEMPORARY.fullmatch(".4242.tmp") and TEMPORARY.fullmatch(".4242.0badf00d.tmp")
    assert not TEMPORARY.fullmatch(".tmp") and not TEMPORARY.fullmatch(".4242.json")


@pytest.mark.parametrize("kind", ["link", "folder", "other"])
def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "entry"
    if kind == "link":
        (tmp_path / "real").write_text("secret")
        path.symlink_to(tmp_path / "real")
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)  # opening it must not wait for a writer
    with pytest.raises(NotARegularFile) as err:
        read_regular(str(path))
    assert err.value.kind == kind
    with pytest.raises(NotARegularFile):
        os.close(open_regular(str(path), os.O_RDWR | os.O_CREAT))


def test_read_regular_reads_at_most_the_limit_and_never_more_than_the_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"0123456789")
    assert read_regular(str(tmp_path / "f"), 4) == b"0123"
    assert read_regular(str(tmp_path / "f"), 10**15) == b"0123456789"
