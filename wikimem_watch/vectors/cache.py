"""The content-addressed, incremental vector cache: load, pick up, add, merge, search.

``VectorCache`` owns the vector files in the cache directory (DESIGN §4, ADR-0005). Every
file group is content-addressed, ``seg-<sha256[:16]>.npy`` + ``seg-<same>.keys.jsonl``, so
two synced daemons never write one name with different bytes, and a file once written is
never rewritten, only deleted when a merge has replaced it. The largest group is the
*base*; ``vectors.keys.jsonl`` is a copy of its keys file (the name wikimem reads). Which
groups merge when is ``policy.py``; the rows in memory and the search are ``memory.py``.

This module owns the cache's state, its one lock and its face: ``load``, the queries,
``add``, ``adopt`` (a rebuild swapped in), ``clear`` and ``stats``. Reading, writing and
deleting one file group, and ``refresh``, are ``cache_groups.py``; the merges
(``maintain``, ``compact``) are ``cache_merges.py``: mixins of ``VectorCache``.

Rows are keyed by the content hash of the embedded text, never by path. Every write is
atomic; every read is tolerant: a torn or corrupt group costs its untrusted blocks only
(reported in ``dropped``). ``refresh`` picks up groups another machine's daemon wrote into
a synced cache dir while we run. A fingerprint mismatch turns the cache off ("mismatch")
until an explicit rebuild. Filling it (embedding the missing hashes) is ``sync.py``'s job.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.vectors.cache_groups import _Group
from wikimem_watch.vectors.cache_merges import CacheMerges
from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.files import KEYS_FILE, OURS, npy_of, packed
from wikimem_watch.vectors.memory import VectorMatrix
from wikimem_watch.vectors.policy import MergePolicy

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

__all__ = ["VectorCache"]

log = logging.getLogger(__name__)

WRITE_FAILED = "cannot write to"  # how ``last_error`` starts after a failed write


class VectorCache(CacheMerges):
    """Content-hash → vectors, persisted incrementally, searched brute force in memory.

    ``state``: "off" (not loaded), "ready", "embedding" (a sync is running), "error" (the
    last sync failed; loaded vectors still serve), "mismatch" (files are from another
    fingerprint: unused until ``clear``/rebuild). Thread-safe: one lock guards everything.
    """

    def __init__(
        self,
        cache_dir: Path,
        fingerprint: Mapping[str, object],
        *,
        policy: MergePolicy | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.fingerprint: dict[str, object] = json.loads(json.dumps(dict(fingerprint)))
        self.policy = policy or MergePolicy()
        self.state = "off"
        self.last_error: str | None = None
        self.dropped: list[str] = []
        self.bytes_written = 0  # by this process, every vector file (for status and benches)
        self.last_arrival: float | None = None  # monotonic: another machine's group picked up
        self.loading = False
        # How many times the vectors were emptied or replaced (a load, a mismatch, a rebuild
        # swapped in, a clear): what was learnt about the cache before may not hold now.
        self.resets = 0
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self.resets += 1
        dim = self.fingerprint.get("dim")
        self._m = VectorMatrix(dim if isinstance(dim, int) else 0, self.cache_dir)
        self._groups: dict[str, _Group] = {}  # keys-file name → group
        self._failed: dict[str, tuple[int, ...]] = {}  # keys-file name → signature that failed
        self._recent: dict[str, float] = {}  # rows another machine sent, kept (cache_merges)
        self._unwritten: list[str] = []  # hashes added while writes failed (a full disk)
        # Rows added, keys dropped and rows picked up since dead rows were last counted: an
        # upper bound on how many more rows can have died (``maintain``).
        self.churn = 0

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Read every group; drop (and report in ``dropped``) whatever cannot be trusted."""
        self.loading = True  # read without the lock by ``stats``: a load of 1M rows takes s
        try:
            self._load()
        finally:
            self.loading = False

    def _load(self) -> None:
        with self._lock:
            self._reset()
            self.dropped = []
            verdicts = [self._load_group(name) for name in self._group_names(legacy=True)]
            ours, foreign = verdicts.count("ok"), verdicts.count("foreign")
            self.state = "mismatch" if foreign and not ours else "ready"
            if self.state == "mismatch":
                self._reset()  # said once by the caller; each group's reason is in `dropped`
                return
            for message in self.dropped:
                log.warning("vector cache %s: %s", self.cache_dir, message)

    # -- queries ---------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        """True when the loaded vectors may be used for ranking."""
        return self.state in ("ready", "embedding", "error") and bool(self._m.hashes)

    def has(self, content_hash: str) -> bool:
        with self._lock:
            return content_hash in self._m.hid

    def missing(self, hashes: Iterable[str]) -> list[str]:
        """The hashes (deduplicated, in order) that have no vectors yet."""
        # Listed before the lock: the engine's map takes the engine's lock to list its keys,
        # and a query holds that one while it waits for this one.
        wanted = list(dict.fromkeys(hashes))
        with self._lock:
            return [h for h in wanted if h not in self._m.hid]

    def search(
        self, query: FloatMatrix, hashes: Collection[str] | None, k: int
    ) -> list[tuple[str, float]]:
        """Top ``k`` (hash, best-chunk cosine), restricted to ``hashes`` when given."""
        with self._lock:
            return self._m.search(query, hashes, k) if self.usable else []

    def cosines(self, query: FloatMatrix, hashes: Iterable[str]) -> dict[str, float]:
        """Best-chunk cosine for each of ``hashes`` that has vectors (others are absent)."""
        with self._lock:
            return self._m.cosines(query, hashes) if self.usable else {}

    def dim(self) -> int:
        """The dimension of the vectors held (0: none yet)."""
        return int(self._m.dim)

    def mark_mismatch(self, why: str) -> None:
        """The embedder answers vectors of another dimension than the cache holds (a model
        changed behind an endpoint's name): the cache is another model's, as a fingerprint
        mismatch makes it: BM25 only, nothing embedded, until ``embed --rebuild``."""
        with self._lock:
            if self.state != "mismatch":
                log.warning(
                    "vector cache %s: %s: BM25 only until `embed --rebuild`", self.cache_dir, why
                )
            self._reset()
            self.state, self.last_error = "mismatch", why

    def nearest_and_cosines(
        self,
        query: FloatMatrix,
        hashes: Iterable[str],
        k: int,
        wait_s: float,
        within: Collection[str] | None = None,
    ) -> dict[str, float] | None:
        """``search`` for the ``k`` nearest (of ``within`` when given) and ``cosines`` of
        ``hashes``, in one hold of the lock; None when the lock is not had within ``wait_s``:
        a merge or a base rewrite holds it while it writes its files (~0.9 s at 100k rows),
        and a query (which holds the engine's lock meanwhile) must not wait for that."""
        if not self._lock.acquire(timeout=wait_s):
            return None
        try:
            if not self.usable:
                return {}
            found = dict(self._m.search(query, within, k))
            found.update(self._m.cosines(query, hashes))
            return found
        finally:
            self._lock.release()

    # -- writing ---------------------------------------------------------------------------

    def add(self, items: Mapping[str, FloatMatrix]) -> int:
        """Add vectors (hash → (n_chunks, dim)) as ONE new segment; returns rows added.

        Hashes already held are skipped. A failed write is reported in ``last_error`` and
        the vectors still serve from memory; the next write that succeeds writes them too
        (as a segment of their own, first) and clears the error, so a disk that was full
        for a while costs no embedding at the next start.
        """
        import numpy as np

        with self._lock:
            if self.state == "mismatch":
                raise EmbedError("the vector cache holds another model's vectors; rebuild it")
            fresh = {h: np.atleast_2d(np.asarray(v, np.float32)) for h, v in items.items()}
            fresh = {h: v for h, v in fresh.items() if h not in self._m.hid and v.shape[0]}
            bad = [h for h, v in fresh.items() if not np.isfinite(v).all()]
            if bad:  # never stored: a NaN row would poison every cosine it meets
                log.warning("vector cache: refused %d non-finite vectors", len(bad))
                fresh = {h: v for h, v in fresh.items() if h not in bad}
            if not fresh:
                return 0
            dims = {v.shape[1] for v in fresh.values()}
            if len(dims) != 1 or (self._m.dim and dims != {self._m.dim}):
                why = f"vectors of dim {sorted(dims)} do not fit the cache dim {self._m.dim}"
                if len(dims) == 1 and self._m.hashes:  # the model changed behind its name
                    self.mark_mismatch(why)
                raise EmbedError(why)
            matrix = np.ascontiguousarray(np.concatenate(list(fresh.values())))
            spans = packed([(h, v.shape[0]) for h, v in fresh.items()])
            self._m.append(spans, matrix)
            self.churn += int(matrix.shape[0])
            try:
                hid, refs = self._m.hid, self._m.refs  # still in no file (a base may hold them)
                held = [h for h in self._unwritten if h in hid and not refs[hid[h]]]
                if held:
                    self._write(*self._m.gather(held))
                    self._unwritten = []
                self._write(spans, matrix)
            except OSError as exc:
                self._unwritten += [h for h, _, _ in spans]
                self.last_error = f"{WRITE_FAILED} {self.cache_dir}: {exc}"
                log.warning("vector cache: %s (vectors kept in memory only)", self.last_error)
            else:
                if self.last_error is not None and self.last_error.startswith(WRITE_FAILED):
                    self.last_error = None  # written again: the disk has room again
            return int(matrix.shape[0])

    def adopt(self, rebuilt: VectorCache, live: Collection[str]) -> None:
        """Swap in a rebuild: ``rebuilt``'s ``live`` rows become this cache's new base, then
        every older vector file here (any fingerprint) is deleted. Until the new keys file
        lands, the old cache is intact and serving; a failure leaves it so."""
        wanted = sorted(set(live))  # listed before the locks (see ``missing``)
        with self._lock, rebuilt._lock:
            self.ensure_dir()
            fresh = rebuilt._m.subset(wanted, self.cache_dir)
            old = [p for p in self.cache_dir.iterdir() if OURS.fullmatch(p.name) and p.is_file()]
            self.fingerprint = dict(rebuilt.fingerprint)
            self._reset()
            self._m = fresh
            spans, matrix = fresh.spans(), fresh.mat[: fresh.n_rows]
            done = fresh.store.release
            out = self._write(spans, matrix, base=True, done=done) if spans else ""
            for path in old:
                if path.name not in (out, npy_of(out)):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            self.state, self.last_error, self.dropped = "ready", None, []

    def clear(self) -> None:
        """Delete every vector file (any fingerprint) and start empty: the rebuild path."""
        with self._lock:
            with contextlib.suppress(OSError):
                for path in [self.cache_dir / KEYS_FILE, *self.cache_dir.iterdir()]:
                    if path.name == KEYS_FILE or OURS.fullmatch(path.name):
                        with contextlib.suppress(FileNotFoundError):
                            path.unlink()
            self._reset()
            self.state, self.last_error, self.dropped = "ready", None, []

    def stats(self) -> dict[str, object]:
        out: dict[str, object] = {
            "state": "loading",  # read without the lock a load holds for seconds
            "model": self.fingerprint.get("model"),
            "dim": self.fingerprint.get("dim"),
            "hashes": 0,
            "rows": 0,
            "disk_rows": 0,
            "segments": 0,
            "base": None,
            "bytes_written": self.bytes_written,
            "dropped": [],
            "last_error": None,
        }
        if self.loading:
            return out
        with self._lock:
            base = max(self._groups.values(), key=lambda g: (g.rows, g.npy.name), default=None)
            out.update(
                state=self.state,
                dim=self._m.dim,
                hashes=len(self._m.hashes),
                rows=self._m.n_rows,
                disk_rows=sum(g.rows for g in self._groups.values()),
                segments=max(len(self._groups) - 1, 0),
                base=base.npy.name if base else None,
                dropped=list(self.dropped),
                last_error=self.last_error,
            )
            return out
