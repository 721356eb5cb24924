"""The append-only JSON-lines log: a torn tail is cut before the next append, never glued to it."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from tether import appendlog


def test_an_append_after_a_torn_line_is_read_back(tmp_path: Path) -> None:
    log = str(tmp_path / "events.log")
    appendlog.append(log, [{"n": 1}, {"n": 2}])
    with open(log, "ab") as out:
        out.write(b'{"n": 3, "cut sh')  # a writer killed mid-line
    size = appendlog.append(log, [{"n": 4}])
    records, end = appendlog.read(log)
    assert records == [{"n": 1}, {"n": 2}, {"n": 4}]
    assert size == end == Path(log).stat().st_size
    assert Path(log).read_bytes().endswith(b'{"n": 4}\n')


def test_a_log_that_is_one_torn_line_starts_over(tmp_path: Path) -> None:
    log = tmp_path / "events.log"
    log.write_bytes(b'{"half": ' * 20000)  # longer than one read-back chunk, no newline at all
    appendlog.append(str(log), [{"n": 1}])
    assert log.read_bytes() == b'{"n": 1}\n'


def test_reading_from_an_offset_and_skipping_what_is_not_an_object(tmp_path: Path) -> None:
    log = tmp_path / "events.log"
    log.write_bytes(b'{"n": 1}\n[2]\nnot json\n{"n": 3}\n')
    records, size = appendlog.read(str(log))
    assert records == [{"n": 1}, {"n": 3}]
    assert appendlog.read(str(log), len(b'{"n": 1}\n'))[0] == [{"n": 3}]
    assert appendlog.read(str(tmp_path / "missing.log")) == ([], 0)
    assert size == log.stat().st_size


def _writer(path: str, who: int) -> None:
    for i in range(200):
        appendlog.append(path, [{"who": who, "i": i, "pad": "x" * (i % 50)}])


def test_concurrent_appenders_lose_nothing(tmp_path: Path) -> None:
    log = str(tmp_path / "events.log")
    procs = [multiprocessing.Process(target=_writer, args=(log, w)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    records, _ = appendlog.read(log)
    assert sorted((r["who"], r["i"]) for r in records) == [
        (w, i) for w in range(4) for i in range(200)
    ]
    assert all(json.loads(line) for line in Path(log).read_text().splitlines())
