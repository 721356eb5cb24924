"""`python -m tether`: the `tether` command, for an environment whose scripts are not on PATH."""

from tether.cli.main import main

raise SystemExit(main())
