"""Behaviour every store must have; run against the memory store and a real Redis."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates.detect import global_templates


async def test_counts_distinct_pages(store: TemplateStore) -> None:
    a = await store.observe("s", "p1", [1, 2], content_key="c1")
    assert (a.pages, a.counts, a.new) == (1, [1, 1], True)
    b = await store.observe("s", "p2", [2, 3], content_key="c2")
    assert (b.pages, b.counts) == (2, [2, 1])


async def test_refetch_and_duplicate_content_do_not_count_twice(store: TemplateStore) -> None:
    await store.observe("s", "p1", [1, 2], content_key="c1")
    again = await store.observe("s", "p1", [1, 2], content_key="c1-changed")
    assert (again.new, again.pages, again.counts) == (False, 1, [1, 1])
    mirror = await store.observe("s", "p-mirror", [1, 2], content_key="c1")
    assert (mirror.new, mirror.pages, mirror.counts) == (False, 1, [1, 1])


async def test_sites_are_counted_apart(store: TemplateStore) -> None:
    await store.observe("a.example", "p1", [7], content_key="x")
    other = await store.observe("b.example", "p1", [7], content_key="x")
    assert (other.pages, other.counts, other.new) == (1, [1], True)


async def test_lookup_reads_without_recording(store: TemplateStore) -> None:
    await store.observe("s", "p1", [1], content_key="c1")
    seen = await store.lookup("s", "p9", [1, 5])
    assert (seen.pages, seen.counts) == (1, [1, 0])
    again = await store.lookup("s", "p9", [1, 5])
    assert again.pages == 1


async def test_components_follow_links_in_either_direction(store: TemplateStore) -> None:
    # p1 -> p2 (p2 not yet fetched), p3 isolated, then p2 arrives: {p1, p2} connected.
    o1 = await store.observe("s", "p1", [9], ["p2"], content_key="1", components=True)
    o3 = await store.observe("s", "p3", [9], [], content_key="3", components=True)
    o2 = await store.observe("s", "p2", [9], [], content_key="2", components=True)
    assert o1.components == [1] and o3.components == [1] and o2.components == [2]
    later = await store.lookup("s", "p1", [9], components=True)
    assert later.components == [2]
    assert (await store.lookup("s", "p3", [9], components=True)).components == [1]


def _random_site(seed: int, n_pages: int) -> tuple[dict[str, list[int]], dict[str, list[str]]]:
    rng = random.Random(seed)
    pages = {
        f"p{i}": sorted(set(rng.sample(range(1, 8), rng.randint(1, 4)))) for i in range(n_pages)
    }
    links = {p: [f"p{rng.randrange(n_pages)}" for _ in range(rng.randint(0, 2))] for p in pages}
    return pages, links


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000), n_pages=st.integers(2, 25))
async def test_incremental_components_equal_batch_global_algorithm(
    store: TemplateStore, seed: int, n_pages: int
) -> None:
    site = f"site-{seed}-{n_pages}"
    pages, links = _random_site(seed, n_pages)
    for pid, fps in pages.items():
        await store.observe(site, pid, fps, links[pid], content_key=pid, components=True)
    batch = global_templates(pages, links, min_pages=1)
    for pid, fps in pages.items():
        obs = await store.lookup(site, pid, fps, components=True)
        for fp, size in zip(fps, obs.components, strict=True):
            expected = next(len(c) for c in batch[fp] if pid in c)
            assert size == expected, (pid, fp)


async def test_owner_bound_joins_the_largest_component() -> None:
    store = MemoryStore(max_owners=3)
    for i in range(3):
        await store.observe(
            "s", f"p{i}", [5], [f"p{i - 1}"] if i else [], content_key=str(i), components=True
        )
    late = await store.observe("s", "lonely", [5], [], content_key="l", components=True)
    assert late.components == [4]


async def test_url_samples_keep_the_first_then_a_uniform_reservoir(store: TemplateStore) -> None:
    offered = await store.add_url_samples("s", ["a", "b"], 3, [0.5, 0.5])
    assert offered == 2 and await store.url_samples("s") == ["a", "b"]
    # sample 3 fills the last slot; sample 4 (draw 0.1 -> slot 0) replaces "a";
    # sample 5 (draw 0.9 -> slot 4) is not kept
    offered = await store.add_url_samples("s", ["c", "d", "e"], 3, [0.0, 0.1, 0.9])
    assert offered == 5
    assert await store.url_samples("s") == ["d", "b", "c"]
    assert await store.url_samples("other") == []
    assert await store.add_url_samples("s", [], 3, []) == 5
    # a reader asks for no more than its cap (a longer list was not written by a crawl)
    assert await store.url_samples("s", 2) == ["d", "b"]


async def test_prune_deletes_only_counters_at_one(store: TemplateStore) -> None:
    await store.observe("s", "p1", [1, 2, 3], content_key="c1")
    await store.observe("s", "p2", [1, 4], content_key="c2")
    assert await store.prune("s") == 3
    pages, counts = await store.counts("s")
    assert (pages, counts) == (2, {1: 2})
    # a pruned fingerprint seen again starts over; the page count is untouched
    later = await store.observe("s", "p3", [1, 2], content_key="c3")
    assert (later.pages, later.counts) == (3, [3, 1])


async def test_publish_keeps_the_highest_version(store: TemplateStore) -> None:
    assert await store.published("s", "rules") is None
    before = await store.epoch()
    assert await store.publish("s", "rules", 2, '{"v": 2}')
    assert not await store.publish("s", "rules", 1, '{"v": 1}')
    assert not await store.publish("s", "rules", 2, '{"v": "again"}')
    assert await store.published("s", "rules") == (2, '{"v": 2}')
    assert await store.published("s", "model") is None
    assert await store.epoch() == before + 1
    assert "s" in await store.sites()


async def test_lock_excludes_others_until_released_or_expired(store: TemplateStore) -> None:
    assert await store.acquire("learn:s", "a", 30)
    assert not await store.acquire("learn:s", "b", 30)
    assert await store.acquire("learn:s", "a", 30)  # the holder extends it
    await store.release("learn:s", "b")  # not b's to release
    assert not await store.acquire("learn:s", "b", 30)
    await store.release("learn:s", "a")
    assert await store.acquire("learn:s", "b", 0.05)
    await asyncio.sleep(0.1)
    assert await store.acquire("learn:s", "a", 30)


async def test_memory_store_persists_to_a_file(tmp_path: Path) -> None:
    path = tmp_path / "jobdir" / "templates.json"
    first = MemoryStore(path=path)
    await first.open()
    await first.observe("s", "p1", [1, 2], content_key="c1")
    await first.observe("s", "p2", [1], content_key="c2")
    await first.add_url_samples("s", ['{"url": "http://s/a"}'], 10, [0.5])
    await first.publish("s", "rules", 3, "{}")
    await first.close()
    second = MemoryStore(path=path)
    await second.open()
    assert await second.counts("s") == (2, {1: 2, 2: 1})
    assert (await second.observe("s", "p1", [1], content_key="c1")).new is False
    assert await second.url_samples("s") == ['{"url": "http://s/a"}']
    assert await second.published("s", "rules") == (3, "{}")
    assert await second.epoch() == 1


async def test_memory_store_refuses_a_foreign_file(tmp_path: Path) -> None:
    path = tmp_path / "templates.json"
    path.write_text('{"format": "something else"}')
    with pytest.raises(StoreError, match="something else"):
        await MemoryStore(path=path).open()


async def test_prune_below_a_bound(store: TemplateStore) -> None:
    for i in range(4):
        await store.observe("s", f"p{i}", [1, 2] if i < 2 else [1], content_key=f"c{i}")
    assert await store.prune("s", below=3) == 1
    assert await store.counts("s") == (4, {1: 4})
