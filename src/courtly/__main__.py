"""``python -m courtly`` is the ``courtly`` command."""

import sys

try:
    from courtly.cli import main
except KeyboardInterrupt:  # Ctrl-C while starting up, before any handler: nothing done yet
    print("courtly: interrupted while starting; nothing was done", file=sys.stderr)
    sys.exit(4)  # courtly.exit_codes.ExitCode.SIGNAL (not importable half-way)

main()
