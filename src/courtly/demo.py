"""``make demo``: serve the sandbox web, crawl it for ~30 s with live progress, audit it.

Everything runs on 127.0.0.0/8. The sandbox runs in its own process (so the
crawl's CPU is its own); the crawl writes to ``./demo-state/crawl`` (WARC,
catalogue, frontier), wiped at the start of each demo; at the end the sandbox's
request log is audited for politeness violations, and everything started is
stopped.

``python -m courtly.demo [--seconds 30] [--dir demo-state]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from courtly.cli import run_async
from courtly.config import CrawlConfig, read_seeds_file
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.progress import progress_for
from courtly.sandbox import SandboxSpec, SandboxWorld, audit, load_log

__all__ = ["main"]

USER_AGENT = "courtly/0.1 (+https://courtly.invalid/bot; demo@courtly.invalid)"
MIN_DELAY_S = 0.25
PER_IP = 2


def start_sandbox(workdir: Path) -> tuple[subprocess.Popen[bytes], dict[str, object]]:
    """Start ``courtly sandbox serve --spec demo`` and wait until it is ready."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "courtly", "sandbox", "serve", "--spec", "demo"]
    proc = subprocess.Popen([*cmd, "--dir", str(workdir)], stdout=subprocess.DEVNULL)
    ready = workdir / "ready"
    deadline = time.monotonic() + 30
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("the sandbox web did not start")
        time.sleep(0.05)
    info: dict[str, object] = json.loads(ready.read_text())
    return proc, info


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--dir", type=Path, default=Path("demo-state"))
    args = parser.parse_args(argv)
    base: Path = args.dir
    if base.exists():
        shutil.rmtree(base)
    print(f"courtly demo: serving the sandbox web on loopback (pid {os.getpid()})", flush=True)
    proc, info = start_sandbox(base / "web")
    try:
        config = CrawlConfig(
            state_dir=base / "crawl",
            user_agent=USER_AGENT,
            seeds=tuple(read_seeds_file(Path(str(info["seeds_file"])))),
            hosts_file=Path(str(info["hosts_file"])),
            allow_private_networks=True,
            min_delay_s=MIN_DELAY_S,
            per_ip=PER_IP,
            max_time_s=args.seconds,
            concurrency=16,
            total_timeout_s=5.0,
            connect_timeout_s=2.0,
            max_requests_per_host=400,
            progress_interval_s=0.5,
        )
        print(
            f"crawling {len(config.seeds)} seeds for {args.seconds:.0f} s "
            f"(min delay {MIN_DELAY_S} s, {PER_IP} per IP) ...",
            flush=True,
        )
        snapshot: CrawlSnapshot = run_async(Crawler(config, progress=progress_for()).run())
    finally:
        stop(proc)
    spec = SandboxSpec.from_json(json.dumps(info["spec"]))
    world = SandboxWorld(spec, int(str(info["port"])))
    report = audit(
        load_log(Path(str(info["log_path"]))),
        spec_or_truth=world,
        min_delay_s=MIN_DELAY_S,
        per_ip_cap=PER_IP,
        seeds=config.seeds,
    )
    print("\npoliteness audit of the sandbox's request log:")
    print(report.summary())
    print(f"\nWARC files and catalogue are in {config.state_dir}")
    print(f"  courtly status --state {config.state_dir}")
    print(f"  courtly export --state {config.state_dir} --format jsonl | head")
    return 0 if report.clean and snapshot.pages > 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
