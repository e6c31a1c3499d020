"""Ctrl-C while the ``courtly`` command is still loading: exit code 4, one line, no traceback.

The interrupt is made to land inside an import the command makes while it starts: a
module shadowing ``click`` (first on ``PYTHONPATH``) sends the process SIGINT as it is
imported, as a terminal's Ctrl-C would, before any handler of courtly's is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from courtly.exit_codes import ExitCode

_SHADOW = (
    "import os, signal\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "os.kill(os.getpid(), signal.SIGINT)\n"
    "import time\n"
    "time.sleep(60)\n"
)
"""SIGINT this process; the KeyboardInterrupt is raised at the next bytecode, before the
sleep (the sleep only keeps a broken interrupt from going unnoticed). First the handler a
terminal's foreground process starts with: a process started with SIGINT ignored (a
background job of a shell without job control, as some CI runners start their commands)
keeps it ignored, Python installs no handler, and the Ctrl-C this test stands for could
not reach it. The test's own process may have been started so; before, the test passed
there only when an in-process crawl earlier in the same process had left a handler of
its own on SIGINT (reset to the default in a child), which made it depend on the order
of the tests."""


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("courtly")
    assert script.exists(), script
    return [sys.executable, str(script)]


@pytest.mark.parametrize(
    "command",
    [_console_script(), [sys.executable, "-m", "courtly"]],
    ids=["console-script", "python-m"],
)
def test_ctrl_c_while_starting_exits_with_the_signal_code_and_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    shadow = tmp_path / "shadow" / "click"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(_SHADOW)
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    done = subprocess.run(
        [*command, "crawl", "--help"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == ExitCode.SIGNAL, (done.returncode, done.stderr)
    assert done.stderr == "courtly: interrupted\n"
    assert done.stdout == ""
