"""The embeddings component as the engine and the daemon see it: embedder, cache, sync.

``VectorService`` puts the embedder, the cache (``cache.py``) and the background sync
(``sync.py``) behind one small face: ``update`` queues the live entries, ``cosines`` answers
the query path, ``status`` reports. ``open_vectors`` builds it from the configuration, with
the embedder ``make_embedder`` picks among the implementations (``http_embedder.py``,
``local_embedder.py``, ``hash_embedder.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.config import Config, cache_dir_problem
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.embedders import Embedder, EmbedError
from wikimem_watch.vectors.hash_embedder import HashEmbedder
from wikimem_watch.vectors.http_embedder import DEFAULT_API_KEY_ENV, HttpEmbedder
from wikimem_watch.vectors.local_embedder import LocalEmbedder
from wikimem_watch.vectors.peers import DEFAULT_GRACE_S, Peers
from wikimem_watch.vectors.sync import VectorSync
from wikimem_watch.vectors.texts import CONTEXT

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

__all__ = ["VectorService", "make_embedder", "open_vectors"]

log = logging.getLogger(__name__)

# How long a query waits for the vector cache before it ranks with BM25 alone: an add holds
# the cache's lock for milliseconds, a merge or a base rewrite for up to seconds.
QUERY_WAIT_S = 0.1
# After a query embedding fails, how long queries rank with BM25 alone without asking the
# embedder again: an endpoint that hangs must not hold every query for its timeout.
QUERY_RETRY_S = 30.0


class VectorService:
    """Embedder + cache + background sync behind one small face for the engine and query path.

    ``cosines`` matches ``query.VectorSignal``: None whenever vectors cannot be used (cache
    off or mismatched, query embedding failed), warned once per cause, so ranking silently
    degrades to BM25. Query vectors are memoised (an HTTP model costs per call).
    """

    def __init__(
        self,
        embedder: Embedder,
        cache_dir: Path,
        *,
        batch_size: int = 32,
        peer_grace_s: float = DEFAULT_GRACE_S,
    ) -> None:
        self.embedder = embedder
        # What goes into a vector is the model's business and the context's (ADR-0008).
        self.cache = VectorCache(cache_dir, {**embedder.fingerprint, "context": CONTEXT})
        peers = Peers(cache_dir, peer_grace_s) if peer_grace_s > 0 else None
        self.sync = VectorSync(embedder, self.cache, batch_size=batch_size, peers=peers)
        self._queries: dict[str, FloatMatrix] = {}
        self._queries_lock = threading.Lock()
        self._warned: set[str] = set()
        self._query_failed_at: float | None = None  # time.monotonic() of the last failure
        self._query_failure: str | None = None  # ... and what it said
        # What the latest query lacked its vector for, if it did: ``status`` shows it while
        # the cache it was met against is the one in use (``VectorCache.resets``).
        self.query_error: str | None = None
        self._query_error_resets = 0
        self.busy_skips = 0  # queries answered without vectors: the cache was busy writing

    def open(self, *, background: bool = False) -> None:
        """Load the cache (tolerant; never raises for torn files). ``background``: on a
        thread of its own, before any sync (which waits for it); until it is loaded queries
        rank with BM25 alone, as when no vector is usable (a daemon at 1M entries is ready
        ~6 s sooner)."""
        if background:
            self.cache.loading = True  # from now: ``stats`` and a queued sync know
            self.sync.run_first(self._open, "wikimem-vector-load")
        else:
            self._open()

    def _open(self) -> None:
        self.cache.load()
        if self.cache.state == "mismatch":
            model = self.cache.fingerprint.get("model")
            self._warn_once(
                "mismatch",
                f"the vector cache was made with another embedding model than {model!r}: "
                "BM25 only until `wikimem-watch embed --rebuild` re-embeds the vault",
            )

    def update(
        self,
        entries: Mapping[str, str],
        *,
        fresh: Collection[str] | None = None,
        removed: int = 0,
        rebuild: bool = False,
    ) -> None:
        """Queue the live entries (hash → text) for background embedding; returns at once.
        ``fresh``: the keys set since the last update (None: any may be missing);
        ``removed``: how many keys were dropped since (``VectorSync.start_background``)."""
        self.sync.start_background(entries, fresh=fresh, removed=removed, rebuild=rebuild)

    def warm(self, text: str) -> None:
        """Embed ``text`` as a query now (memoised), so a later ``cosines`` does not wait."""
        if self.cache.usable:
            self._query_vector(text)

    def _query_vector(self, text: str) -> FloatMatrix | None:
        # ``query_error`` says how the latest query fared: a query ranked with its vector (one
        # remembered, or embedded again) takes the error out of ``status``, where it stayed
        # for as long as later queries were answered from remembered vectors; one that lacks
        # its vector because of the failure puts it back.
        query = self._queries.get(text)
        if query is not None:
            self.query_error = None
            return query
        import numpy as np

        failed_at = self._query_failed_at
        if failed_at is not None and time.monotonic() - failed_at < QUERY_RETRY_S:
            self._query_failed(self._query_failure)
            return None  # the embedder failed moments ago: do not wait for it again
        try:
            query = self.embedder.embed_query(text)
        except EmbedError as exc:
            self._query_failed_at = time.monotonic()
            self._query_failure = f"query embedding failed, BM25 only: {exc.message}"
            self._query_failed(self._query_failure)
            self._warn_once(type(exc).__name__, self._query_failure)
            return None
        self._query_failed_at = self._query_failure = self.query_error = None
        if not np.isfinite(query).all() or not query.any():
            self._warn_once("nonfinite", "the query vector is NaN, infinite or zero: BM25 only")
            return None
        with self._queries_lock:
            if len(self._queries) >= 256:
                self._queries.pop(next(iter(self._queries)))
            self._queries[text] = query
        return query

    def _query_failed(self, message: str | None) -> None:
        self.query_error, self._query_error_resets = message, self.cache.resets

    def cosines(
        self, text: str, hashes: list[str], limit: int, within: Collection[str] | None = None
    ) -> dict[str, float] | None:
        """Best-chunk cosine for ``hashes`` plus the ``limit`` nearest cached hashes (of
        ``within`` when given)."""
        if not self.cache.usable:
            return None
        query = self._query_vector(text)
        if query is None:
            return None
        held = self.cache.dim()
        if held and query.size != held:
            self.cache.mark_mismatch(
                f"the embedder answers dim {query.size}, the cache holds {held}"
            )
            return None
        found = self.cache.nearest_and_cosines(query, hashes, limit, QUERY_WAIT_S, within)
        if found is None:
            self.busy_skips += 1  # the cache is rewriting its files: BM25 alone, this once
        return found

    def status(self) -> dict[str, object]:
        """Cache stats plus the sync's pending count; for the daemon's ``status``."""
        stats = self.cache.stats()
        stats.update(
            embedder=self.embedder.name,
            pending=self.sync.pending,
            busy=self.sync.busy,
            failed=self.sync.failed,
            deferred=self.sync.deferred,
            busy_skips=self.busy_skips,
        )
        # A query error met against vectors since emptied or replaced (a model mismatch, a
        # rebuild swapped in) says nothing of the cache in use: queries stop before the
        # query-vector step on a mismatch, so none would take it out, and it hid the reason.
        query_error = self.query_error if self._query_error_resets == self.cache.resets else None
        stats["last_error"] = self.sync.last_error or query_error or stats["last_error"]
        return stats

    def close(self, timeout_s: float = 5.0) -> None:
        self.sync.stop(timeout_s)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)


def make_embedder(
    kind: str,
    *,
    url: str | None = None,
    model: str | None = None,
    api_key_env: str = DEFAULT_API_KEY_ENV,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    batch_size: int = 64,
    max_chars: int | None = None,
    timeout_s: float = 30.0,
    dim: int | None = None,
) -> Embedder | None:
    """Build the configured embedder; ``"none"`` → None (BM25 only).

    ``kind`` is one of "none", "local", "http" (needs ``url`` and ``model``), "hash".
    Raises EmbedError for an unknown kind, a missing URL/model or a missing extra.
    """
    if kind == "none":
        return None
    if kind == "hash":
        return HashEmbedder(dim=dim or 64, max_chars=max_chars or 1000)
    if kind == "local":
        return LocalEmbedder(max_chars=max_chars or 600)
    if kind == "http":
        if not url or not model:
            raise EmbedError(
                "the http embedder needs a URL and a model, e.g. "
                "url='http://127.0.0.1:8080/v1', model='multilingual-e5-small'"
            )
        return HttpEmbedder(
            url,
            model,
            api_key_env=api_key_env,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
            batch_size=batch_size,
            max_chars=max_chars or 2000,
            timeout_s=timeout_s,
            dim=dim,
        )
    raise EmbedError(f"unknown embedder kind {kind!r}; expected one of none, local, http, hash")


def open_vectors(config: Config, *, background: bool = False) -> VectorService | None:
    """The configured embeddings component, loaded from the cache (``background``: on a
    thread, see ``VectorService.open``); None when ``embed`` is "none" or the embedder cannot
    be made (one warning, and BM25 carries on)."""
    if config.embed == "none":
        return None
    refusal = cache_dir_problem(config)
    if refusal is not None:
        log.warning("embeddings off, BM25 only: %s", refusal)
        return None
    try:
        embedder = make_embedder(
            config.embed,
            url=config.embed_url,
            model=config.embed_model,
            api_key_env=config.embed_api_key_env,
            batch_size=config.embed_batch,
        )
    except EmbedError as exc:
        log.warning("embeddings off, BM25 only: %s", exc.message)
        return None
    if embedder is None:
        return None
    service = VectorService(
        embedder,
        config.cache_path,
        batch_size=config.embed_batch,
        peer_grace_s=config.embed_peer_grace_s,
    )
    service.open(background=background)
    return service
