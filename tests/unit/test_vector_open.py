"""A daemon loads the vector cache in the background: BM25 serves until it is loaded, and
no sync starts before the load ends."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from tests.unit.test_vectors import CountingEmbedder, vault
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.service import VectorService


def test_queries_rank_without_vectors_until_a_background_load_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emb = CountingEmbedder()
    first = VectorService(emb, tmp_path)
    first.open()
    entries = vault(20)
    first.sync.sync(entries)
    calls = len(emb.calls)

    gate = threading.Event()
    real_load = VectorCache._load

    def slow_load(cache: VectorCache) -> None:
        assert gate.wait(5)
        real_load(cache)

    monkeypatch.setattr(VectorCache, "_load", slow_load)
    service = VectorService(emb, tmp_path)
    service.open(background=True)  # returns at once
    assert service.cosines("cat number 3", list(entries)[:3], 5) is None  # BM25 alone
    assert service.status()["state"] == "loading"
    service.update(entries)  # a sync queued now waits for the load
    assert not service.sync.wait_idle(0.2) and len(emb.calls) == calls
    gate.set()
    assert service.sync.wait_idle(5)
    assert len(emb.calls) == calls, "the loaded cache held every vector: nothing embedded"
    found = service.cosines("cat number 3", list(entries)[:3], 5)
    assert found is not None and set(list(entries)[:3]) <= set(found)
    assert service.status()["state"] == "ready"
    service.close()


def test_a_cache_of_another_model_is_one_warning_that_names_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = VectorService(CountingEmbedder(), tmp_path)
    first.open()
    first.sync.sync(vault(4))
    other = CountingEmbedder()
    other._dim = 32  # another dimension: another model's cache
    with caplog.at_level(logging.WARNING, logger="wikimem_watch.vectors"):
        VectorService(other, tmp_path).open()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "wikimem-watch embed --rebuild" in warnings[0]
