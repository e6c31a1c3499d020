from __future__ import annotations

import dataclasses

import pytest

import courtly.fetch
from courtly.errors import ConfigError
from courtly.fetch import FetchConfig


def test_defaults_have_the_documented_values() -> None:
    config = FetchConfig()
    assert config.connect_timeout_s == 10.0
    assert config.total_timeout_s == 30.0
    assert config.max_body_bytes == 10 * 1024 * 1024
    assert config.max_decoded_bytes == 4 * config.max_body_bytes
    assert config.per_ip_concurrency == 2
    assert config.allow_private_networks is False
    assert config.hosts_file is None
    assert config.dns_ttl_s == 300.0
    assert config.dns_negative_ttl_s < config.dns_ttl_s


def test_config_is_frozen() -> None:
    config = FetchConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.per_ip_concurrency = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    "changes",
    [
        {"user_agent": " "},
        {"user_agent": "bot\r\nX-Evil: 1"},
        {"connect_timeout_s": 0},
        {"total_timeout_s": -1},
        {"max_body_bytes": 0},
        {"max_decoded_bytes": 0},
        {"per_ip_concurrency": 0},
        {"max_url_length": 0},
        {"dns_ttl_s": -1},
    ],
)
def test_unusable_values_are_config_errors(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        FetchConfig(**changes)  # type: ignore[arg-type]


def test_public_names_are_exported_sorted() -> None:
    names = courtly.fetch.__all__
    assert names == sorted(names)
    for name in names:
        assert hasattr(courtly.fetch, name), name
    for required in (
        "DnsCache",
        "FetchConfig",
        "FetchResult",
        "Fetcher",
        "HttpFetcher",
        "MemoryFetcher",
        "decode_text",
        "is_blocked_address",
        "load_hosts_file",
    ):
        assert required in names


async def test_both_fetchers_satisfy_the_seam() -> None:
    from courtly.fetch import Fetcher, HttpFetcher, MemoryFetcher

    fetchers: list[Fetcher] = [HttpFetcher(), MemoryFetcher(lambda url: 204)]
    for fetcher in fetchers:
        assert callable(fetcher.fetch)
    await fetchers[0].aclose()  # type: ignore[attr-defined]
