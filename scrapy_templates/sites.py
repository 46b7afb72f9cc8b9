"""Sites and page identities: how pages are grouped for counting and told apart."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

SiteFunction = Callable[[str], str]


# The authority of a plain http(s) URL: what ``urlsplit`` would take for its netloc, read
# without splitting the rest (a URL with a tab, a newline or a bracket in it, another scheme,
# or a host that is not ASCII, which ``urlsplit`` rejects when NFKC makes a delimiter of a
# character, goes to ``urlsplit``, which cleans or rejects it)
_HTTP_NETLOC = re.compile(r"https?://([^/?#\t\r\n\[\]]*)(?=[/?#]|\Z)")


def host_site(url: str) -> str:
    """The URL's host and port, lowercased: pages of one web server share their counters.
    Raises ``ValueError`` as ``urlsplit`` does (a bad IPv6 host)."""
    plain = _HTTP_NETLOC.match(url)
    if plain is not None and plain.group(1).isascii():
        netloc = plain.group(1)
    else:
        netloc = urlsplit(url).netloc
    return netloc.rpartition("@")[2].lower()


@lru_cache(maxsize=1)
def _extractor() -> Callable[[str], Any]:
    """The public-suffix splitter, made when first asked for (it imports a tenth of a second
    of modules that a parse worker, which never asks, would pay at every start)."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@lru_cache(maxsize=4096)
def _registered(host: str) -> str:
    return _extractor()(host).top_domain_under_public_suffix or host


def domain_site(url: str) -> str:
    """The registered domain (``blog.example.co.uk`` → ``example.co.uk``), so sister hosts that
    share one template are counted together. Uses the public-suffix list bundled with
    tldextract; nothing is downloaded."""
    host = urlsplit(url).hostname or ""
    return _registered(host)


BUILTIN_SITES: dict[str, SiteFunction] = {"host": host_site, "domain": domain_site}


def page_id(url: str) -> str:
    """A short stable id of the page at ``url`` (fragment ignored): a re-fetched URL keeps it."""
    return hashlib.blake2b(urldefrag(url)[0].encode("utf-8"), digest_size=8).hexdigest()


_PLAIN_PATH = re.compile(r"[A-Za-z0-9_.~%!$&'()*+,;=@/-]*")


def _plain_relative(href: str) -> bool:
    """Whether ``href`` (path-relative, without a scheme) resolves by appending it to the
    page's directory: no "." or ".." segment, no empty segment, nothing to escape."""
    path = href.partition("#")[0].partition("?")[0]
    if not _PLAIN_PATH.fullmatch(path) or "//" in path:
        return False
    segments = path.split("/")
    return "." not in segments and ".." not in segments


class LinkTargets:
    """The page ids of a page's links (:func:`page_id` of the href resolved against the page),
    remembered per href and the part of the page's URL it depends on: the origin for absolute
    and root-relative hrefs, the page's directory for path-relative ones ("ref.html",
    "../up"), which is what navigation and listings repeat from page to page. Hrefs that depend
    on the whole URL ("?page=2", "") are resolved every time, except fragments ("#top",
    "#usage"): all of them name the page itself, resolved once per page. At most ``limit`` are
    kept (all are forgotten when it is reached)."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self.known: dict[str, str] = {}

    def resolver(self, base: str) -> Callable[[str], str]:
        """A function from an href of the page at ``base`` to its target's page id."""
        parts = urlsplit(base)
        origin = f"{parts.scheme}://{parts.netloc}"
        folder = parts.path.rpartition("/")[0] + "/"
        directory = origin + folder
        # A plain path-relative href only appends to the directory when the directory is plain
        # too (urljoin drops its empty, "." and ".." segments).
        plain_base = _plain_relative(folder)
        known = self.known
        here: list[str] = []  # the target of a non-empty fragment, once resolved

        def target(href: str) -> str:
            relative = False
            if href.startswith(("http://", "https://")):
                key = href
            elif href.startswith("/"):
                if href.startswith("//"):
                    return page_id(urljoin(base, href))
                key = origin + href
            elif href and href[0] not in "?#" and ":" not in href:
                key = directory + "\0" + href
                relative = True
            elif href.startswith("#") and len(href) > 1:
                # urljoin keeps all of the page's URL but the fragment, which page_id drops
                if not here:
                    here.append(page_id(urljoin(base, href)))
                return here[0]
            else:
                return page_id(urljoin(base, href))
            found = known.get(key)
            if found is None:
                if len(known) >= self.limit:
                    known.clear()
                if relative and plain_base and _plain_relative(href):
                    found = page_id(directory + href)
                else:
                    found = page_id(urljoin(base, href))
                known[key] = found
            return found

        return target
