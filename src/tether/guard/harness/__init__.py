"""The guard's harness edge: where agents' hook events come in and answers go out.

Owns Claude Code's hooks (`hooks`) and what Claude Code sends and keeps (`claude`: event names,
transcript, settings files), the adapters of Codex, Gemini CLI and Cursor (`adapters`),
the HTTP server a hook may post to (`serve`), installing the hooks into each harness's settings
(`install`), the session state kept on disk between hook processes (`session_store`), what the
guard does when it cannot decide (`failsafe`) and the replay of a recorded transcript
(`transcript`). It decides no rule itself (`tether.guard.rules`) and binds no execution itself
(`tether.guard.binding`); the guard's command line (`tether.guard.cli`) sits above it.
"""
