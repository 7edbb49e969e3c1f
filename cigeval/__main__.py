"""``python -m cigeval ...``: the ``cigeval`` command."""

import sys

from cigeval.cli import main

sys.exit(main())
