"""``courtly crawl --recrawl`` against the live sandbox: the issue's sandbox targets.

One host of the small sandbox serves ``courtly.sandbox.changing`` pages by the server's
clock: a news hub publishing an article every ``--period`` seconds (honest validators,
marked with ``--news``), eight honest pages that never change, a page without
validators and one with a new ETag on every response. ``courtly crawl --recrawl`` runs
against it for ``--seconds`` (a subprocess, courtly's defaults otherwise: one process
per core), is stopped with SIGINT, and the site's and the sandbox's request logs are
audited:

* ``not_modified_share``: of the revisits to the unchanged honest pages, the share
  answered 304 (target >= 0.9; every 16th visit goes unconditional by design);
* ``article_lag_periods``: for each article published while the crawl ran, the time from
  its publication to its first fetch, in publication intervals; the median is the
  target (<= 2);
* ``violations``: politeness violations of any kind in the sandbox's audit (target 0).

    python benchmarks/recrawl_sandbox.py [--seconds 40] [--period 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from courtly.clock import SystemClock
from courtly.sandbox import SandboxServer, SandboxSpec, audit, load_log
from courtly.sandbox.changing import ChangingPage, ChangingSite
from courtly.sandbox.world import SandboxWorld

UA = "courtly/0.1 (+https://courtly.invalid/bot; bench@courtly.invalid)"
MIN_DELAY_S = 0.25
PER_IP = 2
STILL = tuple(ChangingPage(f"/watch/still{i}", 1e9) for i in range(8))


async def run(seconds: float, period: float, workdir: Path) -> dict[str, object]:
    spec = SandboxSpec.small()
    probe = SandboxWorld(spec, 1)
    host = next(h.name for h in probe.layout.hosts if h.robots_variant == "missing" and not h.dead)
    clock = SystemClock()
    hub = ChangingPage("/watch/hub", period, "hub")
    pages = (
        hub,
        *STILL,
        ChangingPage("/watch/plain", 1e9, "none"),
        ChangingPage("/watch/tags", 1e9, "etag_per_response"),
    )
    site = ChangingSite(pages, clock, start_at=clock.now())
    async with SandboxServer(
        spec, workdir=workdir / "web", clock=clock, changing={host: site}
    ) as server:
        seeds = [f"http://{host}:{server.port}{p.path}" for p in pages]
        command = [
            sys.executable, "-m", "courtly", "crawl", *seeds,
            "--state", str(workdir / "state"), "--user-agent", UA,
            "--hosts-file", str(server.hosts_file), "--allow-private-networks",
            "--min-delay", str(MIN_DELAY_S), "--per-ip", str(PER_IP), "--scope", "host",
            "--max-depth", "1", "--recrawl", "--recrawl-min-interval", "2",
            "--recrawl-max-interval", "8", "--news", "/watch/hub$",
            "--news-min-interval", str(period / 2), "-q",
        ]  # fmt: skip
        started = clock.now()
        crawl = await asyncio.create_subprocess_exec(*command, env={**os.environ})
        await asyncio.sleep(seconds)
        crawl.send_signal(signal.SIGINT)
        await crawl.wait()
        ended = clock.now()
    records = load_log(server.log_path)
    report = audit(records, spec_or_truth=spec, min_delay_s=MIN_DELAY_S, per_ip_cap=PER_IP)
    still_paths = {p.path for p in STILL}
    still_log = [r for r in site.log if urlsplit(r.url).path in still_paths]
    seen: set[str] = set()
    revisit_statuses: list[int] = []  # of each visit after a page's first
    for r in still_log:
        if r.url in seen:
            revisit_statuses.append(r.status)
        seen.add(r.url)
    conditional = sum("If-None-Match" in r.headers for r in still_log)
    first_fetch: dict[int, float] = {}
    for r in site.log:
        found = site.article(r.url)
        if found is not None and r.status == 200:
            first_fetch.setdefault(found[1], r.at)
    # articles published after the crawl's first fetch of the hub, and early enough that
    # two periods fit before the crawl ended (later ones cannot be judged)
    hub_first = min((r.at for r in site.log if r.url.endswith(hub.path)), default=ended)
    lags: list[float] = []
    unfetched = 0
    for n in range(1, site.version(hub, ended) + 1):
        published = site.changed_at(hub, n)
        if published <= hub_first or published > ended - 2 * period:
            continue
        if n in first_fetch:
            lags.append((first_fetch[n] - published) / period)
        else:
            unfetched += 1
            lags.append(float("inf"))
    share = (
        sum(s == 304 for s in revisit_statuses) / len(revisit_statuses) if revisit_statuses else 0.0
    )
    finite = sorted(lags)
    return {
        "seconds": round(ended - started, 1),
        "period_s": period,
        "revisits_unchanged_with_validators": len(revisit_statuses),
        "conditional_requests": conditional,
        "not_modified_share": round(share, 4),
        "articles_judged": len(lags),
        "articles_unfetched": unfetched,
        "article_lag_periods_median": round(statistics.median(finite), 3) if finite else None,
        "article_lag_periods_p90": round(finite[int(0.9 * (len(finite) - 1))], 3)
        if finite
        else None,
        "hub_fetches": sum(r.url.endswith(hub.path) for r in site.log),
        "requests": len(records),
        "violations": report.host_overlaps
        + report.ip_over_cap
        + report.gap_violations
        + report.retry_after_violations
        + report.disallowed_fetches,
        "targets": {"not_modified_share": ">= 0.9", "article_lag_periods_median": "<= 2"},
        "load_1min": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--period", type=float, default=4.0, help="the hub's publication interval")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recrawl-sandbox-") as tmp:
        started = time.time()
        result = asyncio.run(run(args.seconds, args.period, Path(tmp)))
        result["started_at"] = round(started, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
