"""Hand-made URL sets where the right rules are known (after figures 3, 4 and 7 of ``003_…``)."""

from __future__ import annotations

import random

from scrapy_templates.urlnorm.clusters import Sample


def mirror_site(pages: int = 50, seed: int = 1) -> tuple[list[str], list[int]]:
    """Figure 4: each page as ``/archiveN/show.php?pageid=ID&sid=S`` (twice) and as
    ``/archiveN/ID/display?sid=S`` (twice): mirror and session id are irrelevant, ``pageid``
    maps to the second path segment."""
    rng = random.Random(seed)
    urls: list[str] = []
    clusters: list[int] = []
    for pid in range(10, 10 + pages):
        for form in range(4):
            mirror = f"archive{rng.randrange(4)}"
            sid = f"{rng.randrange(16**8):08x}"
            if form < 2:
                urls.append(f"http://www.example.com/{mirror}/show.php?pageid={pid}&sid={sid}")
            else:
                urls.append(f"http://www.example.com/{mirror}/{pid}/display?sid={sid}")
            clusters.append(pid)
    return urls, clusters


def query_site(pages: int = 40, seed: int = 2) -> tuple[list[str], list[int]]:
    """Figure 3: ``K1=a&K2=b&K3=*&K4=c&K5=*`` where K3 and K5 do not change the page, and
    ``K2`` does; plus search pages whose "no results" copies must not teach that ``q`` is
    irrelevant."""
    rng = random.Random(seed)
    urls: list[str] = []
    clusters: list[int] = []
    for pid in range(pages):
        for _ in range(3):
            k3, k5 = rng.randrange(1000), rng.randrange(1000)
            urls.append(f"http://q.example/page?k1=a&k2={pid}&k3={k3}&k4=c&k5={k5}")
            clusters.append(pid)
    for i, word in enumerate(["river", "bridge", "coast", "harbour", "forest", "island"]):
        urls.append(f"http://q.example/search?q={word}")
        clusters.append(1000 + i)
    for word in ["zzzz", "qqqq", "xxyy", "nope", "none", "nada", "void", "zilch", "nix", "naught"]:
        urls.append(f"http://q.example/search?q={word}")
        clusters.append(2000)  # every "no results" page has the same content
    return urls, clusters


def circle_site(pages: int = 30) -> tuple[list[str], list[int]]:
    """Figure 7 (c): every page under three formats, each a duplicate of the others, so the
    candidates form circles and shared sources."""
    urls: list[str] = []
    clusters: list[int] = []
    for pid in range(pages):
        urls += [
            f"http://c.example/item/{pid}",
            f"http://c.example/item.php?id={pid}",
            f"http://c.example/print/{pid}/view",
        ]
        clusters += [pid] * 3
    urls += [f"http://c.example/item/{pid}" for pid in range(pages, pages + 30)]
    clusters += list(range(pages, pages + 30))
    return urls, clusters


def listing_site() -> tuple[list[str], list[int]]:
    """Listings whose first page (any session id) is the listing sorted by date, and later
    pages each sampled once, on listings whose first page was not: ``page`` is irrelevant for
    the value 1 only, ``sid`` for every value."""
    urls: list[str] = []
    clusters: list[int] = []
    for i in range(6):
        for sid in ("0001", "0002", "0003", "0004"):
            urls.append(f"http://l.example/category/c{i}/?page=1&sid={sid}")
            clusters.append(100 + i)
        urls.append(f"http://l.example/category/c{i}/?sort=date")
        clusters.append(100 + i)
    for page in range(2, 14):
        urls.append(f"http://l.example/category/c{6 + page}/?page={page}&sid=0001")
        clusters.append(300 + page)
    return urls, clusters


def semicolon_site(pages: int = 30) -> tuple[list[str], list[int]]:
    """A repository browser whose query separates parameters by ``;`` (gitweb): each file's
    diff with and without ``ds=inline`` (the same page), and a blob and a log page per file."""
    urls: list[str] = []
    clusters: list[int] = []
    base = "http://git.example/cgi-bin/gitweb.cgi?p=project.git"
    for pid in range(pages):
        urls += [
            f"{base};a=blobdiff;f=src/mod{pid}.py",
            f"{base};a=blobdiff;f=src/mod{pid}.py;ds=inline",
        ]
        clusters += [pid, pid]
        urls += [f"{base};a=blob;f=src/mod{pid}.py", f"{base};a=log;f=src/mod{pid}.py"]
        clusters += [1000 + pid, 2000 + pid]
    return urls, clusters


def article_samples(
    pages: range, *, sid: bool = True, print_view: bool = True, utm: bool = False
) -> list[Sample]:
    """Article pages under their plain URL, session-id and print forms (one page each)."""
    samples = []
    for n in pages:
        forms = [f"http://news.test/a/{n}.html"]
        forms += [f"http://news.test/a/{n}.html?sid={n * 7 % 13:04d}"] if sid else []
        forms += [f"http://news.test/a/{n}.html?print=1"] if print_view else []
        forms += [f"http://news.test/a/{n}.html?utm_source=feed"] if utm else []
        samples += [Sample(url, text_hash=f"page-{n}") for url in forms]
    return samples
