"""Filling the vector cache: embed only the hashes it lacks, in the foreground or on a thread.

``VectorSync`` owns the embedding *work* (batching, chunking, periodic flushes, the background
thread, progress, the resumable rebuild); ``VectorCache`` owns the files and the search.
Queries never wait for a sync: embedding runs outside the cache lock.

A rebuild never touches the working cache until it is complete: it fills a second cache in
``<cache>/rebuild/`` (which survives an interruption, so re-issuing the rebuild resumes),
then :meth:`VectorCache.adopt` swaps it in. An embedder that returns NaN or infinite values,
or an all-zero vector (no direction: every cosine 0, which fusion would read as a tie that
lifts unrelated entries), for a text has failed for that text: it is not stored, is warned
about once, is counted in ``status`` (``failed``) and is not retried until the next rebuild.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.cache_groups import hashes_on_disk
from wikimem_watch.vectors.chunks import chunk_text
from wikimem_watch.vectors.embedders import Embedder, EmbedError
from wikimem_watch.vectors.peers import ACTIVE_S, Peers
from wikimem_watch.vectors.texts import CONTEXT, CONTEXT_CHARS, embedding_text, embedding_texts

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

__all__ = [
    "CONTEXT",
    "CONTEXT_CHARS",
    "REBUILD_DIR",
    "VectorSync",
    "embedding_text",
    "embedding_texts",
]

log = logging.getLogger(__name__)

REBUILD_DIR = "rebuild"  # a rebuild's new cache, beside the working one until it completes
ProgressFn = Callable[[int, int], None]  # (done, total)
POLL_S = 2.0  # how often an idle background thread looks for other machines' segments
WAIT_POLL_S = 0.2  # ... and while it waits for another daemon's vectors
# After an embedding error, the background thread tries the same job again after this long,
# doubling up to RETRY_MAX_S: an endpoint down when the daemon started (a local server that
# starts later) left the vault without vectors, "error" in status, until the next edit.
RETRY_S = 30.0
RETRY_MAX_S = 900.0


@dataclass(slots=True)
class _Job:
    """One queued sync: the entries, and what changed since the job before (``fresh``:
    keys set, None when any may be missing; ``removed``: keys dropped)."""

    entries: Mapping[str, str]
    rebuild: bool = False
    fresh: set[str] | None = None
    removed: int = 0


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
        peers: Peers | None = None,
    ) -> None:
        self.embedder = embedder
        self.cache = cache
        self.batch_size = batch_size
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.on_progress = on_progress
        self.peers = peers
        self.pending = 0
        self.last_error: str | None = None
        self._reported: str | None = None  # the error this sync put in the cache's status
        self._run_lock = threading.Lock()
        self._wake = threading.Condition()
        self._target: _Job | None = None
        self._last: Mapping[str, str] | None = None  # the latest entries, for deferred work
        self._busy = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed: set[str] = set()  # hashes whose vectors came back non-finite
        self._warned_nonfinite = False
        self._waiting: dict[str, float] = {}  # hash another daemon owns → when first missed
        self._deferred: set[str] = set()  # ... and still within its grace
        self._maintained = False
        self._complete = False  # the last sync embedded everything it found missing
        self._retry: _Job | None = None  # the job an embedding error stopped, tried again ...
        self._retry_at = 0.0  # ... at this time.monotonic()
        self._retry_s = RETRY_S

    def run_first(self, work: Callable[[], None], name: str) -> None:
        """Run ``work`` on a thread of its own that holds the run lock from before this
        returns, so no sync starts before it ends (the cache's load in the background)."""
        held = threading.Event()

        def run() -> None:
            with self._run_lock:
                held.set()
                try:
                    work()
                except Exception:  # a bug must not end silently: BM25 keeps serving
                    log.exception("%s failed", name)

        threading.Thread(target=run, name=name, daemon=True).start()
        held.wait()

    @property
    def failed(self) -> int:
        """How many texts the embedder answered with non-finite vectors."""
        return len(self._failed)

    def sync(
        self,
        entries: Mapping[str, str],
        *,
        rebuild: bool = False,
        defer: bool = False,
        fresh: Collection[str] | None = None,
        removed: int = 0,
    ) -> int:
        """Embed the missing ``entries`` (hash → text); returns how many were embedded.

        ``rebuild`` embeds everything again into ``<cache>/rebuild/`` (resuming one that was
        interrupted) and swaps it in only once complete. A "mismatch" cache makes no calls
        otherwise. ``defer`` (the background thread) leaves texts another active daemon owns
        for it, within the peers' grace (``peers.py``). Merges files after writing some
        (``policy.py``). Raises EmbedError when the embedder fails (what was embedded is kept).

        ``fresh`` are the keys set since the previous sync and ``removed`` how many were
        dropped: when that sync embedded everything it found missing, only ``fresh`` can be
        missing now, so only they are looked up, and dead rows are counted only once enough
        has changed (``VectorCache.needs_live``): O(the change), not O(the vault) (ADR-0020).
        ``entries`` is listed here only, never under the cache's lock (the engine's map may
        take the engine's lock to list its keys, and a query holds that one while it waits
        for the cache's).
        """
        with self._run_lock:
            cache = self.cache
            if cache.state == "off":  # never embed against an unread cache: it would redo all
                cache.load()
            cache.churn += removed
            delta = fresh is not None and self._complete and self._maintained
            self._complete = False
            if rebuild:
                self._deferred.clear()
                return self._rebuild(entries)
            if self._failed and (removed or fresh is None):
                # A failed text edited or deleted since has failed no more: ``failed`` in
                # status counted it for as long as the daemon ran. O(failed) lookups.
                self._failed = {h for h in self._failed if entries.get(h) is not None}
            cache.refresh()  # another machine's segments may hold what we lack
            wanted = fresh if delta and fresh is not None else entries
            todo = [] if cache.state == "mismatch" else cache.missing(wanted)
            todo = [h for h in todo if h not in self._failed]  # not retried until a rebuild
            todo = self._defer(todo) if defer else todo
            done = self._fill(cache, todo, entries)
            if done == len(todo) and (done or not self._maintained):
                try:
                    base = self._rewrites_base()  # else a base rewrite is another daemon's
                    live = list(entries) if base and cache.needs_live(exact=not delta) else None
                    cache.maintain(live, rewrite_base=base)
                except OSError as exc:
                    cache.last_error = f"cannot merge vector cache files: {exc}"
                    log.warning("%s (vectors kept in memory)", cache.last_error)
                self._maintained = True  # after a write of ours, and once after loading
            self._complete = done == len(todo) and not self._deferred
            return done

    def _defer(self, todo: list[str]) -> list[str]:
        """``todo`` minus the texts another active daemon owns, each for ``grace_s`` after we
        first found it missing; an owner that is off costs that delay, never a lost vector."""
        now = time.monotonic()
        others = self._active_others()
        if self.peers is None or not others:
            self._waiting, self._deferred = {}, set()
            return todo
        theirs = self.peers.owned_elsewhere([h for h in todo if h not in self._failed], others)
        self._waiting = {h: self._waiting.get(h, now) for h in theirs}
        grace = self.peers.grace_s
        self._deferred = {h for h, t in self._waiting.items() if now - t < grace}
        return [h for h in todo if h not in self._deferred]

    def _active_others(self) -> list[str]:
        """The other live daemons sharing the cache dir, when any is active (one of their
        groups arrived, or a peer file was written, within ``ACTIVE_S``); else none."""
        if self.peers is None:
            return []
        others = self.peers.others()
        arrival = self.cache.last_arrival
        if others and not (arrival is not None and time.monotonic() - arrival < ACTIVE_S):
            others = others if self.peers.others(ACTIVE_S) else []
        return others

    def _rewrites_base(self) -> bool:
        """Whether this daemon may rewrite the base now: no other daemon is active, or this
        one owns the base rewrite among them (``Peers.rewrites_base``)."""
        return self.peers is None or self.peers.rewrites_base(self._active_others())

    def _next_wakeup(self) -> float:
        """Seconds until the background thread should look again (deferred work, a retry or
        a poll)."""
        now = time.monotonic()
        wait = POLL_S if self._retry is None else max(min(POLL_S, self._retry_at - now), 0.01)
        if not self._deferred or self.peers is None:
            return wait
        due = min(self._waiting[h] for h in self._deferred) + self.peers.grace_s
        return max(min(WAIT_POLL_S, wait, due - now), 0.01)

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
        self._recovered()
        return done

    def _rebuild_todo(self, entries: Mapping[str, str]) -> int:
        """How many texts a rebuild queued now will embed: every entry, less those an
        interrupted rebuild left in ``<cache>/rebuild/`` (it resumes). Counted before the
        thread starts, so the `embed --rebuild` reply says it: it said what the working
        cache lacked (0 for a full or a mismatched cache) until the thread started."""
        held = hashes_on_disk(self.cache.cache_dir / REBUILD_DIR, self.cache.fingerprint)
        return sum(1 for h in entries if h not in held)

    def _fill(self, target: VectorCache, todo: list[str], entries: Mapping[str, str]) -> int:
        """Embed ``todo`` into ``target`` in batches, flushing segments as it goes."""
        todo = [h for h in todo if h not in self._failed]
        self.pending = len(todo) + len(self._deferred)
        if not todo:
            # Nothing failed and nothing is left to embed (the texts that failed were edited
            # or deleted, or another machine embedded them): the last sync's error is over;
            # it stayed, with the state "error", until a later sync had something to embed.
            if self.cache.state == "error":
                self.cache.state = "ready"
            self._recovered()
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
                self.pending = len(todo) - done + len(self._deferred)
                if len(buffer) >= self.flush_rows or time.monotonic() - flushed_at >= self.flush_s:
                    target.add(buffer)
                    buffer, flushed_at = {}, time.monotonic()
                if self.on_progress is not None:
                    self.on_progress(done, len(todo))
        except EmbedError as exc:
            if target.state == "mismatch":
                # The model answered another dimension (``VectorCache.add``): the rows still
                # buffered are its; stored after the reset they made the cache "usable" again
                # and the next sync re-embedded the whole vault without `embed --rebuild`.
                buffer = {}
            if target is not report or report.state != "mismatch":  # else the cache's own
                self._report(exc.message)
                if shown:
                    report.state = "error"
            raise
        finally:
            target.add(buffer)
        if shown:
            report.state = "ready"
        self._recovered()
        return done

    def _report(self, message: str) -> None:
        """An error for ``status``: this sync's and the cache's (which ``status`` reads)."""
        self.last_error = self.cache.last_error = self._reported = message

    def _recovered(self) -> None:
        """Embedding worked again: the error this sync reported goes from ``status`` too (it
        stayed there, beside a "ready" state); one the cache found itself stays."""
        if self._reported is not None and self.cache.last_error == self._reported:
            self.cache.last_error = None
        self.last_error = self._reported = None

    def _embed(self, batch: list[str], entries: Mapping[str, str]) -> dict[str, FloatMatrix]:
        import numpy as np

        texts = {h: entries.get(h) for h in batch}  # None: edited or removed since
        batch = [h for h in batch if texts[h] is not None]
        chunks = [chunk_text(texts[h] or "", self.embedder.max_chars) for h in batch]
        flat = [c for cs in chunks for c in cs]
        if not flat:
            return {}
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
            if np.isfinite(rows).all() and rows.any(axis=1).all():
                out[h] = rows
                continue
            self._failed.add(h)  # a failed embedding: never stored, not retried
            if not self._warned_nonfinite:
                self._warned_nonfinite = True
                log.warning(
                    "%s returned NaN, infinite or all-zero vectors; those texts are left out "
                    "of the vector cache (BM25 still finds them)",
                    self.embedder.name,
                )
        return out

    # -- background ------------------------------------------------------------------------

    def start_background(
        self,
        entries: Mapping[str, str],
        *,
        fresh: Collection[str] | None = None,
        removed: int = 0,
        rebuild: bool = False,
    ) -> None:
        """Queue ``entries`` for the background thread (started on first use); returns at once.

        A newer call replaces a queued one that has not started: the latest vault wins, with
        the changes of both (``fresh``, ``removed``: see ``sync``). ``entries`` is kept as
        given: the engine's makes its keys and texts when asked (``EmbeddingInputs``).
        """
        with self._wake:
            queued = self._target
            keys = None if fresh is None else set(fresh)
            if queued is not None:
                keys = None if keys is None or queued.fresh is None else queued.fresh | keys
                removed += queued.removed
                rebuild = rebuild or queued.rebuild
            self._target = _Job(entries, rebuild, keys, removed)
            if rebuild:  # what the working cache lacks is not what a rebuild embeds
                self.pending = self._rebuild_todo(entries)
            elif self.cache.state != "mismatch" and not self.cache.loading:  # a load holds its lock
                if fresh is None:
                    self.pending = len(self.cache.missing(entries))
                else:  # what the running sync leaves, and these
                    self.pending += len(self.cache.missing(fresh))
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._run, name="wikimem-vector-sync", daemon=True
                )
                self._thread.start()
            self._wake.notify_all()

    def _run(self) -> None:
        """Run queued syncs; between them, re-run deferred work when due and pick up other
        machines' segments every ``POLL_S`` (a directory listing; it never embeds)."""
        while not self._stop.is_set():
            if self.peers is not None:
                self.peers.announce()
            with self._wake:
                if self._target is None and not self._stop.is_set():
                    self._wake.wait(self._next_wakeup())
                if self._stop.is_set():
                    return
                job = self._next_job()
                self._busy = job is not None
            try:
                if job is None:
                    self.cache.refresh()
                else:
                    self.sync(
                        job.entries,
                        rebuild=job.rebuild,
                        defer=True,
                        fresh=job.fresh,
                        removed=job.removed,
                    )
                    self._retry_s = RETRY_S  # embedding works: the next error waits RETRY_S
            except EmbedError as exc:
                log.warning("embedding stopped: %s (BM25 keeps serving)", exc.message)
                if job is not None:  # what was embedded is kept: a retry embeds the rest
                    self._retry = _Job(job.entries, job.rebuild)
                    self._retry_at = time.monotonic() + self._retry_s
                    self._retry_s = min(self._retry_s * 2, RETRY_MAX_S)
            except OSError as exc:  # e.g. a read-only cache dir: vectors stay in memory
                self._report(f"vector cache not writable: {exc}")
                log.warning("embedding stopped: %s (BM25 keeps serving)", self.last_error)
            except Exception as exc:  # a bug must not leave the state "embedding" forever
                self._report(f"{type(exc).__name__}: {exc}")
                self.cache.state = "error"
                log.exception("embedding stopped: %s", self.last_error)
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()

    def _next_job(self) -> _Job | None:
        """The job to run now (under ``_wake``): the queued one, else deferred work, else a
        retry that is due; None: only a refresh."""
        job = self._target
        if job is not None:
            self._target, self._last = None, job.entries
            if self._retry is not None and self._retry.rebuild:
                # A rebuild an error stopped is not dropped by an edit queued since (it was:
                # the mismatch stayed until `embed --rebuild` was issued again).
                job.rebuild = True
        elif self._deferred and self._last is not None:
            job = _Job(self._last)
        elif self._retry is not None and time.monotonic() >= self._retry_at:
            job = self._retry
        if job is not None:
            self._retry = None  # a newer job, or this retry, replaces it
        return job

    @property
    def busy(self) -> bool:
        """True while work is queued, running or deferred on the background thread."""
        with self._wake:
            return self._target is not None or self._busy or bool(self._deferred)

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until no work is queued, running or deferred; False on timeout."""
        with self._wake:
            return self._wake.wait_for(
                lambda: self._target is None and not self._busy and not self._deferred, timeout_s
            )

    @property
    def deferred(self) -> int:
        """Texts left for another daemon that owns them, still within the grace."""
        return len(self._deferred)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Finish the current batch, flush it, and end the thread."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)
