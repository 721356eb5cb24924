"""The `tether` command: its entry point (`main`) and `tether list` (`listing`).

The frame it shares with every other command line (parser, output, the verbs as commands,
launch) is `tether.command`'s; nothing in Tether imports this package but `python -m tether`.
This package is on the start-up path of every command, so it imports nothing.
"""
