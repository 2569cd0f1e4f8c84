"""The ``tether`` command line (typer + rich): run, serve, validate, schema, inject, ps, and
hooks (test, events, list, runs, enable, disable, dry-run).

Importing this package loads typer only; each command imports what it needs when it runs, so
``tether --help`` stays fast.
"""

from ._app import app as app
from ._app import main as main

__all__ = ["app", "main"]
