"""The compiled partition walk (``scrapy_templates/_walk.pyx``) gives what the Python walk gives."""

from __future__ import annotations

import lxml.etree
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates import page
from scrapy_templates.compiled import compiled

_walk = compiled("_walk")


def _root(html: str) -> lxml.etree._Element:
    data = page._decode(html, 5_000_000, [])
    doc = lxml.etree.fromstring(data, parser=page._PARSER)
    lxml.etree.strip_elements(doc, *page._INVISIBLE, with_tail=False)
    body = doc.find("body")
    return body if body is not None else doc


def _compiled_partition(
    root: lxml.etree._Element, k: int
) -> tuple[list[page._Found], list[lxml.etree._Element]] | None:
    assert _walk is not None
    return _walk.partition(root, k, page.SPLIT_DEPTH)  # type: ignore[no-any-return]


def _both(html: str, k: int = 3) -> tuple[list[object], list[object]]:
    """(found, element paths, texts) of the Python walk and of the compiled walk, each on
    its own parse of ``html`` (the Python walk marks block ends in its tree)."""
    assert _walk is not None
    out = []
    for walk in (page.python_partition, _compiled_partition):
        root = _root(html)
        found, elements = walk(root, k)
        tree = root.getroottree()
        paths = [tree.getpath(el) for el in elements]
        out.append([found, paths, [page._visible_text(el) for el in elements]])
    python, compiled_ = out
    # The Python walk's visible text comes from lxml's serializer over its marked tree.
    python[2] = [
        page._clean(lxml.etree.tostring(el, method="text", encoding="unicode", with_tail=False))
        for el in page.python_partition(_root(html), k)[1]
    ]
    return python, compiled_


EDGE_CASES = {
    "links nested beyond the split depth": "<body>"
    + "".join(
        f"<div>{i}<a href=/{i}a>a</a><a href=/{i}b>b</a><a href=/{i}c>c</a>"
        for i in range(page.SPLIT_DEPTH + 10)
    )
    + "</div>" * (page.SPLIT_DEPTH + 10)
    + "</body>",
    "white space of every kind": """<body><p> a\u2003b\u3000c\u0085d&#x2028;e\u00a0\u00a0f
        g\u200bh\u1680i\u202fj\t\r\nk ß 日 𝔘 </p><div>\u3000</div><p>l<br>m</p></body>""",
    "nested split": """<body><div id="wrap">lead text
        <div class="menu"><a href="/1">one</a><a href="/2">two</a><a href="/3">three</a></div>
        middle <b>bold</b> tail
        <div class="main"><p>Body <i>text</i> here.</p><ul><li><a href="/r1">r1</a></li>
        <li><a href="/r2">r2</a></li><li><a href="/r3">r3 <span>x</span>y</a></li></ul></div>
        end</div></body>""",
    "script between texts": """<body><div>a<script>var x;</script>b
        <a href="/1">1</a><a href="/2">2</a><a href="/3">3</a></div><p>c</p></body>""",
    "anchors without href or value": """<body><nav><a>no href</a><a href>empty</a>
        <a href="">blank</a><a href="/x?a=1&amp;b=2">amp</a><a name="n" href="/y">y</a></nav>
        <p>text</p></body>""",
    "ids and classes": """<body><div id="post-42" class="entry">
        <div id="" class="  nav  main"><a href="/1">1</a><a href="/2">2</a><a href="/3">3</a></div>
        <div class="c9 x"><p>p</p></div><div id="side" class="s">s</div>
        <div id="sec٣" class="part²">arabic-indic digit in the id, superscript in the class</div>
        </div></body>""",
    "blocks and breaks": """<body><div><p>one</p><p>two</p>three<br>four<span>five</span>
        <li>six</li><td>seven</td></div></body>""",
    "unicode": """<body><p>İstanbul ǅemal 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 日本語のテキスト ٣٤ ½ x²</p>
        <div>&nbsp;spaced&#160;out&ensp;text</div></body>""",
    "no body": "<div><a href='/1'>1</a><a href='/2'>2</a><a href='/3'>3</a></div>",
    "broken markup": """<body><div><p>unclosed <b>bold <i>both</div></p>
        <table><tr><td><a href=/1>1</a><td><a href=/2>2</a><td><a href=/3>3</a></table>
        <<<>>> &bogus; <a href="/4"<p>x</body>""",
    "empty elements": "<body><div></div><p> </p><span>\t\n</span><img src=x></body>",
    "entities and cdata": """<body><p>a &lt;b&gt; &amp;amp; &#x1F600; &unknown;</p>
        <svg><![CDATA[cdata text]]></svg><p>after</p></body>""",
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
@pytest.mark.parametrize("k", [1, 3])
def test_edge_cases_give_the_same_pagelets(name: str, k: int) -> None:
    python, compiled_ = _both(EDGE_CASES[name], k)
    assert compiled_ == python


@pytest.mark.parametrize("k", [1, 3])
def test_comments_left_in_the_tree_split_loose_text_in_both_walks(k: int) -> None:
    # The page parser drops comments; a tree from another parser may hold them.
    assert _walk is not None
    html = (
        "<body><div>one<!--c-->two<a href=/1>1</a><a href=/2>2</a><a href=/3>3</a>"
        "<p>x</p>three<!--d-->four</div></body>"
    )
    parser = lxml.etree.HTMLParser(remove_comments=False)
    found = [
        walk(lxml.etree.fromstring(html, parser), k)[0]
        for walk in (page.python_partition, _compiled_partition)
    ]
    assert found[0] == found[1]
    if k == 1:
        assert [f[1] for f in found[1] if f[0].endswith("text()")] == ["one two", "three four"]


def test_demo_pages_give_the_same_pagelets() -> None:
    from demo.site import render

    _status, home = render("/")
    linked = [href for href in page.parse_page(home, "http://demo/").hrefs() if href[:1] == "/"]
    paths = ["/", "/search?q=river", "/search?q=zzzz", *linked[::7]]
    assert any(path.startswith("/articles/") for path in paths)
    for path in paths:
        status, html = render(path)
        assert status == 200, path
        python, compiled_ = _both(html)
        assert python[0], path
        assert compiled_ == python, path


_TAGS = ["div", "p", "span", "a", "li", "ul", "b", "br", "td", "section", "script"]
_TEXT = st.text(
    alphabet=st.sampled_from(list("ab Z9 \n\t\xa0İß𝔘日-&")), min_size=0, max_size=8
).map(lambda t: t.replace("&", "&amp;"))


@st.composite
def _html(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(_TAGS))
    attrs = ""
    if tag == "a" and draw(st.booleans()):
        attrs += f' href="/{draw(st.integers(0, 9))}"'
    if draw(st.integers(0, 4)) == 0:
        attrs += f' id="{draw(st.sampled_from(["main", "x1", "", "nav"]))}"'
    if draw(st.integers(0, 4)) == 0:
        attrs += f' class="{draw(st.sampled_from(["menu item", "c2", " ", "side"]))}"'
    children = ""
    if depth < 4:
        for _ in range(draw(st.integers(0, 4))):
            children += draw(_TEXT)
            children += draw(_html(depth + 1)) if draw(st.booleans()) else "<!--c-->"
    children += draw(_TEXT)
    return f"<{tag}{attrs}>{children}</{tag}>"


@settings(max_examples=300, deadline=None)
@given(body=st.lists(_html(), min_size=1, max_size=4), k=st.integers(1, 4))
def test_random_documents_give_the_same_pagelets(body: list[str], k: int) -> None:
    python, compiled_ = _both("<html><body>" + "".join(body) + "</body></html>", k)
    assert compiled_ == python


@settings(max_examples=200, deadline=None)
@given(
    body=st.lists(_html(), min_size=1, max_size=4),
    names=st.sets(st.sampled_from(_TAGS), min_size=1),
)
def test_elements_named_are_what_iter_gives(body: list[str], names: set[str]) -> None:
    assert _walk is not None
    doc = lxml.etree.fromstring("<html><body>" + "".join(body) + "</body></html>", page._PARSER)
    for root in (doc, *doc.iter("div", "ul")):  # the whole tree, and subtrees of it
        assert _walk.elements_named(root, sorted(names)) == list(root.iter(*names))


def test_elements_named_leave_out_namespaced_elements_and_reach_any_depth() -> None:
    assert _walk is not None
    root = lxml.etree.Element("body")
    el = root
    for _ in range(3000):
        el = lxml.etree.SubElement(el, "div")
    lxml.etree.SubElement(el, "{urn:x}h1")
    plain = lxml.etree.SubElement(el, "h1")
    assert _walk.elements_named(root, ["h1"]) == list(root.iter("h1")) == [plain]


@settings(max_examples=200, deadline=None)
@given(body=st.lists(_html(), min_size=1, max_size=4), limit=st.integers(0, 6))
def test_texts_named_are_the_joined_itertext_of_the_elements(body: list[str], limit: int) -> None:
    assert _walk is not None
    doc = lxml.etree.fromstring("<html><body>" + "".join(body) + "</body></html>", page._PARSER)
    for root in (doc, *doc.iter("div", "ul")):
        texts = (page._clean(" ".join(el.itertext())) for el in root.iter(*page._TITLE_BLOCKS))
        expected = [text for text in texts if text][:limit]
        assert _walk.texts_named(root, page._TITLE_BLOCKS, limit) == expected


def test_blocks_of_a_tree_deeper_than_the_compiled_walk_are_read_in_python() -> None:
    assert _walk is not None
    root = lxml.etree.Element("body")
    el = root
    for i in range(3000):  # <b>w0 <b>w1 <b>w2 …</b></b></b>
        el = lxml.etree.SubElement(el, "b")
        el.text = f"w{i}"
    with pytest.raises(RecursionError):
        _walk.texts_named(root, ["b"], 2)
    pagelets, elements, simhash = page.partition(root, 3)  # no links: one pagelet, the body
    deep = page.Page("http://s/", pagelets, "", simhash, "", [], elements, None, "")
    words = [f"w{i}" for i in range(3000)]
    assert deep.blocks([0], limit=2) == [" ".join(words), " ".join(words[1:])]


def test_parse_page_is_the_same_with_either_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    html = (
        '<html><head><title>The   page</title><link rel="next" href="/n">'
        '<link rel="Canonical" href="/c"></head>'
        + EDGE_CASES["nested split"].replace("lead text", "<h1>First <i>one</i></h1><h1>2</h1>")
        + "</html>"
    )
    fast = page.parse_page(html, "http://s/p")
    assert (fast.title, fast.h1, fast.canonical) == ("The page", "First one", "http://s/c")
    monkeypatch.setattr(page, "_walk", None)
    slow = page.parse_page(html, "http://s/p")
    assert (slow.title, slow.h1, slow.canonical) == (fast.title, fast.h1, fast.canonical)
    assert fast.pagelets == slow.pagelets
    assert (fast.simhash, fast.text_hash) == (slow.simhash, slow.text_hash)
    for i, pagelet in enumerate(fast.pagelets):
        for below in ("/p", "/ul/li", "/div"):
            assert fast.text_below(i, pagelet.path + below) == slow.text_below(
                i, pagelet.path + below
            )


def test_a_tree_deeper_than_the_compiled_walk_goes_to_the_python_walk() -> None:
    # lxml's HTML parser stops at 256 levels; a tree built by hand can be deeper than the C
    # stack should hold, and must still be partitioned (by the Python walk).
    assert _walk is not None

    def deep() -> lxml.etree._Element:
        root = lxml.etree.Element("body")
        el = root
        for i in range(3000):
            el = lxml.etree.SubElement(el, "div")
            link = lxml.etree.SubElement(el, "a", href=f"/{i}")
            link.text, link.tail = f"link {i}", " tail "
        return root

    assert _compiled_partition(deep(), 3) is None
    with pytest.raises(RecursionError):
        _walk.visible_text(deep())
    pagelets, elements, _ = page.partition(deep(), 3)
    found, _elements = page.python_partition(deep(), 3)
    assert [(p.path, p.text, p.hrefs) for p in pagelets] == [f[:3] for f in found]
    # the element SPLIT_DEPTH levels down is left whole: one pagelet of all the links below
    assert len(pagelets[-1].position) == page.SPLIT_DEPTH
    assert page._visible_text(elements[-1]) == pagelets[-1].text
    assert pagelets[-1].text.startswith(f"link {page.SPLIT_DEPTH - 1} tail link")
    assert pagelets[-1].text.endswith("link 2998 tail link 2999 tail")


_PIECE_TEXT = (
    "<div> </div> <p> <a_href='/x'> </a> <li> <br> <title> <h1> <script> </script> <body> "
    "<table><td> <!-- --> &amp; &#0; &#1; &#x1f; &#12; &#xFFFF; &#128; &bogus; \x00 \x01 "
    "\x0b \x0c \x7f \ufffe \ud7ff ü 𝐀 日 text 9"
)
_PIECES = st.sampled_from([*_PIECE_TEXT.replace("_", " ").split(" "), " ", "\n"])


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(
        st.lists(_PIECES, max_size=60).map("".join),
        st.text(max_size=200),
        st.binary(max_size=200),
    ),
    k=st.integers(1, 4),
)
def test_parse_page_agrees_on_any_input_with_either_walk(body: str | bytes, k: int) -> None:
    assert _walk is not None

    def parsed() -> object:
        try:
            found = page.parse_page(body, "http://s/p", k=k)
        except page.PageError as exc:
            return exc.reason
        return (found.pagelets, found.title, found.h1, found.notes, found.simhash)

    compiled_ = parsed()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page, "_walk", None)
        assert parsed() == compiled_
