"""What the crawl's thread keeps of the sites' evidence a worker holds, and sends it."""

from __future__ import annotations

from scrapy_templates.crawl.evidence_view import EvidenceView
from scrapy_templates.marker import build_evidence
from scrapy_templates.store.base import Observation
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.worker_marking import SiteSummary
from tests.test_marker import config


def _view(merges: bool = True, **settings: object) -> EvidenceView:
    return EvidenceView(build_evidence(config(**settings)), merges=merges)


def test_the_stores_answers_go_with_the_sites_next_request_once() -> None:
    view = _view()
    view.answered("s", [1, 2], Observation(3, [3, 1]))
    news = view.news("s")
    assert news is not None and news.merges == [([1, 2], Observation(3, [3, 1]))]
    assert view.news("s") is None


def test_a_store_of_this_process_alone_sends_no_answers() -> None:
    view = _view(merges=False)
    view.answered("s", [1], Observation(1, [1]))
    assert view.news("s") is None


def test_pages_marked_here_leave_a_workers_copy_behind_until_it_is_seeded() -> None:
    view = _view(merges=False)
    view.counted_here("s")
    assert not view.behind("s"), "no worker decides it yet"
    view.marked("s", SiteSummary("body", 4, 1))
    view.counted_here("s")
    assert view.behind("s")
    view.unknown("s", 9, {1: 9})
    assert not view.behind("s")
    news = view.news("s")
    assert news is not None and news.seed == (9, {1: 9}) and news.merges == []


def test_a_model_goes_once_per_version_and_again_to_a_worker_that_lost_it() -> None:
    view = _view()
    view.evidence.models["s"] = TemplateModel("s", 2, 10, None, 0)
    first = view.news("s")
    assert first is not None and first.model is not None and first.model.version == 2
    assert view.news("s") is None
    view.unknown("s", 10, {5: 4})
    again = view.news("s")
    assert again is not None and again.model is not None and again.seed == (10, {5: 4})


def test_news_that_did_not_reach_the_worker_goes_again_whole() -> None:
    view = _view()
    view.marked("s", SiteSummary("body", 4, 1))
    view.unknown("s", 10, {1: 5})
    view.answered("s", [1], Observation(10, [5]))
    view.pruned("s", 3)
    view.settle("s")
    news = view.news("s")
    assert news is not None
    view.answered("s", [2], Observation(11, [1]))
    view.unsent("s", news)
    again = view.news("s")
    assert again is not None
    assert again.seed == (10, {1: 5}) and again.prune_below == 3 and again.recompute
    assert [fps for fps, _ in again.merges] == [[1], [2]], "the older answer first"


def test_settling_and_pruning_reach_a_site_a_worker_decides() -> None:
    view = _view()
    view.settle("here-only")
    view.pruned("here-only", 3)
    assert view.news("here-only") is None, "no worker decides it: nothing to send"
    view.marked("s", SiteSummary("body/main", 40, 3))
    view.settle("s")
    view.pruned("s", 2)
    view.pruned("s", 5)
    news = view.news("s")
    assert news is not None and news.recompute and news.prune_below == 5


def test_the_relearner_reads_the_region_and_clusters_from_wherever_more_pages_taught_them() -> None:
    view = _view()
    view.marked("s", SiteSummary("body/main", 40, 3))
    assert view.region("s") == ("body/main", 40)
    assert view.clusters("s") == 3 and view.all_clusters() == 3
    assert view.region("unseen") == (None, 0)


def test_what_it_keeps_is_bounded_by_the_sites_the_evidence_keeps() -> None:
    view = _view(TEMPLATES_LAYOUT_MAX_SITES=3)
    for n in range(10):
        site = f"s{n}.test"
        view.marked(site, SiteSummary(None, 1, 0))
        view.answered(site, [n], Observation(1, [1]))
        view.release(site)
    assert len(view._sites) == 3
    assert view.released("s0.test"), "a released cold start is not evicted"


def test_a_seed_waiting_for_its_release_is_not_evicted() -> None:
    view = _view(TEMPLATES_LAYOUT_MAX_SITES=2)
    view.unknown("seeded.test", 5, {1: 5})
    for n in range(5):
        view.answered(f"s{n}.test", [n], Observation(1, [1]))
    news = view.news("seeded.test")
    assert news is not None and news.seed == (5, {1: 5})
