"""``python -m worker_agent``: the same as the ``dagq-worker`` console script."""

import sys

from worker_agent.cli import main

sys.exit(main())
