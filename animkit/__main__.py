"""``python -m animkit`` is the ``animkit`` command."""

import sys

from .cli import main

sys.exit(main())
