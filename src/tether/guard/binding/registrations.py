"""Where each harness keeps the hooks that run the guard: its hook registrations, as files.

Owns the list of those files (a project's and the user's, for Claude Code, Codex, Gemini CLI,
Cursor, GitHub Copilot CLI, Qwen Code, Factory Droid and OpenCode) and where Claude Code reads
its managed settings on each platform (`managed_settings`). A session bound to an execution may
not write any of them (`binder.Guarded`): removing the guard's hooks is how an agent would
unbind itself for the next session. `tether guard doctor` reads the same list. It does not read
or write a registration (`harness.install`, `harness.claude`).
"""

from __future__ import annotations

import os
import sys

# Files a project keeps hooks in, relative to it; a name ending in `/` is a folder whose every
# file is one (Copilot CLI reads `.github/hooks/*.json`, OpenCode `.opencode/plugin/*`).
PROJECT_FILES = (
    os.path.join(".claude", "settings.json"),
    os.path.join(".claude", "settings.local.json"),
    os.path.join(".codex", "hooks.json"),
    os.path.join(".codex", "config.toml"),
    os.path.join(".gemini", "settings.json"),
    os.path.join(".cursor", "hooks.json"),
    os.path.join(".github", "hooks") + os.sep,
    os.path.join(".qwen", "settings.json"),
    os.path.join(".factory", "settings.json"),
    os.path.join(".opencode", "plugin") + os.sep,
    os.path.join(".opencode", "plugins") + os.sep,
)
# The same, in the user's home folder.
USER_FILES = (
    os.path.join(".claude", "settings.json"),
    os.path.join(".codex", "hooks.json"),
    os.path.join(".codex", "config.toml"),
    os.path.join(".gemini", "settings.json"),
    os.path.join(".cursor", "hooks.json"),
    os.path.join(".copilot", "settings.json"),
    os.path.join(".qwen", "settings.json"),
    os.path.join(".factory", "settings.json"),
    os.path.join(".config", "opencode", "plugin") + os.sep,
    os.path.join(".config", "opencode", "plugins") + os.sep,
)


# Names another managed settings file than the platform's (a test's, a machine's own layout).
MANAGED_ENV = "TETHER_CLAUDE_MANAGED_SETTINGS"


def managed_settings() -> str:
    """Where Claude Code reads its managed settings on this platform (an administrator's file:
    its hooks run whatever a project or user file says), or the file `$MANAGED_ENV` names."""
    if os.environ.get(MANAGED_ENV):
        return os.environ[MANAGED_ENV]
    if sys.platform == "darwin":
        return "/Library/Application Support/ClaudeCode/managed-settings.json"
    if sys.platform == "win32":
        return os.path.join(
            os.environ.get("PROGRAMFILES", r"C:\Program Files"),
            "ClaudeCode",
            "managed-settings.json",
        )
    return "/etc/claude-code/managed-settings.json"


def registrations(project: str) -> tuple[frozenset[str], frozenset[str]]:
    """The hook registrations of `project` and of the user, as they resolve: the files, and the
    folders whose every file is one."""
    home = os.path.expanduser("~")
    files: set[str] = {os.path.realpath(managed_settings())}
    folders: set[str] = set()
    for base, names in ((project, PROJECT_FILES), (home, USER_FILES)):
        for name in names:
            path = os.path.realpath(os.path.join(base, name))
            (folders if name.endswith(os.sep) else files).add(path)
    return frozenset(files), frozenset(folders)
