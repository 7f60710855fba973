"""``python -m animkit`` is the ``animkit`` command."""

from .cli import console_main

console_main()
