"""The replay benchmark on a tiny stored crawl: files on disk, an order file, gold scores."""

from __future__ import annotations

from pathlib import Path

from benchmarks.realsites import Site
from benchmarks.replay import Stored, config_of, replay_site, table
from tests.test_marker import page


def tiny_site(root: Path) -> Site:
    (root / "r").mkdir(parents=True)
    for i in range(10):
        (root / "r" / f"{i}.html").write_text(page(i))
    return Site("tiny", "none", root, "/r/0.html", lambda doc: doc.cssselect("main"), "main")


def test_a_stored_crawl_is_replayed_and_scored_against_the_gold(tmp_path: Path) -> None:
    site = tiny_site(tmp_path / "site")
    order = tmp_path / "tiny.txt"
    order.write_text("# tiny: none 1, 11 pages\n" + "".join(f"/r/{i}.html\n" for i in range(10)))
    order.write_text(order.read_text() + "/r/gone.html\n")
    stored = Stored.load(order)
    assert stored.header.startswith("# tiny") and len(stored.paths) == 11

    result = replay_site(site, stored, config_of([]))
    assert result["pages"] == 10 and result["missing"] == 1
    assert result["ours"] == (1.0, 1.0, 1.0)

    blind = replay_site(site, stored, config_of(["TEMPLATES_MIN_PAGES=100"]))
    precision, recall, _ = blind["ours"]
    assert precision < 0.9 and recall == 1.0  # nothing flagged: the menu and footer stay

    lines = table([{"site": "tiny", **result, "peers": {"x": (1.0, 0.5, 0.6)}}])
    assert "| tiny | 10 | 1.000 | 1.000 | 1.000 |" in lines[2] and "+0.400" in lines[2]
    assert result["marking_ms"] > 0 and result["parsing_ms"] > 0, "both parts were timed"
    assert lines[2].endswith(f"| {result['marking_ms']:.2f} |")
