"""Link blocks counted per section (URL directory)."""

from __future__ import annotations

from scrapy_templates.templates.sections import SiteSections, section_of, section_templates
from tests.replayed import replay_content
from tests.texts import STORIES


def test_a_section_is_the_urls_directory() -> None:
    assert section_of("http://a.test/lib/stdlib/doc/sets.html") == "/lib/stdlib/doc/"
    assert section_of("http://a.test/lib/") == "/lib/"
    assert section_of("http://a.test") == "/" and section_of("http://a.test/x?y=/z") == "/"


def test_sections_count_pages_and_link_blocks_once_per_page() -> None:
    sections = SiteSections()
    assert sections.observe("/a/", [1, 2, 2], True) == (1, [1, 1, 1])
    assert sections.observe("/a/", [1], False) == (1, [1])  # a page counted before
    assert sections.observe("/b/", [1], True) == (1, [1])  # another section
    assert sections.observe("/a/", [1, 3], True) == (2, [2, 1])


def test_sections_stay_bounded() -> None:
    sections = SiteSections(max_entries=10)
    for page in range(30):
        sections.observe("/a/", [7, 1000 + page], True)
    assert len(sections.held) <= 10
    assert sections.held[("/a/", 7)] >= 20  # the block every page holds is kept


def test_section_share_decides_once_the_section_has_pages() -> None:
    assert section_templates([2, 2], 2, 0.5, 2) == [False, False]  # too few pages
    assert section_templates([3, 2, 4], 6, 0.5, 2) == [True, False, True]
    assert section_templates([3, 2, 4], 10, 0.5, 2) == [False, False, False]
    assert section_templates([3], 6, 0.0, 2) == [False]  # off


MENU = "".join(f'<li><a href="/s{i}/">Part {i} of the guide</a></li>' for i in range(6))
SECTION_MENU = (
    "<div class='secnav'>"
    + "".join(f"<a href='/threads/t{j}.html'>thrd_{w}</a> " for j, w in enumerate("abcde"))
    + "</div>"
)


def page(i: int, section: bool) -> str:
    top = SECTION_MENU if section else ""
    body = "".join(f"<p>{STORIES[(i + j) % len(STORIES)]} ({i}, {j})</p>" for j in range(3))
    return (
        f"<html><body><nav><ul>{MENU}</ul></nav><main><h1>Page {i}</h1>{top}{body}</main>"
        "<footer>Example guide</footer></body></html>"
    )


def site() -> list[tuple[str, str]]:
    """40 pages; the 5 of /threads/ carry that section's menu at the top of their content."""
    out = []
    for i in range(40):
        section = i % 8 == 3
        path = f"/threads/t{i // 8}.html" if section else f"/s{i % 6}/p{i}.html"
        out.append((f"http://guide.test{path}", page(i, section)))
    return out


def marked(section_share: float) -> dict[str, str]:
    return replay_content(site(), TEMPLATES_SECTION_SHARE=section_share)


def test_a_section_menu_on_5_of_40_pages_is_template() -> None:
    content = marked(0.5)
    threads = [text for url, text in content.items() if "/threads/" in url]
    assert len(threads) == 5
    # the first pages of the section decide before it has enough pages; the rest drop it
    assert sum("thrd_" in text for text in threads) <= 2
    assert all("Page" in text and "(" in text for text in threads)
    without = marked(0.0)
    assert all("thrd_" in text for url, text in without.items() if "/threads/" in url)
