"""Duplicate fetches caused by tracking parameters, on a sandbox web's link graph.

The web is served from the generator's model through the in-memory fetcher (no sockets,
no politeness waits: ``--min-delay 0``) for 45 s: every link the crawl reaches counts
(the hosts whose robots.txt fails keep it from running dry). It runs twice: with the
default canonical form (tracking parameters dropped) and with ``keep_params`` set to
the sandbox's tracking names (the form before they were dropped).
``tracking_duplicates`` counts fetches of a URL that differs only by tracking
parameters from one fetched before it (the measure of ``benchmarks/compare_scrapy.py``).

    python benchmarks/tracking_duplicates.py --preset hostile
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from compare_scrapy import tracking_duplicates
from courtly.clock import SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler
from courtly.event_loop import run_async
from courtly.sandbox import SandboxSpec, SandboxWorld
from courtly.sandbox.in_memory import world_fetcher

UA = "courtly/0.1 (+https://courtly.invalid/bot; bench@courtly.invalid)"
SANDBOX_TAGS = ("utm_*", "fbclid", "gclid", "mc_cid", "mc_eid")


def crawl(world: SandboxWorld, keep: tuple[str, ...]) -> dict[str, Any]:
    fetcher = world_fetcher(world, SystemClock())
    with tempfile.TemporaryDirectory() as state:
        config = CrawlConfig(
            state_dir=Path(state),
            user_agent=UA,
            seeds=world.seeds(),
            min_delay_s=0.0,
            delay_factor=0.0,
            store="memory",
            scope="any",
            keep_params=keep,
            max_time_s=45.0,  # hosts whose robots.txt fails are retried until then
        )
        snapshot = run_async(Crawler(config, fetcher=fetcher).run())
    pages = [u for u in fetcher.requests if not u.endswith("/robots.txt")]
    dups = tracking_duplicates(pages)
    return {
        "pages": len(pages),
        "tracking_duplicates": dups,
        "tracking_duplicate_share": round(dups / len(pages), 4) if pages else None,
        "stop_reason": snapshot.stop_reason,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="hostile")
    args = parser.parse_args(argv)
    world = SandboxWorld(SandboxSpec.preset(args.preset), 8080)
    result = {
        "preset": args.preset,
        "tracking_share": world.spec.tracking_share,
        "kept_tags": crawl(world, SANDBOX_TAGS),
        "default": crawl(world, ()),
    }
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
