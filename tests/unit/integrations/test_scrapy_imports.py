"""What the Scrapy add-on imports: not courtly's own crawler (its fetcher, pages, WARC
writing and their libraries), which a Scrapy process never runs."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
import courtly.integrations.scrapy

print("courtly.crawl.crawler" in sys.modules)
"""


def test_the_add_on_does_not_import_the_crawler() -> None:
    found = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert found.stdout.split() == ["False"], found.stderr
