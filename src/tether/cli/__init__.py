"""The command-line edge: parse arguments, call the verb layer, print JSON.

This package is on the start-up path of every command, so it imports nothing. How files written
for other programs start `tether` is `tether.cli.launch`'s.
"""
