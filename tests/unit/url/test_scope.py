from __future__ import annotations

import re

import pytest

from courtly.errors import ConfigError
from courtly.url import DomainResolver, Scope

SEEDS = ["http://www.site1.test:8080/", "https://Example.COM/start"]


def test_domain_mode_is_the_default_and_uses_registered_domains() -> None:
    scope = Scope.from_seeds(SEEDS)
    assert scope.mode == "domain"
    assert scope.sites == frozenset({"site1.test", "example.com"})
    assert scope.check("http://a.site1.test:8080/x", 3) is None
    assert scope.check("https://site1.test/", 0) is None  # ports do not matter to scope
    assert scope.check("http://blog.example.com/", 1) is None
    assert scope.check("http://site2.test:8080/", 1) == "out_of_scope"
    assert scope.check("http://example.org/", 1) == "out_of_scope"
    assert scope.check("mailto:x@example.com", 1) == "out_of_scope"


def test_host_mode() -> None:
    scope = Scope.from_seeds(SEEDS, "host")
    assert scope.sites == frozenset({"www.site1.test", "example.com"})
    assert scope.check("http://www.site1.test:9999/x", 1) is None
    assert scope.check("http://a.site1.test:8080/x", 1) == "out_of_scope"


def test_any_mode() -> None:
    scope = Scope.from_seeds([], "any")
    assert scope.sites == frozenset()
    assert scope.check("http://anything.example/", 10**6) is None


def test_too_deep() -> None:
    scope = Scope.from_seeds(SEEDS, max_depth=2)
    assert scope.check("http://a.site1.test:8080/", 2) is None
    assert scope.check("http://a.site1.test:8080/", 3) == "too_deep"
    assert Scope.from_seeds(SEEDS, max_depth=0).check("https://example.com/", 1) == "too_deep"


def test_include_and_exclude() -> None:
    scope = Scope.from_seeds(
        SEEDS,
        include=[r"/docs/", re.compile(r"/blog/")],
        exclude=[r"\.pdf$", r"[?&]session="],
    )
    assert scope.check("https://example.com/docs/a", 1) is None
    assert scope.check("https://example.com/blog/b", 1) is None
    assert scope.check("https://example.com/shop/c", 1) == "not_included"
    assert scope.check("https://example.com/docs/a.pdf", 1) == "excluded"
    assert scope.check("https://example.com/docs/?session=1", 1) == "excluded"
    # Order: depth, then scope, then exclude, then include.
    assert scope.check("https://other.org/docs/a.pdf", 1) == "out_of_scope"


def test_reasons_are_checked_in_order() -> None:
    scope = Scope.from_seeds(SEEDS, exclude=["/x$"], include=["/y"], max_depth=1)
    assert scope.check("https://other.org/x", 2) == "too_deep"
    assert scope.check("https://other.org/x", 1) == "out_of_scope"
    assert scope.check("https://example.com/x", 1) == "excluded"
    assert scope.check("https://example.com/z", 1) == "not_included"


def test_shared_resolver_and_equality() -> None:
    resolver = DomainResolver()
    first = Scope.from_seeds(SEEDS, resolver=resolver)
    second = Scope.from_seeds(list(reversed(SEEDS)))
    assert first.resolver is resolver
    assert first == second
    assert hash(first) == hash(second)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seeds": ["ftp://example.com/"]},
        {"seeds": ["not a url"]},
        {"seeds": []},
        {"seeds": SEEDS, "mode": "planet"},
        {"seeds": SEEDS, "include": ["("]},
        {"seeds": SEEDS, "exclude": ["[a-"]},
        {"seeds": SEEDS, "max_depth": -1},
    ],
)
def test_bad_configuration(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Scope.from_seeds(**kwargs)  # type: ignore[arg-type]
