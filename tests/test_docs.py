"""The docs say only what is true: the README's Python example runs, as written, from a checkout."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_block(markdown: Path, heading: str) -> str:
    """The first ```python block after `heading` in `markdown`."""
    text = markdown.read_text(encoding="utf-8")
    after = text[text.index(f"\n{heading}\n") :]
    found = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert found is not None, f"no python block under {heading!r} in {markdown.name}"
    return found.group(1)


def run_python(code: str) -> dict[str, object]:
    """Run `code` in a fresh interpreter in the checkout's folder, as a user would after
    installing; it prints what it found as its last line of JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_readme_python_example_runs() -> None:
    example = python_block(ROOT / "README.md", "## Python API")
    found = run_python(
        example
        + "import json\n"
        + 'print(json.dumps({"next": answer["next"]["name"], "rows": sorted(r["name"] for r '
        + 'in rows), "tree": tree.data["name"], "request": request["name"]}))\n'
    )
    assert found == {
        "next": "Morning_Greeting",
        "rows": ["demo", "retry"],
        "tree": "deploy",
        "request": "Determine_Time",
    }
