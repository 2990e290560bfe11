"""``python -m greenops.cli``: the ``greenops`` command, as sharded runs and tests start it."""

import sys

from greenops.cli import main

sys.exit(main())
