from __future__ import annotations

from urllib.parse import urljoin

import pytest
from protego import Protego

from courtly.sandbox import Document, GzipBomb, Hang, Page, Redirect, SandboxSpec, SandboxWorld

PORT = 8123


@pytest.fixture(scope="module")
def world() -> SandboxWorld:
    return SandboxWorld(SandboxSpec.small(), PORT)


def _host(world: SandboxWorld, variant: str) -> str:
    return next(h.name for h in world.hosts if h.robots_variant == variant)


def _all_pages(world: SandboxWorld) -> list[tuple[str, str]]:
    return [
        (h.name, path)
        for h in world.hosts
        if not h.dead
        for path in ["/", *(f"/p/{i}.html" for i in range(world.spec.pages_per_host))]
    ]


def test_same_seed_same_bytes_other_seed_other_bytes(world: SandboxWorld) -> None:
    twin = SandboxWorld(SandboxSpec.small(), PORT)
    other = SandboxWorld(SandboxSpec.small(seed=2), PORT)
    differ = 0
    for host, path in _all_pages(world):
        page = world.resolve(host, path)
        assert isinstance(page, Page)
        assert twin.resolve(host, path) == page
        assert twin.render(page) == world.render(page)
        other_page = other.resolve(host, path)
        assert isinstance(other_page, Page)
        differ += other.render(other_page) != world.render(page)
    assert differ > len(_all_pages(world)) // 2


def test_page_sizes_and_link_kinds(world: SandboxWorld) -> None:
    spec = world.spec
    kinds = {"same_host": 0, "other_host": 0, "other_site": 0, "external": 0, "nofollow": 0}
    for host, path in _all_pages(world):
        page = world.resolve(host, path)
        assert isinstance(page, Page)
        body = world.render(page)
        assert spec.min_page_bytes - 1 <= len(body) <= spec.max_page_bytes + 4_000
        site = host.split(".", 1)[1]
        for link in page.links:
            if link.target is None:
                kinds["external"] += 1
                assert ".invalid/" in link.href
                continue
            target_host = link.target.split("/")[2].split(":")[0]
            if link.nofollow:
                kinds["nofollow"] += 1
            elif target_host == host:
                kinds["same_host"] += 1
            elif target_host.endswith(site):
                kinds["other_host"] += 1
            else:
                kinds["other_site"] += 1
    assert all(count > 0 for count in kinds.values()), kinds


def test_every_href_resolves_to_its_declared_target(world: SandboxWorld) -> None:
    spellings = 0
    for host, path in _all_pages(world):
        page = world.resolve(host, path)
        assert isinstance(page, Page)
        base = world.url(host, path)
        for link in page.links:
            if link.target is None:
                continue
            resolved = world.canonical(urljoin(base, link.href))
            assert resolved == link.target, (base, link.href)
            spellings += link.href not in (link.target, link.target.split(str(PORT), 1)[1])
            assert world.profile(link.target.split("/")[2].split(":")[0]) is not None
    assert spellings > 20  # duplicate spellings are really there


def test_duplicate_spellings_resolve_to_one_resource(world: SandboxWorld) -> None:
    host = _host(world, "missing")
    assert world.resolve(host, "/%7Euser/") == world.resolve(host, "/~user/")
    assert world.resolve(host, "/p/./1.html") == world.resolve(host, "/p/1.html")
    assert world.resolve(host, "/p/%31.html#x") == world.resolve(host, "/p/1.html")


def test_rendered_robots_agree_with_the_model(world: SandboxWorld) -> None:
    paths = [
        "/",
        "/p/3.html",
        "/p/13.html",
        "/p/4.html",
        "/private/0.html",
        "/private/open/0.html",
        "/nobots/0.html",
        "/no-courtly/1.html",
        "/s/1.html?sid=ab",
    ]
    checked = 0
    for host in world.hosts:
        model = world.robots_model(host.name)
        if model is None:
            continue
        parsed = Protego.parse(model.render())
        for token in ("courtly", "otherbot", "somebot"):
            for path in paths:
                assert model.allowed(path, token) == parsed.can_fetch("http://h" + path, token)
                checked += 1
            assert model.crawl_delay_s(token) == (parsed.crawl_delay(token) or 0.0)
    assert checked > 100


def test_token_and_star_groups_differ(world: SandboxWorld) -> None:
    differing = 0
    for host in world.hosts:
        model = world.robots_model(host.name)
        if model is None:
            continue
        for path in ("/", "/nobots/0.html", "/no-courtly/0.html", "/private/open/1.html"):
            differing += model.allowed(path, "courtly") != model.allowed(path, "otherbot2")
    assert differing >= 5


def test_robots_variants_resolve_to_their_behaviour(world: SandboxWorld) -> None:
    resolve = world.resolve
    rules = resolve(_host(world, "rules"), "/robots.txt")
    assert isinstance(rules, Document) and rules.status == 200
    assert b"User-agent: courtly" in rules.body and b"User-agent: *" in rules.body
    assert b"Sitemap: http://" in rules.body
    delay = resolve(_host(world, "crawl_delay"), "/robots.txt")
    assert isinstance(delay, Document) and b"Crawl-delay: 0.1" in delay.body
    missing = resolve(_host(world, "missing"), "/robots.txt")
    assert isinstance(missing, Document) and missing.status == 404
    failing = resolve(_host(world, "server_error"), "/robots.txt")
    assert isinstance(failing, Document) and failing.status >= 500
    assert isinstance(resolve(_host(world, "hang"), "/robots.txt"), Hang)
    moved = resolve(_host(world, "redirect"), "/robots.txt")
    assert isinstance(moved, Redirect) and moved.status == 301
    target = resolve(_host(world, "redirect"), "/robots-moved.txt")
    assert isinstance(target, Document) and b"Disallow: /private/" in target.body


def test_redirect_chains_loops_and_traps(world: SandboxWorld) -> None:
    host = _host(world, "missing")
    hops, path = 0, "/r/chain/2"
    while True:
        res = world.resolve(host, path)
        if not isinstance(res, Redirect):
            break
        hops += 1
        path = res.target.split(str(PORT), 1)[1]
    assert hops == 3 and isinstance(res, Page)
    first = world.resolve(host, "/r/loop/a")
    assert isinstance(first, Redirect)
    second = world.resolve(host, first.target.split(str(PORT), 1)[1])
    assert isinstance(second, Redirect) and second.target == world.url(host, "/r/loop/a")
    trap_host = next(h.name for h in world.hosts if h.trap)
    deep = "/deep/" + "more/" * 50
    page = world.resolve(trap_host, deep)
    assert isinstance(page, Page) and page.trap
    assert any(link.target == world.url(trap_host, deep + "more/") for link in page.links)
    cal = world.resolve(trap_host, "/calendar/2999/12/")
    assert isinstance(cal, Page) and cal.trap


def test_hostile_pages_and_sitemaps(world: SandboxWorld) -> None:
    hostile = next(h.name for h in world.hosts if h.hostile)
    bomb = world.resolve(hostile, "/bomb.html")
    assert isinstance(bomb, GzipBomb) and bomb.inflated_bytes > 100 * 1024 * 1024
    big = world.resolve(hostile, "/big.html")
    assert big.size_bytes > 10 * 1024 * 1024  # type: ignore[union-attr]
    host = _host(world, "rules")
    index = world.resolve(host, "/sitemap.xml")
    assert isinstance(index, Document) and b"<sitemapindex" in index.body
    packed = world.resolve(host, "/sitemap-more.xml.gz")
    assert isinstance(packed, Document) and packed.body[:2] == b"\x1f\x8b"
    assert world.resolve(host, "/nope.html") == world.resolve("unknown.test", "/")


def test_overload_comes_in_windows_of_consecutive_answers() -> None:
    spec = SandboxSpec.broad(400)
    world = SandboxWorld(spec, PORT)
    flaky = [h for h in world.hosts if h.flaky]
    assert {h.overload_status for h in flaky} == {429, 503}
    host = flaky[0]
    answers = [world.overload(host, count) for count in range(1, 2 * spec.flaky_every + 1)]
    hit = [i for i, a in enumerate(answers) if a is not None]
    quiet = spec.flaky_every - spec.flaky_window
    window = list(range(quiet, spec.flaky_every))
    assert hit == window + [spec.flaky_every + i for i in window]
    assert {a for a in answers if a is not None} == {(host.overload_status, spec.retry_after_s)}
    steady = next(h for h in world.hosts if not h.flaky and not h.dead)
    assert all(world.overload(steady, count) is None for count in range(1, 50))


def test_the_classic_overload_is_every_kth_request_by_turns(world: SandboxWorld) -> None:
    host = next(h for h in world.hosts if h.flaky)
    every = world.spec.flaky_every
    answers = [world.overload(host, count) for count in range(1, 4 * every + 1)]
    assert [i + 1 for i, a in enumerate(answers) if a is not None] == [
        every * k for k in (1, 2, 3, 4)
    ]
    assert [a[0] for a in answers if a is not None] == [429, 503, 429, 503]


def test_empty_and_twice_redirected_robots() -> None:
    world = SandboxWorld(SandboxSpec.wide(400), PORT)
    empty = _host(world, "empty")
    answer = world.resolve(empty, "/robots.txt")
    assert isinstance(answer, Document) and answer.status == 200 and answer.body == b""
    model = world.robots_model(empty)
    assert model is not None and model.allowed("/p/0.html", "courtly")
    moved = _host(world, "redirect_chain")
    statuses, path = [], "/robots.txt"
    while True:
        answer = world.resolve(moved, path)
        if not isinstance(answer, Redirect):
            break
        statuses.append(answer.status)
        path = answer.target.split(str(PORT), 1)[1]
    assert statuses == [301, 302] and isinstance(answer, Document) and answer.status == 200
    assert b"Disallow: /private/" in answer.body
    assert world.robots_paths(moved) == {"/robots.txt", "/robots-moved.txt", "/robots-final.txt"}


def test_wide_pages_carry_10_to_30_links_and_8_percent_go_elsewhere() -> None:
    world = SandboxWorld(SandboxSpec.wide(400), PORT)
    counts, other = [], 0
    for host in world.hosts[:200]:
        if host.dead:
            continue
        for index in range(min(host.pages, 5)):
            page = world.resolve(host.name, f"/p/{index}.html")
            assert isinstance(page, Page)
            counts.append(len(page.links))
            other += sum(1 for link in page.links if f"//{host.name}:" not in (link.target or ""))
    assert min(counts) >= 10 and max(counts) <= 30
    assert 0.05 <= other / sum(counts) <= 0.11
    seeded = {url.split("/")[2].split(":")[0] for url in world.seeds()}
    assert 0.4 <= len(seeded) / len(world.hosts) <= 0.6
    assert {h.name for h in world.hosts if h.dead} <= seeded
