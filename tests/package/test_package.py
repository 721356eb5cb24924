"""The package as a user gets it: built, checked, installed into a clean virtual environment, and
used from there with nothing of the checkout on the path.

One build and one environment serve the whole module: `python -m build` makes the sdist and, from
the sdist, the wheel (so the sdist must carry everything the build needs); `twine check` passes
both; a fresh `python -m venv` gets the wheel, its dependencies coming from the configured package
index. From that environment: `tether init`, a walk of the example it wrote, `tether mcp` over
stdio with the SDK's client, `tether guard install claude` and `tether mcp install` into a
project (whose files must name no path of this machine), `tether install skill`, and `tether view`
serving its page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from tether import __version__

REPO = Path(__file__).resolve().parents[2]
NAME = "tether_bt"
_SKIP = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "node_modules", "__pycache__", "build", "dist", "*.egg-info"
)


class Installed:
    """The built files, and a clean virtual environment with the wheel installed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dist = root / "dist"
        self.venv = root / "venv"
        self.bin = self.venv / ("Scripts" if os.name == "nt" else "bin")
        self.home = root / "home"
        self.home.mkdir()

    @property
    def wheel(self) -> Path:
        return next(self.dist.glob(f"{NAME}-{__version__}-*.whl"))

    @property
    def sdist(self) -> Path:
        return self.dist / f"{NAME}-{__version__}.tar.gz"

    def env(self) -> dict[str, str]:
        """The environment of a user of the installed package: its bin folder on PATH, and
        nothing that points at the checkout."""
        return {
            **_clean_env(),
            "PATH": f"{self.bin}{os.pathsep}/usr/bin:/bin",
            "HOME": str(self.home),
        }

    def run(self, *args: str, cwd: Path) -> str:
        """What the installed `tether ARGS` prints; it must succeed."""
        done = subprocess.run(
            [str(self.bin / "tether"), *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"tether {' '.join(args)}: {done.stderr}"
        return done.stdout

    def tether(self, *args: str, cwd: Path) -> Any:
        """The JSON the installed `tether ARGS` prints."""
        return json.loads(self.run(*args, cwd=cwd))


def _clean_env() -> dict[str, str]:
    """This process's environment without what would point Python at the checkout (a
    PYTHONPATH would make pip take the checkout for an installed copy)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}


def _run(*command: str | Path, cwd: Path | None = None, timeout: int = 900) -> str:
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("package")
    out = Installed(root)
    source = root / "source"  # a copy, so the build writes nothing into the checkout
    shutil.copytree(REPO, source, ignore=_SKIP, symlinks=True)
    _run(sys.executable, "-m", "build", "--outdir", out.dist, source)
    _run(sys.executable, "-m", "twine", "check", "--strict", out.sdist, out.wheel)
    _run(sys.executable, "-m", "venv", out.venv)
    _run(out.bin / "python", "-m", "pip", "install", "--quiet", "--find-links", out.dist, out.wheel)
    yield out


def test_the_sdist_carries_tests_docs_examples_and_the_plugin(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    for path in (
        "LICENSE",
        "README.md",
        "setup.py",
        "MANIFEST.in",
        "tests/package/test_package.py",
        "docs/tree-format.md",
        "docs/viewer.png",
        "examples/hello-world.yaml",
        "examples/guard/cases.yaml",
        "skills/tether/SKILL.md",
        ".claude-plugin/plugin.json",
        "src/tether/cli/main.py",
    ):
        assert path in names, path
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_the_wheel_has_its_metadata_and_ships_the_examples(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        meta = wheel.read(f"{NAME}-{__version__}.dist-info/METADATA").decode()
    assert f"{NAME}-{__version__}.dist-info/licenses/LICENSE" in names
    for path in ("examples/hello-world.yaml", "skills/tether/SKILL.md", "docs/mcp.md"):
        assert f"tether/{path}" in names, path
    assert not any(n.startswith(("tests/", "examples/")) for n in names)
    headers = [line for line in meta.splitlines() if ": " in line]
    assert "Name: tether-bt" in headers
    assert "License-Expression: MIT" in headers
    assert "Author: Tether contributors" in headers
    assert "Requires-Python: >=3.11" in headers
    assert "Classifier: Operating System :: MacOS" in headers
    # No project address is named: the project has none yet (its README links are relative).
    assert not [h for h in headers if h.startswith(("Project-URL", "Home-page"))]
    readme = meta.split("\n\n", 1)[1]
    assert (
        "](docs/workflow-guard.md)" in readme and "![The Tether viewer](docs/viewer.png)" in readme
    )
    assert "github.com" not in meta


def test_init_and_a_walk_from_the_installed_command(installed: Installed, tmp_path: Path) -> None:
    assert installed.run("--version", cwd=tmp_path) == f"tether {__version__}\n"
    out = installed.tether("init", cwd=tmp_path)
    assert out["next"][0] == "tether start examples/hello-world.yaml run.json"
    assert (tmp_path / ".tether" / "guard.yaml").is_file()
    installed.tether("start", "examples/hello-world.yaml", "run.json", cwd=tmp_path)
    request = installed.tether("submit", "run.json", "success", cwd=tmp_path)["next"]
    values = {"time_of_day": "morning", "greeting": "Good morning!"}
    while "status" not in request:
        step = ["--step", request["step"]]
        if request["type"] == "evaluate":
            answer = "true" if "Morning" in request["name"] else "false"
            request = installed.tether("eval", "run.json", answer, *step, cwd=tmp_path)["next"]
        else:
            sets = [f"--set={w}={values[w]}" for w in request.get("writes", [])]
            request = installed.tether("submit", "run.json", "success", *step, *sets, cwd=tmp_path)[
                "next"
            ]
    assert request["status"] == "done"
    assert installed.tether("var", "run.json", "greeting", cwd=tmp_path) == "Good morning!"
    assert installed.tether("verify", "run.json", cwd=tmp_path)["ok"] is True


@pytest.mark.anyio
async def test_tether_mcp_from_the_installed_package(installed: Installed, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=str(installed.bin / "tether"), args=["mcp"], env=installed.env(), cwd=str(tmp_path)
    )
    async with Client(params) as client:
        assert client.server_info is not None and client.server_info.version == __version__
        assert len((await client.list_tools()).tools) >= 12
        doc = await client.read_resource("tether://docs/tree-format.md")
        assert doc.contents[0].text.startswith("# Tree file format")  # type: ignore[union-attr]
        prompt = await client.get_prompt("drive_tree", {"trace_output": "run.json"})
        assert "## Drive a tree" in prompt.messages[0].content.text  # type: ignore[union-attr]


def test_installers_write_no_path_of_this_machine_into_the_project(
    installed: Installed, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    guard = installed.tether("guard", "install", "claude", cwd=project)
    assert guard["launch"] == {"how": "path", "command": "tether", "portable": True}
    mcp = installed.tether("mcp", "install", "--target", "claude-code", cwd=project)
    assert mcp["launch"]["command"] == "tether" and mcp["scope"] == "project"
    skill = installed.tether("install", "skill", "--target", "claude", cwd=project)
    assert skill["status"] == "added"
    written = [p for p in project.rglob("*") if p.is_file()]
    assert {str(p.relative_to(project)) for p in written} == {
        ".claude/settings.json",
        ".claude/skills/tether/SKILL.md",
        ".mcp.json",
        ".tether/guard.yaml",
    }
    machine = (str(installed.root), str(tmp_path), str(REPO), sys.prefix, str(installed.home))
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert not [m for m in machine if m in text], path
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.startswith("tether guard hook --config ")
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["tether"] == {
        "type": "stdio",
        "command": "tether",
        "args": ["mcp"],
    }


@pytest.mark.parametrize(
    ("harness", "written"),
    [
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("cursor", ".cursor/hooks.json"),
    ],
)
def test_guard_install_for_each_harness_from_the_installed_package(
    installed: Installed, tmp_path: Path, harness: str, written: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = installed.tether("guard", "install", harness, cwd=project)
    assert out["launch"]["portable"] is True
    config = (project / written).read_text(encoding="utf-8")
    machine = (str(installed.root), str(tmp_path), str(REPO), sys.prefix, str(installed.home))
    assert not [m for m in machine if m in config]
    assert "tether guard hook" in config and f"--harness {harness}" in config


def test_tether_view_serves_its_page(installed: Installed, tmp_path: Path) -> None:
    installed.tether("start", str(REPO / "examples" / "hello-world.yaml"), "run.json", cwd=tmp_path)
    server = subprocess.Popen(
        [str(installed.bin / "tether"), "view", str(tmp_path), "--port", "0"],
        cwd=tmp_path,
        env=installed.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            line = server.stdout.readline()
            assert line, server.stderr.read() if server.stderr else "no output"
            lines.append(line)
        url = json.loads("".join(lines))["url"]
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200
            html = page.read().decode()
        assert "<html" in html.lower() and "/static/app.js" in html
        with urllib.request.urlopen(url + "static/app.js", timeout=30) as script:
            assert script.status == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
