"""Filling the vector cache: embed only the hashes it lacks, in the foreground or on a thread.

``VectorSync`` owns the embedding *work* (batching, chunking, periodic flushes, the background
thread, progress, the resumable rebuild); ``VectorCache`` owns the files and the search.
Queries never wait for a sync: embedding runs outside the cache lock.

A rebuild never touches the working cache until it is complete: it fills a second cache in
``<cache>/rebuild/`` (which survives an interruption, so re-issuing the rebuild resumes),
then :meth:`VectorCache.adopt` swaps it in. An embedder that returns NaN or infinite values
for a text has failed for that text: it is not stored, is warned about once, is counted in
``status`` (``failed``) and is not retried until the next rebuild.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.config import Config, cache_dir_problem
from wikimem_watch.core.models import Entry
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.embedders import Embedder, EmbedError, chunk_text, make_embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

__all__ = [
    "CONTEXT",
    "REBUILD_DIR",
    "VectorService",
    "VectorSync",
    "embedding_text",
    "embedding_texts",
    "open_vectors",
]

log = logging.getLogger(__name__)

REBUILD_DIR = "rebuild"  # a rebuild's new cache, beside the working one until it completes
ProgressFn = Callable[[int, int], None]  # (done, total)


CONTEXT_CHARS = 200  # how much of the entry before it a diary entry's vector reads (ADR-0008)
CONTEXT = f"diary-previous-entry-tail-{CONTEXT_CHARS}"  # in the cache fingerprint


def embedding_text(heading: str, text: str, context: str = "") -> str:
    """What to embed for an entry: its context line(s), then its heading and text."""
    body = f"{heading}\n{text}" if heading else text
    return f"{context}\n{body}" if context else body


def embedding_texts(entries: Sequence[Entry]) -> list[str]:
    """What to embed for each entry of one note, given in file order (ADR-0008).

    A diary entry is read with the last ``CONTEXT_CHARS`` of the entry just before it in
    the same day file: entries are short and lean on what came before ("Yes, and it rained
    the whole week"). Wiki items stand alone: the item above is another topic.
    """
    out: list[str] = []
    prev: Entry | None = None
    for entry in entries:
        context = ""
        if prev is not None and entry.kind == "diary" and prev.kind == "diary":
            context = _tail(prev.text, CONTEXT_CHARS)
        out.append(embedding_text(entry.heading, entry.text, context))
        prev = entry
    return out


def _tail(text: str, max_chars: int) -> str:
    """The last ``max_chars`` of ``text``, starting at a word when one starts nearby."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    cut = text[-max_chars:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < 40 else cut


class VectorSync:
    """Embeds the hashes a cache lacks, in batches, in the foreground or on one thread.

    ``sync`` flushes a segment every ``flush_rows`` rows or ``flush_s`` seconds, so an
    interrupted run keeps its work. Queries never wait for it: embedding happens outside
    the cache lock, which is only held to append rows.
    """

    def __init__(
        self,
        embedder: Embedder,
        cache: VectorCache,
        *,
        batch_size: int = 32,
        flush_rows: int = 1024,
        flush_s: float = 10.0,
        on_progress: ProgressFn | None = None,
    ) -> None:
        self.embedder = embedder
        self.cache = cache
        self.batch_size = batch_size
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.on_progress = on_progress
        self.pending = 0
        self.last_error: str | None = None
        self._run_lock = threading.Lock()
        self._wake = threading.Condition()
        self._target: tuple[dict[str, str], bool] | None = None
        self._busy = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed: set[str] = set()  # hashes whose vectors came back non-finite
        self._warned_nonfinite = False

    @property
    def failed(self) -> int:
        """How many texts the embedder answered with non-finite vectors."""
        return len(self._failed)

    def sync(self, entries: Mapping[str, str], *, rebuild: bool = False) -> int:
        """Embed the missing ``entries`` (hash → text); returns how many were embedded.

        ``rebuild`` embeds everything again into ``<cache>/rebuild/`` (resuming one that was
        interrupted) and swaps it in only once complete. A "mismatch" cache makes no calls
        otherwise. Raises EmbedError when the embedder fails (what was embedded is kept).
        """
        with self._run_lock:
            cache = self.cache
            if cache.state == "off":  # never embed against an unread cache: it would redo all
                cache.load()
            if rebuild:
                return self._rebuild(entries)
            todo = [] if cache.state == "mismatch" else cache.missing(entries)
            done = self._fill(cache, todo, entries)
            if done == len(todo) and cache.needs_compaction(entries.keys()):
                try:
                    cache.compact(entries.keys())
                except OSError as exc:
                    cache.last_error = f"cannot compact the vector cache: {exc}"
                    log.warning("%s (vectors kept in memory)", cache.last_error)
            return done

    def _rebuild(self, entries: Mapping[str, str]) -> int:
        """Fill a fresh cache beside the working one; swap it in when complete."""
        self._failed.clear()  # a rebuild gives every text another chance
        staging = VectorCache(self.cache.cache_dir / REBUILD_DIR, self.cache.fingerprint)
        staging.load()
        if staging.state == "mismatch":  # an older rebuild for another model: start over
            staging.clear()
        todo = staging.missing(entries)
        done = self._fill(staging, todo, entries)
        if self._stop.is_set():
            return done  # stopped: the staging dir keeps the work, a re-issue resumes
        try:
            self.cache.adopt(staging, entries.keys())
        except OSError as exc:
            raise EmbedError(f"cannot swap in the rebuilt vector cache: {exc}") from exc
        with contextlib.suppress(OSError):
            shutil.rmtree(staging.cache_dir)
        self.last_error = None
        return done

    def _fill(self, target: VectorCache, todo: list[str], entries: Mapping[str, str]) -> int:
        """Embed ``todo`` into ``target`` in batches, flushing segments as it goes."""
        todo = [h for h in todo if h not in self._failed]
        self.pending = len(todo)
        if not todo:
            return 0
        report = self.cache  # status always reads the working cache
        shown = report.state != "mismatch"  # a mismatch stays one until a rebuild swaps in
        if shown:
            report.state = "embedding"
        done = 0
        buffer: dict[str, FloatMatrix] = {}
        flushed_at = time.monotonic()
        try:
            for i in range(0, len(todo), self.batch_size):
                if self._stop.is_set():
                    break
                batch = todo[i : i + self.batch_size]
                buffer.update(self._embed(batch, entries))
                done += len(batch)
                self.pending = len(todo) - done
                if len(buffer) >= self.flush_rows or time.monotonic() - flushed_at >= self.flush_s:
                    target.add(buffer)
                    buffer, flushed_at = {}, time.monotonic()
                if self.on_progress is not None:
                    self.on_progress(done, len(todo))
        except EmbedError as exc:
            self.last_error = report.last_error = exc.message
            if shown:
                report.state = "error"
            raise
        finally:
            target.add(buffer)
        if shown:
            report.state = "ready"
        self.last_error = None
        return done

    def _embed(self, batch: list[str], entries: Mapping[str, str]) -> dict[str, FloatMatrix]:
        import numpy as np

        chunks = [chunk_text(entries[h], self.embedder.max_chars) for h in batch]
        flat = [c for cs in chunks for c in cs]
        vectors = self.embedder.embed_documents(flat)
        if vectors.shape[0] != len(flat):
            raise EmbedError(
                f"{self.embedder.name} returned {vectors.shape[0]} vectors for {len(flat)} texts"
            )
        out: dict[str, FloatMatrix] = {}
        row = 0
        for h, cs in zip(batch, chunks, strict=True):
            rows = vectors[row : row + len(cs)]
            row += len(cs)
            if np.isfinite(rows).all():
                out[h] = rows
                continue
            self._failed.add(h)  # a failed embedding: never stored, not retried
            if not self._warned_nonfinite:
                self._warned_nonfinite = True
                log.warning(
                    "%s returned NaN or infinite values; those texts are left out of the "
                    "vector cache (BM25 still finds them)",
                    self.embedder.name,
                )
        return out

    # -- background ------------------------------------------------------------------------

    def start_background(self, entries: Mapping[str, str], *, rebuild: bool = False) -> None:
        """Queue ``entries`` for the background thread (started on first use); returns at once.

        A newer call replaces a queued one that has not started: the latest vault wins.
        """
        with self._wake:
            self._target = (dict(entries), rebuild)
            if self.cache.state != "mismatch":
                self.pending = len(self.cache.missing(entries))
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._run, name="wikimem-vector-sync", daemon=True
                )
                self._thread.start()
            self._wake.notify_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._wake:
                while self._target is None and not self._stop.is_set():
                    self._wake.wait()
                if self._target is None:
                    return
                (entries, rebuild), self._target = self._target, None
                self._busy = True
            try:
                self.sync(entries, rebuild=rebuild)
            except EmbedError as exc:
                log.warning("embedding stopped: %s (BM25 keeps serving)", exc.message)
            except OSError as exc:  # e.g. a read-only cache dir: vectors stay in memory
                self.last_error = self.cache.last_error = f"vector cache not writable: {exc}"
                log.warning("embedding stopped: %s (BM25 keeps serving)", self.last_error)
            except Exception as exc:  # a bug must not leave the state "embedding" forever
                self.last_error = self.cache.last_error = f"{type(exc).__name__}: {exc}"
                self.cache.state = "error"
                log.exception("embedding stopped: %s", self.last_error)
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()

    @property
    def busy(self) -> bool:
        """True while work is queued or running on the background thread."""
        with self._wake:
            return self._target is not None or self._busy

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until no work is queued or running; False on timeout (for tests and CLI)."""
        with self._wake:
            return self._wake.wait_for(lambda: self._target is None and not self._busy, timeout_s)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Finish the current batch, flush it, and end the thread."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)


class VectorService:
    """Embedder + cache + background sync behind one small face for the engine and query path.

    ``cosines`` matches ``query.VectorSignal``: None whenever vectors cannot be used (cache
    off or mismatched, query embedding failed), warned once per cause, so ranking silently
    degrades to BM25. Query vectors are memoised (an HTTP model costs per call).
    """

    def __init__(self, embedder: Embedder, cache_dir: Path, *, batch_size: int = 32) -> None:
        self.embedder = embedder
        # What goes into a vector is the model's business and the context's (ADR-0008).
        self.cache = VectorCache(cache_dir, {**embedder.fingerprint, "context": CONTEXT})
        self.sync = VectorSync(embedder, self.cache, batch_size=batch_size)
        self._queries: dict[str, FloatMatrix] = {}
        self._queries_lock = threading.Lock()
        self._warned: set[str] = set()

    def open(self) -> None:
        """Load the cache (tolerant; never raises for torn files)."""
        self.cache.load()
        if self.cache.state == "mismatch":
            self._warn_once(
                "mismatch", "vector cache is for another model: BM25 only until `embed`"
            )

    def update(self, entries: Mapping[str, str], *, rebuild: bool = False) -> None:
        """Queue the live entries (hash → text) for background embedding; returns at once."""
        self.sync.start_background(entries, rebuild=rebuild)

    def warm(self, text: str) -> None:
        """Embed ``text`` as a query now (memoised), so a later ``cosines`` does not wait."""
        if self.cache.usable:
            self._query_vector(text)

    def _query_vector(self, text: str) -> FloatMatrix | None:
        query = self._queries.get(text)
        if query is not None:
            return query
        import numpy as np

        try:
            query = self.embedder.embed_query(text)
        except EmbedError as exc:
            self._warn_once(type(exc).__name__, f"query embedding failed, BM25 only: {exc.message}")
            return None
        if not np.isfinite(query).all():
            self._warn_once("nonfinite", "the query vector is NaN or infinite: BM25 only")
            return None
        with self._queries_lock:
            if len(self._queries) >= 256:
                self._queries.pop(next(iter(self._queries)))
            self._queries[text] = query
        return query

    def cosines(self, text: str, hashes: list[str], limit: int) -> dict[str, float] | None:
        """Best-chunk cosine for ``hashes`` plus the ``limit`` nearest cached hashes."""
        if not self.cache.usable:
            return None
        query = self._query_vector(text)
        if query is None:
            return None
        found = dict(self.cache.search(query, None, limit))
        found.update(self.cache.cosines(query, hashes))
        return found

    def status(self) -> dict[str, object]:
        """Cache stats plus the sync's pending count; for the daemon's ``status``."""
        stats = self.cache.stats()
        stats.update(
            embedder=self.embedder.name,
            pending=self.sync.pending,
            busy=self.sync.busy,
            failed=self.sync.failed,
        )
        stats["last_error"] = self.sync.last_error or stats["last_error"]
        return stats

    def close(self, timeout_s: float = 5.0) -> None:
        self.sync.stop(timeout_s)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)


def open_vectors(config: Config) -> VectorService | None:
    """The configured embeddings component, loaded from the cache; None when ``embed`` is
    "none" or the embedder cannot be made (one warning, and BM25 carries on)."""
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
    service = VectorService(embedder, config.cache_path, batch_size=config.embed_batch)
    service.open()
    return service
