"""The command-line edge: parse arguments, call the verb layer, print JSON."""
