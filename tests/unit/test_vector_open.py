"""A daemon loads the vector cache in the background: BM25 serves until it is loaded, and
no sync starts before the load ends."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.unit.test_vectors import CountingEmbedder, vault
from wikimem_watch.vectors import service as service_module
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.hash_embedder import HashEmbedder
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


def test_a_query_does_not_wait_for_the_cache_rewriting_its_files(tmp_path: Path) -> None:
    """A merge or a base rewrite holds the cache's lock for up to seconds while it writes; a
    query (holding the engine's lock meanwhile) ranks with BM25 alone instead of waiting."""
    service = VectorService(CountingEmbedder(), tmp_path)
    service.open()
    entries = vault(4)
    service.sync.sync(entries)
    assert service.cosines("cat number 1", list(entries), 3)  # vectors, when free
    held, release = threading.Event(), threading.Event()

    def rewrite() -> None:
        with service.cache._lock:  # what maintain() holds while it writes its files
            held.set()
            release.wait(10)

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        assert held.wait(10)
        assert service.cosines("cat number 2", list(entries), 3) is None
        assert writer.is_alive()  # answered while the rewrite still held the lock
    finally:
        release.set()
        writer.join(10)
    assert service.status()["busy_skips"] == 1
    assert service.cosines("cat number 2", list(entries), 3)


class NamedOnly(CountingEmbedder):
    """An endpoint's model known by name only: its dimension is not in the fingerprint, so
    a model changed behind the name shows only in the vectors it answers."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self._dim = dim

    @property
    def fingerprint(self) -> dict[str, object]:
        return {"kind": "http", "model": "behind-a-name"}


def _reopened_at_32_dims(cache_dir: Path) -> tuple[dict[str, str], NamedOnly, VectorService]:
    """A cache filled at 16 dims, then opened by a model of the same name that answers 32:
    (the entries embedded, the new embedder, its service)."""
    first = VectorService(NamedOnly(16), cache_dir)
    first.open()
    entries = vault(4)
    first.sync.sync(entries)
    changed = NamedOnly(32)
    service = VectorService(changed, cache_dir)
    service.open()
    return entries, changed, service


def test_a_model_answering_another_dimension_is_a_mismatch_not_an_error(tmp_path: Path) -> None:
    entries, changed, service = _reopened_at_32_dims(tmp_path)
    assert service.cosines("cat number 1", list(entries), 3) is None  # BM25, not an error
    assert service.status()["state"] == "mismatch"
    calls = len(changed.calls)
    service.sync.sync({**entries, **vault(2, salt="new")})
    assert len(changed.calls) == calls  # nothing embedded until `embed --rebuild`


def test_a_dimension_change_found_by_a_flush_stays_a_mismatch_and_embeds_nothing_more(
    tmp_path: Path,
) -> None:
    """A segment flushed mid-sync found the new dimension: the rows still buffered were stored
    after the reset, the state read "error", and the next sync re-embedded the whole vault."""
    entries, changed, service = _reopened_at_32_dims(tmp_path)
    service.sync.batch_size = service.sync.flush_rows = 1  # a flush after every text
    more = {**entries, **vault(3, salt="new")}
    with pytest.raises(EmbedError):
        service.sync.sync(more)
    status = service.status()
    assert status["state"] == "mismatch" and status["hashes"] == 0
    assert service.cosines("cat number 1", list(entries), 3) is None
    calls = len(changed.calls)
    service.sync.sync(more)
    assert len(changed.calls) == calls, "nothing embedded until `embed --rebuild`"
    status = service.status()
    assert status["state"] == "mismatch" and "dim [32]" in str(status["last_error"])


class FailingQueries(CountingEmbedder):
    """Documents embed; every query fails, as an endpoint that died after the corpus."""

    def __init__(self) -> None:
        super().__init__()
        self.query_calls = 0

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.query_calls += 1
        raise EmbedError("endpoint timed out (test)")


def test_a_failed_query_embedding_is_not_retried_by_every_query(tmp_path: Path) -> None:
    emb = FailingQueries()
    service = VectorService(emb, tmp_path)
    service.open()
    entries = vault(4)
    service.sync.sync(entries)
    for text in ("cat number 1", "cat number 2", "cat number 3"):
        service.warm(text)  # what a query does before it ranks
        assert service.cosines(text, list(entries), 5) is None  # BM25 alone
    assert emb.query_calls == 1, "a hanging endpoint would hold every query for its timeout"
    assert "query embedding failed" in str(service.status()["last_error"])
    service.close()


def test_a_query_embedding_error_leaves_status_once_a_query_ranks_with_its_vector_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error stayed in ``status`` while later queries were answered from remembered
    query vectors; a query that lacks its vector because of the failure still shows it."""
    emb = FailingQueries()
    service = VectorService(emb, tmp_path)
    service.open()
    entries = vault(4)
    service.sync.sync(entries)
    remembered = HashEmbedder(dim=64, max_chars=200).embed_query("cat number 1")
    service._queries["cat number 1"] = remembered  # asked before the endpoint went down
    service.warm("cat number 2")
    assert service.cosines("cat number 2", list(entries), 5) is None
    assert "query embedding failed" in str(service.status()["last_error"])
    service.warm("cat number 1")
    assert service.cosines("cat number 1", list(entries), 5)  # ranked with its vector
    assert service.status()["last_error"] is None
    assert service.cosines("cat number 3", list(entries), 5) is None  # within the retry wait
    assert "query embedding failed" in str(service.status()["last_error"])
    monkeypatch.setattr(FailingQueries, "embed_query", HashEmbedder.embed_query)
    monkeypatch.setattr(service_module, "QUERY_RETRY_S", 0.0)  # the endpoint is back
    assert service.cosines("cat number 3", list(entries), 5)
    assert service.status()["last_error"] is None
    service.close()


def test_a_query_embedding_error_leaves_status_when_the_cache_turns_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query error, then a model that changed its dimension behind its name (found by the
    sync): queries stop before the query-vector step, so none took the error out, and it stood
    in ``last_error`` in place of the mismatch's reason until a query after `embed --rebuild`
    ranked with a vector. It describes the cache it was met against, and leaves with it."""
    emb = FailingQueries()
    service = VectorService(emb, tmp_path)
    service.open()
    entries = vault(4)
    service.sync.sync(entries)
    assert service.cosines("cat number 2", list(entries), 5) is None
    assert "query embedding failed" in str(service.status()["last_error"])
    monkeypatch.setattr(emb, "_dim", 32)  # the model behind the endpoint's name changed
    more = {**entries, **vault(1, salt=" new")}
    with pytest.raises(EmbedError):
        service.sync.sync(more)
    status = service.status()
    assert status["state"] == "mismatch"
    assert "query embedding failed" not in str(status["last_error"])
    assert "dim" in str(status["last_error"])  # the mismatch's own reason
    monkeypatch.setattr(emb, "_dim", 64)  # the old model is back, and `embed --rebuild`
    service.sync.sync(more, rebuild=True)
    status = service.status()
    assert status["state"] == "ready" and status["last_error"] is None
    assert service.cosines("cat number 2", list(more), 5) is None  # the endpoint: still down
    assert "query embedding failed" in str(service.status()["last_error"])
    service.close()
