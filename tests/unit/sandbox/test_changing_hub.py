"""The change simulator's news hub: an article per version, the latest ones linked."""

from __future__ import annotations

from courtly.clock import FakeClock
from courtly.sandbox.changing import HUB_LINKS, ChangingPage, ChangingSite


def test_a_hub_publishes_one_article_per_version_and_links_the_latest() -> None:
    clock = FakeClock()
    hub = ChangingPage("/hub", 3.0, "hub")
    site = ChangingSite((hub,), clock, start_at=clock.now())
    clock.advance(3.0 * 7 + 1)
    status, headers, body = site("http://n.test/hub", {})
    assert status == 200
    links = [f'href="/hub/{n}"' for n in range(7, 7 - HUB_LINKS, -1)]
    assert all(link.encode() in body for link in links)
    assert b'href="/hub/2"' not in body
    etag = dict(headers)["ETag"]
    assert site("http://n.test/hub", {"If-None-Match": etag})[0] == 304
    # an article is a page once published, and never changes
    assert site("http://n.test/hub/7", {})[0] == 200
    assert site("http://n.test/hub/8", {})[0] == 404
    assert site.article("http://n.test/hub/7") == (hub, 7)
    assert site.changed_at(hub, 7) == site.start_at + 21.0
    clock.advance(3.0)
    assert site("http://n.test/hub", {"If-None-Match": etag})[0] == 200
    assert site("http://n.test/hub/8", {})[0] == 200
