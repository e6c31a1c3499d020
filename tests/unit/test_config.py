"""Every setting is checked, from flags and from TOML, with a message in the user's terms."""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from courtly.config import CrawlConfig, check_setting, flag_name, load_toml, read_seeds_file
from courtly.errors import ConfigError

UA = "mybot/1.0 (+https://example.org/bot)"


def _config(**values: Any) -> CrawlConfig:
    return CrawlConfig(state_dir=Path("S"), user_agent=UA, **values)


NUMERIC = [
    spec.name
    for spec in fields(CrawlConfig)
    if spec.name not in ("extra",) and spec.type in ("float", "int", "float | None", "int | None")
]


def test_every_numeric_setting_is_checked() -> None:
    assert len(NUMERIC) >= 20
    for name in NUMERIC:
        for bad in (float("nan"), float("inf"), -1e12, "fast", True):
            with pytest.raises(ConfigError, match=f"^{flag_name(name)} must be"):
                _config(**{name: bad})


@given(name=st.sampled_from(NUMERIC), value=st.floats(allow_nan=True, allow_infinity=True))
@example(name="recrawl_min_interval_s", value=2_592_001.0)  # over the default maximum, 30 days
def test_a_number_is_accepted_or_refused_with_a_message_never_a_crash(
    name: str, value: float
) -> None:
    try:
        config = _config(**{name: value})
    except ConfigError as error:
        message, flag = str(error), flag_name(name)
        # the value alone refused, or a pair out of order (a minimum over the default
        # maximum, a maximum under the default minimum): either way the message names it
        assert message.startswith(flag) or (" must not be below " in message and flag in message)
    else:
        accepted = getattr(config, name)
        assert isinstance(accepted, int | float) and math.isfinite(accepted)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("max_time_s", -1, "--max-time must be a number of seconds > 0, not -1"),
        ("max_pages", -5, "--max-pages must be a whole number >= 1, not -5"),
        ("max_requests_per_host", 0, "--max-requests-per-host must be a whole number >= 1"),
        ("progress_interval_s", 0, "--progress-interval must be a number of seconds >= 0.1"),
        ("concurrency", 2.5, "--concurrency must be a whole number from 1 to 10000, not 2.5"),
        ("total_timeout_s", 0, "--timeout must be a number of seconds > 0, not 0"),
        ("scope", "site", "--scope must be one of host, domain, any, not 'site'"),
        ("allow_private_networks", "yes", "--allow-private-networks must be true or false"),
        (
            "recrawl_min_interval_s",
            2_592_001,
            "--recrawl-max-interval (2592000 s) must not be below "
            "--recrawl-min-interval (2592001 s)",
        ),
    ],
)
def test_messages_name_the_flag(name: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(**{name: value})
    assert str(caught.value).startswith(message)


def test_whole_floats_and_ints_are_normalised() -> None:
    config = _config(max_pages=5.0, min_delay_s=2, max_time_s=3)
    assert config.max_pages == 5 and isinstance(config.max_pages, int)
    assert isinstance(config.min_delay_s, float) and isinstance(config.max_time_s, float)
    assert check_setting("seeds", "http://a.test/", "SEED") == ("http://a.test/",)


def test_every_bad_seed_is_listed_shortened() -> None:
    long_url = "http://" + "a" * 9000 + ".test/"
    with pytest.raises(ConfigError) as caught:
        _config(seeds=("http://a.test/", "not a url", long_url, "http:///path"))
    message = str(caught.value)
    assert message.startswith("3 of 4 seeds are not crawlable")
    assert "'not a url'" in message and "'http:///path'" in message
    assert "(9013 characters)" in message and len(message) < 600


def _load(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "crawl.toml"
    path.write_text(text, encoding="utf-8")
    return load_toml(path)


def test_toml_keys_beside_the_crawl_table_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="top-level 'max-time' beside the \\[crawl\\] table"):
        _load(tmp_path, 'max-time = 3\n[crawl]\nscope = "host"\n')


def test_toml_values_are_typed_by_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"min-delay in .*crawl.toml must be a number of sec"):
        _load(tmp_path, '[crawl]\nmin-delay = "fast"\n')
    with pytest.raises(ConfigError, match=r"state in .* must be a path"):
        _load(tmp_path, "[crawl]\nstate = 3\n")


def test_one_setting_under_two_spellings_is_refused(tmp_path: Path) -> None:
    """``min-delay`` and ``min_delay_s`` name one setting: the later silently won."""
    for text in ("min-delay = 0.1\nmin_delay_s = 0.2\n", "max-time = 5\nmax_time = 6\n"):
        with pytest.raises(ConfigError, match=r"'m\w+.\w+' and 'm\w+' are the same setting"):
            _load(tmp_path, text)
    assert _load(tmp_path, "min-delay = 0.1\nmax-delay = 9\n")["min_delay_s"] == 0.1


def test_a_toml_seeds_string_is_one_seed(tmp_path: Path) -> None:
    values = _load(tmp_path, '[crawl]\nseeds = "http://a.test/"\n')
    assert values["seeds"] == ("http://a.test/",)


def test_files_saved_with_a_byte_order_mark_and_crlf_lines_read_as_without(
    tmp_path: Path,
) -> None:
    """Editors on Windows save UTF-8 with a byte order mark and CRLF line ends: the first
    seed of such a seeds file was refused as '\ufeffhttp://...', and a TOML file with one
    did not parse."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\xef\xbb\xbfhttp://a.test/\r\n# a comment\r\n\r\nhttp://b.test/\r\n")
    assert read_seeds_file(seeds) == ["http://a.test/", "http://b.test/"]
    config = tmp_path / "crawl.toml"
    config.write_bytes(
        b'\xef\xbb\xbf[crawl]\r\nscope = "host"\r\nseeds-file = "' + str(seeds).encode() + b'"\r\n'
    )
    assert load_toml(config) == {"scope": "host", "seeds": ("http://a.test/", "http://b.test/")}


def test_every_flag_spelling_is_a_toml_key(tmp_path: Path) -> None:
    values = _load(
        tmp_path,
        "timeout = 5\nconnect-timeout = 2\nmax-body = 1000\nprogress-interval = 1\n"
        "stop-grace = 1\nmax-time = 9\nmin-delay = 0.5\nmax-delay = 9\n",
    )
    config = _config(**values)
    assert (config.total_timeout_s, config.connect_timeout_s, config.max_body_bytes) == (5, 2, 1000)
    assert (config.progress_interval_s, config.stop_grace_s, config.max_time_s) == (1, 1, 9)


def test_keep_and_drop_params_are_checked_and_adjust_the_policy(tmp_path: Path) -> None:
    values = _load(tmp_path, 'keep-param = ["UTM_Source"]\ndrop_params = "ref_*"\n')
    config = _config(**values)
    assert (config.keep_params, config.drop_params) == (("utm_source",), ("ref_*",))
    policy = config.param_policy()
    assert not policy.drops("utm_source") and policy.drops("utm_medium")
    assert policy.drops("ref_site") and not _config().param_policy().drops("ref_site")
    with pytest.raises(ConfigError, match=r"^--drop-param: 'a=b' is not a query parameter name"):
        _config(drop_params=("a=b",))
    with pytest.raises(ConfigError, match=r"keep-param in .*crawl.toml must be a list"):
        _load(tmp_path, "keep-param = 3\n")


def test_an_unused_repeatable_flag_keeps_the_config_files_value(tmp_path: Path) -> None:
    from courtly.cli.crawl_settings import build_config

    path = tmp_path / "crawl.toml"
    path.write_text('keep-param = ["gclid"]\n', encoding="utf-8")
    flags: dict[str, Any] = {"state_dir": tmp_path, "user_agent": UA, "processes": 1}
    unused = build_config(("http://a.test/",), path, (), (), (), False, flags)
    given = build_config(
        ("http://a.test/",), path, (), (), (), False, flags | {"keep_params": ("fbclid",)}
    )
    assert unused.keep_params == ("gclid",)
    assert given.keep_params == ("fbclid",)  # a flag wins over the file
    assert build_config((), path, (), (), (), False, flags | {"keep_params": ()}).keep_params


def test_a_store_password_never_reaches_the_stored_configuration() -> None:
    """The identity is stored (the crawl's config blob), logged on a change and shown by
    ``courtly status``: the store URL's password is masked in it, nothing else changes."""
    base = CrawlConfig(
        seeds=("http://a.test/",), state_dir=Path("s"), user_agent="t/1 (+https://t.test/bot)"
    )
    config = base.with_overrides(store="redis://app:s3cret@127.0.0.1:6379/2", crawl_name="c")
    identity = config.identity()
    assert identity["store"] == "redis://app:***@127.0.0.1:6379/2"
    assert "s3cret" not in repr(identity)
    assert config.store == "redis://app:s3cret@127.0.0.1:6379/2"  # the crawl still connects
    assert base.identity()["store"] == "sqlite"


def test_every_seeds_file_given_adds_its_seeds(tmp_path: Path) -> None:
    """``--seeds-file a --seeds-file b``: the seeds of both (click kept only the last
    file's, and the others' seeds were dropped without a word)."""
    from courtly.cli.crawl_settings import build_config

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("http://a.test/\nhttp://b.test/\n", encoding="utf-8")
    second.write_text("http://b.test/\nhttp://c.test/\n", encoding="utf-8")
    flags: dict[str, Any] = {"state_dir": tmp_path, "user_agent": UA, "processes": 1}
    config = build_config(("http://d.test/",), None, (first, second), (), (), False, flags)
    assert config.seeds == ("http://a.test/", "http://b.test/", "http://c.test/", "http://d.test/")


def test_seeds_file_dash_reads_the_seeds_piped_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``producer | courtly crawl --seeds-file -``: standard input, read as a seeds file is
    (byte order mark, CRLF, comments); its seeds join the others'. Bytes that are not UTF-8
    are refused, naming standard input."""
    import io
    import sys

    from courtly.cli.crawl_settings import build_config

    piped = b"\xef\xbb\xbfhttp://a.test/\r\n# a comment\r\n\r\n  http://b.test/  \r\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(piped)))
    other = tmp_path / "more.txt"
    other.write_text("http://c.test/\n", encoding="utf-8")
    flags: dict[str, Any] = {"state_dir": tmp_path, "user_agent": UA, "processes": 1}
    config = build_config((), None, (Path("-"), other), (), (), False, flags)
    assert config.seeds == ("http://a.test/", "http://b.test/", "http://c.test/")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xffhttp://a.test/\n")))
    with pytest.raises(ConfigError, match=r"seeds file - \(standard input\): 'utf-8' codec"):
        build_config((), None, (Path("-"),), (), (), False, flags)
    assert read_seeds_file(tmp_path / "more.txt") == ["http://c.test/"]  # no stdin: a path


def test_relative_paths_in_a_config_file_are_relative_to_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``courtly crawl --config jobs/news.toml`` means the same from any directory: the
    state, seeds file and hosts file it names relative are found beside it."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "seeds.txt").write_text("http://a.test/\n")
    (jobs / "news.toml").write_text(
        'state = "state"\nseeds-file = "seeds.txt"\nhosts-file = "../hosts"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    loaded = load_toml(Path("../jobs/news.toml"))
    assert loaded["seeds"] == ("http://a.test/",)
    assert loaded["state_dir"] == Path("../jobs/state")
    assert loaded["hosts_file"] == Path("../jobs/../hosts")
    absolute = tmp_path / "abs-state"
    (jobs / "abs.toml").write_text(f'state = "{absolute}"\n')
    assert load_toml(jobs / "abs.toml")["state_dir"] == absolute
    (jobs / "home.toml").write_text('state = "~/crawls/news"\n')
    assert load_toml(jobs / "home.toml")["state_dir"] == Path.home() / "crawls" / "news"
