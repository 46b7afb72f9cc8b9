"""The per-page decision on plain data: a parsed page, counts and a site's evidence."""

from __future__ import annotations

import functools

import pytest

from scrapy_templates.page import Page, parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.templates.decide import Thresholds
from scrapy_templates.templates.evidence import Evidence
from scrapy_templates.templates.inner import InnerTemplates
from scrapy_templates.templates.layout import SiteLayouts
from scrapy_templates.templates.marking import (
    MarkSettings,
    PageCounts,
    PageNavigation,
    clip_words,
    decide_page,
)
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.templates.region import navigation_links
from scrapy_templates.templates.variability import (
    BAR,
    DYNAMIC,
    FRAME,
    SHIFTING,
    STATIC,
    LayoutBlocks,
)
from tests.replayed import replay_content
from tests.texts import STORIES

NAV = "".join(f"<a href='/s{i}.html'>Section {i}</a> " for i in range(5))


def _page(n: int) -> Page:
    html = (
        f"<html><head><title>Page {n}</title></head><body><div id=nav>{NAV}</div>"
        f"<div id=main><h1>Heading {n}</h1><p>Body text number {n} says something of its own"
        f" about topic {n}.</p></div><div id=foot>Copyright the authors</div></body></html>"
    )
    return parse_page(html, f"http://a.test/p{n}.html")


def _evidence() -> Evidence:
    return Evidence(
        main_share=0.9,
        layouts=SiteLayouts,
        blocks=functools.partial(LayoutBlocks),
        max_sites=10,
    )


def _counts(
    page: Page, pages: int, repeated: set[str], static: list[bool] | None = None
) -> PageCounts:
    """Counts where the pagelets whose path ends with one of ``repeated`` are on every page."""
    counts = {
        p.fingerprint: pages if p.path.rsplit("/", 1)[-1] in repeated else 1 for p in page.pagelets
    }
    levels = None if static is None else [STATIC if s else DYNAMIC for s in static]
    return PageCounts(pages, counts, counts, 0 if static is not None else None, levels)


SETTINGS = MarkSettings(Thresholds(2, 0.25, 0.5, 0.0), 0.9, 40, "local")


def test_a_sections_menu_in_a_nav_element_is_template_on_the_first_page() -> None:
    """The first page of a site, nothing counted: its ``nav`` menu is template by the
    author's word; a ``nav`` inside the article, or one whose links stay on the page (a table
    of contents), is its content."""
    links = "".join(f"<li><a href='/m{i}.html'>module_{i}</a></li>" for i in range(30))
    html = (
        f"<html><body><aside><nav><ul>{links}</ul></nav></aside><div id=main><h1>Mnesia"
        "</h1><p>A short index page of its own words.</p><article><nav><a href='#a'>Usage"
        "</a></nav><p>Usage of the tables.</p></article><nav class=contents><a href='#b'>"
        "Installing Mnesia</a></nav></div></body></html>"
    )
    page = parse_page(html, "http://a.test/mnesia/index.html")
    marks = decide_page(page, _counts(page, 1, set()), _evidence().site("a.test"), SETTINGS)
    assert "module_3" not in marks.content
    assert "A short index page" in marks.content and "Usage" in marks.content
    assert "Installing Mnesia" in marks.content, "a table of contents links into the page"


def _node(content: str) -> Page:
    """A texinfo-like node page that declares its neighbours in its head, with its bar above
    and below ``content``."""
    head = (
        "<link rel=prev href='intro.html'><link rel=next href='bugs.html'>"
        "<link rel=up href='index.html'><link rel=index href='ix.html'>"
    )
    bar = (
        "<div class=header><p>Next: <a href='bugs.html'>Bug Detection</a>, Previous: <a"
        " href='intro.html'>Introduction</a>, Up: <a href='index.html'>Top</a> [<a"
        " href='ix.html'>Index</a>]</p></div>"
    )
    html = f"<html><head>{head}</head><body>{bar}{content}{bar}</body></html>"
    return parse_page(html, "http://a.test/help.html")


def test_a_bar_to_the_declared_neighbours_is_template_on_the_first_page() -> None:
    """Nothing counted yet: the bars that frame the content are template by the head's word;
    the same links in a sentence between paragraphs are content."""
    sentence = (
        "<p>Read <a href='intro.html'>the introduction</a> first, then <a href='bugs.html'>the"
        " bug chapter</a>.</p>"
    )
    page = _node(f"<h2>Help</h2><p>{STORIES[0]}</p>{sentence}<p>{STORIES[1]}</p>")
    marks = decide_page(page, _counts(page, 1, set()), _evidence().site("a.test"), SETTINGS)
    assert "Next:" not in marks.content and "Bug Detection" not in marks.content
    assert STORIES[0] in marks.content and STORIES[1] in marks.content
    assert "Read the introduction first" in marks.content


def test_a_bar_is_not_peeled_down_to_the_heading() -> None:
    page = _node("<h2>Help</h2>")
    marks = decide_page(page, _counts(page, 1, set()), _evidence().site("a.test"), SETTINGS)
    assert "Bug Detection" in marks.content


def test_an_index_page_keeps_its_list_of_the_sidebars_chapters() -> None:
    """Every page's sidebar menu lists the chapters; the index page's content lists them in
    the same words: its list is content, the sidebar is template."""
    chapters = "".join(f"<li><a href='/c{i}.html'>Chapter {i}</a></li>" for i in range(3))

    def page(i: int) -> tuple[str, str]:
        own = f"<ul class=toc>{chapters}</ul>" if i == 20 else f"<p>{STORIES[i % 4]} ({i})</p>"
        return (
            f"http://a.test/c{i}.html",
            f"<html><body><div class=side><nav><ul>{chapters}</ul></nav></div><div id=main>"
            f"<h1>Page {i}</h1>{own}</div></body></html>",
        )

    content = replay_content([page(i) for i in range(21)])
    assert "Chapter 1" in content["http://a.test/c20.html"]
    assert not any("Chapter" in content[f"http://a.test/c{i}.html"] for i in range(20))


def test_repeated_pagelets_are_flagged_and_left_out_of_the_content() -> None:
    page = _page(1)
    site = _evidence().site("a.test")
    marks = decide_page(page, _counts(page, 10, {"div#nav", "div#foot"}), site, SETTINGS)
    by_path = {m["path"].rsplit("/", 1)[-1]: m for m in marks.marks}
    assert by_path["div#nav"]["template"] and by_path["div#foot"]["template"]
    assert not by_path["div#main"]["template"]
    assert "Body text number 1" in marks.content
    assert "Section" not in marks.content and "Copyright" not in marks.content
    assert marks.info["pages_seen"] == 10 and marks.info["site"] == "a.test"
    assert 0 < marks.info["template_share"] < 1
    snippet = by_path["div#nav"]["text"]
    assert len(snippet) <= 40 and snippet.endswith("…"), "snippet cut at 40"
    assert page.pagelets[0].text.startswith(snippet[:-1] + " "), "cut between words"


@pytest.mark.parametrize(
    ("text", "limit", "clipped"),
    [
        ("short", 10, "short"),
        ("exactly ten", 11, "exactly ten"),
        ("one two three four", 10, "one two…"),
        ("one two three", 8, "one two…"),  # the cut falls on a space
        ("unbreakablewordhere", 8, "unbreak…"),
        ("a b", 1, "…"),
    ],
)
def test_snippets_are_cut_between_words_with_an_ellipsis(
    text: str, limit: int, clipped: str
) -> None:
    assert clip_words(text, limit) == clipped
    assert len(clip_words(text, limit)) <= limit


def test_nothing_repeats_on_the_first_page() -> None:
    page = _page(1)
    marks = decide_page(page, _counts(page, 1, set()), _evidence().site("a.test"), SETTINGS)
    assert not any(marks.flags)
    assert marks.tallies()["pagelets_template"] == 0


def test_the_decision_changes_no_evidence_and_uses_one_main_path() -> None:
    evidence = _evidence()
    for n in range(20):
        page = _page(n)
        site = evidence.site("a.test")
        before = site.main_path()
        pages = evidence.region("a.test").pages
        marks = decide_page(page, _counts(page, n + 1, {"div#nav", "div#foot"}), site, SETTINGS)
        assert evidence.region("a.test").pages == pages, "deciding learned nothing"
        assert marks.main_path == before
        assert marks.info.get("main_path") == before
        site.learn(page, marks.flags, SETTINGS.main_share)
    assert evidence.main_path("a.test") is not None, "twenty pages give the site a main region"


def test_static_blocks_are_flagged_outside_the_main_region_only() -> None:
    page = _page(3)
    static = [p.path.endswith(("div#foot", "div#main")) for p in page.pagelets]
    evidence = _evidence()
    evidence.models["a.test"] = TemplateModel("a.test", 1, 100, "body/div#main", 100)
    marks = decide_page(page, _counts(page, 10, set(), static), evidence.site("a.test"), SETTINGS)
    by_path = {m["path"].rsplit("/", 1)[-1]: m for m in marks.marks}
    assert by_path["div#foot"].get("static") and by_path["div#foot"]["template"]
    assert not by_path["div#main"]["template"], "static text inside the main region stays"
    assert marks.info["layout"] == 0
    assert marks.tallies()["pagelets_static"] == 1


def test_the_title_comes_from_an_anchor_text_seen_for_the_page() -> None:
    page = _page(7)
    evidence = _evidence()
    evidence.anchors("a.test").add(page_id(page.url), "Heading 7")
    marks = decide_page(page, _counts(page, 2, set()), evidence.site("a.test"), SETTINGS)
    assert marks.info["title"] == "Heading 7"
    assert marks.info["title_from"] != "title"


def test_tallies_add_up_to_the_page() -> None:
    page = _page(2)
    marks = decide_page(page, _counts(page, 10, {"div#nav"}), _evidence().site("a.test"), SETTINGS)
    tallies = marks.tallies()
    assert tallies["text_chars"] == sum(len(p.text) for p in page.pagelets)
    assert tallies["template_chars"] == len(page.pagelets[0].text)
    assert tallies["pagelets_template"] + tallies["pagelets_content"] + tallies[
        "pagelets_outside_main"
    ] == len(page.pagelets)


ASPECTS = ("overview", "functions", "examples", "limits", "history", "errors", "options", "types")
TOPICS = [
    f"{subject} {aspect}"
    for subject in ("Threads", "Mutexes", "Atomics", "Signals", "Locales")
    for aspect in ASPECTS
]
GUIDE_MENU = "".join(f'<li><a href="/doc/p{i}.html">Part {i}</a></li>' for i in range(6))


def _guide_page(i: int, top: str = "", end: str = "", short: bool = False) -> str:
    body = "".join(
        f"<p>{STORIES[(i + j) % len(STORIES)]} See <a href='/doc/p{(i + j + 3) % 40}.html'>"
        f"{TOPICS[(i + j + 3) % 40]}</a> ({i}, {j})</p>"
        for j in range(3)
    )
    if short:
        body = f"<p>To be written ({i}).</p>"
    return (
        f"<html><body><nav><ul>{GUIDE_MENU}</ul></nav><main>{top}<h1>{TOPICS[i]}</h1>"
        f"<div class='text'>{body}</div>{end}</main><footer>Example guide</footer></body></html>"
    )


def _bar_title(i: int) -> str:
    """The title a prev/next bar names page ``i`` by: words few titles share."""
    words = STORIES[i % len(STORIES)].rstrip(".").split()
    return " ".join(words[i // len(STORIES) : i // len(STORIES) + 5])


def _prev_next_bar(i: int) -> str:
    previous = f'Previous: <a href="/doc/p{i - 1}.html">{_bar_title(i - 1)}</a>, ' if i else ""
    return (
        f'<div class="header"><p>Next: <a href="/doc/p{i + 1}.html">{_bar_title(i + 1)}</a>, '
        f'{previous}Up: <a href="/doc/c{i // 8}.html">Chapter {i // 8}</a> '
        '[<a href="/doc/toc.html">Contents</a>][<a href="/doc/ix.html">Index</a>]</p></div>'
    )


def _retrieved_from(i: int, target: int) -> str:
    title = TOPICS[target].replace(" ", "_")
    link = f"http://wiki.test/index.php?title={title}&amp;oldid={9000 + 7 * i}"
    return f'<div class="printfooter">Retrieved from "<a href="{link}">{link}</a>"</div>'


def _guide(frame: str) -> list[tuple[str, str]]:
    """40 pages of a guide whose content is framed by a texinfo-like prev/next bar at its top
    and bottom (``bar``: labels stay, titles change), or closed by a MediaWiki-like
    "Retrieved from ‹url›" line naming the page itself (``wiki``) or, as a control, another
    page (``elsewhere``)."""
    pages = []
    for i in range(40):
        url = f"http://wiki.test/w/{TOPICS[i].replace(' ', '_')}"
        if frame == "bar":
            pages.append((url, _guide_page(i, top=_prev_next_bar(i), end=_prev_next_bar(i))))
        else:
            target = i if frame == "wiki" else (i + 1) % 40
            pages.append((url, _guide_page(i, end=_retrieved_from(i, target))))
    return pages


def _with(content: dict[str, str], words: str) -> int:
    return sum(words in text for text in content.values())


def _all_content_kept(content: dict[str, str]) -> bool:
    return len(content) == 40 and all(
        STORIES[i % len(STORIES)] in text and f"({i}, 2)" in text
        for i, text in enumerate(content.values())
    )


def test_a_prev_next_bar_whose_titles_shift_is_template_where_it_frames_the_content() -> None:
    content = replay_content(_guide("bar"))
    assert _all_content_kept(content)
    # the layout model needs a few pages of the layout before it decides
    assert _with(content, "Next:") <= 5
    kept = replay_content(_guide("bar"), TEMPLATES_BLOCK_SHIFT_DIFF_MAX=0)
    assert _with(kept, "Next:") >= 35


def _column_page(i: int, short: bool) -> str:
    """A page whose content column ends with a dated footer; a short page has too few links
    in the column for the partition to split it."""
    if short:
        body = f"<h1>Note {i}</h1><p>{STORIES[i % len(STORIES)]}</p>"
    else:
        body = f"<h1>Topic {i}</h1>" + "".join(
            f"<p>{STORIES[(i + j) % len(STORIES)]} See <a href='/t{i + j}.html'>topic {i + j}"
            "</a>.</p>"
            for j in range(4)
        )
        related = "".join(
            f"<li><a href='/u{i + j}.html'>Related {i + j}</a></li>" for j in range(4)
        )
        body += f"<h2>See also</h2><ul>{related}</ul>"
    footer = f"Copyright © {1990 + i % 7}-2026 Example AB. All Rights Reserved."
    return (
        f"<html><body><div id=nav>{NAV}</div><div id=content>{body}"
        f"<div class=footer>{footer}</div></div></body></html>"
    )


def test_a_footer_inside_an_unsplit_content_column_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pages = [(f"http://a.test/p{i}.html", _column_page(i, i % 4 == 3)) for i in range(40)]
    content = list(replay_content(pages).values())
    assert len(content) == 40
    assert not any("Copyright" in text for text in content)
    shorts = [(i, text) for i, text in enumerate(content) if i % 4 == 3]
    assert all(f"Note {i}" in text and STORIES[i % len(STORIES)] in text for i, text in shorts)
    monkeypatch.setattr(InnerTemplates, "cut", lambda self, path, text: text)
    kept = list(replay_content(pages).values())
    assert [n for n, text in enumerate(kept) if "Copyright" in text] == list(range(3, 40, 4))


def test_a_retrieved_from_line_naming_the_page_is_template() -> None:
    content = replay_content(_guide("wiki"))
    assert _all_content_kept(content)
    assert _with(content, "Retrieved from") <= 5
    elsewhere = replay_content(_guide("elsewhere"))
    assert _with(elsewhere, "Retrieved from") >= 35


@pytest.mark.parametrize(("level", "flagged"), [(FRAME, True), (SHIFTING, False)])
def test_a_bar_at_a_frame_position_is_template_wherever_it_lies(level: int, flagged: bool) -> None:
    # a texinfo page of two nodes: the second node's bar lies between their texts
    bar = (
        "<div class=header><p>Next: <a href=/m.html>Mutexes</a>, Previous: <a href=/i.html>"
        "Intro</a>, Up: <a href=/>Guide</a> [<a href=/toc.html>Contents</a>]</p></div>"
    )
    page = parse_page(
        f"<html><body><div id=nav>{NAV}</div><div id=main><h1>Threads</h1><p>Threads run "
        f"code side by side.</p>{bar}<h2>Creating threads</h2><p>A thread starts from a "
        "function.</p></div></body></html>",
        "http://a.test/threads.html",
    )
    levels = [level if "header" in p.path else DYNAMIC for p in page.pagelets]
    counts = PageCounts(10, {}, {}, 0, levels)
    evidence = _evidence()
    evidence.models["a.test"] = TemplateModel("a.test", 1, 100, "body/div#main", 100)
    marks = decide_page(page, counts, evidence.site("a.test"), SETTINGS)
    assert ("Next:" not in marks.content) is flagged
    assert "A thread starts from a function." in marks.content
    assert "Threads run code side by side." in marks.content
    assert not any(marks.framed), "a bar between two texts does not frame the content"


def test_a_bar_above_a_short_page_is_peeled_though_a_frame_position_closes_it() -> None:
    # a texinfo chapter page: its bar, its title, a short list of its sections, and the bar
    # again at the frame position below; the two bars outweigh what is left between them
    def bar(where: str) -> str:
        return (
            f"<div class={where}><p>Next: <a href=/w.html>wrstcse</a>, Previous: <a href=/t.html>"
            "to_poly_solve</a> [<a href=/toc.html>Contents</a>][<a href=/ix.html>Index</a>]"
            "</p></div>"
        )

    toc = (
        "<a href=/u1.html>Introduction to Units</a> <a href=/u2.html>Functions and Variables "
        "for Units</a> <a href=/u3.html>Definitions for Units</a>"
    )
    page = parse_page(
        f"<html><body><div id=nav>{NAV}</div><div id=main><div class=chapter>{bar('top')}"
        f"<h2>92 unit</h2><ul class=toc><li>{toc}</li></ul></div>{bar('end')}</div>"
        "</body></html>",
        "http://a.test/unit.html",
    )
    paths = [p.path for p in page.pagelets]
    assert any("top" in p for p in paths) and any("end" in p for p in paths)
    levels = [SHIFTING if "top" in p else FRAME if "end" in p else DYNAMIC for p in paths]
    evidence = _evidence()
    evidence.models["a.test"] = TemplateModel("a.test", 1, 100, "body/div#main", 100)
    marks = decide_page(page, PageCounts(10, {}, {}, 0, levels), evidence.site("a.test"), SETTINGS)
    assert "Next:" not in marks.content
    assert "92 unit" in marks.content and "Introduction to Units" in marks.content


def test_page_navigation_answers_each_pagelet_once_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scrapy_templates.templates import marking

    asked: list[str] = []

    def counting(text: str, hrefs: tuple[str, ...], anchors: tuple[str, ...], host: str) -> int:
        asked.append(text)
        return navigation_links(text, hrefs, anchors, host)

    monkeypatch.setattr(marking, "block_navigation", counting)
    page = _page(3)
    navigation = PageNavigation(page)
    nav = next(i for i, p in enumerate(page.pagelets) if p.path == "body/div#nav")
    assert navigation.links(nav) == 5 and navigation.menu(nav)
    assert navigation.links(nav) == 5
    assert len(asked) == 1, "worked out once, then kept"
    main = next(i for i, p in enumerate(page.pagelets) if p.path == "body/div#main")
    assert navigation.links(main) == 0 and len(asked) == 1, "no links: nothing to work out"


# DocBook's navheader: two plain titles and two links, so not navigation by its words
DOCBOOK_HEADER = (
    "<div class=navheader><table><tr><th>Thread creation and joining</th></tr><tr>"
    "<td><a href=/i.html>Prev</a></td><th>Part 2. Concurrency support library</th>"
    "<td><a href=/m.html>Next</a></td></tr></table></div>"
)


def _with_docbook_header(level: int, *, first: bool) -> str:
    """The content of a DocBook-like page whose navheader has stability ``level``, at the top
    of the content (``first``) or under its heading and first paragraph."""
    see = "".join(f"<li><a href=/t{i}.html>Thread topic {i}</a></li>" for i in range(4))
    top = DOCBOOK_HEADER if first else ""
    middle = "" if first else DOCBOOK_HEADER
    page = parse_page(
        f"<html><body><div id=nav>{NAV}</div><div id=main>{top}<h1>Threads</h1><p>Threads "
        f"run code side by side.</p>{middle}<p>A thread starts from a function.</p><h2>See "
        f"also</h2><ul>{see}</ul><p>Last words on threads.</p></div></body></html>",
        "http://a.test/threads.html",
    )
    levels = [level if "navheader" in p.path else DYNAMIC for p in page.pagelets]
    evidence = _evidence()
    evidence.models["a.test"] = TemplateModel("a.test", 1, 100, "body/div#main", 100)
    marks = decide_page(page, PageCounts(10, {}, {}, 0, levels), evidence.site("a.test"), SETTINGS)
    assert "Threads run code side by side." in marks.content
    assert "A thread starts from a function." in marks.content
    return marks.content


@pytest.mark.parametrize(("level", "flagged"), [(BAR, True), (SHIFTING, False)])
def test_a_bar_of_plain_titles_between_steady_links_frames_the_content(
    level: int, flagged: bool
) -> None:
    assert ("Prev" not in _with_docbook_header(level, first=True)) is flagged


@pytest.mark.parametrize(("level", "flagged"), [(FRAME, True), (SHIFTING, False)])
def test_a_bar_of_plain_titles_at_a_frame_position_is_template(level: int, flagged: bool) -> None:
    # only its level says it is a bar; under the content's heading no peeling reaches it
    assert ("Prev" not in _with_docbook_header(level, first=False)) is flagged
