"""The guard's rule engine: from a configuration to a decision on one tool call.

Owns the configuration (`config`, `profiles`, the built-in rules as data in `rule`), its
compiled and cached plan (`plan`), what a rule is made of (`triggers`, `patterns`,
`conditions`, `messages`), the reading of a shell command line (`shell`), per-session state
(`state`), the turn classifier (`classifier`), the one deadline (`deadline`), the guard itself
(`ruleset`: `Guard`, `GuardSession`, `Decision`) and the configuration's own fixture cases
(`fixtures`). It knows no harness, no hook payload and no workflow execution: it never imports
`tether.guard.binding` or `tether.guard.harness` (`tests/guard/test_layers.py`).
"""
