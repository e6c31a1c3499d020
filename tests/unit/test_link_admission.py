"""Link admission: a known URL whose new in-links lift its level gets a lift entry."""

from __future__ import annotations

from courtly.crawl.links import LinkAdmission
from courtly.fetch.records import FetchResult
from courtly.frontier.records import AddStatus
from courtly.url import DEFAULT_PARAMS, Scope


def _page(url: str, hrefs: list[str]) -> FetchResult:
    body = "".join(f'<a href="{h}">x</a>' for h in hrefs).encode()
    headers = (("Content-Type", "text/html"),)
    return FetchResult(url, 200, headers, b"<html><body>" + body + b"</body></html>", 0.0, 0.0)


def test_a_lift_is_judged_at_the_depth_the_url_was_queued_with() -> None:
    links = LinkAdmission(
        params=DEFAULT_PARAMS,
        host_key=lambda url: url.split("/")[2],
        levels=4,
        robots_token="courtly",
    )
    links.scope = Scope.from_seeds(["http://a.test/"], "any")
    front = links.read("http://a.test/", 0, _page("http://a.test/", ["/t", "/p0", "/p1", "/p2"]))
    links.note(front.queued, [AddStatus.QUEUED] * len(front.queued))
    target = next(entry for entry in front.queued if entry.url == "http://a.test/t")
    assert target.depth == 1
    lifts = []
    for i in range(3):  # three pages one link deeper: the target's 2nd, 3rd, 4th in-links
        page = f"http://a.test/p{i}"
        facts = links.read(page, 1, _page(page, ["/t"]))
        lifts += [entry for entry in facts.queued if entry.url == target.url]
    # the 4th in-link lifts it above where it was queued (judged at depth 1, not 2; its
    # cash, all these pages' own, counts too): the store can move it up
    assert [(entry.lift, entry.depth) for entry in lifts] == [(True, 1)]
    assert lifts[0].level < target.level
