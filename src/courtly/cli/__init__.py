"""The ``courtly`` command line: thin, arguments -> config -> run.

``courtly crawl``, ``courtly status``, ``courtly export``, ``courtly changes``,
``courtly sandbox`` and ``courtly dashboard``, one module per command
(``courtly.cli.<name>_command``).
Every crawl flag has a TOML twin (``--config FILE``; flags win over the file).

Input is checked before anything is written: a refused run (exit code 2, see
:mod:`courtly.exit_codes`) prints ``Error: ...`` and leaves no state directory.
No input ends in a traceback: every error courtly expects is a message.
"""

from __future__ import annotations

import click

from courtly import __version__
from courtly.cli.changes_command import changes
from courtly.cli.crawl_command import crawl
from courtly.cli.export_command import export
from courtly.cli.status_command import status
from courtly.event_loop import run_async
from courtly.observe.command import dashboard
from courtly.sandbox.cli import sandbox

__all__ = ["main", "run_async"]


@click.group()
@click.version_option(__version__, prog_name="courtly")
def main() -> None:
    """courtly: a polite, prioritised, resumable web crawler."""


main.add_command(sandbox)
main.add_command(dashboard)
main.add_command(crawl)
main.add_command(status)
main.add_command(export)
main.add_command(changes)
