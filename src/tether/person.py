"""What a person's answer to a human step has that an agent's tool calls do not.

Owns the two checks the verb layer (`Runtime.approve`/`reject`) makes before a person's answer
is recorded, whatever interface it came through:

- `require_no_agent()`: the answering process does not run under an agent harness. Every
  harness marks the environment of the processes it starts (Claude Code `CLAUDECODE`, Gemini CLI
  `GEMINI_CLI`, Codex `CODEX_THREAD_ID`/`CODEX_SANDBOX…`, Cursor `CURSOR_AGENT`, Copilot
  `COPILOT_CLI`), and a process's starting environment, as `/proc/PID/environ` keeps it, cannot
  be changed afterwards. So the process and each of its ancestors is read: an agent's shell, and
  whatever it runs (`env -u`, `script`, `python3 -c`, a copied binary, a shell function), carries
  the mark of the shell the harness started; the harness's own process is known by its program
  (`claude`, `codex`, `gemini`, `cursor-agent`, `copilot`), for a shell that replaced itself
  with the command. Where `/proc` is missing, only this process's own environment is read.
- `confirm_at_terminal(request, approved)`: for an answer from the command line, the person
  confirms at the controlling terminal (`/dev/tty`), not on standard input: the step's question
  is shown with a one-time code, and the answer counts only when that code is typed back. An
  agent's shell has no controlling terminal; one an agent makes (`script -qc`) cannot know the
  code before it is shown.

It also owns `command_line`, the one way Tether writes a command for a person to paste (the
`tether approve …` the guard tells the user, the viewer's "Fork from here"): each word quoted
for a POSIX shell, so a name such as `runs/x;touch${IFS}PWNED;.json` stays one word.

What stays open to a process of the same user is said in the README's security model: one that
leaves the agent's process tree with a clean environment (`setsid -f env -i …`) and drives a
terminal of its own, or that writes the store directly. It does not record the answer (the
verbs do) or know the phase rules (the engine does).
"""

from __future__ import annotations

import os
import secrets
import shlex
from typing import Any

from tether.errors import TetherError

# Environment variables an agent harness sets on the processes it starts, and whose they are.
AGENT_MARKS = {
    "CLAUDECODE": "Claude Code",
    "GEMINI_CLI": "Gemini CLI",
    "CODEX_THREAD_ID": "Codex",
    "CODEX_SANDBOX": "Codex",
    "CODEX_SANDBOX_NETWORK_DISABLED": "Codex",
    "CURSOR_AGENT": "Cursor",
    "COPILOT_CLI": "Copilot CLI",
    "QWEN_CODE": "Qwen Code",
    "FACTORY_EXEC_TARGET_AUTONOMY": "Factory Droid",
}
# The programs of the harnesses themselves, by the name of the program or of the script node runs.
AGENT_PROGRAMS = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "cursor-agent": "Cursor",
    "copilot": "Copilot CLI",
    "droid": "Factory Droid",
}
CODE_LETTERS = "abcdefghjkmnpqrstuvwxyz"
CODE_LENGTH = 5
_MAX_ANCESTORS = 256
_ELSEWHERE = (
    "A person answers a human step from their own terminal (tether approve or reject) or in the "
    "viewer (tether view)."
)


def command_line(*words: str) -> str:
    """`words` as a command line a person can paste into a POSIX shell, each word quoted as it
    needs."""
    return shlex.join(words)


def _marked(environ: bytes) -> str | None:
    for entry in environ.split(b"\0"):
        name = entry.partition(b"=")[0].decode("ascii", "replace")
        if name in AGENT_MARKS:
            return name
    return None


def _parent(pid: int) -> tuple[int, str] | None:
    """The parent of `pid` and the name of `pid`'s program, from `/proc/PID/stat`."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    name = stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode("utf-8", "replace")
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]), name


def _program(pid: int) -> str | None:
    """Which harness `pid` runs, by the name of its program or of the script node runs."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")[:2]
    except OSError:
        return None
    for arg in argv:
        name = os.path.basename(arg.decode("utf-8", "replace")).removesuffix(".js")
        if name in AGENT_PROGRAMS:
            return name
    return None


def agent_ancestor(pid: int | None = None) -> str | None:
    """Which process of the ancestry of `pid` (this process when None), itself included, an
    agent harness started, or is the harness, and how it shows; None when none does."""
    if pid is None:
        own = next((name for name in os.environ if name in AGENT_MARKS), None)
        if own is not None:
            return f"this process carries {own} ({AGENT_MARKS[own]})"
        pid = os.getpid()
    for _ in range(_MAX_ANCESTORS):
        found = _parent(pid)
        if found is None:
            return None
        parent, name = found
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                mark = _marked(handle.read())
        except OSError:  # another user's process (sudo): its environment is not ours to read
            mark = None
        if mark is not None:
            return f"process {pid} ({name}) carries {mark} ({AGENT_MARKS[mark]})"
        program = _program(pid)
        if program is not None:
            return f"process {pid} ({name}) is {AGENT_PROGRAMS[program]}"
        if parent <= 1:
            return None
        pid = parent
    return None


def sender(client_port: int, server_port: int) -> int | None:
    """The process of this machine that holds the client end of a TCP connection from
    `client_port` to this server's `server_port` (the browser behind a viewer's page), found
    through `/proc/net/tcp` and the open files of the processes this user may read; None when
    it cannot be known (no `/proc`, another user's process)."""
    ports = (f":{client_port:04X}", f":{server_port:04X}")
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[1].endswith(ports[0]) and fields[2].endswith(ports[1]):
                inode = fields[9]
                break
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                if os.readlink(fd.path) == wanted:
                    return int(entry.name)
        except OSError:
            continue
    return None


def require_no_agent(approved: bool, sent_by: int | None = None) -> None:
    """Refuse (`human_only`) a person's answer given from inside an agent's process tree: this
    process's, or that of `sent_by`, the process the answer came from (a viewer's browser)."""
    found = agent_ancestor() or (None if sent_by is None else agent_ancestor(sent_by))
    if found is not None:
        verb = "approve" if approved else "reject"
        raise TetherError(
            "human_only",
            f"tether {verb} runs under an agent ({found}), and only a person answers a human "
            f"step. {_ELSEWHERE}",
        )


def confirm_at_terminal(request: dict[str, Any], approved: bool, trace: str) -> None:
    """Show the human step `request` at the controlling terminal with a one-time code, and
    return once the person types the code back; refuse (`human_only`) when there is no
    terminal or the code does not come back."""
    verb = "approve" if approved else "reject"
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise TetherError(
            "human_only",
            f"tether {verb} asks a person to confirm at a terminal, and this process has none "
            f"(an agent's shell has no terminal). {_ELSEWHERE}",
        ) from None
    code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
    asks = str(request.get("prompt") or request.get("name") or "").strip()
    with os.fdopen(fd, "r+b", buffering=0) as tty:
        tty.write(
            (
                f"{trace}\nThe human step {request.get('name')!r} asks:\n  {asks}\n"
                f"Type {code} to {verb} it (anything else cancels): "
            ).encode("utf-8", "replace")
        )
        typed = tty.readline(1024).decode("utf-8", "replace").strip()
    if typed != code:
        raise TetherError(
            "human_only", f"not confirmed: the code typed at the terminal was not {code}"
        )
