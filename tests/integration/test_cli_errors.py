"""Every bad input the command line refuses: its message, its exit code, no traceback, no trace.

Each case runs ``courtly ...`` in-process (click's runner) in a fresh directory and
checks that the run is refused with the expected exit code and message, that no
traceback escapes, and that nothing was written: every file in the directory is
byte for byte what the case set up (so no state directory appears, and a damaged
state file is never re-created).

The same cases generate the table of docs/cli.md (between the ``bad-inputs``
markers); ``test_the_docs_table_is_what_the_cases_produce`` fails when they differ.
Regenerate it with::

    COURTLY_WRITE_DOCS=1 .venv/bin/pytest tests/integration/test_cli_errors.py
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.fifo import read_fifo, read_fifo_done
from tests.file_limit import with_file_limit

from courtly.archive.catalogue import CatalogueEntry
from courtly.cli import main as cli_main
from courtly.cli import run_async
from courtly.exit_codes import ExitCode
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import FrontierCounts
from courtly.store.sqlite import SqliteStore
from courtly.store.sqlite_schema import open_database

UA = "mybot/1.0 (+https://example.org/bot)"
SEED = "http://www.example.test/"
CRAWL = ["crawl", "--state", "S", "--user-agent", UA]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BEGIN, END = "<!-- bad-inputs:begin -->", "<!-- bad-inputs:end -->"
LONG_URL = "http://" + "a" * 9000 + ".test/"

Setup = Callable[[Path], None]


@dataclass(frozen=True, slots=True)
class Case:
    """One bad input: what is run, what it must say (a regex), the exit code it must give."""

    what: str
    args: tuple[str, ...]
    message: str
    code: int = ExitCode.REFUSED
    setup: Setup | None = None


# -- set-ups ------------------------------------------------------------------------------


def _toml(text: str) -> Setup:
    def setup(root: Path) -> None:
        (root / "crawl.toml").write_text(text, encoding="utf-8")

    return setup


def _a_file(name: str) -> Setup:
    def setup(root: Path) -> None:
        (root / name).write_text("not a directory\n", encoding="utf-8")

    return setup


def _state_file(damage: Callable[[bytes], bytes]) -> Setup:
    """``S/frontier.sqlite3`` of a crawl with a catalogue, then damaged, and a WARC beside it."""

    def setup(root: Path) -> None:
        path = root / "S" / "frontier.sqlite3"
        path.parent.mkdir()

        async def make() -> None:
            store = SqliteStore(path, QueueConfig())
            entries = [CatalogueEntry(f"{SEED}{i}", status=200) for i in range(1500)]
            await store.record(entries)
            await store.aclose()

        run_async(make())
        path.write_bytes(damage(path.read_bytes()))
        (root / "S" / "warc").mkdir()
        (root / "S" / "warc" / "courtly-00000.warc.gz").write_bytes(b"\x1f\x8b old records")

    return setup


def _foreign_database(root: Path) -> None:
    (root / "S").mkdir()
    conn = sqlite3.connect(root / "S" / "frontier.sqlite3")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()


def _warc_without_state(root: Path) -> None:
    (root / "S" / "warc").mkdir(parents=True)
    (root / "S" / "warc" / "courtly-00000.warc.gz").write_bytes(b"\x1f\x8b old records")


def _partitioned(root: Path) -> None:
    (root / "S").mkdir()
    (root / "S" / "partitions.json").write_text(json.dumps({"processes": 2}) + "\n")


def _empty_dir(root: Path) -> None:
    (root / "S").mkdir()


def _stale_status(root: Path) -> None:
    """A ``status.json`` claiming a running crawl beside a state file of random bytes."""
    _state_file(lambda data: os.urandom(len(data)))(root)
    live = {"running": True, "frontier": {}, "last_run": {"pages": 7}}
    (root / "S" / "status.json").write_text(json.dumps(live))


def _random(data: bytes) -> bytes:
    return bytes((7 * i + 13) % 256 for i in range(len(data)))  # deterministic garbage


def _flag(flag: str, value: str, message: str, *before: str) -> Case:
    """``courtly crawl ... [BEFORE...] FLAG VALUE SEED``, named ``FLAG VALUE``."""
    return Case(f"{flag} {value}", (*CRAWL, *before, flag, value, SEED), message)


def _in_toml(what: str, text: str, message: str, *, seeds: tuple[str, ...] = (SEED,)) -> Case:
    """``courtly crawl ... --config crawl.toml SEED`` with ``text`` as crawl.toml."""
    return Case(what, (*CRAWL, "--config", "crawl.toml", *seeds), message, setup=_toml(text))


def _on_state(what: str, setup: Setup, message: str) -> Case:
    """``courtly crawl ... SEED`` over the state directory ``setup`` makes."""
    return Case(what, (*CRAWL, SEED), message, setup=setup)


CASES: tuple[Case, ...] = (
    # -- required settings and seeds
    Case("no --state", ("crawl", "--user-agent", UA, SEED), r"--state DIR is required"),
    Case("no --user-agent", ("crawl", "--state", "S", SEED), r"--user-agent is required"),
    Case(
        "a User-Agent without a contact",
        ("crawl", "--state", "S", "--user-agent", "mybot/1.0", SEED),
        r"carries no contact",
    ),
    Case(
        "bad seeds (every one listed, shortened)",
        (*CRAWL, SEED, "not a url", LONG_URL, "http:///path", "ftp://example.test/"),
        r"4 of 5 seeds are not crawlable.*'not a url'.*\(9013 characters\).*'http:///path'",
    ),
    Case("no seeds, no crawl to resume", tuple(CRAWL), r"nothing to crawl"),
    Case("a missing --seeds-file", (*CRAWL, "--seeds-file", "nope.txt"), r"cannot read seeds"),
    Case(
        "a missing --hosts-file",
        (*CRAWL, "--hosts-file", "nope.hosts", SEED),
        r"--hosts-file nope.hosts: No such file or directory",
    ),
    # -- numbers
    _flag("--max-time", "-1", r"--max-time must be .* > 0"),
    _flag("--max-time", "0", r"--max-time must be .* > 0"),
    _flag("--max-time", "inf", r"--max-time must be"),
    _flag("--max-time", "abc", r"not a valid float"),
    _flag("--max-pages", "-5", r"--max-pages must be .* >= 1"),
    _flag("--max-pages", "0", r"--max-pages must be"),
    _flag("--max-attempts", "0", r"--max-attempts must be"),
    _flag("--max-requests-per-host", "0", r"--max-requests-per-host must be"),
    _flag("--max-queued-per-host", "0", r"--max-queued-per-host must be"),
    _flag("--min-delay", "nan", r"--min-delay must be"),
    _flag("--min-delay", "-1", r"--min-delay must be .* >= 0"),
    Case(
        "--max-delay below --min-delay",
        (*CRAWL, "--min-delay", "2", "--max-delay", "1", SEED),
        r"--max-delay \(1 s\) must not be below --min-delay \(2 s\)",
    ),
    _flag("--delay-factor", "-1", r"--delay-factor must be"),
    _flag("--progress-interval", "0", r"--progress-interval must be .* >= 0.1"),
    _flag("--concurrency", "0", r"--concurrency must be"),
    _flag("--per-ip", "0", r"--per-ip must be"),
    _flag("--processes", "0", r"--processes must be"),
    _flag("--timeout", "0", r"--timeout must be .* > 0"),
    _flag("--connect-timeout", "-1", r"--connect-timeout must be"),
    _flag("--max-body", "0", r"--max-body must be"),
    _flag("--back-queues", "0", r"--back-queues must be"),
    _flag("--max-depth", "-1", r"--max-depth must be .* >= 0"),
    _flag("--stop-grace", "-1", r"--stop-grace must be"),
    Case("--include '('", (*CRAWL, "--include", "(", SEED), r"bad --include regex '\('"),
    Case("--exclude '['", (*CRAWL, "--exclude", "[", SEED), r"bad --exclude regex '\['"),
    Case(
        "--exclude '*.pdf' (a shell glob)",
        (*CRAWL, "--exclude", "*.pdf", SEED),
        r"bad --exclude regex '\*\.pdf': .* not a shell glob: --exclude '\.\*\\\.pdf'\?\)",
    ),
    _flag("--scope", "bogus", r"Invalid value for '--scope'"),
    Case(
        "--crawl-name with a space",
        (*CRAWL, "--store", "redis://127.0.0.1:6379/0", "--crawl-name", "a b", SEED),
        r"--crawl-name must be a non-empty name without colons, braces or spaces, not 'a b'",
    ),
    Case(
        "--store with a query parameter the Redis client does not take",
        (*CRAWL, "--store", "redis://u:pw@127.0.0.1:6379/0?bogus=1", "--crawl-name", "c", SEED),
        r"--store redis://u:\*\*\*@127\.0\.0\.1:6379/0\?bogus=1: .*unexpected keyword "
        r"argument 'bogus'",
    ),
    Case(
        "--store with a port that is no number",
        (*CRAWL, "--store", "redis://127.0.0.1:port/0", "--crawl-name", "c", SEED),
        r"--store redis://127\.0\.0\.1:port/0: Port could not be cast to integer",
    ),
    Case(
        "export: --store with a bad ?wait",
        ("export", "--store", "redis://127.0.0.1:6379/0?wait=x", "--crawl-name", "c"),
        r"wait and wait_ms must be numbers",
    ),
    Case(
        "status: --crawl-name with a brace",
        ("status", "--store", "redis://127.0.0.1:6379/0", "--crawl-name", "x{y}"),
        r"--crawl-name must be a non-empty name without colons, braces or spaces, not 'x\{y\}'",
    ),
    _flag("--recrawl-share", "1.5", r"--recrawl-share must be", "--recrawl"),
    Case(
        "--recrawl-max-interval below --recrawl-min-interval",
        (*CRAWL, "--recrawl", "--recrawl-min-interval", "60", "--recrawl-max-interval", "10", SEED),
        r"--recrawl-max-interval \(10 s\) must not be below",
    ),
    # -- config files
    Case("a missing --config", (*CRAWL, "--config", "nope.toml", SEED), r"cannot read config"),
    _in_toml("a TOML syntax error", "[crawl\n", r"cannot read config file crawl.toml"),
    _in_toml(
        "TOML: a top-level key beside [crawl]",
        'min-delay = 5\n[crawl]\nscope = "host"\n',
        r"top-level 'min-delay' beside the \[crawl\] table",
    ),
    _in_toml("TOML: an unknown key", "[crawl]\nspeed = 5\n", r"unknown setting 'speed'"),
    _in_toml(
        'TOML: min-delay = "fast"',
        '[crawl]\nmin-delay = "fast"\n',
        r"min-delay in crawl.toml must be a number of seconds >= 0, not 'fast'",
    ),
    _in_toml(
        "TOML: seeds = 5",
        "[crawl]\nseeds = 5\n",
        r"seeds in crawl.toml must be a list of strings",
        seeds=(),
    ),
    _in_toml(
        "TOML: max-pages = 2.5",
        "[crawl]\nmax-pages = 2.5\n",
        r"max-pages in crawl.toml must be a whole number",
    ),
    _in_toml(
        "TOML: allow-private-networks = 1",
        "[crawl]\nallow-private-networks = 1\n",
        r"allow-private-networks in crawl.toml must be true or false",
    ),
    # -- where things are written
    Case(
        "--state under a file",
        ("crawl", "--state", "F/S", "--user-agent", UA, SEED),
        r"cannot create the state directory F/S: F is not a directory",
        setup=_a_file("F"),
    ),
    Case(
        "--state is a file",
        ("crawl", "--state", "F", "--user-agent", UA, SEED),
        r"'F' is a file",
        setup=_a_file("F"),
    ),
    Case(
        "--summary-json in a missing directory",
        (*CRAWL, "--summary-json", "nowhere/summary.json", SEED),
        r"the directory of --summary-json nowhere does not exist",
    ),
    # -- state directories
    _on_state(
        "WARC files but no state file",
        _warc_without_state,
        r"S/frontier.sqlite3 is missing.*new --state directory",
    ),
    Case(
        "--store memory over WARC files",
        (*CRAWL, "--store", "memory", SEED),
        r"--store memory crawl keeps no state",
        setup=_warc_without_state,
    ),
    _on_state(
        "an empty (0 bytes) state file",
        _state_file(lambda data: b""),
        r"S/frontier.sqlite3: the state file is empty",
    ),
    _on_state(
        "a truncated state file",
        _state_file(lambda data: data[: len(data) // 2]),
        r"S/frontier.sqlite3: the state file is truncated",
    ),
    _on_state(
        "random bytes as the state file",
        _state_file(_random),
        r"S/frontier.sqlite3: not a courtly state file",
    ),
    _on_state(
        "a corrupt page in the state file",
        _state_file(lambda data: data[:100] + _random(data[100:4096]) + data[4096:]),
        r"S/frontier.sqlite3: the state file is corrupt",
    ),
    _on_state(
        "another application's SQLite file",
        _foreign_database,
        r"S/frontier.sqlite3: an SQLite database that is not a courtly state file",
    ),
    Case(
        "a partitioned state, --processes 1",
        (*CRAWL, "--processes", "1", SEED),
        r"partitioned over 2 processes; resume it with --processes 2",
        setup=_partitioned,
    ),
    # -- status and export
    Case("status: no such directory", ("status", "--state", "S"), r"does not exist"),
    Case(
        "status: no state file",
        ("status", "--state", "S"),
        r"S/frontier.sqlite3: no crawl state here",
        setup=_empty_dir,
    ),
    Case(
        "status: random bytes, a stale status.json",
        ("status", "--state", "S"),
        r"S/frontier.sqlite3: not a courtly state file",
        setup=_stale_status,
    ),
    Case(
        "status: an empty state file",
        ("status", "--state", "S"),
        r"the state file is empty",
        setup=_state_file(lambda data: b""),
    ),
    Case(
        "export: no state file",
        ("export", "--state", "S", "-o", "out.jsonl"),
        r"S/frontier.sqlite3: no crawl state here",
        setup=_empty_dir,
    ),
    Case(
        "export: a truncated state file",
        ("export", "--state", "S", "-o", "out.jsonl"),
        r"the state file is truncated",
        setup=_state_file(lambda data: data[: len(data) // 2]),
    ),
    Case(
        "status: --crawl-name without --store",
        ("status", "--state", "S", "--crawl-name", "c"),
        r"--crawl-name names a crawl in a Redis --store: give --store URL with it",
        setup=_state_file(lambda data: data),
    ),
    Case(
        "export: --crawl-name without --store",
        ("export", "--state", "S", "--crawl-name", "c", "-o", "out.jsonl"),
        r"--crawl-name names a crawl in a Redis --store: give --store URL with it",
        setup=_state_file(lambda data: data),
    ),
    Case(
        "export -o into a missing directory",
        ("export", "--state", "S", "-o", "nowhere/x.jsonl"),
        r"the directory of --output nowhere does not exist",
        setup=_state_file(lambda data: data),
    ),
)


# -- running a case -------------------------------------------------------------------------


@contextmanager
def _in(directory: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def _tree(root: Path) -> dict[str, str]:
    """Every file and directory under ``root``, with a digest of each file's bytes."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        out[key] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclass(frozen=True, slots=True)
class Outcome:
    case: Case
    result: Result
    before: dict[str, str]
    after: dict[str, str]

    @property
    def message(self) -> str:
        """The error message, on one line."""
        text = self.result.output
        start = text.find("Error: ")
        text = text[start + len("Error: ") :] if start >= 0 else text
        return " ".join(text.split())


def run_case(case: Case, root: Path) -> Outcome:
    root.mkdir()
    if case.setup is not None:
        case.setup(root)
    before = _tree(root)
    with _in(root):
        result = CliRunner().invoke(cli_main, list(case.args))
    return Outcome(case, result, before, _tree(root))


@pytest.mark.parametrize("case", CASES, ids=[case.what for case in CASES])
def test_a_bad_input_is_refused_cleanly(case: Case, tmp_path: Path) -> None:
    outcome = run_case(case, tmp_path / "run")
    result = outcome.result
    assert result.exit_code == case.code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert re.search(case.message, outcome.message), outcome.message
    assert len(outcome.message) < 1000, "a message names inputs shortened, never whole"
    assert outcome.after == outcome.before, "a refused run writes nothing"


def test_a_running_crawl_is_reported_only_while_its_lock_is_held(tmp_path: Path) -> None:
    """status.json is a cache: status believes it only while the state file is locked."""
    setup = _state_file(lambda data: data)
    setup(tmp_path)
    live = {
        "running": True,
        "frontier": {spec.name: 3 for spec in fields(FrontierCounts)},
        "last_run": {"pages": 7, "robots_fetches": 1, "errors": {}, "skipped": {}},
        # status.json lists the first seeds and gives their number
        "config": {"seeds": [SEED], "seeds_total": 5000, "scope": "domain"},
    }
    (tmp_path / "S" / "status.json").write_text(json.dumps(live))
    with _in(tmp_path):
        result = CliRunner().invoke(cli_main, ["status", "--state", "S", "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["running"] is False  # no lock held: not running
        holder = open_database(Path("S/frontier.sqlite3"))  # as a running crawl holds it
        try:
            result = CliRunner().invoke(cli_main, ["status", "--state", "S", "--json"])
            text = CliRunner().invoke(cli_main, ["status", "--state", "S"]).output
        finally:
            holder.close()
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["running"] is True and data["config"]["seeds"] == [SEED]
    assert "crawl      running" in text and "{" not in text  # words, not Python dicts
    assert "config     5000 seed(s)" in text
    assert "concurrency auto," in text  # autoscaled fetchers (none pinned), not "None"


def _table(outcomes: list[Outcome]) -> str:
    lines = ["| bad input | command | exit | message |", "|---|---|---:|---|"]
    for outcome in outcomes:
        args = " ".join(a if len(a) < 40 else a[:24] + "...(9 KB)" for a in outcome.case.args)
        args = args.replace(UA, "UA").replace("|", "\\|")
        message = outcome.message.replace("|", "\\|")
        message = message if len(message) <= 220 else message[:217] + "..."
        lines.append(
            f"| {outcome.case.what} | `courtly {args}` | {outcome.result.exit_code} | {message} |"
        )
    return "\n".join(lines)


def test_the_docs_table_is_what_the_cases_produce(tmp_path: Path) -> None:
    outcomes = [run_case(case, tmp_path / f"case{i}") for i, case in enumerate(CASES)]
    table = _table(outcomes)
    doc = DOCS.read_text(encoding="utf-8")
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    expected = f"{head}{BEGIN}\n{table}\n{END}{tail}"
    if os.environ.get("COURTLY_WRITE_DOCS") == "1":
        DOCS.write_text(expected, encoding="utf-8")
        doc = DOCS.read_text(encoding="utf-8")
    assert doc == expected, (
        "docs/cli.md is out of date: COURTLY_WRITE_DOCS=1 .venv/bin/pytest "
        "tests/integration/test_cli_errors.py"
    )


@pytest.mark.parametrize("older", [False, True], ids=["seed-set", "older-blob"])
def test_status_of_a_stopped_crawl_lists_every_seed(tmp_path: Path, older: bool) -> None:
    """The configuration blob lists the first seeds (in the order given) and their
    number; the store keeps every one, and ``status --json`` of a stopped crawl shows them
    all. A state an older courtly wrote keeps the whole list in the blob."""
    seeds = [f"http://s{i:03d}.test/" for i in reversed(range(150))]

    async def write() -> None:
        store = SqliteStore(tmp_path / "S" / "frontier.sqlite3", QueueConfig())
        config: dict[str, object] = {"seeds": seeds, "scope": "domain"}
        if not older:
            config = {"seeds": seeds[:100], "seeds_total": 150, "scope": "domain"}
            await store.add_seeds(seeds)
        await store.put_blob("crawl", "config", json.dumps(config).encode())
        await store.aclose()

    (tmp_path / "S").mkdir()
    run_async(write())
    result = CliRunner().invoke(cli_main, ["status", "--state", str(tmp_path / "S"), "--json"])
    assert result.exit_code == 0, result.output
    config = json.loads(result.output)["config"]
    assert config["seeds"][:100] == seeds[:100] and sorted(config["seeds"]) == sorted(seeds)
    assert config["seeds_total"] == 150


def _catalogue_of_5000(state: Path) -> Path:
    """A state directory whose catalogue holds 5,000 fetched URLs (more than a pipe or a
    small file takes at once)."""
    state.mkdir()

    async def make() -> None:
        store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
        await store.record([CatalogueEntry(f"{SEED}{i}", status=200) for i in range(5000)])
        await store.aclose()

    run_async(make())
    return state


def test_export_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    """``courtly export | head -1``: the reader goes away with most of the catalogue
    unread. The export ends with status 1 (its output is not whole) and says nothing:
    before, it printed ``Error: Broken pipe``."""
    state = _catalogue_of_5000(tmp_path / "S")
    command = [sys.executable, "-m", "courtly", "export", "--state", str(state)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # the reader goes away
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert json.loads(first)["url"].startswith(SEED)
    assert code == ExitCode.FAILED
    assert stderr == ""


def test_export_to_a_full_disk_names_its_output_and_leaves_no_part_of_it(
    tmp_path: Path,
) -> None:
    """``courtly export -o FILE`` whose writes fail (a file size limit here, as a full disk
    would): exit 1 with the output's name in the message (before: the kernel's words
    alone), and neither FILE nor its partial copy left behind."""
    state = _catalogue_of_5000(tmp_path / "S")
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "courtly", "export", "--state", str(state)]
    command = with_file_limit(command, 65536)
    result = subprocess.run(
        [*command, "-o", str(output)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == ExitCode.FAILED, result.stderr
    assert result.stderr.startswith(f"Error: {output}: "), result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S"]


def test_export_into_a_named_pipe_writes_through_it(tmp_path: Path) -> None:
    """``courtly export -o PIPE`` (a named pipe, as ``/dev/stdout`` is a device): the lines
    go through the pipe, which stays a pipe. Before, the export wrote ``PIPE.partial`` and
    renamed it over the pipe (over the device node, for ``-o /dev/stdout`` run by root)."""
    state = _catalogue_of_5000(tmp_path / "S")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = read_fifo(fifo, got)
    command = [sys.executable, "-m", "courtly", "export", "--state", str(state), "-o", str(fifo)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert read_fifo_done(fifo, reader, 10), "nothing was written through the pipe"
    assert result.returncode == 0, result.stderr
    lines = got[0].splitlines()
    assert len(lines) == 5000 and json.loads(lines[0])["url"].startswith(SEED)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S", "pipe"]


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_dashboard_address_that_is_taken_is_refused_before_anything_is_written(
    tmp_path: Path, processes: str
) -> None:
    """``courtly crawl --dashboard HOST:PORT`` on a port another program listens on:
    refused (exit 2) with the flag named, nothing written. Before: exit 1 with the
    server library's words alone."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        where = f"127.0.0.1:{taken.getsockname()[1]}"
        with _in(tmp_path):
            args = [*CRAWL, "--processes", processes, "--dashboard", where, SEED]
            result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == ExitCode.REFUSED, result.output
    assert f"Error: --dashboard {where}: " in result.output
    assert not (tmp_path / "S").exists()


def test_changes_of_a_crawl_without_recrawl_says_why_there_are_none(tmp_path: Path) -> None:
    """``courtly changes`` of a crawl that never revisits: not a bare "0 changes"."""
    state = tmp_path / "S"
    state.mkdir()

    async def make(recrawl: bool) -> None:
        store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
        await store.put_blob("crawl", "config", json.dumps({"recrawl": recrawl}).encode())
        await store.aclose()

    run_async(make(False))
    result = CliRunner().invoke(cli_main, ["changes", "--state", str(state)])
    assert result.exit_code == 0, result.output
    assert "0 changes (the crawl does not run with --recrawl" in result.output
    run_async(make(True))
    result = CliRunner().invoke(cli_main, ["changes", "--state", str(state)])
    assert result.exit_code == 0 and result.output.strip() == "0 changes", result.output


def test_a_crawl_name_without_a_redis_store_is_said_to_be_ignored(tmp_path: Path) -> None:
    """``--crawl-name`` names a crawl in a Redis store only: with the local store it is
    ignored, and the crawl says so instead of running as if it were used."""
    command = [sys.executable, "-m", "courtly", "crawl", "--state", str(tmp_path / "S")]
    command += ["--user-agent", UA, "--crawl-name", "mine", "--allow-private-networks"]
    command += ["--max-time", "1", "http://127.0.0.1:9/"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode in (ExitCode.LIMIT, ExitCode.NOTHING_FETCHED), result.stderr
    assert "--crawl-name mine: only a Redis store" in result.stderr
    assert "ignored with --store sqlite" in result.stderr


def test_every_seeds_file_given_is_read(tmp_path: Path) -> None:
    """``--seeds-file a --seeds-file b`` reads both: a bad seed in the first file is
    refused (before, only the last file was read, and the first file's seeds were
    dropped without a word)."""
    (tmp_path / "a.txt").write_text("not a url\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text(f"{SEED}\n", encoding="utf-8")
    with _in(tmp_path):
        args = [*CRAWL, "--seeds-file", "a.txt", "--seeds-file", "b.txt"]
        result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == ExitCode.REFUSED, result.output
    assert "1 of 2 seeds are not crawlable" in result.output
    assert not (tmp_path / "S").exists()  # refused before anything was written


def test_an_error_inside_the_running_crawl_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    """A state file whose stored configuration is unreadable is found once the crawl runs,
    inside its task group, which wrapped the error in an exception group: the command
    printed a traceback and exited 1. It is now the refusal it is."""
    state = tmp_path / "S"
    state.mkdir()

    async def make() -> None:
        store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
        await store.put_blob("crawl", "config", b"{not json")
        await store.aclose()

    run_async(make())
    with _in(tmp_path):
        result = CliRunner().invoke(cli_main, [*CRAWL, "--processes", "1", SEED])
    assert result.exit_code == ExitCode.REFUSED, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Error: the stored crawl configuration is unreadable" in result.output


@pytest.mark.parametrize(
    "args",
    [
        (*CRAWL, "--crawl-name", "c", SEED),
        ("export", "--crawl-name", "c"),
        ("changes", "--crawl-name", "c"),
        ("status", "--crawl-name", "c"),
    ],
    ids=["crawl", "export", "changes", "status"],
)
def test_an_unreachable_redis_store_is_a_message_not_a_traceback(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = f"redis://127.0.0.1:{port}/0"
    with _in(tmp_path):
        result = CliRunner().invoke(cli_main, [*args, "--store", store])
    assert result.exit_code == ExitCode.FAILED, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert re.search(rf"Error: .*127\.0\.0\.1:{port}.*[Cc]onnection refused", result.output)


def test_the_reading_commands_skip_a_partition_with_no_state_and_say_so(tmp_path: Path) -> None:
    """A partitioned crawl stopped as it started (or one of whose partitions was removed):
    ``status``, ``export`` and ``changes`` read the partitions that hold a state, each with
    a warning naming the one skipped (they refused the whole crawl, advising to start a
    crawl in the partition's directory); with none, there is no crawl state."""
    from courtly.parallel import claim_layout, partition_dir

    state = tmp_path / "S"
    claim_layout(state, 2)
    for command in (["status"], ["export"], ["changes"]):
        result = CliRunner().invoke(cli_main, [*command, "--state", str(state)])
        assert result.exit_code == 2, result.output
        assert "none of its 2 partitions holds a state file" in result.output

    async def write() -> None:
        part = partition_dir(state, 1, 2)
        part.mkdir()
        store = SqliteStore(part / "frontier.sqlite3", QueueConfig())
        await store.record([CatalogueEntry(f"{SEED}{i}", status=200) for i in range(3)])
        await store.aclose()

    run_async(write())
    skipped = "partition 0 of 2 holds no crawl state"
    exported = CliRunner().invoke(cli_main, ["export", "--state", str(state)])
    assert exported.exit_code == 0, exported.output
    assert skipped in exported.stderr
    assert sorted(json.loads(line)["url"] for line in exported.stdout.splitlines()) == [
        f"{SEED}{i}" for i in range(3)
    ]
    for command in (["status", "--json"], ["changes"]):
        result = CliRunner().invoke(cli_main, [*command, "--state", str(state)])
        assert result.exit_code == 0, result.output
        assert skipped in result.stderr
    assert not partition_dir(state, 0, 2).exists()  # reading made nothing


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_status_onto_a_full_disk_says_so_without_a_traceback(tmp_path: Path) -> None:
    """``courtly status > /dev/full``: a line saying the disk is full and exit 1, as
    ``export`` does; its output was written outside the error handling (a traceback)."""
    state = _catalogue_of_5000(tmp_path / "S")
    for extra in ([], ["--json"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "courtly", "status", "--state", str(state), *extra],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
                check=False,
            )
        assert done.returncode == 1, done.stderr
        assert "the disk is full" in done.stderr and "Traceback" not in done.stderr
