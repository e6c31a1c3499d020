"""What the crawl's wiring imports: a local crawl never loads the Redis store's module."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
from courtly.crawl.wiring import is_shared, shared_ip_gate
from courtly.store.memory import MemoryStore

store = MemoryStore()
print(is_shared(store), "courtly.store.redis.store" in sys.modules)
"""


def test_telling_a_local_store_from_a_shared_one_does_not_import_the_redis_store() -> None:
    found = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert found.stdout.split() == ["False", "False"], found.stderr
