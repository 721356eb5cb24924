"""The guard's workflow binding: an agent session bound to a Tether execution.

Owns which session is bound to which execution and what that binding allows (`binder`), the
reading of a tool call as a step's tool or a Tether command (`steptools`), and a recorded
session's binding, rerun in memory when a transcript is replayed (`recorded`). It reaches the
runtime only through the verb layer (`tether.verbs`). It decides no rule (`tether.guard.rules`
does) and reads no hook payload or harness file (`tether.guard.harness` does): it imports the
rule engine, never the harness edge (`tests/guard/test_layers.py`).
"""
