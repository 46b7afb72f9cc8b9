"""Scoring of the single-page extractors the quality benchmarks compare against."""

from __future__ import annotations

import pytest

from benchmarks import quality
from benchmarks.quality import peer_score


def test_an_extractor_failing_on_a_page_scores_zero_there(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(html: bytes) -> str:
        raise ValueError("unparsable")

    monkeypatch.setitem(quality.PEERS, "broken", broken)
    assert peer_score("broken", b"<p>a b</p>", "a b") == (0.0, 0.0, 0.0)


def test_an_extractor_not_installed_stops_the_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing library would otherwise score zero on every page, and the replay caches it."""

    def missing(html: bytes) -> str:
        raise ModuleNotFoundError("No module named 'absent'")

    monkeypatch.setitem(quality.PEERS, "absent", missing)
    with pytest.raises(SystemExit, match="absent is not installed"):
        peer_score("absent", b"<p>a b</p>", "a b")


def test_an_extractor_is_scored_on_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(quality.PEERS, "echo", lambda html: "a b c")
    assert peer_score("echo", b"", "a b") == pytest.approx((2 / 3, 1.0, 0.8))
