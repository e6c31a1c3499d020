"""Hypothesis strategies that build messy http(s) URLs from parts."""

from __future__ import annotations

from hypothesis import strategies as st

_HEX = "0123456789abcdefABCDEF"

schemes = st.sampled_from(["http", "https", "HTTP", "Https"])

_ascii_label = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1
)
_idn_label = st.text("aäöüßéçñжпрмеіเ例えdefxyz", min_size=1, max_size=10)
_label = st.one_of(
    _ascii_label.filter(lambda s: not s.startswith("-") and not s.endswith("-")).map(
        lambda s: s[:20]
    ),
    _idn_label,
)
_domain = st.builds(
    lambda labels, tld, dot: ".".join([*labels, tld]) + dot,
    st.lists(_label, min_size=1, max_size=3),
    st.sampled_from(["com", "COM", "de", "test", "co.uk", "github.io", "рф"]),
    st.sampled_from(["", "", "."]),
)
_ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
_ipv6 = st.sampled_from(["[::1]", "[2001:DB8::1]", "[fe80::a:b]", "[::ffff:127.0.0.1]"])
hosts = st.one_of(_domain, _domain, _domain, _ipv4, _ipv6)

ports = st.one_of(
    st.just(""),
    st.sampled_from([":80", ":443", ":8080", ":"]),
    st.integers(1, 65535).map(lambda p: f":{p}"),
)

_escape = st.tuples(st.sampled_from(_HEX), st.sampled_from(_HEX)).map(lambda t: f"%{t[0]}{t[1]}")
_path_char = st.one_of(
    st.sampled_from(list("abcXYZ019-._~!$&'()*+,;=:@ \"<>^`{|}é€中")),
    _escape,
    st.sampled_from(["%7E", "%7e", "%41", "%2F", "%2f", "%25", "%c3%a9", "%C3%A9", "%2e", "%2E"]),
)
_segment = st.one_of(
    st.lists(_path_char, max_size=6).map("".join),
    st.sampled_from([".", "..", "%2e%2e", ".%2E", ""]),
)
paths = st.lists(_segment, max_size=6).map(lambda segs: "/" + "/".join(segs) if segs else "")
_query_char = st.one_of(_path_char, st.sampled_from(list("?/=&+")))
queries = st.one_of(
    st.just(""),
    st.just("?"),
    st.lists(_query_char, max_size=12).map(lambda cs: "?" + "".join(cs)),
)
fragments = st.one_of(st.just(""), st.just("#"), st.text("abc#?/ é", max_size=5).map("#{}".format))
userinfo = st.sampled_from(["", "", "", "user@", "User:Pass@", ":@"])

urls = st.builds(
    lambda scheme, user, host, port, path, query, fragment: (
        f"{scheme}://{user}{host}{port}{path}{query}{fragment}"
    ),
    schemes,
    userinfo,
    hosts,
    ports,
    paths,
    queries,
    fragments,
)

hrefs = st.one_of(
    urls,
    st.builds(lambda p, q, f: p.lstrip("/") + q + f, paths, queries, fragments),
    st.builds(lambda p, q, f: p + q + f, paths, queries, fragments),
    st.builds(lambda h, p: f"//{h}{p}", hosts, paths),
    st.sampled_from(["", " ", "#x", "?", "..", "../../..", "mailto:a@b", "javascript:x", "\\a\\b"]),
)
