"""``python -m planbook``: the ``planbook`` command, for environments whose scripts folder is not
on PATH (a kernel's own interpreter, a git filter)."""

from planbook.surfaces.cli.main import main

raise SystemExit(main())
