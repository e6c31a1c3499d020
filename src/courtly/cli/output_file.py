"""A file the user names for a command's output (``export -o FILE``, ``--summary-json
FILE``): written whole, or not at all, without clobbering what the name stands for.

* A regular file, or a name that does not exist yet: the text goes to ``FILE.partial``
  beside it, renamed over ``FILE`` once written, so a reader never sees half of it and a
  failed write leaves the old file as it was. A symbolic link to a regular file writes its
  target the same way: the link stays a link.
* Anything else (a device such as ``/dev/stdout`` or ``/dev/null``, a named pipe, a
  socket): written in place, as a shell's ``>`` would. Renaming a file over it would
  replace the device node or the pipe with a regular file (with root's rights, for every
  program on the machine).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["written_whole"]


def _renamed_into_place(path: Path) -> Path | None:
    """The regular file ``path`` names (its link followed) or will name; ``None`` for a
    device, a pipe or a socket."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return path  # a new file (or a dangling link: replaced, as a new file)
    return Path(os.path.realpath(path)) if stat.S_ISREG(mode) else None


@contextlib.contextmanager
def written_whole(path: Path) -> Iterator[TextIO]:
    """Open ``path`` for writing UTF-8 text (see the module's docstring).

    An ``OSError`` from a write names ``path`` (not the temporary file) when it names no
    file of its own; the temporary file is gone whatever happens.
    """
    target = _renamed_into_place(path)
    if target is None:
        with path.open("w", encoding="utf-8") as out:
            yield out
        return
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            yield out
        partial.replace(target)
    except OSError as error:
        if error.filename is None or error.filename == str(partial):
            error.filename = str(path)  # name what the user named
        raise
    finally:
        partial.unlink(missing_ok=True)
