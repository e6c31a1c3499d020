"""The sandbox web on loopback: robots variants, 429s, redirects, bombs, the log, the auditor.

The last test crawls the whole small web with a tiny polite crawler written
here, then checks that the auditor finds it clean and that it reached every
page of the ground truth: the server, the truth and the auditor agree.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import sys
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urljoin

import aiohttp
import pytest
from protego import Protego
from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from courtly.sandbox import (
    RequestRecord,
    SandboxServer,
    SandboxSpec,
    SandboxWorld,
    audit,
    load_log,
    parse_hosts_file,
)
from courtly.sandbox.server import DropPlan
from courtly.sandbox.urls import split_url

pytestmark = pytest.mark.integration

UA = "courtly/0.1 (+mailto:ops@example.org)"
SPEC = dataclasses.replace(SandboxSpec.small(), hang_s=3.0)


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[SandboxServer]:
    async with SandboxServer(SPEC, workdir=tmp_path) as server:
        yield server


def _host(web: SandboxServer, **wanted: object) -> str:
    for h in web.world.hosts:
        if all(getattr(h, key) == value for key, value in wanted.items()):
            return h.name
    raise LookupError(wanted)


async def _get(
    session: aiohttp.ClientSession,
    web: SandboxServer,
    host: str,
    path: str,
    *,
    timeout_s: float = 5.0,
    ua: str = UA,
    ip: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    ip = ip or web.hosts[host]
    async with session.get(
        URL(f"http://{ip}:{web.port}{path}", encoded=True),
        headers={"Host": f"{host}:{web.port}", "User-Agent": ua},
        allow_redirects=False,
        timeout=aiohttp.ClientTimeout(total=timeout_s),
    ) as resp:
        body = await resp.read()
        return resp.status, dict(resp.headers), body


async def test_files_and_addresses(web: SandboxServer) -> None:
    mapping = parse_hosts_file(web.hosts_file.read_text())
    assert mapping == web.hosts
    assert web.seeds_file.read_text().split() == list(web.seeds)
    info = json.loads(web.info_file.read_text())
    assert info["port"] == web.port and Path(info["log_path"]) == web.log_path
    assert set(web.base_urls) == set(mapping)
    assert all(url.endswith(f":{web.port}/") for url in web.base_urls.values())


async def test_robots_variants_over_http(web: SandboxServer) -> None:
    async with aiohttp.ClientSession() as session:
        status, _, body = await _get(
            session, web, _host(web, robots_variant="rules"), "/robots.txt"
        )
        assert status == 200 and b"User-agent: courtly" in body and b"User-agent: *" in body
        status, _, body = await _get(
            session, web, _host(web, robots_variant="crawl_delay"), "/robots.txt"
        )
        assert status == 200 and b"Crawl-delay: 0.1" in body
        status, _, _ = await _get(session, web, _host(web, robots_variant="missing"), "/robots.txt")
        assert status == 404
        failing = _host(web, robots_variant="server_error")
        status, _, _ = await _get(session, web, failing, "/robots.txt")
        assert status in (500, 503)
        moved = _host(web, robots_variant="redirect")
        status, headers, _ = await _get(session, web, moved, "/robots.txt")
        assert status == 301 and headers["Location"] == "/robots-moved.txt"
        status, _, body = await _get(session, web, moved, "/robots-moved.txt")
        assert status == 200 and b"Disallow: /private/" in body
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            await _get(
                session, web, _host(web, robots_variant="hang"), "/robots.txt", timeout_s=0.3
            )
        assert time.monotonic() - began < 2.0


async def test_retry_after_redirect_loop_bomb_big_page_dead_and_unknown(web: SandboxServer) -> None:
    flaky = _host(web, flaky=True)
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        answers = [await _get(session, web, flaky, f"/p/{i}.html") for i in range(SPEC.flaky_every)]
        assert [a[0] for a in answers[:-1]] == [200] * (SPEC.flaky_every - 1)
        status, headers, _ = answers[-1]
        assert status in (429, 503) and headers["Retry-After"] == str(SPEC.retry_after_s)

        plain = _host(web, robots_variant="rules", flaky=False)
        status, headers, _ = await _get(session, web, plain, "/r/loop/a")
        assert status == 302
        status, headers, _ = await _get(session, web, plain, headers["Location"])
        assert status == 302 and headers["Location"].endswith("/r/loop/a")

        hostile = _host(web, hostile=True)
        status, headers, raw = await _get(session, web, hostile, "/bomb.html")
        assert status == 200 and headers["Content-Encoding"] == "gzip"
        assert len(raw) < 1024 * 1024
        inflater = zlib.decompressobj(wbits=31)
        inflated = 0
        for start in range(0, len(raw), 4096):
            piece = inflater.decompress(raw[start : start + 4096])
            inflated += len(piece)
            while inflater.unconsumed_tail:
                inflated += len(inflater.decompress(inflater.unconsumed_tail))
        assert inflated > 100 * 1024 * 1024

        ip = web.hosts[hostile]
        async with session.get(
            f"http://{ip}:{web.port}/big.html",
            headers={"Host": hostile, "User-Agent": UA},
        ) as resp:
            assert resp.status == 200 and (resp.content_length or 0) > 10 * 1024 * 1024
            first = await resp.content.readexactly(1024 * 1024)
            assert len(first) == 1024 * 1024
            resp.close()

        dead = _host(web, dead=True)
        with pytest.raises(aiohttp.ClientConnectorError):
            await _get(session, web, dead, "/")

        live_ip = web.world.layout.live_ips[0]
        status, _, _ = await _get(session, web, "nowhere.site0.test", "/", ip=live_ip)
        assert status == 404

        slow = _host(web, slow=True)
        began = time.monotonic()
        status, _, _ = await _get(session, web, slow, "/")
        assert status == 200 and time.monotonic() - began >= SPEC.slow_s * 0.9


async def test_log_records_every_request(tmp_path: Path) -> None:
    async with SandboxServer(SPEC, workdir=tmp_path) as web:
        plain = _host(web, robots_variant="rules", flaky=False, slow=False)
        hostile = _host(web, hostile=True)
        before = time.time()
        async with aiohttp.ClientSession() as session:
            for path in ("/", "/p/1.html", "/p/%31.html", "/nope"):
                await _get(session, web, plain, path, ua="tester/1.0")
            ip = web.hosts[hostile]
            async with session.get(
                f"http://{ip}:{web.port}/big.html", headers={"Host": hostile}
            ) as resp:
                await resp.content.readexactly(256 * 1024)
                resp.close()
            await asyncio.sleep(0.1)
        after = time.time()
    records = load_log(web.log_path)
    assert [r.path for r in records if r.host == plain] == [
        "/",
        "/p/1.html",
        "/p/%31.html",
        "/nope",
    ]
    mine = [r for r in records if r.host == plain]
    assert [r.status for r in mine] == [200, 200, 200, 404]
    for rec in mine:
        assert isinstance(rec, RequestRecord)
        assert before <= rec.start_at <= rec.end_at <= after
        assert rec.ip == web.hosts[plain] and rec.port == web.port
        assert rec.ua == "tester/1.0" and rec.bytes > 0
    assert len({r.conn for r in mine}) == 1  # keep-alive: one connection
    big = next(r for r in records if r.path == "/big.html")
    assert big.status == 200 and 256 * 1024 <= big.bytes < SPEC.big_page_bytes


async def test_cli_serve_writes_ready_marker_and_stops_on_sigterm(tmp_path: Path) -> None:
    code = "from courtly.sandbox.cli import sandbox; sandbox()"
    args = ("serve", "--spec", "small", "--dir", str(tmp_path))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        ready = tmp_path / "ready"
        assert info["ready"] is True and await asyncio.to_thread(ready.exists)
        hosts_text = await asyncio.to_thread(Path(info["hosts_file"]).read_text)
        hosts = parse_hosts_file(hosts_text)
        name = next(iter(hosts))
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://{hosts[name]}:{info['port']}/", headers={"Host": name}) as resp,
        ):
            assert resp.status == 200
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert not (tmp_path / "ready").exists()
    assert [r.path for r in load_log(tmp_path)] == ["/"]


async def test_cli_serve_changing_serves_the_watch_pages_with_validators(tmp_path: Path) -> None:
    code = "from courtly.sandbox.cli import sandbox; sandbox()"
    args = ("serve", "--dir", str(tmp_path), "--changing", "--news-period", "1")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        urls = (await asyncio.to_thread((tmp_path / "watch.txt").read_text)).split()
        assert urls == info["watch_urls"] and info["watch_seeds_file"] == str(
            tmp_path / "watch.txt"
        )
        assert {u.rsplit("/", 1)[1] for u in urls} >= {"hub", "prices", "still", "liar"}
        hosts = parse_hosts_file(await asyncio.to_thread(Path(info["hosts_file"]).read_text))
        name = urls[0].split("/")[2].split(":")[0]
        base = f"http://{hosts[name]}:{info['port']}"
        async with aiohttp.ClientSession() as session:
            headers = {"Host": name}
            async with session.get(f"{base}/watch/still", headers=headers) as resp:
                assert resp.status == 200
                etag = resp.headers["ETag"]
            again = {**headers, "If-None-Match": etag}
            async with session.get(f"{base}/watch/still", headers=again) as resp:
                assert resp.status == 304
            async with session.get(f"{base}/watch/hub", headers=headers) as resp:
                first = await resp.text()
            await asyncio.sleep(1.2)  # one publication interval: a new article on the hub
            async with session.get(f"{base}/watch/hub", headers=headers) as resp:
                assert resp.status == 200 and await resp.text() != first
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# -- a tiny polite crawler, to show that truth, server and auditor agree ------------


class _MiniCrawler:
    """One request per host at a time, a gap after each, robots obeyed, per-IP cap."""

    def __init__(self, web: SandboxServer, *, min_delay_s: float, per_ip_cap: int) -> None:
        self.web = web
        self.addresses = parse_hosts_file(web.hosts_file.read_text())
        self.min_delay_s = min_delay_s
        self.ip_slots = {ip: asyncio.Semaphore(per_ip_cap) for ip in set(self.addresses.values())}
        self.queues: dict[str, deque[tuple[str, int, int]]] = {}
        self.seen: set[str] = set()
        self.running: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.session: aiohttp.ClientSession

    def canonical(self, url: str) -> str:
        host, port, path = split_url(url)
        path, _, query = path.partition("?")
        if query.startswith("sid="):  # session ids are not part of a page's identity
            query = ""
        segments = [s for s in path.split("/") if s]
        if any(segments.count(s) > 2 for s in segments):
            return ""  # ever-deeper repetition: a trap
        return f"http://{host}:{port}{path}" + (f"?{query}" if query else "")

    def add(self, url: str, depth: int, hops: int) -> None:
        url = self.canonical(url) if url.startswith("http://") else ""
        host = split_url(url)[0] if url else ""
        if not url or url in self.seen or host not in self.addresses or depth > 8:
            return
        self.seen.add(url)
        self.queues.setdefault(host, deque()).append((url, depth, hops))
        if host not in self.running:
            self.running.add(host)
            task = asyncio.get_running_loop().create_task(self.crawl_host(host))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def fetch(
        self, url: str, timeout_s: float = 5.0
    ) -> tuple[int, dict[str, str], bytes] | None:
        host, port, path = split_url(url)
        ip = self.addresses[host]
        async with self.ip_slots[ip]:
            try:
                async with self.session.get(
                    f"http://{ip}:{port}{path}",
                    headers={"Host": f"{host}:{port}", "User-Agent": UA},
                    allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=timeout_s),
                ) as resp:
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in resp.content.iter_chunked(65536):
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > 2 * 1024 * 1024:
                            resp.close()
                            break
                    return resp.status, dict(resp.headers), b"".join(chunks)
            except (aiohttp.ClientError, TimeoutError):
                return None

    async def crawl_host(self, host: str) -> None:
        robots_url = f"http://{host}:{self.web.port}/robots.txt"
        rules: Protego | None = None
        allow_all = False
        for _ in range(6):
            answer = await self.fetch(robots_url, timeout_s=1.0)
            await asyncio.sleep(self.min_delay_s)
            if answer is None or answer[0] >= 500:
                break
            status, headers, body = answer
            if status in (301, 302, 307, 308):
                robots_url = urljoin(robots_url, headers["Location"])
                continue
            if status >= 400:
                allow_all = True
            else:
                rules = Protego.parse(body.decode())
            break
        if rules is None and not allow_all:
            self.queues.pop(host, None)
            return
        delay_s = max(self.min_delay_s, (rules.crawl_delay("courtly") or 0) if rules else 0)
        await asyncio.sleep(delay_s - self.min_delay_s)  # the gap after robots.txt too
        queue = self.queues[host]
        retries = 0
        while queue:
            url, depth, hops = queue.popleft()
            if rules is not None and not rules.can_fetch(url, "courtly"):
                continue
            answer = await self.fetch(url)
            if answer is None:
                await asyncio.sleep(delay_s)
                continue
            status, headers, body = answer
            if status in (429, 503) and retries < 3:
                retries += 1
                queue.appendleft((url, depth, hops))
                await asyncio.sleep(max(delay_s, float(headers.get("Retry-After", "1"))))
                continue
            retries = 0
            await asyncio.sleep(delay_s)
            if status in (301, 302, 307, 308) and hops < 5:
                self.add(urljoin(url, headers["Location"]), depth, hops + 1)
            elif status == 200 and headers.get("Content-Type", "").startswith("text/html"):
                self.links(url, headers, body, depth)

    def links(self, url: str, headers: dict[str, str], body: bytes, depth: int) -> None:
        if "nofollow" in headers.get("X-Robots-Tag", "").lower():
            return
        tree = LexborHTMLParser(body)
        meta = tree.css_first('meta[name="robots"]')
        if meta is not None and "nofollow" in (meta.attributes.get("content") or "").lower():
            return
        for anchor in tree.css("a[href]"):
            if "nofollow" in (anchor.attributes.get("rel") or "").lower():
                continue
            href = anchor.attributes.get("href") or ""
            self.add(urljoin(url, href), depth + 1, 0)

    async def run(self, seeds: tuple[str, ...]) -> None:
        async with aiohttp.ClientSession() as session:
            self.session = session
            for seed in seeds:
                self.add(seed, 0, 0)
            while self.tasks:
                await asyncio.wait(list(self.tasks))


@pytest.mark.slow
async def test_a_polite_crawl_is_clean_and_complete(tmp_path: Path) -> None:
    async with SandboxServer(SPEC, workdir=tmp_path) as web:
        crawler = _MiniCrawler(web, min_delay_s=0.05, per_ip_cap=2)
        await asyncio.wait_for(crawler.run(web.seeds), 60)
        truth = web.truth
    records = load_log(web.log_path)
    report = audit(
        records, spec_or_truth=truth, min_delay_s=0.05, per_ip_cap=2, user_agent_token="courtly"
    )
    assert report.clean, report.summary()
    assert report.expected_fetched == report.expected_pages, report.summary()
    assert report.retry_after_violations == 0
    statuses = {r.status for r in records}
    assert {0, 200, 301, 302, 404}.issubset(statuses)  # 0: the hanging robots.txt
    assert statuses & {429, 503}
    # The same log judged by a stricter rule than the crawler kept must fail.
    strict = audit(records, spec_or_truth=truth, min_delay_s=0.5, per_ip_cap=2)
    assert strict.gap_violations > 0 and not strict.clean


async def _raw_get(web: SandboxServer, host: str, path: str) -> bytes:
    """One GET on a new connection; everything the server sent until it closed."""
    reader, writer = await asyncio.open_connection(web.hosts[host], web.port)
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {UA}\r\nConnection: close\r\n\r\n"
    writer.write(head.encode())
    try:
        return await asyncio.wait_for(reader.read(), 5.0)  # until EOF: the server closes
    finally:
        writer.close()


async def test_drop_plan_cuts_robots_and_every_nth_page(tmp_path: Path) -> None:
    plain = [
        h.name
        for h in SandboxWorld(SPEC, 1).hosts
        if h.robots_variant in ("rules", "wildcard", "token_open") and not (h.slow or h.flaky)
    ]
    host, other = plain[:2]
    plan = DropPlan(robots=((host, "head"), (other, "body")), page_every=2)
    async with SandboxServer(SPEC, workdir=tmp_path / "web", drops=plan) as web:
        assert await _raw_get(web, host, "/robots.txt") == b""  # cut before the head
        half = await _raw_get(web, other, "/robots.txt")
        head, _, body = half.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        assert head.startswith(b"HTTP/1.1 200") and len(body) == length // 2 > 0
        pages = [await _raw_get(web, host, "/") for _ in range(4)]
    # Pages 2 and 4 are cut: at the head first, then in the body.
    assert pages[1] == b"" and pages[3].startswith(b"HTTP/1.1 200")
    assert pages[0].startswith(b"HTTP/1.1 200") and pages[2].startswith(b"HTTP/1.1 200")
    cut = pages[3].partition(b"\r\n\r\n")[2]
    assert 0 < len(cut) < len(pages[2].partition(b"\r\n\r\n")[2])
    logged = [(r.host, r.path, r.status, r.bytes) for r in load_log(web.log_path)]
    assert logged[:2] == [(host, "/robots.txt", 0, 0), (other, "/robots.txt", 200, len(body))]
    assert [status for _, _, status, _ in logged[2:]] == [200, 0, 200, 200]
