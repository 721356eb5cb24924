"""What a person's answer to a human step has that an agent's tool calls do not.

Owns the person gate (`gate`), which the verb layer passes every person's answer through,
whatever interface or private path it came by, before it is recorded: where the answer says it
came from (`SOURCES`), then the checks for that place (`require_person`):

- From the command line, the library or anywhere but the two below: the answering process does
  not run under an agent harness (`agent_ancestor`). Every
  harness marks the environment of the processes it starts (Claude Code `CLAUDECODE`, Gemini CLI
  `GEMINI_CLI`, Codex `CODEX_THREAD_ID`/`CODEX_SANDBOX…`, Cursor `CURSOR_AGENT`, Copilot
  `COPILOT_CLI`), and a process's starting environment, as `/proc/PID/environ` keeps it, cannot
  be changed afterwards. So the process and each of its ancestors is read: an agent's shell, and
  whatever it runs (`env -u`, `script`, `python3 -c`, a copied binary, a shell function), carries
  the mark of the shell the harness started; the harness's own process is known by its program
  (`claude`, `codex`, `gemini`, `cursor-agent`, `copilot`), for a shell that replaced itself
  with the command. Where `/proc` is missing, only this process's own environment is read.
  A process whose ancestors cannot all be seen is refused (`hidden_ancestry`): one in a PID
  namespace that this user may have made (`unshare -rpf --mount-proc`), that is any PID namespace
  but the system's first unless the process runs, not as root, in the system's first user
  namespace (a container the person was put in: such a user cannot make PID namespaces).
- From the viewer (`viewer`), the process that sent the answer (`sent_by`, the browser found
  behind the connection) must be found, and is read the same way: a sender that cannot be found
  (it exited at once, or is another user's) is refused.
- From the harness's prompt (`prompt`, `harness_prompt`): the answer is recorded by the hook the
  harness ran for the person's prompt (`UserPromptSubmit`), whose standard input is a socket the
  harness itself made (`SO_PEERCRED` names the harness's process, an ancestor of this one, known
  by its program, itself started outside any agent's process tree). A hook an agent runs from
  its shell, whatever its environment, reads from something the agent made (a pipe, a file, a
  socket of its own), never from the harness.
- `confirm_at_terminal(request, approved)`: for an answer from the command line, the person
  confirms at the controlling terminal (`/dev/tty`), not on standard input: the step's question
  is shown (`question`: its prompt, then each value it names, as the answer records them in
  `shown`) with a one-time code, and the answer counts only when that code is typed back. An
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

import json
import os
import secrets
import shlex
import unicodedata
from collections.abc import Callable
from typing import Any

from tether.engine.answers import Human
from tether.engine.names import RequestType
from tether.errors import TetherError

# Where a person's answer comes from: the command line, the viewer, a program of theirs through
# the Python API, or the harness's prompt (recorded by the guard's hook for it).
SOURCES = ("cli", "viewer", "api", "prompt")

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
# The inode numbers Linux gives the first PID and user namespaces (PROC_PID_INIT_INO and
# PROC_USER_INIT_INO), whatever the machine.
_FIRST_PID_NAMESPACE = 0xEFFFFFFC
_FIRST_USER_NAMESPACE = 0xEFFFFFFD
CODE_LETTERS = "abcdefghjkmnpqrstuvwxyz"
CODE_LENGTH = 5
_MAX_ANCESTORS = 256
_ELSEWHERE = (
    "A person answers a human step from their own terminal (tether approve or reject), in the "
    "viewer (tether view), or by typing 'tether: approve' into the agent's prompt."
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


def _environ_mark(pid: int) -> str | None:
    """The agent mark in the starting environment of `pid`, if any (None for a process whose
    environment is not this user's to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return _marked(handle.read())
    except OSError:  # another user's process (sudo): its environment is not ours to read
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
        pid = _own_pid()
    for _ in range(_MAX_ANCESTORS):
        found = _parent(pid)
        if found is None:
            return None
        parent, name = found
        mark = _environ_mark(pid)
        if mark is not None:
            return f"process {pid} ({name}) carries {mark} ({AGENT_MARKS[mark]})"
        program = _program(pid)
        if program is not None:
            return f"process {pid} ({name}) is {AGENT_PROGRAMS[program]}"
        if parent <= 1:
            return None
        pid = parent
    return None


def _own_pid() -> int:
    """This process as `/proc` numbers it (in a child PID namespace over its parent's `/proc`,
    `os.getpid()` is another number)."""
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def hidden_ancestry() -> str | None:
    """Why this process's ancestors cannot all be seen, or None when they can (or there is no
    `/proc`, off Linux): it runs in a PID namespace other than the system's first, one that this
    user may have made (`unshare -rpf --mount-proc`: its first process has no parent to read).
    A user who is not root in the system's first user namespace cannot make one, so there
    (a container the person works in) the namespace is taken as given."""
    if not os.path.isdir("/proc/self"):
        return None
    try:
        pid_ns = os.stat("/proc/self/ns/pid").st_ino
        user_ns = os.stat("/proc/self/ns/user").st_ino
    except OSError:
        return "its namespaces cannot be read from /proc/self/ns"
    if pid_ns == _FIRST_PID_NAMESPACE:
        return None
    if user_ns == _FIRST_USER_NAMESPACE and os.geteuid() != 0:
        return None
    return (
        f"it runs in a PID namespace of its own (pid:[{pid_ns}]), which hides the processes "
        "that started it"
    )


def _stdin_peer() -> int | None:
    """The process that made the socket on standard input (`SO_PEERCRED`), or None when
    standard input is not a socket."""
    import socket
    import struct

    try:
        sock = socket.socket(fileno=os.dup(0))
    except OSError:
        return None
    with sock:
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
    return struct.unpack("3i", creds)[0] or None


def _ancestors() -> list[int]:
    """This process's ancestors, nearest first, as far as `/proc` shows them."""
    found, pid = [], _own_pid()
    for _ in range(_MAX_ANCESTORS):
        parent = _parent(pid)
        if parent is None or parent[0] <= 0:
            break
        found.append(pid := parent[0])
    return found


def harness_prompt() -> str | None:
    """The harness whose hook this process is (for a person's prompt), or None: its standard
    input is a socket made by an ancestor that is an agent harness by its program, and that
    harness was not itself started inside an agent's process tree (a script an agent names
    `claude`). What an agent's shell runs reads from something the agent made, so it is
    never this."""
    peer = _stdin_peer()
    ancestors = _ancestors()
    if peer is None or peer not in ancestors:
        return None
    program = _program(peer)
    above = ancestors[ancestors.index(peer) + 1 : ancestors.index(peer) + 2]
    if program is None or _environ_mark(peer) is not None:
        return None
    if above and agent_ancestor(above[0]) is not None:
        return None
    return AGENT_PROGRAMS[program]


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


def source(by: str) -> str:
    """`by`, when it is one of `SOURCES`; else `invalid_value`."""
    if by not in SOURCES:
        raise TetherError(
            "invalid_value", f"a human answer comes from {', '.join(SOURCES)}, not {by!r}"
        )
    return by


def gate(
    answer: Human, sent_by: int | None, trace: str, open_steps: Callable[[], list[dict[str, Any]]]
) -> Human:
    """`answer` once it has passed as a person's (`require_person`, by where it says it came
    from); one from the command line is first confirmed at the controlling terminal
    (`confirm_at_terminal`) and then answers the step the person saw: the open human step its
    `step` names, else the first (`open_steps` gives the execution `trace`'s open requests)."""
    require_person(answer.approved, source(answer.by), sent_by)
    if answer.by != "cli":
        return answer
    human = [r for r in open_steps() if r.get("type") == RequestType.HUMAN]
    request = next((r for r in human if answer.step in (None, r.get("step"))), None)
    if request is None:  # the engine says what is wrong
        return answer
    confirm_at_terminal(request, answer.approved, trace)
    return Human(answer.approved, answer.by, answer.note, request["step"])


def require_person(approved: bool, by: str, sent_by: int | None = None) -> None:
    """Refuse (`human_only`) a person's answer that did not come from outside the agent's
    reach, by where it says it came from (`by`): from the harness's prompt, this process must
    be the harness's own hook (`harness_prompt`); from anywhere else, neither this process nor
    (from the viewer) `sent_by`, the process the answer came from, runs inside an agent's
    process tree, and this process's ancestors can all be seen (`hidden_ancestry`); a viewer's
    sender that cannot be found is refused."""
    verb = "approve" if approved else "reject"
    if by == "prompt":
        if harness_prompt() is None:
            raise TetherError(
                "human_only",
                f"an answer ({verb}) from the harness's prompt is recorded only by the hook "
                "the harness runs for a person's prompt, and this process is not one. "
                + _ELSEWHERE,
            )
        return
    found = hidden_ancestry() or agent_ancestor()
    if found is None and by == "viewer":
        found = (
            "the process that sent it cannot be found (it exited, or is not this user's)"
            if sent_by is None
            else agent_ancestor(sent_by)
        )
    if found is not None:
        raise TetherError(
            "human_only",
            f"tether {verb} runs under an agent or cannot tell ({found}), and only a person "
            f"answers a human step. {_ELSEWHERE}",
        )


def _plain(text: str) -> str:
    """`text` with every character a terminal would act on rather than print (controls, bidi
    overrides, zero-width marks) written as its JSON escape, so what is printed is what is read,
    and a value printed as JSON still reads back as itself."""
    return "".join(
        json.dumps(c)[1:-1] if unicodedata.category(c)[0] == "C" or c in "\u2028\u2029" else c
        for c in text
    )


def question(request: dict[str, Any], trace: str) -> str:
    """The human step `request` of the execution at `trace` as the terminal shows it: its name,
    its prompt as written, then each value the prompt names (the request's `shows`, which the
    answer records as `shown`) as `  $VAR.path = JSON`, one a line. Every line ends in a newline."""
    asks = str(request.get("prompt") or request.get("name") or "").strip()
    lines = [_plain(trace), f"The human step {_plain(repr(request.get('name')))} asks:"]
    lines += [f"  {_plain(line)}" for line in asks.splitlines()]
    shows = request.get("shows") or {}
    if shows:
        lines.append("with these values:")
        lines += [
            f"  {_plain(name)} = {_plain(json.dumps(value, ensure_ascii=False))}"
            for name, value in shows.items()
        ]
    return "".join(f"{line}\n" for line in lines)


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
    with os.fdopen(fd, "r+b", buffering=0) as tty:
        tty.write(
            f"{question(request, trace)}Type {code} to {verb} it (anything else cancels): ".encode(
                "utf-8", "replace"
            )
        )
        typed = tty.readline(1024).decode("utf-8", "replace").strip()
    if typed != code:
        raise TetherError(
            "human_only", f"not confirmed: the code typed at the terminal was not {code}"
        )
