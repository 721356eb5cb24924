"""The viewer's commands: `tether view`, `tether show` and `tether render`.

Owns their arguments (with the CLI's own table-driven parser), their output (a drawing for
`show`; JSON on stdout for `view` and `render`; errors as JSON on stderr with the CLI's exit
codes) and the choice of what to load. `tether.cli.main` imports this module only when one of
these commands runs, so nothing here weighs on the step path. It does not derive statuses, draw
or serve (the sibling modules do).
"""

from __future__ import annotations

import os
import sys

from tether.command.args import Command, Parsed
from tether.command.output import emit, run_command
from tether.errors import EXIT_OK, TetherError

VIEW = Command(
    "view",
    "serve the live viewer page for the executions in a folder or a database",
    ("PATH",),
    0,
    values=("--port",),
    help="PATH is a folder (default: the current one) or a database (postgresql://user@host/db); "
    "given one execution (a file, postgresql://...#name) it serves the place that holds it and "
    "opens it. The page is served on 127.0.0.1; --port picks the port (default: any free one). "
    "Stop with Ctrl-C.",
)
SHOW = Command(
    "show",
    "draw an execution's tree, statuses and cursor in the terminal",
    ("TRACE",),
    1,
    values=("--at",),
    flags=("--color", "--no-color"),
    help="--at K draws the execution as it was after its first K trace entries. Colour is on "
    "when stdout is a terminal, unless --no-color (or NO_COLOR) says otherwise.",
)
RENDER = Command(
    "render",
    "write a tree file or an execution as an SVG picture",
    ("SOURCE",),
    1,
    values=("-o", "--output", "--at"),
    help="SOURCE is a tree file (YAML/JSON) or an execution; -o FILE.svg is where to write. "
    "--at K pictures an execution after its first K trace entries.",
)


def view_main(argv: list[str]) -> int:
    return run_command(VIEW, argv, _view)


def show_main(argv: list[str]) -> int:
    return run_command(SHOW, argv, _show)


def render_main(argv: list[str]) -> int:
    return run_command(RENDER, argv, _render)


def _view(parsed: Parsed) -> int:
    from tether.viewer.server import serve

    port = parsed.number("--port")
    serve(str(parsed.args.get("PATH") or "."), port=port or 0, ready=_announce)
    return EXIT_OK


def _announce(address: object) -> None:
    emit(address)
    sys.stdout.flush()


def _show(parsed: Parsed) -> int:
    from tether.viewer.model import snapshot
    from tether.viewer.source import load_execution
    from tether.viewer.terminal import draw

    at = parsed.number("--at")
    execution = load_execution(str(parsed.args["TRACE"]))
    snap = snapshot(execution.tree, execution.state, execution.trace, at)
    if "--color" in parsed.flags:
        colour = True
    elif "--no-color" in parsed.flags or os.environ.get("NO_COLOR"):
        colour = False
    else:
        colour = sys.stdout.isatty()
    sys.stdout.write(draw(execution.tree, snap, total=len(execution.trace), colour=colour))
    return EXIT_OK


def _render(parsed: Parsed) -> int:
    from tether.files import write_atomic
    from tether.viewer.model import snapshot
    from tether.viewer.source import load_tree_or_execution
    from tether.viewer.svg import render_svg

    output = parsed.options.get("-o") or parsed.options.get("--output")
    if not output:
        raise TetherError("usage", f"render needs -o FILE.svg; usage: {RENDER.usage()}")
    at = parsed.number("--at")
    tree, execution = load_tree_or_execution(str(parsed.args["SOURCE"]))
    if execution is None and at is not None:
        raise TetherError("usage", "--at applies to an execution, not to a tree file")
    snap = None
    if execution is not None:
        snap = snapshot(tree, execution.state, execution.trace, at)
    svg = render_svg(tree, snap)
    try:
        write_atomic(output, svg)
    except OSError as exc:
        raise TetherError(
            "invalid_value", f"cannot write {output}: {exc.strerror}", path=output
        ) from None
    emit({"written": os.path.abspath(output), "tree": tree["name"], "execution": bool(execution)})
    return EXIT_OK
