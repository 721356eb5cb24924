"""The harness capability table, collected from the field tests' `harness_capability` marks.

Owns reading the marks off collected test items and the pinned harness versions off the
project's install scripts (`scripts/install-test-deps-*`, npm `"name@version"`) and
`pyproject.toml` (PyPI `name==version`), and writing the table `tether.guard.harness.capabilities`
builds from them. `tests/conftest.py` calls `write` under `--harness-capabilities FILE`;
`collect` runs that collection; run as a script (scripts/harness-capabilities), it writes the
shipped file and the docs' generated section (`DOC`, between `BEGIN` and `END`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.guard.harness.capabilities import DATA, PACKAGES, build, markdown, shipped

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "workflow-guard.md"
BEGIN = "<!-- harness capabilities: written by scripts/harness-capabilities -->"
END = "<!-- end of harness capabilities -->"
_NPM = re.compile(r'"((?:@[\w.-]+/)?[\w.-]+)@(\d[\w.+-]*)"')
_PYPI = re.compile(r'"([\w.-]+)==(\d[\w.+-]*)"')


def pins(root: Path = ROOT) -> dict[str, str]:
    """Each tested harness's pinned version, by the harness's name in the marks."""
    found: dict[str, str] = {}
    for script in sorted((root / "scripts").glob("install-test-deps-*")):
        found.update(_NPM.findall(script.read_text(encoding="utf-8")))
    found.update(_PYPI.findall((root / "pyproject.toml").read_text(encoding="utf-8")))
    return {harness: found[package] for harness, package in PACKAGES.items() if package in found}


def marks(items: list[pytest.Item]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """`(harness, capability, test id, keywords)` for every mark on the items."""
    return [
        (str(mark.args[0]), str(mark.args[1]), item.nodeid, dict(mark.kwargs))
        for item in items
        for mark in item.iter_markers("harness_capability")
    ]


def write(items: list[pytest.Item], path: str) -> None:
    """The table the items' marks make, written to `path` (JSON, one key per line)."""
    table = build(marks(items), pins())
    Path(path).write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")


def collect(path: Path) -> dict[str, Any]:
    """The table the field tests' marks make now, written to `path` and returned."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--harness-capabilities={path}",
            "tests/field",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


def with_section(text: str, table: dict[str, Any]) -> str:
    """The docs' text with its generated section holding `table`."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{markdown(table)}{END}{tail}"


if __name__ == "__main__":
    collect(DATA)
    DOC.write_text(with_section(DOC.read_text(encoding="utf-8"), shipped()), encoding="utf-8")
