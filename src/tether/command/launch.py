"""How configuration written for other programs starts this installation of `tether`.

Owns the choice of command that an MCP client entry or a Claude Code hook runs, and whether that
command can go in a file a team commits (it names nothing of this machine) or must stay in the
user's own files. In order:

- `--command C` as given (split like a shell would); portable unless it is an absolute path;
- `uvx --from SOURCE tether` when Tether runs under uvx (its environment is in uv's cache,
  which `uv cache clean` deletes, so that path must never be written), SOURCE being where uvx
  took it from (PEP 610's `direct_url.json`): a checkout's folder or a wheel (a path on this
  machine: not portable), a URL, or `tether-bt` from the package index (after a release);
- `tether` when the `tether` found on PATH is this installation;
- else the absolute path of this installation's script: not portable, so installers write it
  only to the user's or the local scope, never to a project file (and `tether` when there is
  no script, as when running from a source tree).

It does not write any file (`tether.mcp.install`, `tether.guard.harness.install` do) or read how
Tether was installed (`tether.installation` does). Imported
only by the install commands, never on the step path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass

from tether.installation import DISTRIBUTION, installed_from, under_uvx

PATH, UVX, ABSOLUTE, GIVEN = "path", "uvx", "absolute", "given"
# What an installer's note tells the user to do for a command that may be shared.
SHAREABLE = "put tether on PATH (in a checkout of Tether: pipx install . or uv tool install .)"


@dataclass(frozen=True)
class Launch:
    """A command line that starts `tether`, how it was chosen, and whether it may be committed."""

    words: tuple[str, ...]
    how: str
    portable: bool

    @property
    def command(self) -> str:
        return self.words[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]

    def shell(self) -> str:
        """The words as one shell command line (for a hook's `command`)."""
        return shlex.join(self.words)

    def to_dict(self) -> dict[str, object]:
        return {"how": self.how, "command": self.shell(), "portable": self.portable}


def script() -> str:
    """The `tether` script beside the running interpreter (this installation's)."""
    name = "tether.exe" if os.name == "nt" else "tether"
    return os.path.join(os.path.dirname(sys.executable), name)


def _on_path_is_this() -> bool:
    found = shutil.which("tether")
    mine = script()
    if found is None or not os.path.exists(mine):
        return False
    try:
        return os.path.samefile(found, mine)
    except OSError:
        return False


def launch(given: str | None = None, *, shell_path: bool = True) -> Launch:
    """The command a client or hook should run to start this installation of `tether`.

    `shell_path` says whether the program that runs it has the user's shell PATH; a desktop
    app (Claude Desktop) may not, so there the command is made absolute: this installation's
    script, or uvx found on PATH. Such an entry belongs in the user's own files anyway."""
    if given:
        words = tuple(shlex.split(given, posix=os.name != "nt")) or (given,)
        return Launch(words, GIVEN, not os.path.isabs(words[0]))
    if under_uvx():
        uvx = "uvx" if shell_path else shutil.which("uvx") or "uvx"
        source = installed_from() or DISTRIBUTION
        local = os.path.isabs(uvx) or os.path.isabs(source)
        return Launch((uvx, "--from", source, "tether"), UVX, not local)
    if shell_path and _on_path_is_this():
        return Launch(("tether",), PATH, True)
    mine = script()
    if not os.path.exists(mine):  # run from a source tree, not installed: hope for PATH
        return Launch(("tether",), PATH, True)
    return Launch((mine,), ABSOLUTE, False)
