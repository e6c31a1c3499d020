"""URL canonicalisation: one spelling per resource, so the seen-set can say "already had it".

:func:`canonicalize` maps the usual duplicate spellings of an http(s) URL to one string:

1. leading/trailing C0 controls and spaces are stripped, tabs and newlines removed (as browsers do);
2. scheme and host are lower-cased; the host is IDNA-encoded per UTS 46 (``faß.de`` becomes
   ``xn--fa-hia.de``) and a trailing dot is removed (``example.com.`` -> ``example.com``);
3. IPv4 hosts in the forms browsers accept (``0x7f.1``, ``127.000.0.1``) become dotted quads,
   IPv6 hosts are compressed and bracketed;
4. the default port is never kept (``:80`` for http, ``:443`` for https);
5. an empty path becomes ``/``; ``.`` and ``..`` segments are removed;
6. %-escapes of unreserved characters are decoded (``%7E`` -> ``~``), the remaining escapes
   upper-cased (``%c3%a9`` -> ``%C3%A9``), and characters that must be escaped are escaped;
7. the fragment and a bare trailing ``?`` are dropped;
8. session ids are dropped: ``;jsessionid=...`` path parameters, and query parameters named
   ``jsessionid``, ``phpsessid``, ``aspsessionid*``, ``sid``, ``sessionid``, ``session_id``,
   ``cfid`` or ``cftoken`` whose value is a token of 8 or more characters (a classic crawler
   trap: every visit mints new URLs for the same pages);
9. tracking parameters are dropped: ``utm_*``, ``gclid``, ``fbclid``, ``mc_cid``... (the
   :class:`~courtly.url.params.ParamPolicy` given as ``params``; default
   :data:`~courtly.url.params.DEFAULT_PARAMS`, listed in docs/urls.md).

An http(s) URL without an authority is refused, although WHATWG parsers (browsers) read
``http:///path``, ``http:/path`` and ``http:path`` as the host ``path``: a crawler must
not guess a host out of a path. :func:`canonicalize` wants exactly two slashes (or
backslashes, which browsers treat alike) and a host after ``http:``; :class:`UrlJoiner`
returns ``None`` for an href with three or more of them (``http:///p``, ``///p``).

The query is *not* sorted: the order of parameters is meaningful to some servers (and to the
pages they return), and sorting costs time on every URL; a crawl that wants it can sort in its
own rule. Parsing is yarl's; inputs yarl refuses or reads differently from a browser (a
backslash, ``http:host``, a percent-encoded host) are parsed again with ada (WHATWG rules).

:class:`UrlJoiner` resolves the hrefs of one page against its base URL and canonicalises them in
the same parse. It never raises: an href that cannot give a crawlable URL yields ``None``.
Pages of one site repeat their hrefs (navigation, siblings): a :class:`JoinCache` shared by the
joiners of a crawl remembers each answer under what it depends on (the href alone for an
absolute URL, the base's origin for ``/path``, the base's directory for a relative path).

Both are pure and deterministic: ``canonicalize(canonicalize(u)) == canonicalize(u)``.
"""

from __future__ import annotations

import re
from typing import Final

import ada_url
from yarl import URL

from courtly.errors import InvalidURL
from courtly.url.params import DEFAULT_PARAMS, ParamPolicy

__all__ = ["MAX_URL_LENGTH", "JoinCache", "UrlJoiner", "canonicalize"]

MAX_URL_LENGTH: Final = 2048
"""Longest URL, in characters, that :func:`canonicalize` accepts (input and output)."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_STRIP_CHARS: Final = "".join(chr(code) for code in range(0x21))
_TAB_NEWLINE: Final = str.maketrans("", "", "\t\n\r")
# A DNS-ish host after IDNA: letters, digits, '_' and '-' in non-empty dot-separated labels.
_DOMAIN_RE: Final = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_OCTET: Final = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4_RE: Final = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")
# WHATWG: a host whose last label is a number is an IPv4 address (or invalid).
_NUMERIC_LABEL_RE: Final = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)")
_SCHEME_PREFIX_RE: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# An absolute URL that is its own canonical form when _is_plain_canonical agrees: lower-case
# scheme and ASCII host, a port without leading zeros, a path of unreserved characters and
# slashes, no userinfo, query or fragment (most links and every URL the crawl queued).
_PLAIN_ABSOLUTE_RE: Final = re.compile(
    r"(https?)://([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)(?::([1-9][0-9]{0,4}))?/[A-Za-z0-9._~/-]*"
)


def _is_plain_canonical(text: str) -> bool:
    """Whether ``text`` is a URL that canonicalises to itself with nothing to parse: what
    :data:`_PLAIN_ABSOLUTE_RE` matches, with a host yarl and :func:`_serialize` keep as it is
    (no IPv4 or hex-looking last label), a port that is not the scheme's default, and no
    dot segment."""
    match = _PLAIN_ABSOLUTE_RE.fullmatch(text)
    if match is None:
        return False
    scheme, host, port = match.groups()
    if host[-1].isdigit() or "0x" in host or "/." in text:
        return False
    return port is None or (int(port) <= 65535 and int(port) != _DEFAULT_PORTS[scheme])


def canonicalize(
    url: str, *, max_length: int = MAX_URL_LENGTH, params: ParamPolicy = DEFAULT_PARAMS
) -> str:
    """Return the canonical form of the absolute http(s) URL ``url``; ``params`` says
    which query parameters are dropped (rule 9).

    Raises :class:`courtly.errors.InvalidURL` when ``url`` is not http(s), has no or a malformed
    host, an unusable port, cannot be parsed, or is longer than ``max_length`` characters
    (before or after canonicalisation). Idempotent; the output is always accepted.
    """
    if len(url) > max_length:
        raise InvalidURL(f"URL longer than {max_length} characters")
    text = _clean(url)
    if not text:
        raise InvalidURL("empty URL")
    colon = text.find(":")
    if 3 < colon < 6 and text[:colon].lower() in _DEFAULT_PORTS and _slashes(text, colon + 1) != 2:
        raise InvalidURL(
            f"no host in URL {text[:100]!r}: an http(s) URL is scheme://host/path (two slashes)"
        )
    if len(text) <= max_length and _is_plain_canonical(text):
        return text
    try:
        canonical = _serialize(URL(text), params)
    except InvalidURL:
        raise
    except (ValueError, UnicodeError):
        canonical = None
    if canonical is None:
        canonical = _canonicalize_whatwg(text, params)
    if len(canonical) > max_length:
        raise InvalidURL(f"canonical URL longer than {max_length} characters")
    return canonical


class JoinCache:
    """Answers of :meth:`UrlJoiner.join` shared by the joiners of a crawl, ``max_entries`` at most.

    A plain dict that is emptied when full (no per-hit bookkeeping). Keys are
    ``(scope, cleaned href)`` where the scope is all the answer depends on; see
    :meth:`UrlJoiner.join`. Only joiners with the same ``max_length`` and ``params``
    may share one (the answers depend on them too).
    """

    __slots__ = ("_answers", "max_entries", "max_length", "params")

    def __init__(
        self,
        max_entries: int = 32_768,
        *,
        max_length: int = MAX_URL_LENGTH,
        params: ParamPolicy = DEFAULT_PARAMS,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self.max_length = max_length
        self.params = params
        self._answers: dict[tuple[str, str], str | None] = {}

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: tuple[str, str]) -> str | bool | None:
        """The answer stored under ``key``, or ``False`` if there is none."""
        return self._answers.get(key, False)

    def put(self, key: tuple[str, str], answer: str | None) -> None:
        if len(self._answers) >= self.max_entries:
            self._answers.clear()
        self._answers[key] = answer


class UrlJoiner:
    """Resolves hrefs found on one page against the page's base URL, parsed once.

    ``base_url`` is the page URL (or its ``<base href>``, already absolute); it is canonicalised
    here (unless ``canonical`` says it already is: a URL :func:`canonicalize` returned), so a bad
    base raises :class:`courtly.errors.InvalidURL` at construction. After that, :meth:`join`
    never raises. ``cache`` (optional) is shared with other joiners; answers are the same
    with or without it. ``params`` is the tracking-parameter policy (rule 9).
    """

    __slots__ = (
        "_base_dir",
        "_base_path",
        "_base_query",
        "_base_url",
        "_base_yarl",
        "_cache",
        "_dir_url",
        "_max_length",
        "_origin",
        "_params",
    )

    def __init__(
        self,
        base_url: str,
        *,
        max_length: int = MAX_URL_LENGTH,
        canonical: bool = False,
        cache: JoinCache | None = None,
        params: ParamPolicy = DEFAULT_PARAMS,
    ) -> None:
        if cache is not None and cache.max_length != max_length:
            raise ValueError("a JoinCache is shared only by joiners with its max_length")
        if cache is not None and cache.params is not params and cache.params != params:
            raise ValueError("a JoinCache is shared only by joiners with its params")
        if not canonical or len(base_url) > max_length:
            base_url = canonicalize(base_url, max_length=max_length, params=params)
        self._params = params
        self._base_url = base_url
        self._base_yarl: URL | None = None
        self._max_length = max_length
        self._cache = cache
        try:
            path_start = base_url.index("/", base_url.index("://") + 3)
        except ValueError:
            raise InvalidURL(f"not a canonical URL: {base_url[:100]!r}") from None
        self._origin = base_url[:path_start]
        self._base_path, _, self._base_query = base_url[path_start:].partition("?")
        self._base_dir = self._base_path[: self._base_path.rfind("/") + 1]
        self._dir_url = self._origin + self._base_dir

    @property
    def _base(self) -> URL:
        """The base parsed by yarl (only ``//host`` references need it)."""
        if self._base_yarl is None:
            self._base_yarl = URL(self._base_url)
        return self._base_yarl

    @property
    def base_url(self) -> str:
        """The canonical base URL hrefs are resolved against."""
        return self._base_url

    def join(self, href: str) -> str | None:
        """Return the canonical absolute URL ``href`` points to, or ``None``.

        ``None`` means: empty or blank href, a scheme other than http(s) (``mailto:``,
        ``javascript:``, ``data:``, ``tel:``...), or an href that does not give a valid URL
        within ``max_length`` characters.
        """
        if len(href) > self._max_length:
            return None
        text = _clean(href)
        if not text:
            return None
        needs_whatwg = "\\" in text
        absolute = False
        schemed = False
        colon = text.find(":")
        if text[0] in _SEPARATORS and _slashes(text, 0) > 2:
            return None  # "///path": no authority (browsers would make "path" the host)
        if colon >= 0:
            scheme = _SCHEME_PREFIX_RE.match(text)
            if scheme is not None:
                if scheme.group(1).lower() not in _DEFAULT_PORTS:
                    return None
                if _slashes(text, scheme.end()) > 2:
                    return None  # "http:///path": no authority
                # "http:page" is relative to an http base for browsers; yarl reads it otherwise.
                absolute = text.startswith("//", scheme.end())
                schemed = True
                needs_whatwg = needs_whatwg or not absolute
            elif "/" not in text[:colon]:
                # A first path segment with a colon ("1a:b", "?x=a:b"): leave it to WHATWG
                # rather than yarl's escaping of that colon.
                needs_whatwg = True
        if not needs_whatwg and "%3" in text and _ESCAPED_COLON_FIRST_RE.match(text):
            # "a%3Ab": yarl keeps the escape in a relative path's first segment (unescaped,
            # it would read as a scheme), where the canonical form of the absolute URL has
            # ":" ("http://a.test/a%3Ab" is canonically "http://a.test/a:b")
            needs_whatwg = True
        cache = self._cache
        if cache is None:
            return self._join_clean(text, needs_whatwg)
        # What the answer depends on: nothing but the href for "http://...", the origin for
        # "/path" and "//host" (its scheme), the directory for a relative path; "?q" and
        # backslashes (WHATWG's special cases) also depend on the base's path, "#frag" on its
        # path and query, "http:rel" on what WHATWG makes of it: not cached.
        first = text[0]
        if "\\" in text or first in "?#" or (schemed and not absolute):
            return self._join_clean(text, needs_whatwg)
        if absolute:
            scope = ""
        elif first == "/":
            scope = self._origin
        else:
            scope = self._dir_url
        key = (scope, text)
        cached = cache.get(key)
        if cached is not False:
            assert cached is None or isinstance(cached, str)
            return cached
        answer = self._join_clean(text, needs_whatwg)
        cache.put(key, answer)
        return answer

    def _join_clean(self, text: str, needs_whatwg: bool) -> str | None:
        """:meth:`join` for a cleaned, non-empty href of an http(s) scheme (or none)."""
        canonical: str | None = None
        if not needs_whatwg:
            try:
                canonical = self._join_parsed(text)
            except (ValueError, UnicodeError):  # InvalidURL included: WHATWG decides below
                canonical = None
        if canonical is None:
            try:
                canonical = _canonicalize_whatwg(
                    ada_url.join_url(self._base_url, text), self._params
                )
            except (ValueError, UnicodeError):
                return None
        if len(canonical) > self._max_length:
            return None
        return canonical

    def _join_parsed(self, text: str) -> str | None:
        """RFC 3986 reference resolution over yarl's parse of ``text`` (no backslash, no scheme
        other than http(s) followed by ``//``); ``None`` to defer to WHATWG."""
        if not text.startswith("//") and _PLAIN_PATH_RE.fullmatch(text) is not None:
            # A path of unreserved characters and slashes (most hrefs): nothing to parse,
            # escape or drop, so the answer is the base's origin and the resolved path.
            path = text if text[0] == "/" else self._base_dir + text
            if "/." in path:
                path = _remove_dot_segments(path)
            return self._origin + path
        if _is_plain_canonical(text):
            return text
        ref = URL(text)
        if ref.scheme:
            return _serialize(ref, self._params)
        if text.startswith("//"):
            return _serialize(self._base.join(ref), self._params) if ref.raw_host else None
        path = ref.raw_path
        if not path:  # "?query" or "#fragment"
            path = self._base_path
            query = ref.raw_query_string if text[0] == "?" else self._base_query
        else:
            if path[0] != "/":
                path = self._base_dir + path
            if "/." in path:
                path = _remove_dot_segments(path)
            query = ref.raw_query_string
        if ";" in path:
            path = _PATH_SESSION_RE.sub("", path)
        if query:
            query = self._params.strip(_strip_session_ids(query) if "=" in query else query)
        if query:
            return f"{self._origin}{path}?{query}"
        return f"{self._origin}{path}"


_SEPARATORS: Final = "/\\"
_ESCAPED_COLON_FIRST_RE: Final = re.compile(r"[^/?#]*%3[aA]")
"""A relative reference whose first path segment holds an escaped colon."""
# A relative reference that is a bare path of unreserved characters (RFC 3986) and slashes,
# with no colon, percent-escape, query, fragment, ';' parameter or space: yarl would read it
# as it is.
_PLAIN_PATH_RE: Final = re.compile(r"[A-Za-z0-9._~/-]+")


def _slashes(text: str, start: int) -> int:
    """How many ``/`` or ``\\`` run from ``text[start]`` on."""
    end = start
    while end < len(text) and text[end] in _SEPARATORS:
        end += 1
    return end - start


def _remove_dot_segments(path: str) -> str:
    """Remove ``.`` and ``..`` segments from an absolute path (RFC 3986, section 5.2.4)."""
    kept: list[str] = []
    segments = path.split("/")
    for segment in segments[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")
    return "/" + "/".join(kept)


def _clean(text: str) -> str:
    """Strip C0 controls and spaces at both ends, drop tabs and newlines, escape inner spaces."""
    text = text.strip(_STRIP_CHARS)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_NEWLINE)
    if " " in text:  # browsers send %20, also in the query (where yarl would write "+")
        text = text.replace(" ", "%20")
    return text


def _canonicalize_whatwg(text: str, params: ParamPolicy) -> str:
    """Parse ``text`` with ada (WHATWG), then serialise through yarl like every other URL."""
    try:
        href = ada_url.normalize_url(text)
        canonical = _serialize(URL(href), params)
    except InvalidURL:
        raise
    except (ValueError, UnicodeError) as exc:
        raise InvalidURL(f"cannot parse URL {text[:100]!r}") from exc
    if canonical is None:
        raise InvalidURL(f"invalid host in URL {text[:100]!r}")
    return canonical


_SESSION_PARAMS: Final = frozenset(
    {"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "cfid", "cftoken"}
)
_SESSION_VALUE_RE: Final = re.compile(r"[A-Za-z0-9_.-]{8,}")
_PATH_SESSION_RE: Final = re.compile(r";jsessionid=[^/?;]*", re.IGNORECASE)


def _strip_session_ids(query: str) -> str:
    """Drop session-id parameters (rule 8): a known name with a token-like value.

    A name alone is not enough (``sid=3`` may be a story id): the value must be
    at least 8 characters of letters, digits, ``_``, ``.`` or ``-``.
    """
    lowered = query.lower()
    if not any(name in lowered for name in _SESSION_PARAMS) and "aspsessionid" not in lowered:
        return query
    kept = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        name = name.lower()
        is_session = name in _SESSION_PARAMS or name.startswith("aspsessionid")
        if is_session and _SESSION_VALUE_RE.fullmatch(value):
            continue
        kept.append(part)
    return "&".join(kept)


def _serialize(url: URL, params: ParamPolicy) -> str | None:
    """Serialise a parsed URL canonically.

    Returns ``None`` when yarl's reading of the host is not one we accept as is (missing,
    malformed, or a non-canonical IPv4 form), so the caller can try the WHATWG parser; raises
    :class:`InvalidURL` for what no parser can fix (scheme, port).
    """
    scheme = url.scheme
    default_port = _DEFAULT_PORTS.get(scheme)
    if default_port is None:
        if not scheme:
            raise InvalidURL("not an absolute URL: it must start with http:// or https://")
        raise InvalidURL(f"not an http(s) URL: scheme {scheme!r}")
    host = url.raw_host
    if not host:
        return None
    if host[-1] == ".":
        host = host[:-1]
    if ":" in host:
        if "%" in host:  # an IPv6 zone id only means something on the local machine
            raise InvalidURL("IPv6 zone identifiers are not crawlable")
        host = f"[{host}]"
    elif _DOMAIN_RE.fullmatch(host) is None:
        return None
    elif host[-1].isdigit() or "0x" in host:
        last_label = host.rpartition(".")[2]
        if _NUMERIC_LABEL_RE.fullmatch(last_label) and not _IPV4_RE.fullmatch(host):
            return None
    port = url.explicit_port
    if port is None or port == default_port:
        authority = host
    elif port == 0:
        raise InvalidURL("port 0 is not crawlable")
    else:
        authority = f"{host}:{port}"
    user = url.raw_user
    password = url.raw_password
    if password:
        authority = f"{user or ''}:{password}@{authority}"
    elif user:
        authority = f"{user}@{authority}"
    path = url.raw_path or "/"
    if ";" in path:
        path = _PATH_SESSION_RE.sub("", path)
    query = url.raw_query_string
    if query:
        query = params.strip(_strip_session_ids(query) if "=" in query else query)
    if query:
        return f"{scheme}://{authority}{path}?{query}"
    return f"{scheme}://{authority}{path}"
