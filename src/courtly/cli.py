"""The ``courtly`` command line: thin, arguments -> config -> run."""

from __future__ import annotations

import click

from courtly import __version__


@click.group()
@click.version_option(__version__, prog_name="courtly")
def main() -> None:
    """courtly: a polite, prioritised, resumable web crawler."""
