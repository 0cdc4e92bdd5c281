"""A sync after each applied batch looks at what the batch changed, not at the whole vault
(ADR-0020): the keys set since the last sync, and the count of keys dropped."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import pytest

from tests.conftest import write
from tests.unit.test_vectors import CountingEmbedder, open_cache, vault
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.policy import MergePolicy
from wikimem_watch.vectors.sync import VectorSync


class Listed(Mapping[str, str]):
    """A vault's entries that count how often they are listed in full."""

    def __init__(self, items: dict[str, str]) -> None:
        self.items_ = items
        self.listed = 0

    def __getitem__(self, key: str) -> str:
        return self.items_[key]

    def __iter__(self) -> Iterator[str]:
        self.listed += 1
        return iter(self.items_)

    def __len__(self) -> int:
        return len(self.items_)


def test_after_a_complete_sync_only_the_fresh_keys_are_looked_at(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    sync = VectorSync(emb, open_cache(tmp_path, emb))
    first = Listed(vault(200))
    assert sync.sync(first, fresh=set()) == 200 and first.listed >= 1  # the first looks at all
    added = vault(2, salt="new")
    later = Listed({**vault(200), **added})
    assert sync.sync(later, fresh=set(added), removed=1) == 2
    assert later.listed == 0 and sorted(emb.calls[-1]) == sorted(added.values())
    assert sync.cache.missing(later) == []


def test_after_an_incomplete_sync_the_next_looks_at_every_key(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    sync = VectorSync(emb, open_cache(tmp_path, emb), batch_size=4)
    sync.sync(vault(200))
    added = vault(8, salt="new")
    entries = {**vault(200), **added}
    emb.fail_after = len(emb.calls) + 1  # the second batch of the eight fails
    with pytest.raises(EmbedError):
        sync.sync(entries, fresh=set(added))
    emb.fail_after = None
    again = Listed(entries)
    assert sync.sync(again, fresh=set()) == 4  # nothing fresh, but four were left
    assert again.listed >= 1 and sync.cache.missing(entries) == []


def test_dead_rows_are_counted_once_enough_has_changed(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb, MergePolicy(max_dead_fraction=0.25))
    entries = vault(100)
    VectorSync(emb, cache).sync(entries)
    assert cache.stats()["disk_rows"] == 100 and cache.churn == 0
    live = list(entries)[:95]
    cache.churn += 5  # five removed: at most five dead rows, a fifth of the 25 allowed
    assert not cache.needs_live() and cache.needs_live(exact=True)
    assert cache.maintain(None) == 0 and cache.stats()["disk_rows"] == 100
    live = live[:70]
    cache.churn += 25
    assert cache.needs_live()
    assert cache.maintain(live) == 1  # counted: 30 dead, past the 25 allowed
    assert cache.stats()["disk_rows"] == 70 and cache.churn == 0


def test_queued_syncs_merge_their_changes(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    sync = VectorSync(emb, open_cache(tmp_path, emb))
    base = vault(200)  # changes below stay under a quarter of its dead-row allowance
    sync.sync(base)
    gate = threading.Event()
    emb.gate, emb.entered = gate, threading.Event()
    a, b, c = (vault(1, salt=s) for s in "abc")
    sync.start_background(Listed({**base, **a}), fresh=set(a))
    assert emb.entered.wait(5)  # the first job is embedding, held at the gate
    sync.start_background(Listed({**base, **a, **b}), fresh=set(b), removed=2)
    last = Listed({**base, **a, **b, **c})
    sync.start_background(last, fresh=set(c))  # replaces the queued one, keeping b
    gate.set()
    assert sync.wait_idle(5)
    assert last.listed == 0 and sync.cache.missing(last) == []
    assert sorted(emb.calls[-1]) == sorted([*b.values(), *c.values()])  # one job for both
    sync.stop()


class Recorder:
    """Stands in for the vector service: records what each update was given."""

    def __init__(self) -> None:
        self.updates: list[tuple[set[str] | None, int]] = []

    def update(
        self,
        entries: Mapping[str, str],
        *,
        fresh: Collection[str] | None = None,
        removed: int = 0,
        rebuild: bool = False,
    ) -> None:
        self.updates.append((None if fresh is None else set(fresh), removed))


def test_the_engine_hands_the_sync_the_keys_a_batch_set(tmp_path: Path) -> None:
    write(tmp_path, "diary/2026-11-01.md", "## 09:00\nkites\n\n## 10:00\nthe red one\n")
    write(tmp_path, "wiki/a.md", "## Kites\nred and blue\n")
    engine = Engine(load_config(tmp_path, {"embed": "hash"}))
    engine.scan()
    recorder = Recorder()
    engine.vectors = recorder  # type: ignore[assignment]
    engine.sync_vectors()
    assert recorder.updates[-1] == (None, 0)  # after a start: every key
    write(tmp_path, "wiki/a.md", "## Kites\nred, blue and green\n")
    engine.apply(["wiki/a.md"])
    engine.sync_vectors()
    fresh, removed = recorder.updates[-1]
    slot = next(iter(engine.files["wiki/a.md"].slots))
    assert fresh == {engine.vector_key(slot)} and removed == 1
    engine.sync_vectors()
    assert recorder.updates[-1] == (set(), 0)
    engine.sync_vectors(rebuild=True)
    assert recorder.updates[-1] == (None, 0)


def test_a_base_due_for_a_rewrite_by_size_asks_for_the_live_keys(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb, MergePolicy(max_segment_fraction=0.5))
    base = vault(40)
    VectorSync(emb, cache).sync(base)
    more = vault(25, salt="more")  # a segment of 25 rows: over half the base's 40
    cache.add({h: emb.embed_documents([t]) for h, t in more.items()})
    cache.churn = 0  # no change that could kill a row: only the size asks
    assert cache.needs_live()
    assert cache.maintain(None) == 0 and cache.stats()["segments"] == 1  # left for the keys
    assert cache.maintain([*base, *more]) == 1 and cache.stats()["segments"] == 0
