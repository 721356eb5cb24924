"""The docs say only what is true: the README's Python example and the one in
`docs/trees-in-code.md` run, as written, from a checkout; every test `docs/semantics.md` cites
exists."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def python_block(markdown: Path, heading: str) -> str:
    """The first ```python block after `heading` in `markdown`."""
    text = "\n" + markdown.read_text(encoding="utf-8")
    after = text[text.index(f"\n{heading}\n") :]
    found = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert found is not None, f"no python block under {heading!r} in {markdown.name}"
    return found.group(1)


def run_python(code: str) -> Any:
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


def test_the_trees_in_code_example_runs() -> None:
    example = python_block(ROOT / "docs" / "trees-in-code.md", "# Trees in code")
    found = run_python(example + "print(json.dumps(walk.trace[-1]['kind']))\n")
    assert found == "instruct"


LEGEND = re.compile(r"`([A-Z]{1,2})` = `(tests/[\w/]+\.py)`")
CITATION = re.compile(r"(?:\b([A-Z]{1,2}) )?`([^`]+)`")


def semantics_citations() -> list[tuple[str, str | None]]:
    """Every test `docs/semantics.md` cites in the test column of its tables: (file, test
    name), or (file, None) for a file cited whole. A name follows its file's letter (`E
    test_x, test_y`) or is written `path::name`."""
    text = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
    files = dict(LEGEND.findall(text))
    cited: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cell, current = line.rstrip(" |").rsplit("|", 1)[1], None
        for letter, quoted in CITATION.findall(cell):
            if letter:
                current = files[letter]
            if "::" in quoted:
                cited.append(tuple(quoted.split("::", 1)))  # type: ignore[arg-type]
            elif quoted.startswith("tests/"):
                cited.append((quoted, None))
            elif quoted.startswith("test_"):
                assert current is not None, f"{quoted} is cited without its file: {line}"
                cited.append((current, quoted))
    return cited


def test_every_test_docs_semantics_cites_exists() -> None:
    cited = semantics_citations()
    assert len(cited) > 100
    missing = []
    for path, name in cited:
        file = ROOT / path
        if not file.is_file():
            missing.append(path)
        elif name is not None and not re.search(
            rf"^\s*(?:async )?def {name}\(", file.read_text(encoding="utf-8"), re.MULTILINE
        ):
            missing.append(f"{path}::{name}")
    assert missing == []


PATH_LIKE = re.compile(r"`((?:src|tests|bench|schema|docs|examples)/[^`\s]*)`")
LINK = re.compile(r"\]\(([\w./-]+\.md)\)")


def test_every_path_the_code_map_names_exists() -> None:
    """Each path in `docs/code-map.md` (and each test it names as `file::test`), and each page
    it links to."""
    text = (ROOT / "docs" / "code-map.md").read_text(encoding="utf-8")
    named = PATH_LIKE.findall(text)
    assert len(named) > 40
    missing = []
    for path in named:
        file, _, test = path.partition("::")
        if not (ROOT / file).exists():
            missing.append(file)
        elif test and f"def {test}(" not in (ROOT / file).read_text(encoding="utf-8"):
            missing.append(path)
    missing += [page for page in LINK.findall(text) if not (ROOT / "docs" / page).is_file()]
    assert missing == []


def test_every_table_row_belongs_to_a_table() -> None:
    """A row that does not follow a row or open a table (a header over `|---|`) renders as plain
    text, as the viewer's HTTP API table once did after a paragraph cut it in two."""
    strays = []
    for markdown in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = markdown.read_text(encoding="utf-8").splitlines()
        fenced = False
        for number, line in enumerate(lines):
            fenced ^= line.startswith("```")
            if fenced or not line.startswith("|"):
                continue
            after = lines[number + 1] if number + 1 < len(lines) else ""
            if not (number and lines[number - 1].startswith("|")) and not after.startswith("|-"):
                strays.append(f"{markdown.name}:{number + 1}")
    assert strays == [], "table rows outside a table"
