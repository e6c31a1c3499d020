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

_SHADOW = "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nimport time\ntime.sleep(60)\n"
"""SIGINT this process; the KeyboardInterrupt is raised at the next bytecode, before the
sleep (the sleep only keeps a broken interrupt from going unnoticed)."""


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
