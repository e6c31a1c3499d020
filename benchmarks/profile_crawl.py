"""Crawler CPU per page on a wide, failure-rich sandbox web, beside a bare fetch loop's.

One invocation serves a fresh sandbox web for every run (a child process, so its
CPU is not the crawler's) and alternates, per round:

* ``bare``: aiohttp + uvloop fetching the web's known pages (front page and
  ``/p/N.html`` of every live host), each of ``--bare-concurrency`` workers taking
  one host at a time and fetching its pages back to back over one keep-alive
  connection, with no politeness, robots.txt, parsing or storage: the machine's
  floor of CPU per page;
* one ``courtly crawl`` per ``--variant LABEL=SRC`` (``SRC`` is a ``src``
  directory put first on ``PYTHONPATH``, so two checkouts are compared in the
  same run; without ``--variant`` the installed courtly runs), with its defaults
  and only ``--min-delay 0.25 --scope any --hosts-file F
  --allow-private-networks --max-time S``.

Figures per run: ``pages`` (non-robots.txt requests the sandbox answered),
``robots_fetches``, ``cpu_s`` (user + system of the process tree, from
``wait4``; startup included), ``cpu_ms_per_page`` and ``ratio_to_bare`` (against
the bare run of the same round). With ``--profile`` each courtly run is sampled
by ``py-spy record --format raw`` and the JSON gets ``profile``: the share of
samples whose stack passes through each hot-path function (inclusive, so shares
overlap) and the functions with the most samples of their own.

    python benchmarks/profile_crawl.py --seconds 60 --profile --json
    python benchmarks/profile_crawl.py --variant before=/tmp/old/src --variant after=src
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import socket
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from compare_scrapy import USER_AGENT, Sandbox, machine, run_measured
from courtly.sandbox import SandboxSpec, load_log

HERE = Path(__file__).resolve().parent

#: Robots.txt behaviours dealt round-robin: mostly rules or 404, some redirected,
#: 5% with a Crawl-delay, a few % answering 5xx or never answering.
WIDE_ROBOTS = (
    *("rules",) * 17,
    *("missing",) * 10,
    *("redirect",) * 3,
    *("token_open",) * 2,
    *("crawl_delay",) * 2,
    *("wildcard",) * 2,
    "server_error",
    "hang",
    "token_blocked",
)

#: name -> stack markers; a sample counts for a name when any frame contains a marker.
HOT_PATHS: dict[str, tuple[str, ...]] = {
    "WARC writing": ("archive/warc.py",),
    "robots.txt (fetch, parse, cache, persist)": (
        "_fetch_robots",
        "_restore_robots",
        "RobotsGate.fetch",
        "RobotsGate._restore",
    ),
    "robots.txt parse + match": (
        "courtly/robots/parse.py",
        "courtly/robots/rules.py",
        "courtly/robots/pattern.py",
        "courtly/robots/normalize.py",
    ),
    "link extraction (parse/links.py)": ("parse/links.py",),
    "URL join + canonicalise": ("courtly/url/canonical.py",),
    "links of a page (extract, join, scope, queue)": ("_links_of", "LinkAdmission.read"),
    "frontier + store": ("courtly/frontier/", "courtly/store/"),
    "SQLite commit": ("commit (", "_commit", "flush (courtly/store"),
    "fetch (HttpFetcher + aiohttp)": ("courtly/fetch/", "aiohttp/"),
    "new connections": ("_create_connection", "create_connection", "aiohappyeyeballs"),
    "imports": ("<frozen importlib._bootstrap>",),
}


def wide_spec(n_hosts: int, seed: int = 1) -> SandboxSpec:
    """A web like the one issue 9 measured, with the knobs the sandbox has.

    ``SandboxSpec.broad(n_hosts)`` (about 10 KB pages, links to other hosts and
    sites) on ``0.8 x n_hosts`` addresses, with the failure mix: the robots.txt
    variants of :data:`WIDE_ROBOTS`, a Crawl-delay of 1 s, 5% slow hosts
    (150 ms), 2% flaky hosts (429/503 windows, ``Retry-After: 2``), two dead hosts.
    """
    broad = SandboxSpec.broad(n_hosts, seed=seed)
    hosts = broad.n_hosts
    return dataclasses.replace(
        broad,
        ips=max(2, hosts * 4 // 5),
        robots_variants=WIDE_ROBOTS,
        crawl_delay_s=1.0,
        slow_hosts=max(1, hosts // 20),
        slow_s=0.15,
        flaky_hosts=max(1, hosts // 50),
        flaky_every=5,
        retry_after_s=2,
        dead_hosts=2,
        min_page_bytes=5_000,
        max_page_bytes=15_000,
    )


# -- the bare loop ---------------------------------------------------------------------------------


def bare_main(urls_file: Path, hosts_file: Path, seconds: float, concurrency: int) -> int:
    """``--bare-urls FILE``: fetch every URL once (aiohttp, uvloop), at most ``seconds``."""
    import uvloop

    addresses: dict[str, str] = {}
    for line in hosts_file.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        for name in fields[1:]:
            addresses[name] = fields[0]
    by_host: dict[str, list[str]] = {}
    for url in urls_file.read_text().split():
        by_host.setdefault(url.split("/", 3)[2], []).append(url)
    result = uvloop.run(_bare(addresses, list(by_host.values()), seconds, concurrency))
    print(json.dumps(result))
    return 0


async def _bare(
    addresses: dict[str, str], hosts: list[list[str]], seconds: float, concurrency: int
) -> Any:
    import aiohttp
    from aiohttp.abc import AbstractResolver, ResolveResult

    class Static(AbstractResolver):
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            ip = addresses[host]
            return [
                ResolveResult(
                    hostname=host, host=ip, port=port, family=socket.AF_INET, proto=0, flags=0
                )
            ]

        async def close(self) -> None:
            return None

    queue: asyncio.Queue[list[str]] = asyncio.Queue()
    for pages in hosts:
        queue.put_nowait(pages)
    counts: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(resolver=Static(), limit=0, limit_per_host=1)
    timeout = aiohttp.ClientTimeout(total=5.0)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers={"User-Agent": USER_AGENT}
    ) as session:

        async def worker() -> None:
            # One host at a time, its pages back to back over one keep-alive connection.
            while time.monotonic() < deadline and not queue.empty():
                for url in queue.get_nowait():
                    if time.monotonic() >= deadline:
                        return
                    try:
                        async with session.get(url, allow_redirects=False) as response:
                            await response.read()
                            counts[str(response.status)] += 1
                    except (aiohttp.ClientError, TimeoutError):
                        counts["error"] += 1
                        break

        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
    return {"statuses": dict(counts)}


# -- one run ---------------------------------------------------------------------------------------


def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def _seeds(web: Sandbox, run_dir: Path) -> Path:
    """Half of the hosts' front pages (every other host)."""
    seeds = run_dir / "seeds.txt"
    seeds.write_text("\n".join(web.world.seeds()[::2]) + "\n")
    return seeds


def _count(web: Sandbox) -> tuple[int, int]:
    """(pages answered, robots.txt requests) in the sandbox's request log."""
    pages = robots = 0
    for record in load_log(Path(web.info["log_path"])):
        if record.path in web.world.robots_paths(record.host) or record.path == "/robots.txt":
            robots += 1
        else:
            pages += 1
    return pages, robots


def run_bare(spec: SandboxSpec, run_dir: Path, seconds: float, concurrency: int) -> dict[str, Any]:
    web = Sandbox(spec, _fresh(run_dir) / "web")
    try:
        urls = run_dir / "urls.txt"
        live = [h.name for h in web.world.hosts if not h.dead]
        paths = ["/", *(f"/p/{i}.html" for i in range(spec.pages_per_host))]
        urls.write_text("\n".join(web.world.url(h, p) for h in live for p in paths) + "\n")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--bare-urls", str(urls)]
        cmd += ["--hosts-file", web.info["hosts_file"], "--seconds", str(seconds)]
        cmd += ["--bare-concurrency", str(concurrency)]
        cost = run_measured(cmd, run_dir / "bare.log")
    finally:
        web.stop()
    pages, _ = _count(web)
    return _figures("bare", cost, pages, 0, run_dir / "bare.log") | {
        "server_cpu_s": round(web.cpu_s, 2)
    }


def run_courtly(
    spec: SandboxSpec,
    run_dir: Path,
    seconds: float,
    label: str,
    src: Path | None,
    profile: bool,
    extra: list[str],
) -> dict[str, Any]:
    web = Sandbox(spec, _fresh(run_dir) / "web")
    try:
        cmd = [sys.executable, "-m", "courtly", "crawl", "--seeds-file", str(_seeds(web, run_dir))]
        cmd += ["--state", str(run_dir / "state"), "--user-agent", USER_AGENT]
        cmd += ["--min-delay", "0.25", "--scope", "any", "--hosts-file", web.info["hosts_file"]]
        cmd += ["--allow-private-networks", "--max-time", str(seconds), *extra]
        raw = run_dir / "profile.txt"
        if profile:
            spy = Path(sys.executable).parent / "py-spy"
            cmd = [str(spy), "record", "-r", "100", "-f", "raw", "-s", "-o", str(raw), "--", *cmd]
        cost = run_measured(cmd, run_dir / "courtly.log", env=_env(src))
    finally:
        web.stop()
    pages, robots = _count(web)
    figures = _figures(label, cost, pages, robots, run_dir / "courtly.log")
    figures["server_cpu_s"] = round(web.cpu_s, 2)
    if profile and raw.exists():
        figures["profile"] = breakdown(raw)
        figures["profile_file"] = str(raw)
    return figures


def _env(src: Path | None) -> dict[str, str]:
    """This environment, with ``src`` (a checkout's ``src`` directory) first on the path."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src.resolve()), env.get("PYTHONPATH", "")])
    return env


def _figures(label: str, cost: Any, pages: int, robots: int, log: Path) -> dict[str, Any]:
    return {
        "label": label,
        "pages": pages,
        "robots_fetches": robots,
        "cpu_s": round(cost.cpu_s, 3),
        "wall_s": round(cost.wall_s, 2),
        "cpu_ms_per_page": round(1000 * cost.cpu_s / pages, 3) if pages else None,
        "returncode": cost.returncode,
        "log": str(log),
    }


def breakdown(raw_file: Path, top: int = 25) -> dict[str, Any]:
    """Inclusive shares of :data:`HOT_PATHS` and the top self-time functions of a raw profile."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw_file.read_text().splitlines():
        stack, _, n_text = line.rpartition(" ")
        if not stack or not n_text.isdigit():
            continue
        frames = stack.split(";")
        if "Condition.wait (threading.py" in frames[-1]:
            continue  # a blocked queue feeder thread, which py-spy reports as running
        n = int(n_text)
        total += n
        for name, marks in HOT_PATHS.items():
            if any(mark in frame for frame in frames for mark in marks):
                inclusive[name] += n
        own[frames[-1]] += n
    if not total:
        return {"samples": 0}
    return {
        "samples": total,
        "inclusive_share": {k: round(inclusive[k] / total, 4) for k in HOT_PATHS},
        "self_share": {k: round(v / total, 4) for k, v in own.most_common(top)},
    }


# -- the per-page parts, in isolation ----------------------------------------------------------


def parts_main(pages: int) -> int:
    """``--parts-child``: CPU per exchange of the WARC writer and per page of link handling.

    Runs against whatever ``courtly`` is first on ``sys.path`` (old checkouts included): the
    WARC writer at the config's default level, and ``extract_links`` with the crawl's joiner
    (shared cache and canonical base when this checkout has them).
    """
    import inspect
    import tempfile

    from courtly.archive.warc import WarcWriter
    from courtly.config import CrawlConfig
    from courtly.fetch.records import FetchResult
    from courtly.parse.links import extract_links
    from courtly.sandbox import SandboxWorld
    from courtly.sandbox.resources import Page as SandboxPage
    from courtly.url import UrlJoiner

    spec = wide_spec(400)
    world = SandboxWorld(spec, 8080)
    live = [h.name for h in world.hosts if not h.dead and not h.trap][:40]
    urls: list[str] = []
    bodies: list[bytes] = []
    for host in live:
        for index in range(spec.pages_per_host):
            resource = world.resolve(host, f"/p/{index}.html")
            if isinstance(resource, SandboxPage) and len(urls) < pages:
                urls.append(world.url(host, f"/p/{index}.html"))
                bodies.append(world.render(resource))
    headers = (("Content-Type", "text/html; charset=utf-8"), ("Server", "sandbox"))
    results = [
        FetchResult(url=u, status=200, headers=headers, body=b, started_at=1.7e9 + i,
                    ended_at=1.7e9 + i + 0.01, raw_body=b, ip="127.0.0.2",
                    request_headers=(("User-Agent", USER_AGENT), ("Accept", "*/*")))
        for i, (u, b) in enumerate(zip(urls, bodies, strict=True))
    ]  # fmt: skip
    level = int(CrawlConfig.__dataclass_fields__["warc_gzip_level"].default)  # type: ignore[arg-type,unused-ignore]
    extra: dict[str, Any] = {}
    if "cache" in inspect.signature(UrlJoiner).parameters:
        from courtly.url import JoinCache  # type: ignore[attr-defined,unused-ignore]

        extra = {"canonical": True, "cache": JoinCache()}
    best_warc = best_links = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        writer = WarcWriter(Path(tmp), gzip_level=level)
        for _ in range(3):
            started = time.process_time()
            for result in results:
                writer.write_exchange(result)
                writer.flush()
            best_warc = min(best_warc, time.process_time() - started)
            started = time.process_time()
            for result in results:
                joiner = UrlJoiner(result.url, **extra)
                extract_links(result.body, result.url, content_type=headers[0][1], join=joiner.join)
            best_links = min(best_links, time.process_time() - started)
        writer.close()
        warc_bytes = sum(f.stat().st_size for f in Path(tmp).iterdir())
    print(json.dumps({
        "gzip_level": level,
        "warc_us_per_exchange": round(1e6 * best_warc / len(results), 1),
        "warc_bytes_per_exchange": round(warc_bytes / (3 * len(results))),
        "body_bytes_per_exchange": round(sum(map(len, bodies)) / len(bodies)),
        "links_us_per_page": round(1e6 * best_links / len(results), 1),
    }))  # fmt: skip
    return 0


def run_parts(variants: list[tuple[str, Path | None]], rounds: int) -> list[dict[str, Any]]:
    """``parts_main`` of each variant in its own process, alternating, ``rounds`` times."""
    import subprocess

    out: list[dict[str, Any]] = []
    for round_no in range(rounds):
        for label, src in variants:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--parts-child"]
            done = subprocess.run(cmd, env=_env(src), capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            out.append({"label": label, "round": round_no, **figures})
            print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


# -- command line ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=8000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--variant", action="append", default=[], help="LABEL=SRC_DIR")
    parser.add_argument("--profile", action="store_true", help="py-spy the courtly runs")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare loop")
    parser.add_argument("--bare-concurrency", type=int, default=64)
    parser.add_argument("--courtly-arg", action="append", default=[], help="extra crawl flag")
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "profile")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    parser.add_argument(
        "--parts", action="store_true", help="time the WARC writer and link handling alone"
    )
    parser.add_argument("--parts-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bare-urls", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--hosts-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare_urls is not None:
        return bare_main(args.bare_urls, args.hosts_file, args.seconds, args.bare_concurrency)
    if args.parts_child:
        return parts_main(400)

    variants: list[tuple[str, Path | None]] = []
    for item in args.variant:
        label, sep, src = item.partition("=")
        if not sep:
            parser.error(f"--variant wants LABEL=SRC_DIR, got {item!r}")
        variants.append((label, Path(src)))
    if not variants:
        variants.append(("courtly", None))
    if args.parts:
        parts = run_parts(variants, args.rounds)
        print(json.dumps({"machine": machine(), "parts": parts}))
        return 0
    spec = wide_spec(args.hosts)
    runs: list[dict[str, Any]] = []
    for round_no in range(args.rounds):
        bare: dict[str, Any] | None = None
        if not args.no_bare:
            bare = run_bare(
                spec, args.workdir / f"r{round_no}-bare", args.seconds, args.bare_concurrency
            )
            bare["round"] = round_no
            runs.append(bare)
            print(json.dumps(bare), file=sys.stderr, flush=True)
        for label, src in variants:
            run_dir = args.workdir / f"r{round_no}-{label}"
            figures = run_courtly(
                spec, run_dir, args.seconds, label, src, args.profile, args.courtly_arg
            )
            figures["round"] = round_no
            if bare and bare["cpu_ms_per_page"] and figures["cpu_ms_per_page"]:
                figures["ratio_to_bare"] = round(
                    figures["cpu_ms_per_page"] / bare["cpu_ms_per_page"], 2
                )
            runs.append(figures)
            summary = {k: v for k, v in figures.items() if k != "profile"}
            print(json.dumps(summary), file=sys.stderr, flush=True)
    report = {"machine": machine(), "hosts": spec.n_hosts, "seconds": args.seconds, "runs": runs}
    if args.json:
        print(json.dumps(report))
    else:
        for run in runs:
            ratio = run.get("ratio_to_bare", "")
            print(
                f"{run['round']} {run['label']:>10}: {run['pages']:>7} pages "
                f"{run['robots_fetches']:>6} robots  {run['cpu_ms_per_page']} ms/page {ratio}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
