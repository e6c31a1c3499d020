"""Main text: a clock, counter or ad in the template is not a change; the article is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.parse.main_text import main_text, text_digest


def page(article: str, clock: str, counter: int, ad: str) -> str:
    return (
        f"<html><head><title>t</title><script>var t='{clock}'</script></head><body>"
        f"<header>Site <span>{clock}</span></header><nav><a href=/>home</a></nav>"
        f"<main><h1>Prices</h1><p>{article}</p>"
        f"<div class='visitor-counter'>{counter} visitors</div></main>"
        f"<aside>{ad}</aside><div class='ad-slot'>{ad}</div><footer>Generated {clock}</footer>"
        "</body></html>"
    )


@given(st.text(max_size=20), st.integers(0, 10**9), st.text(max_size=20))
def test_template_noise_does_not_change_the_digest(clock: str, counter: int, ad: str) -> None:
    base = text_digest(main_text(page("Widget 10 EUR", "00:00", 1, "buy")))
    assert text_digest(main_text(page("Widget 10 EUR", clock, counter, ad))) == base


def test_a_change_in_the_main_text_changes_the_digest() -> None:
    before = text_digest(main_text(page("Widget 10 EUR", "00:00", 1, "buy")))
    after = text_digest(main_text(page("Widget 12 EUR", "00:00", 1, "buy")))
    assert before != after


def test_main_text_prefers_main_then_article_then_body() -> None:
    assert main_text("<body><p>x</p><article>a b</article></body>") == "a b"
    assert main_text("<body><p>x  y</p></body>") == "x y"
    assert main_text("") == ""
