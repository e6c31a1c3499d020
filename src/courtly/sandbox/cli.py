"""``courtly sandbox``: serve the synthetic web, audit a crawl of it.

``serve`` writes ``hosts``, ``seeds.txt``, ``sandbox.json`` and the request
log(s) into ``--dir``, then prints one JSON line with the paths and writes the
same JSON to ``DIR/ready``. SIGTERM or SIGINT stops it cleanly (logs flushed,
``ready`` removed). With ``--changing`` one host also serves
:func:`courtly.sandbox.changing.watch_pages` under ``/watch/`` by the real clock, and
their URLs go to ``DIR/watch.txt`` (``watch_seeds_file`` and ``watch_urls`` in the JSON).
With ``--workers N`` it runs N server processes sharing
the port (``SO_REUSEPORT``), each logging to ``requests.K.jsonl``;
:func:`courtly.sandbox.request_log.load_log` on the directory merges them.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import multiprocessing
import os
import signal
import sys
from pathlib import Path
from typing import cast

import click

from courtly.clock import SystemClock
from courtly.event_loop import run_async, signal_handlers
from courtly.sandbox.audit import audit
from courtly.sandbox.changing import ChangingSite, watch_pages
from courtly.sandbox.request_log import load_log
from courtly.sandbox.server import SandboxServer
from courtly.sandbox.spec import SandboxSpec
from courtly.sandbox.truth import Scope
from courtly.sandbox.world import SandboxWorld
from courtly.write_failure import os_error_text

__all__ = ["sandbox"]

_PRESETS = ("small", "demo", "broad", "wide", "politeness", "hostile")


@click.group()
def sandbox() -> None:
    """A deterministic synthetic web on 127.0.0.0/8 for demos, tests and benchmarks."""


def _spec(preset: str, seed: int, n_hosts: int | None, port: int) -> SandboxSpec:
    if preset == "broad" and n_hosts is not None:
        spec = SandboxSpec.broad(n_hosts, seed=seed)
    elif preset == "wide" and n_hosts is not None:
        spec = SandboxSpec.wide(n_hosts, seed=seed)
    elif preset == "politeness" and n_hosts is not None:
        spec = SandboxSpec.politeness(n_hosts, seed=seed)
    else:
        spec = SandboxSpec.preset(preset, seed=seed)
    if port:
        spec = SandboxSpec.from_json(json.dumps({**json.loads(spec.to_json()), "port": port}))
    return spec


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    with signal_handlers(stop.set, signal.SIGTERM, signal.SIGINT):
        await stop.wait()


async def _serve_worker(spec_json: str, port: int, workdir: str, index: int) -> None:
    spec = SandboxSpec.from_json(spec_json)
    server = SandboxServer(
        spec,
        workdir=workdir,
        log_path=Path(workdir) / f"requests.{index}.jsonl",
        port=port,
        reuse_port=True,
        worker_index=index,
        write_files=False,
    )
    async with server:
        (Path(workdir) / f"ready.{index}").write_text("ok\n")
        await _wait_for_signal()


def _worker_main(spec_json: str, port: int, workdir: str, index: int) -> None:
    run_async(_serve_worker(spec_json, port, workdir, index))


def _watch_host(spec: SandboxSpec) -> str:
    """The host that serves the changing pages: the first live host without robots.txt
    rules (nothing disallowed, no crawl delay beyond the crawler's own)."""
    world = SandboxWorld(spec, 1)
    return next(h.name for h in world.layout.hosts if h.robots_variant == "missing" and not h.dead)


async def _serve(
    spec: SandboxSpec, workdir: Path, workers: int, news_period_s: float | None = None
) -> None:
    log_path = workdir / ("requests.0.jsonl" if workers > 1 else "requests.jsonl")
    clock = SystemClock()
    changing: dict[str, ChangingSite] = {}
    if news_period_s is not None:
        site = ChangingSite(watch_pages(news_period_s), clock, start_at=clock.now())
        changing[_watch_host(spec)] = site
    server = SandboxServer(
        spec,
        workdir=workdir,
        log_path=log_path,
        reuse_port=workers > 1,
        clock=clock,
        changing=changing,
    )
    ready = workdir / "ready"
    procs: list[multiprocessing.context.SpawnProcess] = []
    async with server:
        if workers > 1:
            context = multiprocessing.get_context("spawn")
            for index in range(1, workers):
                proc = context.Process(
                    target=_worker_main,
                    args=(spec.to_json(), server.port, str(workdir), index),
                    daemon=True,
                )
                proc.start()
                procs.append(proc)
            for index in range(1, workers):
                marker = workdir / f"ready.{index}"
                for _ in range(600):
                    if marker.exists():
                        break
                    await asyncio.sleep(0.05)
        info = {**server.info(), "workers": workers, "pid": os.getpid(), "ready": True}
        for host, site in changing.items():
            urls = [f"http://{host}:{server.port}{page.path}" for page in site.pages]
            watch = workdir / "watch.txt"
            watch.write_text("".join(f"{u}\n" for u in urls))
            info["watch_seeds_file"] = str(watch)
            info["watch_urls"] = urls
        line = json.dumps(info)
        tmp = workdir / "ready.tmp"
        tmp.write_text(line + "\n")
        tmp.replace(ready)
        click.echo(line)
        sys.stdout.flush()
        try:
            await _wait_for_signal()
        finally:
            with contextlib.suppress(FileNotFoundError):
                ready.unlink()
            for proc in procs:
                if proc.pid is not None and proc.is_alive():
                    os.kill(proc.pid, signal.SIGTERM)
            for index, proc in enumerate(procs, start=1):
                await asyncio.get_running_loop().run_in_executor(None, proc.join, 10.0)
                with contextlib.suppress(FileNotFoundError):
                    (workdir / f"ready.{index}").unlink()


@sandbox.command()
@click.option("--spec", "preset", type=click.Choice(_PRESETS), default="small", show_default=True)
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where the hosts file, seeds, sandbox.json, ready marker and logs go.",
)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="0 picks a free port.")
@click.option(
    "--n-hosts", type=click.IntRange(min=1), default=None, help="Host count for broad/politeness."
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Server processes."
)
@click.option(
    "--changing",
    is_flag=True,
    help="Also serve pages that change at known rates under /watch/ on one host (a news "
    "hub, changing pages, lying validators); their URLs go to DIR/watch.txt "
    "(docs/recrawl.md, trying it by hand).",
)
@click.option(
    "--news-period",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="With --changing: seconds between the news hub's articles.",
)
def serve(
    preset: str,
    workdir: Path,
    seed: int,
    port: int,
    n_hosts: int | None,
    workers: int,
    changing: bool,
    news_period: float,
) -> None:
    """Serve a sandbox web until SIGTERM/SIGINT."""
    if changing and workers > 1:
        raise click.UsageError("--changing serves its pages from one process: use --workers 1")
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.ClickException(os_error_text(error, f"--dir {workdir}")) from None
    spec = _spec(preset, seed, n_hosts, port)
    try:
        run_async(_serve(spec, workdir, max(1, workers), news_period if changing else None))
    except OSError as error:  # the port taken (on one of the web's addresses), the dir full
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(os_error_text(error, f"--port {port}")) from None
        raise click.ClickException(os_error_text(error)) from None


@sandbox.command("audit")
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="The directory a `serve` wrote (sandbox.json and request logs).",
)
@click.option(
    "--min-delay", "min_delay_s", type=click.FloatRange(min=0), required=True, help="Seconds."
)
@click.option("--per-ip-cap", type=click.IntRange(min=1), required=True)
@click.option("--token", default="courtly", show_default=True, help="robots product token.")
@click.option(
    "--tolerance", "tolerance_s", type=click.FloatRange(min=0), default=0.005, show_default=True
)
@click.option("--only-ua", default=None, help="Judge only requests whose UA contains this.")
@click.option("--scope", type=click.Choice(["host", "domain", "any"]), default="domain")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def audit_command(
    workdir: Path,
    min_delay_s: float,
    per_ip_cap: int,
    token: str,
    tolerance_s: float,
    only_ua: str | None,
    scope: str,
    as_json: bool,
) -> None:
    """Audit the request log of a served sandbox; exit status 1 if there are violations."""
    try:
        info = json.loads((workdir / "sandbox.json").read_text())
        spec = SandboxSpec.from_json(json.dumps(info["spec"]))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise click.ClickException(
            f"{workdir}: no readable sandbox.json of a `courtly sandbox serve` ({error!r})"
        ) from None
    world = SandboxWorld(spec, int(info["port"]))
    records = load_log(workdir)
    report = audit(
        records,
        spec_or_truth=world,
        min_delay_s=min_delay_s,
        per_ip_cap=per_ip_cap,
        user_agent_token=token,
        tolerance_s=tolerance_s,
        only_user_agent=only_ua,
        scope=cast(Scope, scope),
    )
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.summary())
    sys.exit(0 if report.clean else 1)
