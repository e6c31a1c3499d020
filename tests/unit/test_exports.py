"""The public surface: every name in each package's ``__all__`` resolves, once.

(Sort order is ruff's RUF022 rule: constants, classes, then functions.)"""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "courtly",
    "courtly.url",
    "courtly.robots",
    "courtly.frontier",
    "courtly.fetch",
    "courtly.parse",
    "courtly.archive",
    "courtly.sandbox",
    "courtly.integrations.scrapy",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.{attribute} is listed but missing"


def test_the_issue_names_are_public() -> None:
    import courtly
    import courtly.robots

    assert callable(courtly.Crawler) and callable(courtly.CrawlConfig)
    assert callable(courtly.robots.parse)
