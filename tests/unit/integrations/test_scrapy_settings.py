"""The add-on's settings and what ``CourtlyAddon.update_settings`` forces."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings

from courtly.integrations.scrapy import FORCED_SETTINGS, CourtlyAddon, CourtlySettings


def test_defaults_follow_the_cli() -> None:
    config = CourtlySettings.from_settings(Settings())
    assert config.store == "memory" and config.state_dir is None
    assert (config.min_delay_s, config.delay_factor, config.max_delay_s) == (1.0, 2.0, 60.0)
    assert config.per_ip == 2 and not config.allow_private_networks
    assert config.concurrency == 16  # Scrapy's CONCURRENT_REQUESTS
    assert config.lease_ttl_s > 180.0  # outlasts Scrapy's DOWNLOAD_TIMEOUT


def test_settings_are_read_by_their_names(tmp_path: Path) -> None:
    settings = Settings(
        {
            "COURTLY_STATE": str(tmp_path),
            "COURTLY_MIN_DELAY": "0.5",
            "COURTLY_DELAY_FACTOR": 3,
            "COURTLY_MAX_DELAY": 9,
            "COURTLY_PER_IP": 4,
            "COURTLY_ALLOW_PRIVATE_NETWORKS": "true",
            "COURTLY_MAX_WAIT": 7,
            "USER_AGENT": "bot/1 (+https://bot.invalid)",
            "CONCURRENT_REQUESTS": 32,
            "DOWNLOAD_TIMEOUT": 10,
        }
    )
    config = CourtlySettings.from_settings(settings)
    assert config.store == "sqlite" and config.state_dir == tmp_path
    assert (config.min_delay_s, config.delay_factor, config.max_delay_s) == (0.5, 3.0, 9.0)
    assert config.per_ip == 4 and config.allow_private_networks
    assert config.max_wait_s == 7.0 and config.concurrency == 32
    assert config.user_agent == "bot/1 (+https://bot.invalid)"
    assert config.lease_ttl_s == 70.0


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "redis+cluster://127.0.0.1:7000,127.0.0.1:7001"]
)
def test_a_redis_store_and_a_crawl_name_make_a_shared_crawl(url: str, tmp_path: Path) -> None:
    config = CourtlySettings.from_settings(
        Settings({"COURTLY_STORE": url, "COURTLY_CRAWL_NAME": "news"})
    )
    assert config.store == url and config.crawl_name == "news" and config.shared
    assert not CourtlySettings.from_settings(Settings({"COURTLY_STATE": str(tmp_path)})).shared


@pytest.mark.parametrize(
    "values",
    [
        {"COURTLY_STORE": "sqlite"},
        {"COURTLY_STORE": "redis"},
        {"COURTLY_STORE": "redis://127.0.0.1:6379/0"},
        {"COURTLY_STORE": "memory", "COURTLY_CRAWL_NAME": "c"},
        {"COURTLY_PER_IP": 0},
        {"COURTLY_MAX_WAIT": -1},
        {"COURTLY_MIN_DELAY": 5, "COURTLY_MAX_DELAY": 1},
    ],
)
def test_unusable_settings_are_refused(values: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CourtlySettings.from_settings(Settings(values))


def test_addon_installs_the_scheduler_and_turns_scrapys_throttles_off() -> None:
    settings = Settings({"CONCURRENT_REQUESTS": 24})
    settings.set("DOWNLOAD_DELAY", 2.0, priority="cmdline")
    settings.set("AUTOTHROTTLE_ENABLED", True, priority="spider")
    settings.set("ROBOTSTXT_OBEY", True, priority="project")
    CourtlyAddon().update_settings(settings)
    assert settings["SCHEDULER"] == "courtly.integrations.scrapy.scheduler.CourtlyScheduler"
    for name, value in FORCED_SETTINGS.items():
        assert settings[name] == value, name
    assert settings.getfloat("DOWNLOAD_DELAY") == 0.0
    assert not settings.getbool("AUTOTHROTTLE_ENABLED")
    assert not settings.getbool("ROBOTSTXT_OBEY")
    assert settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") == 24
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    spider = settings.getdict("SPIDER_MIDDLEWARES")
    assert downloader["courtly.integrations.scrapy.middleware.CourtlyDownloaderMiddleware"] == 0
    assert spider["courtly.integrations.scrapy.middleware.CourtlySpiderMiddleware"] == 0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"COURTLY_STORE": "redis://127.0.0.1:6379/0", "COURTLY_CRAWL_NAME": "a b"},
            r"COURTLY_CRAWL_NAME must be a non-empty name without colons, braces or spaces",
        ),
        (
            {"COURTLY_STORE": "redis://127.0.0.1:6379/0?bogus=1", "COURTLY_CRAWL_NAME": "c"},
            r"COURTLY_STORE redis://127\.0\.0\.1:6379/0\?bogus=1: .*'bogus'",
        ),
        (
            {"COURTLY_STORE": "redis://127.0.0.1:port/0", "COURTLY_CRAWL_NAME": "c"},
            r"COURTLY_STORE .*Port could not be cast",
        ),
    ],
)
def test_a_shared_store_the_redis_client_would_refuse_is_refused_at_start(
    values: dict[str, object], message: str
) -> None:
    """As `courtly crawl` does: at the start, with the setting's name, not as a traceback
    when the store is first used."""
    with pytest.raises(ValueError, match=message):
        CourtlySettings.from_settings(Settings(values))


def test_addon_refuses_a_bad_configuration_at_start() -> None:
    with pytest.raises(ValueError, match="COURTLY_STATE"):
        CourtlyAddon().update_settings(Settings({"COURTLY_STORE": "sqlite"}))


@pytest.mark.parametrize(
    ("concurrency", "min_delay_s", "hosts"),
    [(16, 1.0, 16), (256, 0.25, 32), (128, 1.0, 64), (64, 10.0, 64), (8, 0.0, 16)],
)
def test_default_breadth_grows_with_the_delay_within_bounds(
    concurrency: int, min_delay_s: float, hosts: int
) -> None:
    settings = Settings({"CONCURRENT_REQUESTS": concurrency, "COURTLY_MIN_DELAY": min_delay_s})
    config = CourtlySettings.from_settings(settings)
    assert config.back_queues == hosts
    assert 16 <= config.back_queues <= max(16, concurrency)


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [
        ("COURTLY_MIN_DELAY", "fast", "a number"),
        ("COURTLY_PER_IP", "two", "a whole number"),
        ("COURTLY_ALLOW_PRIVATE_NETWORKS", "maybe", "true or false"),
        ("CONCURRENT_REQUESTS", "many", "a whole number"),
    ],
)
def test_a_value_of_the_wrong_kind_is_named_with_its_setting(
    name: str, value: str, kind: str
) -> None:
    """Scrapy's own error said only "could not convert string to float: 'fast'"."""
    with pytest.raises(ValueError, match=f"^{name} must be {kind}, not '{value}'$"):
        CourtlySettings.from_settings(Settings({name: value}))
