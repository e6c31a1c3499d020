from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.parse import PageLinks, extract_links
from courtly.parse.links import new_element_finder

PAGE = "http://example.test/dir/page.html"


def urls(page: PageLinks) -> list[str]:
    return [link.url for link in page.links]


def test_relative_absolute_and_protocol_relative_hrefs_resolve() -> None:
    html = b"""<html><body>
      <a href="a.html">a</a> <a href="/root">r</a> <a href="../up">u</a>
      <a href="//other.test/x">o</a> <a href="https://secure.test/">s</a> <a href="?q=1">q</a>
    </body></html>"""
    assert urls(extract_links(html, PAGE)) == [
        "http://example.test/dir/a.html",
        "http://example.test/root",
        "http://example.test/up",
        "http://other.test/x",
        "https://secure.test/",
        "http://example.test/dir/page.html?q=1",
    ]


def test_base_href_is_resolved_against_the_page_and_applies_to_every_link() -> None:
    html = b"""<html><head><title>t</title></head><body>
      <a href="early">before base</a>
      <base href="../other/"><base href="/ignored-second/">
      <a href="late">after</a></body></html>"""
    page = extract_links(html, PAGE)
    assert page.base_url == "http://example.test/other/"
    assert urls(page) == ["http://example.test/other/early", "http://example.test/other/late"]


def test_unusable_base_href_falls_back_to_the_page_url() -> None:
    html = b'<base href="javascript:alert(1)"><a href="x">x</a>'
    page = extract_links(html, PAGE)
    assert page.base_url == PAGE
    assert urls(page) == ["http://example.test/dir/x"]


def test_nofollow_spellings_per_link() -> None:
    html = b"""<body>
      <a href="/1" rel="nofollow">1</a>
      <a href="/2" rel='NoFollow'>2</a>
      <a href="/3" rel=NOFOLLOW>3</a>
      <a href="/4" rel="noopener   nofollow
        noreferrer">4</a>
      <a href="/5" rel="nofollowers">5</a>
      <a href="/6" rel="ugc sponsored">6</a>
      <area href="/7" rel="nofollow">
    </body>"""
    page = extract_links(html, PAGE)
    flags = {link.url.rsplit("/", 1)[1]: link.nofollow for link in page.links}
    assert flags == {"1": True, "2": True, "3": True, "4": True, "5": False, "6": False, "7": True}
    assert next(link.rel for link in page.links if link.url.endswith("/4")) == (
        "noopener nofollow noreferrer"
    )
    assert [link.url for link in page.followable()] == [
        "http://example.test/5",
        "http://example.test/6",
    ]


def test_a_link_is_followable_if_any_occurrence_is() -> None:
    html = (
        b'<a href="/x" rel=nofollow>1</a><a href="/x">2</a>'
        b'<a href="/y">3</a><a href="/y" rel=nofollow>'
    )
    page = extract_links(html, PAGE)
    assert [(link.url, link.nofollow) for link in page.links] == [
        ("http://example.test/x", False),
        ("http://example.test/y", False),
    ]


def test_meta_robots_variations() -> None:
    cases = {
        b'<meta name="robots" content="noindex, nofollow">': (True, True),
        b'<META NAME="ROBOTS" CONTENT="NOINDEX">': (True, False),
        b"<meta name=robots content=none>": (True, True),
        b'<meta name="robots" content="index,follow">': (False, False),
        b'<meta name="robots" content="noarchive nofollow">': (False, True),
        b'<meta name="courtly" content="noindex">': (True, False),
        b'<meta name="otherbot" content="noindex, nofollow">': (False, False),
        b'<meta name="robots" content="nofollow"><meta name="robots" content="noindex">': (
            True,
            True,
        ),
        b'<meta name="description" content="noindex nofollow">': (False, False),
    }
    for head, expected in cases.items():
        page = extract_links(head + b'<a href="/z">z</a>', PAGE)
        assert (page.noindex, page.nofollow) == expected, head
        assert urls(page) == ["http://example.test/z"], head  # links kept even when nofollow
        assert page.followable() == (() if expected[1] else page.links), head


def test_robots_token_is_configurable() -> None:
    html = b'<meta name="mybot" content="nofollow"><a href="/z">z</a>'
    assert extract_links(html, PAGE, robots_token="MyBot").nofollow
    assert not extract_links(html, PAGE).nofollow


def test_x_robots_tag_header_applies_even_without_meta() -> None:
    html = b'<a href="/z">z</a>'
    assert extract_links(html, PAGE, x_robots_tag="noindex").noindex
    assert extract_links(html, PAGE, x_robots_tag="googlebot: nofollow").nofollow is False
    page = extract_links(html, PAGE, x_robots_tag=["googlebot: noindex", "courtly: nofollow"])
    assert (page.noindex, page.nofollow) == (False, True)


def test_decoys_in_comments_scripts_styles_and_textareas_are_ignored() -> None:
    html = b"""<html><head>
      <script>document.write('<a href="/script-decoy">x</a>')</script>
      <script type="application/ld+json">{"url": "<a href='/json-decoy'>"}</script>
      <style>/* <a href="/style-decoy"> */</style>
      </head><body>
      <!-- <a href="/comment-decoy">old</a> -->
      <textarea><a href="/textarea-decoy"></a></textarea>
      <a href="/real">real</a>
    </body></html>"""
    assert urls(extract_links(html, PAGE)) == ["http://example.test/real"]


def test_unclosed_and_broken_markup_still_yields_each_link_once() -> None:
    html = b"""<body><p><a href="/one">unclosed<p>para<div><a href=/two class=x>two</div>
      <a href='/three' >three</b></i></a></div></div>
      <a
        href="/four"
      >four</a><a href="/five>">five</a><p><li><a href="/six"""
    assert urls(extract_links(html, PAGE)) == [
        "http://example.test/one",
        "http://example.test/two",
        "http://example.test/three",
        "http://example.test/four",
        "http://example.test/five%3E",
    ]


def test_entities_whitespace_and_fragments_in_hrefs() -> None:
    html = b"""<a href="/s?a=1&amp;b=2&#38;c=3">e</a>
      <a href="  /spaced  ">s</a><a href="/ta\tb\nc">t</a>
      <a href="/frag#part">f</a><a href="#top">top</a><a href="">empty</a>
      <a href="/caf\xc3\xa9">u</a>"""
    assert urls(extract_links(html, PAGE)) == [
        "http://example.test/s?a=1&b=2&c=3",
        "http://example.test/spaced",
        "http://example.test/tabc",
        "http://example.test/frag",
        "http://example.test/caf%C3%A9",
    ]


def test_non_http_schemes_are_dropped() -> None:
    html = b"""<a href="mailto:a@b.test">m</a><a href="javascript:void(0)">j</a>
      <a href="ftp://f.test/x">f</a><a href="data:text/html,hi">d</a><a href="tel:123">t</a>
      <a href="HTTPS://Upper.test/x">ok</a>"""
    assert urls(extract_links(html, PAGE)) == ["https://upper.test/x"]


def test_link_kinds_canonical_frames_and_refresh() -> None:
    html = b"""<html><head>
      <link rel="canonical" href="/canonical-page"><link rel="stylesheet" href="/s.css">
      <link rel="alternate" hreflang="de" href="/de/"><link rel="next" href="/p2">
      <link rel="alternate stylesheet" href="/alt.css"><link rel="icon" href="/i.png">
      <meta http-equiv="refresh" content="5; URL='/refreshed'">
      </head><body><iframe src="/frame"></iframe><map><area href="/area"></map></body></html>"""
    page = extract_links(html, PAGE)
    assert page.canonical == "http://example.test/canonical-page"
    assert [(link.kind, link.url) for link in page.links] == [
        ("link", "http://example.test/canonical-page"),
        ("link", "http://example.test/de/"),
        ("link", "http://example.test/p2"),
        ("refresh", "http://example.test/refreshed"),
        ("frame", "http://example.test/frame"),
        ("area", "http://example.test/area"),
    ]


def test_title_is_whitespace_normalised() -> None:
    page = extract_links(b"<title>  A\n  title &amp; more </title>", PAGE)
    assert page.title == "A title & more"
    assert extract_links(b"<p>no title</p>", PAGE).title is None


def test_charset_hint_and_meta_charset_decide_the_decoding() -> None:
    latin = '<a href="/caf\u00e9">x</a>'.encode("latin-1")
    via_header = extract_links(latin, PAGE, content_type="text/html; charset=ISO-8859-1")
    assert urls(via_header) == ["http://example.test/caf%C3%A9"]
    via_meta = extract_links(b'<meta charset="windows-1252">' + latin, PAGE)
    assert urls(via_meta) == ["http://example.test/caf%C3%A9"]
    via_param = extract_links(latin, PAGE, encoding="cp1252")
    assert urls(via_param) == ["http://example.test/caf%C3%A9"]
    bogus = extract_links(latin, PAGE, encoding="no-such-charset")
    assert len(bogus.links) == 1


def test_non_html_is_not_parsed_but_header_directives_apply() -> None:
    body = b'<a href="/looks-like-a-link">x</a>'
    page = extract_links(body, PAGE, content_type="application/pdf", x_robots_tag="noindex")
    assert page.links == () and page.noindex
    assert urls(extract_links(body, PAGE, content_type="application/octet-stream")) == [
        "http://example.test/looks-like-a-link"
    ]
    assert urls(extract_links(body, PAGE, content_type="application/xhtml+xml")) == [
        "http://example.test/looks-like-a-link"
    ]


def test_link_cap_bounds_the_work_and_says_so() -> None:
    html = "".join(f'<a href="/p{i}">{i}</a>' for i in range(300)).encode()
    page = extract_links(html, PAGE, max_links=100)
    assert len(page.links) == 100 and page.truncated
    assert urls(page)[-1] == "http://example.test/p99"
    full = extract_links(html, PAGE)
    assert len(full.links) == 300 and not full.truncated
    repeated = b'<a href="/same">x</a>' * 5000
    page = extract_links(repeated, PAGE, max_links=10)
    assert urls(page) == ["http://example.test/same"]


def test_a_custom_joiner_receives_hrefs_and_decides() -> None:
    seen: list[str] = []

    def join(href: str) -> str | None:
        seen.append(href)
        return None if "drop" in href else "http://canon.test/" + str(len(seen))

    html = b'<a href="/keep">k</a><a href="/drop">d</a><a href="#frag">f</a>'
    page = extract_links(html, PAGE, join=join)
    assert seen == ["/keep", "/drop"]
    assert urls(page) == ["http://canon.test/1"]
    with_base = b'<base href="http://elsewhere.test/b/"><a href="x">x</a>'
    seen.clear()
    extract_links(with_base, PAGE, join=join)
    assert seen == ["http://elsewhere.test/b/x"]


def test_visible_text_on_request_skips_scripts_and_styles() -> None:
    html = (
        b"<head><style>.x{}</style><script>var a=1</script></head>"
        b"<body>Hello <b>big</b> world</body>"
    )
    assert extract_links(html, PAGE, want_text=True).text == "Hello big world"
    assert extract_links(html, PAGE).text is None


def test_invalid_page_url_still_never_raises() -> None:
    page = extract_links(b'<a href="/x">x</a><a href="http://ok.test/">ok</a>', "not a url")
    assert "http://ok.test/" in urls(page)


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=2000),
    content_type=st.sampled_from(
        [None, "text/html", "text/html; charset=shift_jis", "application/octet-stream"]
    ),
)
def test_arbitrary_bytes_never_raise(body: bytes, content_type: str | None) -> None:
    page = extract_links(body, PAGE, content_type=content_type, want_text=True)
    assert all(link.url.startswith(("http://", "https://")) for link in page.links)


_FRAGMENTS = st.sampled_from(
    [
        "<a href=",
        '"',
        "'",
        ">",
        "</a>",
        "<base href=",
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "&amp;",
        "&#",
        "/x",
        "http://h.test/",
        "\x00",
        "<meta name=robots content=",
        "nofollow",
        " rel=",
        "#",
        "\\",
        "[::1]",
        "<p>",
        "\n",
        "javascript:",
        "\u00e9",
        "<svg><a href=/svg>",
        "<template><a href=/t></template>",
    ]
)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_FRAGMENTS, max_size=40))
def test_html_shaped_noise_never_raises(parts: list[str]) -> None:
    page = extract_links("".join(parts).encode(), PAGE)
    assert len({link.url for link in page.links}) == len(page.links)


_ELEMENT_FRAGMENTS = st.sampled_from(
    [
        "<a href=/a>",
        "<a>",
        "<a href=''>",
        "<area href=/area>",
        "<area>",
        "<link rel=canonical href=/c>",
        "<link rel=next href=/n>",
        "<link rel=stylesheet href=/s>",
        "<link href=/l>",
        "<base>",
        "<base href=/b/>",
        "<base target=_top>",
        "<iframe src=/if>",
        "<iframe>",
        "<frame src=/f>",
        '<meta name=robots content="noindex, nofollow">',
        "<meta name=courtly content=nofollow>",
        "<meta charset=utf-8>",
        "<meta http-equiv=refresh content='0; url=/r'>",
        "<meta http-equiv=refresh>",
        "<meta>",
        "<title>t</title>",
        "<title></title>",
        " rel=nofollow",
        "x.html",
        ">",
        "<p>",
    ]
)
_KEPT_FINDER = new_element_finder()


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_ELEMENT_FRAGMENTS, max_size=30))
def test_a_kept_element_finder_gives_the_same_answer(parts: list[str]) -> None:
    body = "".join(parts).encode()
    assert extract_links(body, PAGE, finder=_KEPT_FINDER) == extract_links(body, PAGE)
