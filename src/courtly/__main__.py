"""``python -m courtly`` is the ``courtly`` command."""

from courtly.cli import main

main()
