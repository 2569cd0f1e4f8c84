"""``python -m tether.cli``."""

from ._app import main

main()
