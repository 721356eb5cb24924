"""The pure runtime: tree semantics, answers, the protocol gate, and replay."""
