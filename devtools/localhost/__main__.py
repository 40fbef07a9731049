"""``python -m devtools.localhost``."""

import sys

from devtools.localhost.cli import main

sys.exit(main())
