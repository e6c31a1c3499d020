"""Autoscaled fetchers against a pinned count, on the same broad sandbox web, in one run.

Each variant crawls its own fresh copy of the web (a sandbox child process, as in
``compare_scrapy.py``) for the same time budget; the runs alternate, so that the
machine's load falls on both alike. Figures per variant (see compare_scrapy's
doc): ``pages_per_s``, ``cpu_s_per_1000_pages``, crawler CPU per wall second,
coverage and politeness violations by kind. Variants: ``auto`` is ``courtly
crawl`` with no ``--concurrency`` and no ``--processes`` (the defaults);
``pinned-N`` pins ``--concurrency N``; ``-p1`` variants pin one process.

    python benchmarks/autoscale.py --hosts 2000 --seconds 30 --variants auto,pinned-32 --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from compare_scrapy import (
    DELAY_FACTOR,
    USER_AGENT,
    Sandbox,
    Scenario,
    machine,
    run_measured,
    scenarios,
    summarise,
)
from courtly.sandbox import SandboxSpec, load_log

HERE = Path(__file__).resolve().parent


def scenario(hosts: int) -> Scenario:
    """compare_scrapy's broad scenario on ``hosts`` hosts (its concurrency is not used)."""
    broad = scenarios(quick=False)["broad"]
    spec = dataclasses.replace(SandboxSpec.broad(hosts), pages_per_host=broad.spec.pages_per_host)
    return dataclasses.replace(broad, spec=spec)


def command(
    chosen: Scenario, web: Sandbox, seconds: float, state: Path, variant: str, verbose: bool
) -> list[str]:
    """``courtly crawl`` for ``variant``: flags only where the variant pins something."""
    args = [
        sys.executable,
        "-m",
        "courtly",
        "crawl",
        "--state",
        str(state),
        "--user-agent",
        USER_AGENT,
        "--seeds-file",
        str(web.info["seeds_file"]),
        "--hosts-file",
        str(web.info["hosts_file"]),
        "--allow-private-networks",
        "--min-delay",
        str(chosen.min_delay_s),
        "--delay-factor",
        str(DELAY_FACTOR),
        "--per-ip",
        str(chosen.per_ip),
        "--max-time",
        str(seconds),
        "--timeout",
        str(chosen.timeout_s),
        "--connect-timeout",
        str(min(5.0, chosen.timeout_s)),
        "--scope",
        "domain",
        "--progress-interval",
        "5",
        *(["-v"] if verbose else []),
    ]
    name = variant
    if name.endswith("-p1"):
        args += ["--processes", "1"]
        name = name.removesuffix("-p1")
    if name.startswith("pinned-"):
        args += ["--concurrency", name.removeprefix("pinned-")]
    elif name != "auto":
        raise SystemExit(f"unknown variant {variant!r}")
    return args


def run_variant(
    chosen: Scenario, variant: str, seconds: float, workdir: Path, repeat: int, verbose: bool
) -> dict[str, Any]:
    run_dir = workdir / f"{variant}-{repeat}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    web = Sandbox(chosen.spec, run_dir / "web")
    try:
        cmd = command(chosen, web, seconds, run_dir / "state", variant, verbose)
        cost = run_measured(cmd, run_dir / "courtly.log")
    finally:
        web.stop()
    records = load_log(Path(web.info["log_path"]))
    figures = summarise(chosen, web, records, cost, seconds)
    figures["command"] = " ".join(cmd[2:])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--variants", default="auto,pinned-32")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of alternating runs")
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "autoscale")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("-v", "--verbose", action="store_true", help="courtly crawl -v (logs)")
    args = parser.parse_args(argv)
    chosen = scenario(args.hosts)
    variants = [v for v in args.variants.split(",") if v]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for repeat in range(args.repeats):
        for variant in variants:
            print(f"[{variant} #{repeat}] {args.seconds:.0f} s ...", file=sys.stderr, flush=True)
            figures = run_variant(chosen, variant, args.seconds, args.workdir, repeat, args.verbose)
            runs[variant].append(figures)
            print(
                f"[{variant} #{repeat}] {figures['pages_per_s']} pages/s, "
                f"{figures['cpu_s_per_1000_pages']} CPU s/1000 pages, "
                f"violations {figures['violations']} {figures['violations_by_kind']}",
                file=sys.stderr,
                flush=True,
            )
    result = {
        "benchmark": "autoscale",
        "machine": machine(),
        "hosts": args.hosts,
        "seconds": args.seconds,
        "runs": runs,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
