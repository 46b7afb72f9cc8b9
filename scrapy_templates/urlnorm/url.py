"""URLs as ordered key/value pairs (``003_…`` §3, figure 2) and back, losslessly.

A URL is cut at its delimiters only — nothing is decoded, lowercased or reordered — so
:func:`to_url` gives back the exact string :func:`split_url` was given. Keys:

========================  ==========================================================
``scheme``                the scheme, without ``:``
``user``                  user information before ``@``
``host_0``, ``host_1``…   host labels, left to right (``www``, ``example``, ``com``)
``port``                  the port, without ``:``
``path_0``, ``path_1``…   segments of an absolute path (``/a/`` gives ``a`` and ``""``)
``path``                  a path without a leading ``/`` (``mailto:`` and the like)
``ext``                   extension of the last segment (``php`` of ``show.php``)
``;name``                 a ``;``-parameter of the last segment
``?name``                 a query parameter
``qsep``                  ``;`` when the query's parameters are separated by ``;`` instead of
                          ``&`` (gitweb's ``?p=x.git;a=blob``): a query with ``;`` and no
                          ``&`` whose every item has a ``=``
``#``                     the fragment
========================  ==========================================================

A parameter written without ``=`` has the value ``None``. When a name repeats, later
occurrences get an occurrence suffix (``?tag&2``, ``;v;2``) that cannot occur in a real name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

Value = str | None

# RFC 3986 appendix B: matches every string.
_URI = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)
AUTHORITY_KEYS = frozenset({"scheme", "user", "port"})


_NUMBERED_KEY = re.compile(r"(?:path|host)_(?:0|[1-9][0-9]{0,5})")


def is_url_key(key: object) -> bool:
    """Whether ``key`` is a key :func:`split_url` can give (a document read from elsewhere
    may name anything)."""
    if not isinstance(key, str):
        return False
    return key.startswith(("?", ";")) or key in _SINGLE_KEYS or bool(_NUMBERED_KEY.fullmatch(key))


def is_authority_key(key: str) -> bool:
    """Keys that name where a URL points (scheme, user, host, port): rules never change them."""
    return key in AUTHORITY_KEYS or key.startswith("host_")


class UrlKeys:
    """A URL as ordered key/value pairs; ``dict(pairs)`` is safe (keys are unique). A plain
    slotted class: one is built per URL and per rewrite step, so construction is kept cheap."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: tuple[tuple[str, Value], ...]) -> None:
        self.pairs = pairs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UrlKeys) and self.pairs == other.pairs

    def __hash__(self) -> int:
        return hash(self.pairs)

    def __repr__(self) -> str:
        return f"UrlKeys({self.pairs!r})"

    def __iter__(self) -> Iterator[tuple[str, Value]]:
        return iter(self.pairs)

    def as_dict(self) -> dict[str, Value]:
        return dict(self.pairs)


_KEY_NAMES: dict[str, tuple[str, ...]] = {}


def _keys(prefix: str, n: int) -> tuple[str, ...]:
    """``prefix0`` … ``prefix{n-1}``, cached (key names are built for every URL)."""
    names = _KEY_NAMES.get(prefix, ())
    if len(names) < n:
        names = _KEY_NAMES[prefix] = tuple(f"{prefix}{i}" for i in range(max(n, 16)))
    return names[:n]


def _items(text: str, sep: str, prefix: str, marker: str) -> list[tuple[str, Value]]:
    """The ``name=value`` items of ``text``; the n-th occurrence of a name (n ≥ 2) gets the
    suffix ``{marker}{n}``. ``marker`` is ``&``, which no item's name contains (it is ``sep``, or
    absent from a ``;``-separated query), so a suffixed key never equals another item's: one
    count per name keeps keys unique in linear time."""
    out: list[tuple[str, Value]] = []
    occurrences: dict[str, int] = {}
    for item in text.split(sep):
        name, eq, value = item.partition("=")
        key = prefix + name
        n = occurrences[key] = occurrences.get(key, 0) + 1
        if n > 1:
            key = f"{key}{marker}{n}"
        out.append((key, value if eq else None))
    return out


def split_url(url: str) -> UrlKeys:
    """The key/value pairs of ``url`` (any string; see the module docstring)."""
    match = _URI.match(url)
    assert match is not None  # the pattern matches every string
    scheme, authority, path, query, fragment = match.groups()
    pairs: list[tuple[str, Value]] = []
    if scheme is not None:
        pairs.append(("scheme", scheme))
    if authority is not None:
        user, at, hostport = authority.rpartition("@")
        if at:
            pairs.append(("user", user))
        host, port = _host_port(hostport)
        labels = host.split(".")
        pairs.extend(zip(_keys("host_", len(labels)), labels, strict=True))
        if port is not None:
            pairs.append(("port", port))
    if path:
        if path.startswith("/"):
            segments = path[1:].split("/")
            last, semi, params = segments[-1].partition(";")
            stem, ext = _stem_ext(last)
            segments[-1] = stem
            pairs.extend(zip(_keys("path_", len(segments)), segments, strict=True))
            if ext is not None:
                pairs.append(("ext", ext))
            if semi:
                pairs.extend(_items(params, ";", ";", ";"))
        else:
            pairs.append(("path", path))
    if query is not None:
        if _semicolon_query(query):
            pairs.append(("qsep", ";"))
            pairs.extend(_items(query, ";", "?", "&"))
        else:
            pairs.extend(_items(query, "&", "?", "&"))
    if fragment is not None:
        pairs.append(("#", fragment))
    return UrlKeys(tuple(pairs))


def query_keys(url: str) -> tuple[str, ...]:
    """The query parameter names of ``url``, sorted, a repeated one once (without the
    occurrence suffix of :func:`split_url`, ``?tag&2``)."""
    return tuple(sorted({k.partition("&")[0] for k, _ in split_url(url) if k[0] == "?"}))


def _semicolon_query(query: str) -> bool:
    """Whether ``query`` separates its parameters by ``;`` (HTML 4, B.2.2): it has a ``;``, no
    ``&``, and every ``;``-item is ``name=value`` (``q=a;b`` is one parameter with a ``;``)."""
    return ";" in query and "&" not in query and all("=" in item for item in query.split(";"))


def _host_port(hostport: str) -> tuple[str, str | None]:
    if hostport.startswith("["):
        end = hostport.find("]")
        if end >= 0:
            rest = hostport[end + 1 :]
            if rest.startswith(":"):
                return hostport[: end + 1], rest[1:]
            if not rest:
                return hostport, None
    host, colon, port = hostport.rpartition(":")
    return (host, port) if colon else (hostport, None)


def _stem_ext(segment: str) -> tuple[str, str | None]:
    dot = segment.rfind(".")
    if dot <= 0:
        return segment, None
    return segment[:dot], segment[dot + 1 :]


def _item_name(key: str, marker: str) -> str:
    name = key[1:]
    base, sep, n = name.rpartition(marker)
    return base if sep and n.isdigit() else name


def _join_items(items: Iterable[tuple[str, Value]], sep: str, marker: str) -> str:
    return sep.join(
        _item_name(key, marker) + ("" if value is None else "=" + value) for key, value in items
    )


def to_url(keys: UrlKeys | Iterable[tuple[str, Value]]) -> str:
    """The URL of ``keys`` (the inverse of :func:`split_url`). Query and ``;``-parameters keep
    their order; everything else is placed by its key."""
    single, hosts, segments, params, query = _sort_keys(keys)
    out: list[str] = []
    scheme = single.get("scheme")
    if scheme is not None:
        out.append(scheme + ":")
    if hosts:
        out.append(_authority(single, hosts))
    out.append(_path(single, segments, params))
    if query:
        out.append("?" + _join_items(query, single.get("qsep") or "&", "&"))
    fragment = single.get("#")
    if fragment is not None:
        out.append("#" + fragment)
    return "".join(out)


_SINGLE_KEYS = frozenset({"scheme", "user", "port", "path", "ext", "qsep", "#"})


def _sort_keys(
    keys: Iterable[tuple[str, Value]],
) -> tuple[
    dict[str, Value],
    dict[int, str],
    dict[int, str],
    list[tuple[str, Value]],
    list[tuple[str, Value]],
]:
    """The keys of a URL by where :func:`to_url` puts them: the keys that occur once
    (:data:`_SINGLE_KEYS`, the last value of a repeated one wins), host labels and path
    segments by index, ``;``-parameters and query parameters in order. Raises ``ValueError``
    for a key that is none of these."""
    single: dict[str, Value] = {}
    hosts: dict[int, str] = {}
    segments: dict[int, str] = {}
    params: list[tuple[str, Value]] = []
    query: list[tuple[str, Value]] = []
    for key, value in keys:
        if key.startswith("?"):
            query.append((key, value))
        elif key.startswith(";"):
            params.append((key, value))
        elif key.startswith("path_"):
            segments[int(key[5:])] = value or ""
        elif key.startswith("host_"):
            hosts[int(key[5:])] = value or ""
        elif key in _SINGLE_KEYS:
            if key == "qsep" and value not in (";", None):
                raise ValueError(f"not a query separator: {value!r}")
            single[key] = value
        else:
            raise ValueError(f"not a URL key: {key!r}")
    return single, hosts, segments, params, query


def _authority(single: dict[str, Value], hosts: dict[int, str]) -> str:
    """``//``, the user information, the host labels in order and the port."""
    user, port = single.get("user"), single.get("port")
    out = ["//"]
    if user is not None:
        out.append(user + "@")
    out.append(".".join(hosts[i] for i in sorted(hosts)))
    if port is not None:
        out.append(":" + port)
    return "".join(out)


def _path(
    single: dict[str, Value], segments: dict[int, str], params: list[tuple[str, Value]]
) -> str:
    """The absolute path (segments in order, the extension on the last one, then the
    ``;``-parameters) or, without segments, the rootless path; empty when there is neither."""
    if not segments:
        return single.get("path") or ""
    path = [segments[i] for i in sorted(segments)]
    ext = single.get("ext")
    if ext is not None:
        path[-1] = f"{path[-1]}.{ext}"
    if params:
        return "/" + "/".join(path) + ";" + _join_items(params, ";", ";")
    return "/" + "/".join(path)


def url_key(url: str) -> int:
    """A 64-bit key of a URL: what the crawl's bookkeeping sets hold instead of the URL."""
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "big")
