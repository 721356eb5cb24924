"""Bot tools: a generated MCP tool surface per workflow, for chat clients that navigate by intent.

Owns the surface a tree of phases and actions yields (`surface`), bot folders and their build
into tree files (`folder`), the tool operations over the verbs (`session`) and the `tether bot`
commands (`cli`); the MCP server that serves them is `tether.mcp.bot`, so imports run one way
(`mcp` uses `bot`, never the reverse). It holds no workflow state: every
tool call reads the execution document through `tether.verbs.Runtime`. Importing this package
imports nothing.
"""
