from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates import page as page_module
from scrapy_templates.page import (
    SPLIT_DEPTH,
    Detached,
    PageError,
    navigation_element,
    parse_elements,
    parse_page,
)
from tests.texts import STORIES


def _links(n: int, prefix: str = "x") -> str:
    return "".join(f'<a href="/{prefix}{i}">{prefix} link {i}</a> ' for i in range(n))


def test_partition_follows_definition_2() -> None:
    # body has a child (nav) with 3 links -> body is split; so is nav (its ul holds 3); the
    # ul's items hold 1 link each, so the ul is one pagelet; the article holds 2 links (< k).
    html = f"""<html><body>
      <nav><ul>
        <li>{_links(1, "a")}</li><li>{_links(1, "b")}</li><li>{_links(1, "c")}</li>
      </ul></nav>
      <article><h1>Title</h1><p>First {_links(2, "d")} paragraph.</p><p>Second.</p></article>
    </body></html>"""
    page = parse_page(html, "http://s/p", k=3)
    paths = [p.path for p in page.pagelets]
    assert paths == ["body/nav/ul", "body/article"]
    assert page.pagelets[0].hrefs == ("/a0", "/b0", "/c0")
    assert "Title" in page.pagelets[1].text and "Second." in page.pagelets[1].text


def test_split_descends_until_no_child_holds_k_links() -> None:
    html = f"""<body><div id="wrap">
      <div class="menu">{_links(4, "m")}</div>
      <div class="main"><p>Body text here.</p><div class="rel">{_links(3, "r")}</div></div>
    </div></body>"""
    page = parse_page(html, "http://s/p", k=3)
    paths = [p.path for p in page.pagelets]
    # wrap is split (menu has 4), main is split (rel has 3), menu and rel are pagelets.
    assert paths == [
        "body/div#wrap/div.menu",
        "body/div#wrap/div.main/p",
        "body/div#wrap/div.main/div.rel",
    ]
    # With k=5 only wrap (7 links) is "linky": body splits, wrap stays whole.
    assert [p.path for p in parse_page(html, "http://s/p", k=5).pagelets] == ["body/div#wrap"]


def test_loose_text_of_split_elements_is_kept_in_order() -> None:
    html = f"<body>Intro text<div>{_links(3)}</div>middle words<p>end</p></body>"
    texts = [p.text for p in parse_page(html, "http://s/").pagelets]
    assert texts[0] == "Intro text"
    assert texts[2] == "middle words"
    assert texts[-1] == "end"


def test_block_elements_do_not_glue_words() -> None:
    page = parse_page("<body><ul><li>Home</li><li>News</li></ul><p>a<b>b</b>c</p></body>", "u")
    assert "Home News" in page.text
    assert "abc" in page.text  # inline markup does not split words
    # a block element's start breaks words too, not only its end
    page = parse_page("<body><div>lead<p>One</p>tail<section>x<b>y</b></section></div></body>", "u")
    assert page.text == "lead One tail xy"


def test_scripts_styles_and_comments_are_invisible() -> None:
    page = parse_page(
        "<html><head><title>T</title><style>.x{}</style></head><body><script>var a=1;</script>"
        "<!-- hidden --><p>Visible</p><noscript>nojs</noscript></body></html>",
        "u",
    )
    assert page.text == "Visible"
    assert page.title == "T"


def test_page_fingerprints_are_computed_once() -> None:
    page = parse_page("<body><p>Hello world, this is a page.</p></body>", "u")
    assert page.simhash != 0
    assert len(page.text_hash) == 32
    assert page.pagelets[0].fingerprint != 0


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        (b"%PDF-1.4 binary", "not-html"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "not-html"),
        ('{"json": true}', "not-html"),
    ],
)
def test_non_html_is_refused_with_a_reason(body: str | bytes, reason: str) -> None:
    with pytest.raises(PageError) as info:
        parse_page(body, "http://s/x")
    assert info.value.reason == reason


def test_a_page_with_a_few_stray_nul_bytes_is_a_page() -> None:
    story = " ".join(STORIES).encode()
    body = b"<html><body><p>one\x00 two</p><p>three\x00\x00 four</p><p>" + story + b"</p>"
    page = parse_page(body, "http://s/nul")
    assert page.text.split()[:4] == ["one", "two", "three", "four"]
    assert page.text.endswith(STORIES[-1])


def test_huge_page_is_truncated_not_refused() -> None:
    html = "<body>" + "<p>word</p>" * 20000 + "</body>"
    page = parse_page(html, "u", max_bytes=10_000)
    assert page.notes == ["truncated"]
    assert 0 < len(page.text) < 10_000


def test_too_many_tags_is_refused() -> None:
    with pytest.raises(PageError) as info:
        parse_page("<body>" + "<i>x</i>" * 1000 + "</body>", "u", max_tags=500)
    assert info.value.reason == "too-many-tags"


def _element_with_attributes(n: int, form: str = 'a{}="1"') -> str:
    return (
        "<html><body><div " + " ".join(form.format(i) for i in range(n)) + ">x</div></body></html>"
    )


@pytest.mark.parametrize("form", ['a{}="1"', "a{}", "d-{}='x y'", "a{}=1/"])
def test_an_element_with_attributes_that_would_hold_the_parse_is_refused(form: str) -> None:
    # libxml2 takes about a second over 30,000 attributes and minutes over 300,000
    with pytest.raises(PageError) as info:
        parse_page(_element_with_attributes(30_000, form), "http://s/attrs")
    assert info.value.reason == "too-many-attributes"


def test_many_attributes_spread_over_elements_are_refused_too() -> None:
    tags = "".join("<p " + " ".join(f"a{i}" for i in range(1_500)) + f">{j}</p>" for j in range(50))
    with pytest.raises(PageError) as info:
        parse_page(f"<html><body>{tags}</body></html>", "http://s/attrs")
    assert info.value.reason == "too-many-attributes"


def test_long_attribute_values_and_ordinary_attributes_parse() -> None:
    path = " ".join(f"L {i} {i}" for i in range(40_000))  # an inline SVG path: long, one value
    many = "<p " + " ".join(f'data-k{i}="v"' for i in range(2_000)) + ">ordinary</p>"
    page = parse_page(
        f'<html><body><svg><path d="{path}"/></svg>{many}{_links(5)}</body></html>', "http://s/"
    )
    assert "ordinary" in page.text


def test_broken_markup_and_odd_encodings() -> None:
    broken = parse_page("<body><div><p>unclosed <b>bold<div>next</body>", "u")
    assert "unclosed" in broken.text and "next" in broken.text
    latin = parse_page(
        '<html><head><meta charset="iso-8859-1"></head><body><p>caf\xe9</p></body></html>'.encode(
            "latin-1"
        ),
        "u",
    )
    assert latin.text == "café"
    utf16 = parse_page("\ufeff<html><body><p>naïve</p></body></html>".encode("utf-16-le"), "u")
    assert utf16.text == "naïve"
    declared = parse_page(
        '<?xml version="1.0" encoding="utf-8"?><html><body><p>ok</p></body></html>', "u"
    )
    assert declared.text == "ok"


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ("<html><body><p>naïve ☃ 𝔘</p></body></html>".encode(), "naïve ☃ 𝔘"),
        (b"\xef\xbb\xbf<html><body><p>na\xc3\xafve</p></body></html>", "naïve"),
        (
            b"<html><body><p>bad \xff byte \xed\xa0\x80 here</p></body></html>",
            "bad \ufffd byte \ufffd\ufffd\ufffd here",
        ),
        (b'<meta charset="utf-8"><p>\xef\xbf\xbd kept</p>', "\ufffd kept"),
    ],
)
def test_utf8_bodies_read_as_their_decoded_text(body: bytes, text: str) -> None:
    # UTF-8 bytes go to the parser as they are only when decoding them replaced nothing.
    assert parse_page(body, "u").text == text


def test_text_below_reads_every_element_at_a_path_inside_a_pagelet() -> None:
    html = (
        '<body><div id="header"><h1>git-add(1)</h1></div><div id="content">'
        "<div><h2>NAME</h2><p>one</p></div><div><h2>OPTIONS</h2><p>two</p></div></div>"
        '<div id="footer">Last updated</div></body>'
    )
    page = parse_page(html, "u")
    assert [p.path for p in page.pagelets] == ["body"]
    assert page.text_below(0, "body/div#content") == "NAME one OPTIONS two"
    assert page.text_below(0, "body/div#content/div/p") == "one\ntwo"
    assert page.text_below(0, "body/div#missing") is None


@pytest.mark.parametrize(
    "html", ["<html><body></body></html>", "<body><img src='x.png'></body>", "<p></p>"]
)
def test_page_without_visible_text_has_no_pagelets(html: str) -> None:
    page = parse_page(html, "u")
    assert [p.text for p in page.pagelets if p.text] == []
    assert page.text == ""


_markup = st.lists(
    st.sampled_from(
        [
            "<div>",
            "</div>",
            "<p>",
            "<a href='/x'>",
            "</a>",
            "<li>",
            "<table>",
            "<td>",
            "<!--",
            "-->",
            "<script>",
            "</script>",
            "&amp;",
            "&#0;",
            "\x00",
            "<?xml?>",
            "<body>",
            "</html>",
            "text ",
            "ü",
            "𝐀",
            "\ud7ff",
            " ",
        ]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_markup, st.text(max_size=300), st.binary(max_size=300)))
def test_any_input_parses_or_is_refused_with_a_reason(body: str | bytes) -> None:
    try:
        page = parse_page(body, "http://s/x")
    except PageError as exc:
        assert exc.reason in {
            "empty",
            "not-html",
            "parse-error",
            "too-many-tags",
            "too-many-attributes",
        }
    else:
        assert all(p.text == " ".join(p.text.split()) for p in page.pagelets)


def test_canonical_link_is_made_absolute() -> None:
    html = '<html><head><link rel="Canonical" href="/a/b"></head><body><p>x</p></body></html>'
    assert parse_page(html, "http://h.example/print/b?x=1").canonical == "http://h.example/a/b"
    assert parse_page("<html><body><p>x</p></body></html>", "http://h.example/").canonical is None


def test_the_head_links_that_place_a_page_in_a_sequence_are_kept_as_written() -> None:
    head = (
        '<link rel="stylesheet" href="s.css"><link rel="Previous" href="a.html">'
        '<link rel="next contents" href="c.html"><link rel="up" href=" ">'
        '<link rel="home" href="../index.html">'
    )
    page = parse_page(f"<html><head>{head}</head><body><p>x</p></body></html>", "http://h/b")
    assert page.sequence == (
        ("a.html", "prev"),
        ("c.html", "next"),
        ("c.html", "contents"),
        ("../index.html", "start"),
    )
    assert parse_page("<html><body><p>x</p></body></html>", "http://h/").sequence == ()


def test_a_nav_element_is_navigation_unless_within_the_content() -> None:
    nav = "body/div#container/aside#leftnav/nav.tube"
    assert navigation_element(nav + "/ul/li") == nav
    assert navigation_element("body/nav") == "body/nav"
    assert navigation_element("body/main/nav.toc/ul") is None
    assert navigation_element("body/div/article/nav/ul") is None
    assert navigation_element("body/div.navbar/ul") is None  # a class, not the element
    assert navigation_element("body/div#nav/ul") is None


def test_a_menus_copy_of_the_content_is_counted_apart() -> None:
    chapters = "".join(f"<li><a href='/c{i}.html'>Chapter {i}</a></li>" for i in range(3))
    html = (
        f"<html><body><div><nav><ul>{chapters}</ul></nav></div><main><ul>{chapters}</ul>"
        f"</main><footer><ul>{chapters}</ul></footer></body></html>"
    )
    pagelets = {p.path: p for p in parse_page(html, "http://s/").pagelets}
    menu, content, footer = (pagelets[f"body/{at}/ul"] for at in ("div/nav", "main", "footer"))
    assert menu.text == content.text == footer.text
    assert content.fingerprint == footer.fingerprint != 0
    assert menu.fingerprint not in (0, content.fingerprint)


FOOTER = "<div class=footer><hr><p>Copyright © {}-2026 Example AB. All Rights Reserved.</p></div>"


def test_a_footer_inside_an_unsplit_column_is_counted_as_its_own_pagelet_would_be() -> None:
    functions = "".join(f"<li><a href='/f{i}.html'>function {i}</a></li>" for i in range(4))
    long = parse_page(
        f"<body><div id=content><h1>Module</h1><ul>{functions}</ul>{FOOTER.format(1997)}"
        "</div></body>",
        "http://x.test/m.html",
    )
    footer = next(p for p in long.pagelets if p.path.endswith("div.footer"))
    short = parse_page(
        "<body><div id=wrap><div id=content><div class=front><h1>Observer</h1><h4>Version 2.1"
        f"</h4></div>{FOOTER.format(2002)}</div></div></body>",
        "http://x.test/index.html",
    )
    assert [p.path for p in short.pagelets] == ["body"]
    assert footer.pattern in short.hidden and footer.fingerprint not in short.hidden
    assert short.detach().hidden == short.hidden
    assert footer.pattern not in long.hidden  # a pagelet of its own is counted as one


@pytest.mark.parametrize(
    "column",
    [
        # the last block is a section of the page: its heading, then its text
        "<p>Lead.</p><p>Body text of the page.</p><div><h2>GIT</h2><p>Part of the git(1) suite"
        "</p></div>",
        # edge blocks too short to be a habit of the site
        "<p>Short lead.</p><p>A body paragraph that is long enough.</p><p>Fine print.</p>",
        # one block: nothing hides in it
        "<p>Only one paragraph of the page, long enough to be counted.</p>",
        # a rule and a break hold no text: the edges are the blocks around them
        "<p>Lead.</p><p>Body text of the page.</p><hr><br>",
    ],
)
def test_blocks_that_are_the_pages_own_are_not_counted_hidden(column: str) -> None:
    page = parse_page(f"<body><main>{column}</main></body>", "http://x.test/")
    assert page.hidden == ()


def test_a_menu_at_the_edge_of_a_column_is_not_counted_hidden() -> None:
    column = "<p>Body text of the page.</p><{0}><p>Previous: the chapter before this</p></{0}>"
    page = parse_page(f"<body><div id=c>{column.format('nav')}</div></body>", "http://x.test/")
    assert page.hidden == ()
    plain = parse_page(f"<body><div id=c>{column.format('div')}</div></body>", "http://x.test/")
    assert len(plain.hidden) == 1


def test_a_menu_hides_nothing() -> None:
    html = (
        "<body><nav><ul><li><a href=/p>Products and services of the firm</a></li>"
        "<li><a href=/s>Shop</a></li></ul>"
        "<p><a href=/c>Contact us about anything at any time</a></p></nav>"
        "<main><p><a href=/m>More</a> on this page.</p></main></body>"
    )
    page = parse_page(html, "http://x.test/")
    assert navigation_element(page.pagelets[0].path) is not None
    assert page.hidden == ()
    unmarked = parse_page(html.replace("nav>", "div>"), "http://x.test/")
    assert len(unmarked.hidden) == 2  # the same blocks outside a menu count


def test_first_h1_and_the_blocks_inside_chosen_pagelets() -> None:
    nav = "<nav>" + "".join(f'<a href="/{i}">Section {i}</a>' for i in range(4)) + "</nav>"
    html = (
        f"<html><body>{nav}<main><h1>First <em>heading</em></h1><h1>Second</h1>"
        "<p>One paragraph.</p><ul><li>An item</li></ul></main></body></html>"
    )
    page = parse_page(html, "http://x.test/")
    assert page.h1 == "First heading"
    main = next(i for i, p in enumerate(page.pagelets) if p.path.endswith("main"))
    assert page.blocks([main]) == ["First heading", "Second", "One paragraph.", "An item"]
    assert page.blocks([main], limit=2) == ["First heading", "Second"]
    nav_index = next(i for i, p in enumerate(page.pagelets) if "nav" in p.path)
    assert page.pagelets[nav_index].anchors[:2] == ("Section 0", "Section 1")


@pytest.mark.parametrize("detached", [False, True])
def test_lines_of_loose_text_walk_their_shared_element_once(
    detached: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    links = "".join(f'<a href="/{i}"></a>' for i in range(3))
    lines = "".join(f"line {i}<br>" for i in range(500))
    page = parse_page(f"<body><div><span>{links}</span>{lines}</div></body>", "http://x.test/")
    loose = [i for i, p in enumerate(page.pagelets) if p.path.endswith("/text()")]
    assert len(loose) == 500
    walks: list[object] = []
    real = page_module._walk

    class Counting:
        @staticmethod
        def texts_named(element: object, names: object, limit: int) -> list[str]:
            walks.append(element)
            return real.texts_named(element, names, limit) if real else []

    monkeypatch.setattr(page_module, "_walk", Counting)
    if detached:  # every pagelet's blocks: the span and the div, once each
        assert page.detach(blocks=True).block_texts is not None
        assert len(walks) == 2
    else:  # the lines' blocks: the div, once
        assert page.blocks(loose) == []
        assert len(walks) == 1


def test_parse_elements_are_the_elements_of_parse_page() -> None:
    nav = "<nav>" + "".join(f'<a href="/{i}">Section {i}</a>' for i in range(4)) + "</nav>"
    html = f"<html><head><title>T</title></head><body>{nav}<main>lead<p>One.</p></main></body>"
    page = parse_page(html, "http://x.test/")
    elements = parse_elements(html)
    paths = [el.getroottree().getpath(el) for el in elements]
    assert paths == [el.getroottree().getpath(el) for el in page.elements]
    assert len(paths) == len(page.pagelets) == 2


def test_a_detached_page_takes_elements_only_when_they_match_its_pagelets() -> None:
    html = "<body><main><h1>Heading</h1><p>Text.</p></main></body>"
    page = parse_page(html, "http://x.test/").detach()
    page.reload = lambda: parse_elements("<body><p>a</p><p>b</p></body>", k=0)
    with pytest.raises(Detached, match="parses differently"):
        page.blocks([0])
    page.reload = lambda: parse_elements(html)
    assert page.blocks([0]) == ["Heading", "Text."]


def _nested(depth: int) -> str:
    return (
        "<html><body><p>before</p>"
        + "<div>" * depth
        + "deep text"
        + "</div>" * depth
        + "<p>after</p></body></html>"
    )


@pytest.mark.parametrize("depth", [255, 300, 2000])
def test_deeply_nested_text_is_kept(depth: int) -> None:
    page = parse_page(_nested(depth), "http://s/deep")
    assert page.text.split() == ["before", "deep", "text", "after"]
    assert page.notes == []


def test_links_nested_thousands_deep_are_one_pagelet_below_the_split_depth() -> None:
    # every level holds links, so every level would be split: a pagelet per level, each
    # with a path and a position as long as its depth (a 271 KB page took 800 MB)
    depth = 2000
    html = (
        "<html><body>"
        + "".join(f"<div><a href=/{i}>link {i}</a><p>word{i}</p>" for i in range(depth))
        + "</div>" * depth
        + "</body></html>"
    )
    page = parse_page(html, "http://s/deep")
    assert page.notes == ["deep"]
    assert max(len(p.position) for p in page.pagelets) == SPLIT_DEPTH
    assert max(p.path.count("/") for p in page.pagelets) <= SPLIT_DEPTH + 1
    assert len(page.pagelets) < 3 * SPLIT_DEPTH
    words = page.text.split()
    assert [w for w in words if w.startswith("word")] == [f"word{i}" for i in range(depth)]
    assert page.pagelets[-1].hrefs[-1] == f"/{depth - 1}"


def test_pages_nested_less_than_the_split_depth_carry_no_note() -> None:
    depth = SPLIT_DEPTH - 2
    html = "<body>" + "<div><a href=/a>a</a><a href=/b>b</a><a href=/c>c</a>" * depth
    assert parse_page(html + "</div>" * depth, "http://s/").notes == []


def test_a_parse_stopped_by_nesting_keeps_what_came_before_and_says_so() -> None:
    page = parse_page(_nested(2100), "http://s/deeper")
    assert page.text == "before"
    assert page.notes == ["too-deep"]


_CONTROLS = (
    "<p>a\x01b &#1; c&#x7f;d\x0b e&#12;f&#xc;g&#xFFFE;h&#65535;i&#x1F600;j&#10;k\x0cl"
    "&#x000B;m&#31n\ufffeo</p>"
)


@pytest.mark.parametrize("walk", ["compiled", "python"])
def test_control_characters_are_dropped_by_either_walk(
    walk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scrapy_templates import page as page_module

    if walk == "python":
        monkeypatch.setattr(page_module, "_walk", None)
    elif page_module._walk is None:
        pytest.skip("the compiled walk is not built")
    for body in (_CONTROLS, _CONTROLS.encode("utf-8")):
        page = parse_page(body, "http://s/controls")
        assert page.text == "ab c\x7fd e f ghi😀j k lmno"
