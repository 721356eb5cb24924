"""What the README and the docs tell a new user to type works today.

Tether has no release on the package index and no public repository address yet, so the texts a
user reads (README, docs, the skill, the examples) and the package's metadata name neither: no
URL of Tether's repository (links are relative), no `/plugin marketplace add OWNER/REPO`, and
every package-index install (`pipx install tether-bt`, `uvx --from tether-bt`, ...) stands in a
paragraph that marks it as for after a release. Other projects' repositories (the sources the
docs cite) are fine.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AFTER_RELEASE = "after a release"
# A URL of Tether's own repository on a code host, or the organisation used in early drafts.
OWN_REPOSITORY = re.compile(
    r"https?://(?:www\.)?(?:github\.com|gitlab\.com|raw\.githubusercontent\.com|bitbucket\.org)"
    r"/[\w.-]+/tether(?:\.git)?(?=[/\s)>\"'`#]|$)|tether-dev",
    re.IGNORECASE,
)
# A marketplace added by its repository's name rather than a local folder.
MARKETPLACE_BY_NAME = re.compile(r"/plugin marketplace add\s+(?![./~$])[\w.-]+/[\w.-]+")
INDEX_INSTALL = re.compile(
    r"\b(?:pipx\s+install|pip\s+install|uv\s+pip\s+install|uv\s+tool\s+install|uvx)"
    r"(?:\s+-{1,2}[\w-]+)*\s+['\"]?tether-bt(?![\w-])"
    r"|\buvx\s+--from\s+['\"]?tether-bt(?![\w-])",
)


def texts() -> list[Path]:
    """What a user reads: the README, the docs, the skill and the examples' comments."""
    found = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "skills").rglob("*.md")]
    found += [p for p in (REPO / "examples").rglob("*") if p.suffix in (".md", ".yaml", ".json")]
    return sorted(found)


def problems(text: str) -> list[str]:
    """Each address or install command in `text` that does not hold today."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        out += [f"a repository address: {m.group(0)}" for m in OWN_REPOSITORY.finditer(paragraph)]
        out += [
            f"a marketplace by name: {m.group(0)}" for m in MARKETPLACE_BY_NAME.finditer(paragraph)
        ]
        if AFTER_RELEASE not in " ".join(paragraph.split()):
            out += [f"an index install: {m.group(0)}" for m in INDEX_INSTALL.finditer(paragraph)]
    return out


@pytest.mark.parametrize("path", texts(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_texts_name_no_address_and_no_index_install_before_a_release(path: Path) -> None:
    assert problems(path.read_text(encoding="utf-8")) == []


def test_the_commands_help_names_no_index_install_before_a_release() -> None:
    """What `tether ... --help` prints comes from the sources' strings: each one that tells a
    user to install from the index marks it as for after a release, as the docs do."""
    for path in sorted((REPO / "src" / "tether").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert problems(node.value) == [], f"{path.relative_to(REPO)}:{node.lineno}"


def test_the_package_metadata_names_no_address() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "[project.urls]" not in pyproject
    assert problems(pyproject) == []


def test_the_readme_shows_an_install_that_works_from_a_checkout() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pipx install . && tether init" in readme
    assert "uv tool install ." in readme


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("pipx install tether-bt && tether init", ["an index install"]),
        ("Run `uvx --from tether-bt tether init`.", ["an index install"]),
        ("pip install 'tether-bt[postgres]'", ["an index install"]),
        ("pip install --upgrade tether-bt", ["an index install"]),
        ("After a release:\n`pipx install tether-bt`.", ["an index install"]),  # case matters
        ("after a\nrelease, `pipx install tether-bt`", []),  # wrapped, same paragraph
        ("after a release.\n\n`pipx install tether-bt`", ["an index install"]),  # another one
        ("pipx install . or pip install tether-bt-extras", []),
        ("See <https://github.com/tether-dev/tether>.", ["a repository address"]),
        (
            "/plugin marketplace add tether-dev/tether",
            ["a repository address", "a marketplace by name"],
        ),
        (
            "[docs](https://github.com/someone/tether/blob/main/docs/mcp.md)",
            ["a repository address"],
        ),
        (
            "![v](https://raw.githubusercontent.com/x/Tether/main/docs/viewer.png)",
            ["a repository address"],
        ),
        ("https://github.com/someone/tether", ["a repository address"]),
        ("https://github.com/openai/codex and https://github.com/x/tethering", []),
        ("/plugin marketplace add someone/tether", ["a marketplace by name"]),
        ("/plugin marketplace add ./path/to/tether", []),
        ("[docs/mcp.md](docs/mcp.md)", []),
    ],
)
def test_what_the_rule_finds(text: str, found: list[str]) -> None:
    assert [p.split(":", 1)[0] for p in problems(text)] == found
