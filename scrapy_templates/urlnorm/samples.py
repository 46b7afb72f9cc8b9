"""URL samples as the learner takes them and the store keeps them.

A sample is what one download or one marked page tells about its URL (see
:class:`~scrapy_templates.urlnorm.clusters.Sample`). These functions make samples from what a
crawl has in hand — the ``rel=canonical`` of a page's head, the hash of its content text — and
give them the compact form thousands of them are stored in per site.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from bisect import bisect_left
from typing import Any
from urllib.parse import urljoin

from scrapy_templates.compiled import compiled
from scrapy_templates.documents import DocumentError, read_document
from scrapy_templates.urlnorm.clusters import Sample

# content shorter than this has no hash: every "empty" page would look alike
MIN_CONTENT_CHARS = 40
# a stored sample longer than this was not written by a crawl (a URL, four hashes, a few
# redirects)
MAX_SAMPLE_CHARS = 64 * 1024


def sample_chars(sample: Sample) -> int:
    """The characters of a sample's URLs (its own, its canonical, its redirects): what its
    stored form cannot be shorter than, so over :data:`MAX_SAMPLE_CHARS` it is never read
    back."""
    return len(sample.url) + len(sample.canonical or "") + sum(map(len, sample.redirects))


def content_hash(content: str) -> str | None:
    """Hash of a page's content text (template pagelets removed), the learner's duplicate
    test: a rotating ad or a session id in the links does not hide a duplicate. Very short
    content gives ``None``."""
    if len(content) < MIN_CONTENT_CHARS:
        return None
    return hashlib.blake2b(content.encode("utf-8"), digest_size=8).hexdigest()


# what a reader never sees: scripts, styles, comments (their openings; the first closing after
# one ends it), then every tag with its attributes
_HIDDEN_NAMES = (b"script", b"style", b"noscript", b"template")
_OPENING = re.compile(rb"<(script|style|noscript|template)\b|<!--", re.IGNORECASE)
_CLOSING = {name: re.compile(rb"</" + name + rb"\s*>", re.IGNORECASE) for name in _HIDDEN_NAMES}
_TAG = re.compile(rb"<[^>]*>")


def python_page_text(body: bytes) -> bytes:
    """A page's text with the markup left out: hidden elements (:data:`_HIDDEN_NAMES`) and
    comments, then every tag, each leaving a space; runs of whitespace one space. Each kind of
    closing is searched for until a search finds none (no later one would), and tags only up
    to the last ``>``: a body of unclosed openings costs one scan, not one per opening."""
    parts: list[bytes] = []
    missed: dict[bytes, int] = {}
    at = 0
    search = 0
    while (opening := _OPENING.search(body, search)) is not None:
        name = opening.group(1)
        after = opening.end()
        end = -1
        if name is None:
            if after < missed.get(b"--", len(body) + 1):
                found = body.find(b"-->", after)
                end = found + 3 if found >= 0 else -1
                if end < 0:
                    missed[b"--"] = after
        else:
            name = name.lower()
            if after < missed.get(name, len(body) + 1):
                closing = _CLOSING[name].search(body, after)
                end = closing.end() if closing is not None else -1
                if end < 0:
                    missed[name] = after
        if end < 0:
            search = opening.start() + 1
            continue
        parts += (body[at : opening.start()], b" ")
        at = search = end
    parts.append(body[at:])
    shown = b"".join(parts)
    last = shown.rfind(b">")  # a "<" after it opens no tag
    untagged = _TAG.sub(b" ", shown[: last + 1]) + shown[last + 1 :]
    return b" ".join(untagged.split())


_compiled = compiled("urlnorm._pagetext")
# the compiled twin gives the same bytes several times faster: it is the largest single cost of
# URL rules on the crawl's thread
page_text = python_page_text if _compiled is None else _compiled.page_text


def page_hash(body: bytes, max_bytes: int) -> str | None:
    """Hash of a page's text with the markup left out (:func:`page_text`), taken at download:
    two URLs whose pages read alike are duplicates even when every link carries a fresh
    session id (an attribute), and this evidence needs no parse and no template. Pages with
    less than :data:`MIN_CONTENT_CHARS` of text have no hash (an empty shell says nothing).
    Only the first ``max_bytes`` are read, as a page is cut before its parse: Scrapy lets a
    body grow to a gigabyte, seconds of the crawl's thread."""
    text = page_text(body[:max_bytes])
    if len(text) < MIN_CONTENT_CHARS:
        return None
    return hashlib.blake2b(text, digest_size=8).hexdigest()


_LINK = re.compile(rb"<link\b", re.IGNORECASE)
_REL = re.compile(rb"""\brel\s*=\s*["']?""", re.IGNORECASE)
_RUN_END = re.compile(rb"""["'>]""")
_CANONICAL_WORD = re.compile(rb"\bcanonical\b", re.IGNORECASE)
_HREF = re.compile(rb"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


def canonical_link(body: bytes, end: int) -> bytes | None:
    """The first ``<link …>`` tag ending within ``body[:end]`` whose ``rel`` value names
    ``canonical``: what ``<link\\b[^>]*\\brel\\s*=\\s*["']?[^"'>]*\\bcanonical\\b[^>]*>``
    finds, in one scan. That pattern backtracks over every ``rel`` of every unclosed
    ``<link``: four hundred ``<link rel=stylesheet`` without ``>`` took two seconds, eight
    times more at each doubling.

    A ``<link`` inside a tag already found wanting holds a part of it and fails too; a
    ``<link`` with no ``>`` after it leaves none to the later ones."""
    closed_at = -1
    for link in _LINK.finditer(body, 0, end):
        start = link.end()
        if start <= closed_at:
            continue
        closed_at = body.find(b">", start, end)
        if closed_at < 0:
            return None
        words = [m.start() for m in _CANONICAL_WORD.finditer(body, start, closed_at)]
        run_end = -1  # where the value after the last ``rel=`` ends: a quote or the ``>``
        for rel in _REL.finditer(body, start, closed_at) if words else ():
            if rel.end() >= run_end:
                found = _RUN_END.search(body, rel.end(), closed_at + 1)
                run_end = closed_at if found is None else found.start()
            at = bisect_left(words, rel.end())
            if at < len(words) and words[at] + len(b"canonical") <= run_end:
                return body[link.start() : closed_at + 1]
    return None


def head_canonical(body: bytes, url: str) -> str | None:
    """The ``rel=canonical`` URL of a page, found in its first 32 KB without parsing."""
    tag = canonical_link(body, min(len(body), 32768))
    if tag is None:
        return None
    href = _HREF.search(tag)
    if href is None:
        return None
    raw = next(g for g in href.groups() if g is not None).strip()
    try:
        return urljoin(url, html.unescape(raw.decode("utf-8", "replace"))) if raw else None
    except ValueError:
        return None


def encode_sample(site: str, sample: Sample) -> str:
    """The compact form a sample is stored in: a JSON array ``[url, simhash, text_hash,
    page_hash, canonical, redirects]`` without trailing empty fields, where a URL on the site
    itself loses its origin (``/path`` for ``http://site/path``, ``s/path`` for https) —
    about half the size of the sample's JSON object, which matters when thousands are kept
    per site."""
    url = sample.url
    for prefix, short in ((f"http://{site}/", "/"), (f"https://{site}/", "s/")):
        if url.startswith(prefix):
            url = short + url[len(prefix) :]
            break
    fields: list[Any] = [
        url,
        None if sample.simhash is None else f"{sample.simhash:016x}",
        sample.text_hash,
        sample.page_hash,
        sample.canonical,
        list(sample.redirects) or None,
    ]
    while fields[-1] is None:
        fields.pop()
    return json.dumps(fields, separators=(",", ":"))


def decode_sample(site: str, text: str) -> Sample:
    """A sample from :func:`encode_sample`'s form (or a sample's JSON object); raises
    ``ValueError`` for anything else (longer than :data:`MAX_SAMPLE_CHARS` included)."""
    if len(text) > MAX_SAMPLE_CHARS:
        raise ValueError(f"a stored sample of {len(text)} characters")
    try:
        data = read_document(text, "URL sample")
    except DocumentError as exc:
        raise ValueError(str(exc)) from None
    if isinstance(data, dict):
        return Sample.from_record(data)
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise ValueError("a stored sample is a JSON array starting with its URL")
    url = data[0]
    if url.startswith("/"):
        url = f"http://{site}{url}"
    elif url.startswith("s/"):
        url = f"https://{site}{url[1:]}"
    names = ("simhash", "text_hash", "page_hash", "canonical", "redirects")
    if len(data) > len(names) + 1:
        raise ValueError(f"a stored sample has at most {len(names) + 1} fields")
    record: dict[str, Any] = {"url": url}
    for name, value in zip(names, data[1:], strict=False):
        if value is not None:
            record[name] = value
    return Sample.from_record(record)
