from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.store.base import Observation
from scrapy_templates.store.copy import CountCopy, SiteCounts
from scrapy_templates.store.memory import MemoryStore

_PAGES = st.lists(
    st.tuples(
        st.sampled_from(["p1", "p2", "p3", "p4"]),
        st.lists(st.integers(1, 6), max_size=5, unique=True),
        st.sampled_from(["", "c1", "c2"]),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(pages=_PAGES, below=st.integers(1, 4))
def test_a_copy_counts_as_the_memory_store_does(
    pages: list[tuple[str, list[int], str]], below: int
) -> None:
    async def both() -> None:
        store = MemoryStore()
        await store.open()
        copy = SiteCounts()
        for n, (page, fingerprints, content) in enumerate(pages):
            shared = await store.observe("s", page, fingerprints, content_key=content)
            assert copy.observe(page, fingerprints, content) == shared
            if n == len(pages) // 2:
                assert copy.prune(below) == await store.prune("s", below)
        assert (copy.counted, copy.counts) == await store.counts("s")

    asyncio.run(both())


def test_the_stores_answer_raises_a_count_and_never_lowers_one() -> None:
    copy = SiteCounts()
    copy.observe("p1", [1, 2])
    copy.merge([1, 2], Observation(7, [5, 0]))
    assert copy.counted == 7 and copy.counts == {1: 5, 2: 1}
    again = copy.observe("p2", [1, 2])
    assert again == Observation(8, [6, 2], [], True)


def test_each_site_has_its_own_counts() -> None:
    copy = CountCopy()
    copy.site("a").observe("p1", [1])
    assert copy.site("b").observe("p1", [1]) == Observation(1, [1], [], True)
    assert copy.site("a") is copy.site("a") and len(copy.sites) == 2
