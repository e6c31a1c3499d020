"""The sandbox web without sockets: a :class:`~courtly.fetch.memory.MemoryFetcher` that
answers each URL from the world's model, as the server would for its pages, redirects and
documents. What needs a socket to mean anything (hangs, slow answers, gzip bombs, huge
pages, dropped connections) is a 404 here; politeness, robots.txt and the crawl's own
logic run as over the network, with no waits but the crawl's own."""

from __future__ import annotations

from courtly.clock import Clock
from courtly.fetch.memory import MemoryFetcher, Reply
from courtly.sandbox.resources import Document, Page, Redirect
from courtly.sandbox.urls import split_url
from courtly.sandbox.world import SandboxWorld

__all__ = ["world_fetcher", "world_reply"]


def world_reply(world: SandboxWorld, url: str) -> Reply:
    """What the sandbox serves for ``url`` (a socket-only resource: 404)."""
    host, _, path_qs = split_url(url)
    resource = world.resolve(host, path_qs)
    if isinstance(resource, Page):
        return (200, {"Content-Type": "text/html"}, world.render(resource))
    if isinstance(resource, Redirect):
        return (resource.status, {"Location": resource.location}, b"")
    if isinstance(resource, Document):
        return (resource.status, {"Content-Type": resource.content_type}, resource.body)
    return 404


def world_fetcher(world: SandboxWorld, clock: Clock) -> MemoryFetcher:
    """A fetcher answering from ``world`` on ``clock``; ``.requests`` lists the URLs asked."""
    return MemoryFetcher(lambda url: world_reply(world, url), clock)
