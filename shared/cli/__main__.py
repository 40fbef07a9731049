"""``python -m shared.cli``: the same as the ``dagq`` console script."""

import sys

from shared.cli import main

sys.exit(main())
