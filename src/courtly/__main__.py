"""``python -m courtly`` is the ``courtly`` command."""

from courtly.start import main

main()
