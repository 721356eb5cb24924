"""Tree tests: recorded walks of a tree, run without an agent (`tether test`).

- `cases.py`: the case file formats (Tether's and abtree's), their JSON Schema, reading them
- `run.py`: running a case through the verbs and comparing it with what it expected
- `cli.py`: the `tether test` command and its report
"""
