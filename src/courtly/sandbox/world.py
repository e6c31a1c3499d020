"""The content of a sandbox web: :class:`SandboxWorld` maps (host, path) to a resource.

Everything here is a pure function of ``(spec, port)``: pages, links, robots
rules and sitemaps are derived from ``spec.seed``, the host name and the path,
so the server and the ground truth see the same web.
"""

from __future__ import annotations

import gzip
import hashlib
import random
import re
from xml.sax.saxutils import escape as xml_escape

from courtly.sandbox.html import build_filler, render_page
from courtly.sandbox.layout import HostProfile, Layout, build_layout
from courtly.sandbox.resources import (
    BigPage,
    Document,
    GzipBomb,
    Hang,
    Link,
    Page,
    Redirect,
    Resource,
)
from courtly.sandbox.robots_model import RobotsGroup, RobotsModel, RobotsRule
from courtly.sandbox.spec import SandboxSpec
from courtly.sandbox.urls import host_url, normalise_path, split_url

__all__ = ["SandboxWorld"]

_CONTENT = re.compile(r"^/p/(\d+)\.html$")
_LEAF = re.compile(r"^/(private|private/open|nobots|no-courtly|nf|meta-nf|xrt-nf|sm)/(\d+)\.html$")
_CHAIN = re.compile(r"^/r/(chain|long)/(\d+)$")
_CALENDAR = re.compile(r"^/calendar/(\d{4})/(\d{1,2})/$")
_DEEP = re.compile(r"^/deep/((?:(?:more|next)/)*)$")
_SESSION = re.compile(r"^/s/(\d+)\.html$")

_LEAF_COUNT = 2
_SITEMAP_ONLY = 3
_CHAIN_HOPS = 3
_LONG_HOPS = 8
_TEXT = "text/html; charset=utf-8"
_SITEMAP_VARIANTS = frozenset(
    {"rules", "crawl_delay", "wildcard", "redirect", "redirect_chain", "token_open"}
)
_ROBOTS_MOVED = "/robots-moved.txt"
_ROBOTS_FINAL = "/robots-final.txt"
_NO_RULES = frozenset({"missing", "server_error", "hang"})


class SandboxWorld:
    """The sandbox web for ``spec`` served on ``port`` (the same on every address)."""

    def __init__(self, spec: SandboxSpec, port: int) -> None:
        self.spec = spec
        self.port = port
        self.layout: Layout = build_layout(spec)
        self._hosts = self.layout.by_name()
        self._site_hosts: dict[str, list[HostProfile]] = {}
        for profile in self.layout.hosts:
            self._site_hosts.setdefault(profile.site, []).append(profile)
        self._sites = self.layout.sites()
        self.filler = build_filler(spec.seed)
        self._robots = {h.name: self._build_robots(h) for h in self.layout.hosts if not h.dead}

    # -- names and addresses ---------------------------------------------------------

    @property
    def hosts(self) -> tuple[HostProfile, ...]:
        """Every host, dead ones included, site-major."""
        return self.layout.hosts

    def profile(self, host: str) -> HostProfile | None:
        """The profile of ``host`` (lower-case name), or ``None`` if it is not in the sandbox."""
        return self._hosts.get(host)

    def url(self, host: str, path_qs: str = "/") -> str:
        """The canonical URL of ``path_qs`` on ``host``."""
        return host_url(host, self.port, path_qs)

    def canonical(self, url: str) -> str:
        """``url`` in the sandbox's canonical spelling (lower-case host, normalised path)."""
        host, port, path_qs = split_url(url)
        return host_url(host, port, path_qs)

    def host_addresses(self) -> dict[str, str]:
        """Host name -> IPv4 address, for the hosts file (dead hosts included)."""
        return {h.name: h.ip for h in self.layout.hosts}

    def seeds(self, *, per_site: bool = False) -> tuple[str, ...]:
        """Front pages: of every seeded host (dead ones too), or of the first host of each site.

        Every host is seeded unless ``spec.seeded_share`` is below 1.
        """
        if per_site:
            return tuple(self.url(h.name) for h in self.layout.hosts if h.index_in_site == 0)
        return tuple(self.url(h.name) for h in self.layout.hosts if h.seeded)

    # -- behaviour the server applies ------------------------------------------------

    def overload(self, profile: HostProfile, count: int) -> tuple[int, int] | None:
        """The overload answer to ``profile``'s ``count``-th non-robots request (from 1).

        ``(status, Retry-After seconds)`` inside a window (the last
        ``spec.flaky_window`` of every ``spec.flaky_every`` requests of a flaky
        host), else ``None``. The status is the host's ``overload_status``, or
        429 and 503 by turns, window by window.
        """
        spec = self.spec
        if not profile.flaky or count < 1:
            return None
        position = (count - 1) % spec.flaky_every + 1
        if position <= spec.flaky_every - spec.flaky_window:
            return None
        status = profile.overload_status or (429 if (count // spec.flaky_every) % 2 else 503)
        return status, spec.retry_after_s

    @staticmethod
    def latency_s(profile: HostProfile | None) -> float:
        """Seconds ``profile``'s host waits before every answer (0.0: at once)."""
        return profile.latency_s if profile is not None and profile.slow else 0.0

    # -- robots --------------------------------------------------------------------

    def robots_model(self, host: str) -> RobotsModel | None:
        """The rules ``host`` publishes, or ``None`` if it publishes none (404, 5xx, hang, dead)."""
        return self._robots.get(host)

    def robots_paths(self, host: str) -> frozenset[str]:
        """Paths fetched as part of reading robots.txt (the file and its redirect targets)."""
        profile = self._hosts.get(host)
        if profile is not None and profile.robots_variant == "redirect":
            return frozenset({"/robots.txt", _ROBOTS_MOVED})
        if profile is not None and profile.robots_variant == "redirect_chain":
            return frozenset({"/robots.txt", _ROBOTS_MOVED, _ROBOTS_FINAL})
        return frozenset({"/robots.txt"})

    def _build_robots(self, profile: HostProfile) -> RobotsModel | None:
        variant = profile.robots_variant
        if variant in _NO_RULES:
            return None
        if variant == "empty":
            return RobotsModel()
        token = self.spec.robots_token
        delay = profile.crawl_delay_s if variant == "crawl_delay" else None
        star = RobotsGroup(
            ("*",),
            (
                RobotsRule(False, "/private/"),
                RobotsRule(False, "/nobots/"),
            ),
            crawl_delay_s=None if delay is None else 2 * delay,
        )
        mine_a = RobotsGroup(
            (token, "otherbot"),
            (RobotsRule(False, "/private/"), RobotsRule(True, "/private/open/")),
            crawl_delay_s=delay,
        )
        mine_b = RobotsGroup((token.capitalize(),), (RobotsRule(False, "/no-courtly/"),))
        groups: tuple[RobotsGroup, ...]
        if variant == "wildcard":
            groups = (
                RobotsGroup(("*",), (RobotsRule(False, "/*.html$"),)),
                RobotsGroup(
                    (token,),
                    (
                        RobotsRule(False, "/p/*3.html$"),
                        RobotsRule(False, "/*?sid="),
                        RobotsRule(False, "/private/"),
                        RobotsRule(True, "/private/open/*.html$"),
                        RobotsRule(False, "/no-courtly/"),
                    ),
                ),
            )
        elif variant == "token_blocked":
            groups = (
                RobotsGroup(("*",), (RobotsRule(False, "/private/"),)),
                RobotsGroup((token,), (RobotsRule(False, "/"),)),
            )
        elif variant == "token_open":
            # An explicit "Allow: /": a group with no rules would merge with the next
            # user-agent line (blank lines do not end a group in RFC 9309).
            groups = (
                RobotsGroup((token,), (RobotsRule(True, "/"),)),
                RobotsGroup(("*",), (RobotsRule(False, "/"),)),
            )
        else:
            groups = (mine_a, star, mine_b)
        sitemaps: tuple[str, ...] = ()
        if self.spec.sitemaps and variant in _SITEMAP_VARIANTS:
            sitemaps = (self.url(profile.name, "/sitemap.xml"),)
        return RobotsModel(groups=groups, sitemaps=sitemaps)

    def sitemap_pages(self, host: str) -> tuple[str, ...]:
        """Page URLs listed by the sitemaps ``host`` advertises (empty if none)."""
        if not self.sitemap_urls(host):
            return ()
        profile = self._hosts[host]
        pages = [self.url(host, f"/p/{i}.html") for i in range(self._pages(profile))]
        pages.extend(self.url(host, f"/sm/{i}.html") for i in range(_SITEMAP_ONLY))
        pages.append(self.url(host, "/"))
        return tuple(pages)

    def sitemap_urls(self, host: str) -> tuple[str, ...]:
        """The sitemap URLs ``host`` advertises in robots.txt."""
        model = self._robots.get(host)
        return model.sitemaps if model is not None else ()

    # -- resolving -----------------------------------------------------------------

    def resolve(self, host: str, path_qs: str) -> Resource:
        """What ``host`` answers for ``path_qs`` (before slow/429 behaviour is applied).

        ``host`` must be lower-case without a port; the path is normalised first,
        so duplicate spellings (``%7E``, ``./``, fragments) resolve alike.
        """
        profile = self._hosts.get(host)
        if profile is None or profile.dead:
            return _not_found()
        path_qs = normalise_path(path_qs)
        path, _, query = path_qs.partition("?")
        spec = self.spec
        if path == "/robots.txt":
            return self._robots_resource(profile)
        if path in (_ROBOTS_MOVED, _ROBOTS_FINAL):
            moved = self._moved_robots(profile, path)
            if moved is not None:
                return moved
        if path == "/":
            return self._front_page(profile)
        match = _CONTENT.match(path)
        if match and int(match.group(1)) < self._pages(profile):
            return self._content_page(profile, int(match.group(1)))
        match = _LEAF.match(path)
        if match and int(match.group(2)) < (
            _SITEMAP_ONLY if match.group(1) == "sm" else _LEAF_COUNT
        ):
            family = match.group(1)
            if (family == "sm" and spec.sitemaps) or (
                family in ("nf", "meta-nf", "xrt-nf") and spec.nofollow
            ):
                return self._leaf_page(profile, path)
            if spec.special_pages and family not in ("sm", "nf", "meta-nf", "xrt-nf"):
                return self._leaf_page(profile, path)
        if spec.duplicate_spellings and path == "/~user/":
            return self._leaf_page(profile, path)
        if spec.nofollow and path in ("/meta-nf.html", "/xrt-nf.html"):
            family = path[1:-5]
            links = tuple(
                Link(f"/{family}/{i}.html", self.url(host, f"/{family}/{i}.html"))
                for i in range(_LEAF_COUNT)
            )
            return Page(
                title=f"{host}{path}",
                links=(Link("/", self.url(host, "/"), text="home"), *links),
                size_bytes=spec.min_page_bytes,
                meta_nofollow=family == "meta-nf",
                header_nofollow=family == "xrt-nf",
            )
        if spec.redirects and path in ("/r/target.html", "/r/long-target.html"):
            return self._leaf_page(profile, path)
        if spec.redirects:
            redirect = self._redirect(profile, path)
            if redirect is not None:
                return redirect
        if spec.sitemaps:
            sitemap = self._sitemap(profile, path)
            if sitemap is not None:
                return sitemap
        if profile.trap:
            trap = self._trap_page(profile, path, query)
            if trap is not None:
                return trap
        if profile.hostile and path == "/big.html":
            return BigPage(spec.big_page_bytes)
        if profile.hostile and path == "/bomb.html":
            return GzipBomb(spec.bomb_bytes)
        return _not_found()

    def render(self, page: Page) -> bytes:
        """The HTML bytes of ``page``."""
        return render_page(page, self.filler)

    def _moved_robots(self, profile: HostProfile, path: str) -> Resource | None:
        """The hops of a redirected robots.txt: 200 (redirect), or 302 then 200 (chain)."""
        variant = profile.robots_variant
        if variant == "redirect_chain" and path == _ROBOTS_MOVED:
            return Redirect(302, _ROBOTS_FINAL, self.url(profile.name, _ROBOTS_FINAL))
        final = _ROBOTS_MOVED if variant == "redirect" else _ROBOTS_FINAL
        if variant not in ("redirect", "redirect_chain") or path != final:
            return None
        model = self._robots[profile.name]
        assert model is not None
        return Document(200, "text/plain; charset=utf-8", model.render().encode())

    def _robots_resource(self, profile: HostProfile) -> Resource:
        variant = profile.robots_variant
        if variant == "missing":
            return _not_found()
        if variant == "empty":
            return Document(200, "text/plain; charset=utf-8", b"")
        if variant == "server_error":
            status = 500 if profile.index_in_site % 2 == 0 else 503
            return Document(status, "text/plain; charset=utf-8", b"robots.txt is unwell\n")
        if variant == "hang":
            return Hang(self.spec.hang_s)
        if variant in ("redirect", "redirect_chain"):
            return Redirect(301, _ROBOTS_MOVED, self.url(profile.name, _ROBOTS_MOVED))
        model = self._robots[profile.name]
        assert model is not None
        return Document(200, "text/plain; charset=utf-8", model.render().encode())

    # -- pages ---------------------------------------------------------------------

    def _pages(self, profile: HostProfile) -> int:
        """Content pages of ``profile`` (a dead host counts ``pages_per_host``, for links)."""
        return profile.pages or self.spec.pages_per_host

    def _rng(self, host: str, path: str) -> random.Random:
        return random.Random(f"{self.spec.seed}|{host}|{path}")

    def _size(self, rng: random.Random) -> int:
        lo, hi = self.spec.min_page_bytes, self.spec.max_page_bytes
        return lo + int((hi - lo) * rng.random() ** 2)

    def _spell(self, host: str, from_dir: str, target_path: str, rng: random.Random) -> str:
        """A spelling of ``target_path`` on ``host``, sometimes a non-canonical duplicate."""
        if self.spec.tracking_share and rng.random() < self.spec.tracking_share:
            return target_path + _tracking_tag(rng)
        if not self.spec.duplicate_spellings or rng.random() >= 0.35:
            return target_path
        directory, _, name = target_path.rpartition("/")
        section = rng.randint(1, 9)
        relative = directory + "/" == from_dir
        # Only the chosen spelling is built; the draws are those of a choice among all.
        pick = rng.randrange(6 + relative + (self.port == 80))
        if pick == 0:
            return f"{target_path}#section-{section}"
        if pick == 1:
            return f"http://{host.upper()}:{self.port}{target_path}"
        if pick == 2:
            return f"{directory}/./{name}"
        if pick == 3:
            return f"{directory}/x/../{name}"
        if pick == 4:
            return f"{directory}/%{ord(name[0]):02X}{name[1:]}" if name else target_path
        if pick == 5:
            return self.url(host, target_path)
        if pick == 6 and relative:
            return f"./{name}"
        return f"http://{host}:80{target_path}"

    def _other_hosts(self, profile: HostProfile) -> list[HostProfile]:
        return [h for h in self._site_hosts[profile.site] if h.name != profile.name]

    def _cross_links(self, profile: HostProfile, rng: random.Random) -> list[Link]:
        links: list[Link] = []
        others = self._other_hosts(profile)
        if others and rng.random() < 0.5:
            other = rng.choice(others)
            path = f"/p/{rng.randrange(self._pages(other))}.html"
            links.append(Link(self.url(other.name, path), self.url(other.name, path)))
        if self.spec.cross_site_links and len(self._sites) > 1 and rng.random() < 0.3:
            site = rng.choice([s for s in self._sites if s != profile.site])
            other = rng.choice(self._site_hosts[site])
            links.append(Link(self.url(other.name), self.url(other.name)))
        if self.spec.external_links and rng.random() < 0.3:
            href = f"http://elsewhere{rng.randrange(50)}.invalid/page{rng.randrange(1000)}.html"
            links.append(Link(href, None, text="elsewhere"))
        return links

    def _far_link(self, profile: HostProfile, rng: random.Random) -> Link:
        """A link to another host anywhere in the web: its front page or one of its pages."""
        hosts = self.layout.hosts
        other = hosts[int(rng.random() * len(hosts))]
        while other.name == profile.name and len(hosts) > 1:
            other = hosts[int(rng.random() * len(hosts))]
        path = "/" if rng.random() < 0.5 else f"/p/{int(rng.random() * self._pages(other))}.html"
        url = self.url(other.name, path)
        return Link(url, url)

    def _same_host_link(self, profile: HostProfile, from_dir: str, rng: random.Random) -> Link:
        host = profile.name
        if self.spec.links_max:
            target = f"/p/{int(rng.random() * self._pages(profile))}.html"
        else:  # the classic web keeps its draws
            target = f"/p/{rng.randrange(self._pages(profile))}.html"
        return Link(self._spell(host, from_dir, target, rng), self.url(host, target))

    def _content_page(self, profile: HostProfile, index: int) -> Page:
        host, spec = profile.name, self.spec
        path = f"/p/{index}.html"
        rng = self._rng(host, path)
        links = [Link("/", self.url(host, "/"), text="home")]
        if index + 1 < self._pages(profile):
            nxt = f"/p/{index + 1}.html"
            links.append(Link(self._spell(host, "/p/", nxt, rng), self.url(host, nxt), text="next"))
        if spec.links_max:
            for _ in range(rng.randint(spec.links_min, spec.links_max) - len(links)):
                if rng.random() < spec.cross_host_share:
                    links.append(self._far_link(profile, rng))
                else:
                    links.append(self._same_host_link(profile, "/p/", rng))
        else:
            for _ in range(rng.randint(3, 7)):
                links.append(self._same_host_link(profile, "/p/", rng))
            links.extend(self._cross_links(profile, rng))
        if spec.nofollow and rng.random() < 0.2:
            target = f"/nf/{rng.randrange(_LEAF_COUNT)}.html"
            nofollow = Link(target, self.url(host, target), nofollow=True)
            if spec.links_max:  # in place of the last link: 10-30 links in all
                links[-1] = nofollow
            else:
                links.append(nofollow)
        return Page(title=f"{host}{path}", links=tuple(links), size_bytes=self._size(rng))

    def _leaf_page(self, profile: HostProfile, path: str) -> Page:
        host = profile.name
        rng = self._rng(host, path)
        target = f"/p/{rng.randrange(self._pages(profile))}.html"
        links = (
            Link("/", self.url(host, "/"), text="home"),
            Link(target, self.url(host, target)),
        )
        return Page(title=f"{host}{path}", links=links, size_bytes=self.spec.min_page_bytes)

    def _front_page(self, profile: HostProfile) -> Page:
        host, spec = profile.name, self.spec
        rng = self._rng(host, "/")
        links: list[Link] = []

        def add(href: str, path: str | None = None, *, nofollow: bool = False) -> None:
            target = self.url(host, path if path is not None else href)
            links.append(Link(href, target, nofollow=nofollow))

        listed = self._pages(profile)
        if spec.links_max:
            listed = min(listed, spec.links_max)
        for i in range(listed):
            add(self._spell(host, "/", f"/p/{i}.html", rng), f"/p/{i}.html")
        if spec.special_pages:
            for family in ("private", "private/open", "nobots", "no-courtly"):
                for i in range(_LEAF_COUNT):
                    add(f"/{family}/{i}.html")
        if spec.duplicate_spellings:
            add("/%7Euser/", "/~user/")
            add("/~user/")
            add("/%7euser/", "/~user/")
        if spec.nofollow:
            for i in range(_LEAF_COUNT):
                add(f"/nf/{i}.html", nofollow=True)
            add("/meta-nf.html")
            add("/xrt-nf.html")
        if spec.redirects:
            add(f"/r/chain/{_CHAIN_HOPS - 1}")
            add(f"/r/long/{_LONG_HOPS - 1}")
            add("/r/loop/a")
            add("/r/away")
        if profile.trap:
            add("/calendar/2024/1/")
            add("/deep/")
            sid = _session_id(spec.seed, host, "front", 0)
            add(f"/s/0.html?sid={sid}")
        if profile.hostile:
            add("/big.html")
            add("/bomb.html")
        for other in self._other_hosts(profile):
            links.append(Link(self.url(other.name), self.url(other.name)))
        if spec.links_max:
            far = sum(rng.random() < spec.cross_host_share for _ in range(len(links)))
            links.extend(self._far_link(profile, rng) for _ in range(far))
        else:
            links.extend(self._cross_links(profile, rng))
        return Page(title=f"{host}/", links=tuple(links), size_bytes=self._size(rng))

    def _redirect(self, profile: HostProfile, path: str) -> Redirect | None:
        host = profile.name
        match = _CHAIN.match(path)
        if match:
            kind, hop = match.group(1), int(match.group(2))
            limit = _CHAIN_HOPS if kind == "chain" else _LONG_HOPS
            if hop >= limit:
                return None
            if hop == 0:
                final = "/r/target.html" if kind == "chain" else "/r/long-target.html"
                return Redirect(302, self.url(host, final), self.url(host, final))
            nxt = f"/r/{kind}/{hop - 1}"
            return Redirect(301 if hop % 2 else 307, nxt, self.url(host, nxt))
        if path == "/r/loop/a":
            return Redirect(302, "/r/loop/b", self.url(host, "/r/loop/b"))
        if path == "/r/loop/b":
            return Redirect(302, self.url(host, "/r/loop/a"), self.url(host, "/r/loop/a"))
        if path == "/r/away":
            others = [h for h in self._other_hosts(profile) if not h.dead] or [profile]
            target = self.url(others[0].name, "/")
            return Redirect(301, target, target)
        return None

    def _trap_page(self, profile: HostProfile, path: str, query: str) -> Page | None:
        host, size = profile.name, self.spec.min_page_bytes
        home = Link("/", self.url(host, "/"), text="home")
        match = _CALENDAR.match(path)
        if match:
            year, month = int(match.group(1)), int(match.group(2))
            if not 1 <= month <= 12:
                return None
            prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
            next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
            links = [home]
            for y, m, text in ((prev_y, prev_m, "previous"), (next_y, next_m, "next")):
                if 1000 <= y <= 9999:
                    p = f"/calendar/{y}/{m}/"
                    links.append(Link(p, self.url(host, p), text=text))
            return Page(f"{host}{path}", tuple(links), size, trap=True)
        match = _DEEP.match(path)
        if match:
            links = [home]
            for seg in ("more/", "next/"):
                links.append(Link(path + seg, self.url(host, path + seg)))
            return Page(f"{host}{path}", tuple(links), size, trap=True)
        match = _SESSION.match(path)
        if match:
            sid = query.partition("sid=")[2] or "none"
            links = [home]
            for j in range(3):
                target = f"/s/{j}.html?sid={_session_id(self.spec.seed, host, sid, j)}"
                links.append(Link(target, self.url(host, target)))
            return Page(f"{host}{path}?{query}", tuple(links), size, trap=True)
        return None

    def _sitemap(self, profile: HostProfile, path: str) -> Resource | None:
        host = profile.name
        if path == "/sitemap.xml":
            locs = [self.url(host, "/sitemap-pages.xml"), self.url(host, "/sitemap-more.xml.gz")]
            body = _xml("sitemapindex", "sitemap", locs)
            return Document(200, "application/xml", body)
        if path == "/sitemap-pages.xml":
            locs = [self.url(host, f"/p/{i}.html") for i in range(self._pages(profile))]
            locs.append(self.url(host, "/sm/0.html"))
            return Document(200, "application/xml", _xml("urlset", "url", locs))
        if path == "/sitemap-more.xml.gz":
            locs = [self.url(host, f"/sm/{i}.html") for i in range(1, _SITEMAP_ONLY)]
            locs.append(self.url(host, "/"))
            body = gzip.compress(_xml("urlset", "url", locs), mtime=0)
            return Document(200, "application/gzip", body)
        return None


_CAMPAIGNS = ("news", "spring", "feed", "social", "partner")


def _tracking_tag(rng: random.Random) -> str:
    """A query of tracking parameters, as newsletters, ads and social sites add them."""
    kind = rng.randrange(4)
    token = f"{rng.getrandbits(40):010x}"
    if kind == 0:
        source, medium = rng.choice(_CAMPAIGNS), rng.choice(("email", "cpc", "social"))
        return f"?utm_source={source}&utm_medium={medium}&utm_campaign=c{rng.randrange(9)}"
    if kind == 1:
        return f"?fbclid={token}"
    if kind == 2:
        return f"?gclid={token}"
    return f"?mc_cid={token[:6]}&mc_eid={token[4:]}"


def _not_found() -> Document:
    return Document(404, _TEXT, b"<!doctype html><title>404</title><p>Not found.</p>\n")


def _session_id(seed: int, host: str, sid: str, index: int) -> str:
    return hashlib.blake2b(f"{seed}|{host}|{sid}|{index}".encode(), digest_size=4).hexdigest()


def _xml(root: str, item: str, locs: list[str]) -> bytes:
    ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
    entries = "".join(f"<{item}><loc>{xml_escape(loc)}</loc></{item}>\n" for loc in locs)
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="{ns}">\n{entries}</{root}>\n'
    return text.encode()
