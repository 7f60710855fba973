"""``python -m animkit`` is the ``animkit`` command."""

from animkit.apps.cli import console_main

console_main()
