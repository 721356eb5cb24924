"""The MCP edge: Tether's runtime served to agents over the Model Context Protocol.

Owns the runtime tools (`tools`), the server that carries them and the protocol as its
instructions (`server`), a bot's generated tools (`bot`), the Streamable HTTP app with its
guards (`http`), the client configuration writers (`install`) and the `tether mcp` command
(`cli`). It holds no runtime
logic: every tool parses its arguments, calls one `tether.verbs.Runtime` verb and formats the
answer. Importing this package imports nothing; only `tether mcp` loads the MCP SDK.
"""
