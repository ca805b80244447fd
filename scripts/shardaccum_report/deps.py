"""The third-party packages each tool needs, checked before anything imports them: a missing package
is a setup problem with a fix, not a bug in the tool (exit status 2)."""

from __future__ import annotations

import sys


def require(prog: str, modules: tuple[str, ...]) -> None:
    """Exits with status 2 and a message naming the missing package and the fix, if one of
    `modules` cannot be imported by this interpreter. --help needs none of them: it is not checked."""
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        return
    for module in modules:
        try:
            __import__(module)
        except ModuleNotFoundError:
            print(f"{prog}: error: Python package '{module}' is missing for {sys.executable}: run "
                  "scripts/install_deps.sh and use .venv/bin/python (or a python3 that has "
                  "scripts/requirements.txt installed)", file=sys.stderr)
            sys.exit(2)
