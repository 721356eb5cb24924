"""How this installation of Tether was installed, and the command that adds an optional extra to
it.

Owns the reading of the installation (`kind`): pipx (its `pipx_metadata.json` in the
environment's folder), `uv tool` (its `uv-receipt.toml` there), uvx (an environment in uv's
cache, which `uv cache clean` deletes), a virtual environment (`sys.prefix` differs from
`sys.base_prefix`), else the system's Python; where the distribution was installed from (PEP
610's `direct_url.json`, `installed_from`); and `missing_extra`, the one error every optional
extra (`postgres`, `otel`) gives when a module it needs is not installed, naming the command
that installs the extra's requirements (read from the distribution's metadata) into this very
installation: `pipx inject`, `uv tool install --force --with`, `uvx --with`, or this
interpreter's `pip`. A `pip install '.[postgres]'` typed in a shell reaches whatever `pip` is
first on PATH, not pipx's or uv's environment.

It imports nothing heavy and is imported only where an extra is missing or a command is written
for another program (`tether.command.launch`). It does not decide what an extra holds
(`pyproject.toml` does) or import the extras.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from urllib.parse import unquote, urlparse

from tether.errors import TetherError
from tether.files import is_inside

# The distribution's name on the package index (the command and the package are `tether`).
DISTRIBUTION = "tether-bt"
PIPX, UV_TOOL, UVX, VENV, SYSTEM = "pipx", "uv tool", "uvx", "venv", "system"


def uv_cache_dirs() -> list[str]:
    """Where uv keeps its cache: `$UV_CACHE_DIR`, else the platform's default."""
    dirs = [os.environ["UV_CACHE_DIR"]] if os.environ.get("UV_CACHE_DIR") else []
    if os.name == "nt":
        local = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        dirs.append(os.path.join(local, "uv", "cache"))
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        dirs.append(os.path.join(base, "uv"))
    return dirs


def under_uvx() -> bool:
    """Whether this interpreter's environment lives in uv's cache, as uvx's environments do."""
    prefix = os.path.realpath(sys.prefix)
    return any(is_inside(prefix, d) for d in uv_cache_dirs())


def installed_from() -> str | None:
    """Where this distribution was installed from when not from the package index (PEP 610):
    a local folder or file as its path, a repository as `VCS+URL`, else the URL."""
    from importlib import metadata

    try:
        data = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "")
        url = data["url"]
    except (metadata.PackageNotFoundError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(url, str):
        return None
    if url.startswith("file:"):
        return unquote(urlparse(url).path)
    vcs = data.get("vcs_info")
    return f"{vcs['vcs']}+{url}" if isinstance(vcs, dict) and "vcs" in vcs else url


def kind() -> str:
    """How this installation was made: `pipx`, `uv tool`, `uvx`, `venv` or `system`."""
    if os.path.isfile(os.path.join(sys.prefix, "pipx_metadata.json")):
        return PIPX
    if os.path.isfile(os.path.join(sys.prefix, "uv-receipt.toml")):
        return UV_TOOL
    if under_uvx():
        return UVX
    return VENV if sys.prefix != sys.base_prefix else SYSTEM


def requirements(extra: str) -> list[str] | None:
    """The requirements of the distribution's `extra` (`psycopg[binary]>=3.2`, ...), from its
    installed metadata; None when Tether runs from a source tree, not installed."""
    from importlib import metadata

    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return None
    out = []
    for line in declared:
        requirement, _, marker = line.partition(";")
        if marker.replace(" ", "").replace("'", '"') == f'extra=="{extra}"':
            out.append(requirement.strip().replace(" ", ""))
    return out


def install_command(extra: str) -> str:
    """The command line that installs `extra` into this installation, as the user types it."""
    needs = requirements(extra)
    if not needs:  # a source tree: its folder is the checkout
        return f"pip install '.[{extra}]' (in the checkout, with the environment's own pip)"
    how = kind()
    if how == PIPX:
        return shlex.join(["pipx", "inject", os.path.basename(sys.prefix), *needs])
    withs = [word for need in needs for word in ("--with", need)]
    source = installed_from() or DISTRIBUTION
    if how == UV_TOOL:
        return shlex.join(["uv", "tool", "install", "--force", *withs, source])
    if how == UVX:
        return shlex.join(["uvx", "--from", source, *withs, "tether"]) + " ..."
    return shlex.join([sys.executable, "-m", "pip", "install", *needs])


def missing_extra(extra: str, missing: str | None, needs: str, **details: object) -> TetherError:
    """The `missing_extra` error of `needs` (what asked for the extra: `postgresql://
    executions`), `missing` the module that is not installed, naming the command that installs
    `extra` into this installation (and how Tether was installed)."""
    how = kind()
    return TetherError(
        "missing_extra",
        f"{needs} need the {extra!r} extra ({missing or 'a module of it'} is not installed). "
        f"Tether runs from {_where(how)}; install the extra into it with: "
        f"{install_command(extra)}",
        extra=extra,
        installed_with=how,
        command=install_command(extra),
        **details,
    )


def _where(how: str) -> str:
    return {
        PIPX: f"pipx's environment {sys.prefix}",
        UV_TOOL: f"uv's tool environment {sys.prefix}",
        UVX: "a uvx environment in uv's cache",
        VENV: f"the virtual environment {sys.prefix}",
        SYSTEM: f"the system's Python {sys.executable}",
    }[how]
