"""The command frame every Tether command line shares: the `tether` command's, and those of
the MCP server, the viewer, bot tools, tree tests, the guard and project set-up.

Owns:
- the parser (`args`: a value is never taken for an option);
- the output contract and the parse/help/report frame around a command (`output`);
- the verbs as commands (`verb_table`: the table and the verb call each makes, which the guard also
  reads to replay a `tether` line);
- how files written for other programs start this installation of `tether` (`launch`).

It does not decide what any command family does (each edge's `cli` module does) or dispatch the
`tether` command (`tether.cli.main`). It imports no edge, so every edge may import it; being on
the start-up path of every command, this file itself imports none of its modules (each command
imports the ones it needs).
"""
