"""``python -m tether.testing``: serve FakeLLM until Ctrl-C (see ``--help``)."""

import sys

from ._main import main

sys.exit(main())
