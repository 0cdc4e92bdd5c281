"""The content-addressed, incremental vector cache: load, add, search, compact.

``VectorCache`` owns the vector files in the cache directory (DESIGN §4, ADR-0005) and an
in-memory float32 matrix searched by brute force. On disk:

- a compacted base: ``vectors.keys.jsonl`` (header line, then one ``{"hash", "chunk"}`` line
  per row) and the ``vectors-NNNNNN.npy`` it names;
- small append-only segments ``seg-<sha256[:16]>.npy`` + ``seg-<same>.keys.jsonl``, named
  after their content, so two synced daemons never write one name with different bytes.

Rows are keyed by the content hash of the embedded text, never by path. Every write is
atomic; every read is tolerant: a torn or corrupt file group is dropped (and reported), never
trusted. A fingerprint mismatch turns the cache off ("mismatch") until an explicit rebuild.
Filling it (embedding the missing hashes) is ``vector_sync.py``'s job.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from collections.abc import Collection, Iterable, Mapping
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.files import (
    BASE_NPY,
    KEYS_FILE,
    OURS,
    SEG_KEYS,
    Span,
    atomic_write,
    npy_bytes,
    packed,
    read_keys,
    read_matrix,
    remove_stale,
    segment_name,
    write_group,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    IntArray = npt.NDArray[np.int64]

__all__ = ["VectorCache"]

log = logging.getLogger(__name__)


class VectorCache:
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
        max_segments: int = 16,
        max_dead_fraction: float = 0.25,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.fingerprint: dict[str, object] = json.loads(json.dumps(dict(fingerprint)))
        self.max_segments = max_segments
        self.max_dead_fraction = max_dead_fraction
        self.state = "off"
        self.last_error: str | None = None
        self.dropped: list[str] = []
        self._lock = threading.RLock()
        self._generation = 0
        self._reset()

    def _reset(self) -> None:
        import numpy as np

        dim = self.fingerprint.get("dim")
        self._dim = dim if isinstance(dim, int) else 0
        self._mat: FloatMatrix = np.zeros((0, max(self._dim, 1)), dtype=np.float32)
        self._starts: IntArray = np.zeros(0, dtype=np.int64)
        self._n_rows = 0
        self._hashes: list[str] = []
        self._hid: dict[str, int] = {}
        self._base: tuple[Path, Path] | None = None
        self._segments: list[tuple[Path, Path]] = []
        self._disk_rows = 0

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Read base and segments; drop (and report in ``dropped``) whatever is torn."""
        with self._lock:
            self._reset()
            self.dropped = []
            groups: list[tuple[Path, re.Pattern[str]]] = []
            if (self.cache_dir / KEYS_FILE).exists():
                groups.append((self.cache_dir / KEYS_FILE, BASE_NPY))
            seg_names = sorted(p.name for p in self._listdir() if SEG_KEYS.fullmatch(p.name))
            for name in seg_names:
                groups.append((self.cache_dir / name, re.compile(re.escape(name[:20]) + r"\.npy")))
            ours = foreign = 0
            for keys_path, npy_name in groups:
                verdict = self._load_group(keys_path, npy_name)
                ours += verdict == "ok"
                foreign += verdict == "foreign"
            self.state = "mismatch" if foreign and not ours else "ready"
            if self.state == "mismatch":
                self._reset()
            for message in self.dropped:
                log.warning("vector cache %s: %s", self.cache_dir, message)

    def _listdir(self) -> list[Path]:
        try:
            return list(self.cache_dir.iterdir())
        except OSError:
            return []

    def _load_group(self, keys_path: Path, npy_name: re.Pattern[str]) -> str:
        try:
            header, spans = read_keys(keys_path, npy_name)
            if any(header.get(k) != v for k, v in self.fingerprint.items()):
                self.dropped.append(
                    f"{keys_path.name}: fingerprint differs ({header.get('model')!r})"
                )
                return "foreign"
            npy_path = self.cache_dir / str(header["vectors_file"])
            matrix, good = read_matrix(npy_path, header)
            if self._dim and matrix.shape[1] != self._dim:
                raise ValueError(f"dim {matrix.shape[1]} != {self._dim}")
        except ValueError as exc:
            self.dropped.append(f"{keys_path.name}: {exc}; its rows are treated as missing")
            return "dropped"
        if not good.all():
            kept = [sp for sp in spans if good[sp[1] : sp[1] + sp[2]].all()]
            self.dropped.append(
                f"{npy_path.name}: {int((~good).sum())} of {len(good)} rows failed their block "
                f"checksum or are not finite; {len(spans) - len(kept)} texts are treated as "
                "missing (re-embedded)"
            )
            spans = kept
        self._append(spans, matrix)
        self._disk_rows += matrix.shape[0]
        if keys_path.name == KEYS_FILE:
            self._base = (keys_path, npy_path)
            self._generation = int(npy_path.name[8:14])
        else:
            self._segments.append((keys_path, npy_path))
        return "ok"

    def _append(self, spans: list[Span], matrix: FloatMatrix) -> None:
        """Add rows of new hashes to memory (hashes already held are skipped)."""
        import numpy as np

        spans = [s for s in spans if s[0] not in self._hid]
        if not spans:
            return
        counts = np.array([n for _, _, n in spans], dtype=np.int64)
        rows = _rows_of(np.array([s for _, s, _ in spans], dtype=np.int64), counts)
        self._dim = self._dim or int(matrix.shape[1])
        need = self._n_rows + len(rows)
        if need > self._mat.shape[0] or self._mat.shape[1] != self._dim:
            capacity = max(need + need // 8, self._mat.shape[0] * 5 // 4, 64)  # amortised growth
            grown = np.zeros((capacity, self._dim), np.float32)
            grown[: self._n_rows] = self._mat[: self._n_rows]
            self._mat = grown
        self._mat[self._n_rows : need] = matrix[rows]
        self._starts = np.concatenate([self._starts, self._n_rows + np.cumsum(counts) - counts])
        for h, _, _ in spans:
            self._hid[h] = len(self._hashes)
            self._hashes.append(h)
        self._n_rows = need

    # -- queries ---------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        """True when the loaded vectors may be used for ranking."""
        return self.state in ("ready", "embedding", "error") and bool(self._hashes)

    def has(self, content_hash: str) -> bool:
        with self._lock:
            return content_hash in self._hid

    def missing(self, hashes: Iterable[str]) -> list[str]:
        """The hashes (deduplicated, in order) that have no vectors yet."""
        with self._lock:
            return [h for h in dict.fromkeys(hashes) if h not in self._hid]

    def _best(self, query: FloatMatrix, ids: IntArray) -> FloatMatrix:
        """Best-chunk cosine of ``query`` for each hash id in ``ids``."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).ravel()
        if q.shape[0] != self._dim:
            raise EmbedError(f"query has dim {q.shape[0]}, the cache holds dim {self._dim}")
        if len(ids) * 4 >= len(self._hashes):  # dense: one matrix-vector product
            scores = self._mat[: self._n_rows] @ q
            if self._n_rows > len(self._hashes):  # some hash has several chunks
                scores = np.maximum.reduceat(scores, self._starts)
            best: FloatMatrix = scores[ids]
            return best
        starts, counts = self._starts[ids], self._counts(ids)
        offsets = np.cumsum(counts) - counts
        best = np.maximum.reduceat(self._mat[_rows_of(starts, counts)] @ q, offsets)
        return best

    def _counts(self, ids: IntArray) -> IntArray:
        import numpy as np

        ends: IntArray = np.append(self._starts[1:], self._n_rows)[ids]
        return ends - self._starts[ids]

    def _ids(self, hashes: Iterable[str]) -> IntArray:
        import numpy as np

        found = np.fromiter(map(self._hid.get, hashes, repeat(-1)), dtype=np.int64)
        mask = np.zeros(len(self._hashes), dtype=bool)
        mask[found[found >= 0]] = True  # dedupes and sorts in O(n)
        return np.flatnonzero(mask)

    def search(
        self, query: FloatMatrix, hashes: Collection[str] | None, k: int
    ) -> list[tuple[str, float]]:
        """Top ``k`` (hash, best-chunk cosine), restricted to ``hashes`` when given."""
        import numpy as np

        with self._lock:
            if not self.usable or k <= 0:
                return []
            ids = np.arange(len(self._hashes)) if hashes is None else self._ids(hashes)
            if not len(ids):
                return []
            best = self._best(query, ids)
            k = min(k, len(ids))
            top = np.argpartition(-best, k - 1)[:k]
            ranked = sorted(top.tolist(), key=lambda i: (-best[i], self._hashes[ids[i]]))
            return [(self._hashes[ids[i]], float(best[i])) for i in ranked]

    def cosines(self, query: FloatMatrix, hashes: Iterable[str]) -> dict[str, float]:
        """Best-chunk cosine for each of ``hashes`` that has vectors (others are absent)."""
        with self._lock:
            if not self.usable:
                return {}
            ids = self._ids(hashes)
            if not len(ids):
                return {}
            best = self._best(query, ids)
            return {self._hashes[i]: float(s) for i, s in zip(ids.tolist(), best, strict=True)}

    # -- writing ---------------------------------------------------------------------------

    def ensure_dir(self) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        gitignore = self.cache_dir / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, b"*\n")

    def add(self, items: Mapping[str, FloatMatrix]) -> int:
        """Add vectors (hash → (n_chunks, dim)) as ONE new segment; returns rows added.

        Hashes already held are skipped. A failed write is reported in ``last_error`` and
        the vectors still serve from memory for this process.
        """
        import numpy as np

        with self._lock:
            if self.state == "mismatch":
                raise EmbedError("the vector cache holds another model's vectors; rebuild it")
            fresh = {h: np.atleast_2d(np.asarray(v, np.float32)) for h, v in items.items()}
            fresh = {h: v for h, v in fresh.items() if h not in self._hid and v.shape[0]}
            bad = [h for h, v in fresh.items() if not np.isfinite(v).all()]
            if bad:  # never stored: a NaN row would poison every cosine it meets
                log.warning("vector cache: refused %d non-finite vectors", len(bad))
                fresh = {h: v for h, v in fresh.items() if h not in bad}
            if not fresh:
                return 0
            dims = {v.shape[1] for v in fresh.values()}
            if len(dims) != 1 or (self._dim and dims != {self._dim}):
                raise EmbedError(
                    f"vectors of dim {sorted(dims)} do not fit the cache dim {self._dim}"
                )
            matrix = np.ascontiguousarray(np.concatenate(list(fresh.values())))
            spans = packed([(h, v.shape[0]) for h, v in fresh.items()])
            name = segment_name(self.fingerprint, list(fresh), npy_bytes(matrix))
            keys_path = self.cache_dir / f"{name}.keys.jsonl"
            npy_path = self.cache_dir / f"{name}.npy"
            try:
                self.ensure_dir()
                write_group(keys_path, npy_path, self.fingerprint, spans, matrix)
                self._segments.append((keys_path, npy_path))
                self._disk_rows += matrix.shape[0]
            except OSError as exc:
                self.last_error = f"cannot write {keys_path}: {exc}"
                log.warning("vector cache: %s (vectors kept in memory only)", self.last_error)
            self._append(spans, matrix)
            return int(matrix.shape[0])

    def needs_compaction(self, live: Collection[str]) -> bool:
        """More than ``max_segments`` segments, or dead rows above ``max_dead_fraction``."""
        with self._lock:
            if self.state == "mismatch" or not self._disk_rows:
                return False
            live_rows = int(self._counts(self._ids(live)).sum())
            dead = self._disk_rows - live_rows
            return len(self._segments) > self.max_segments or (
                dead > self.max_dead_fraction * self._disk_rows
            )

    def compact(self, live: Collection[str]) -> None:
        """Write a new base holding exactly the ``live`` rows held; remove what it replaces.

        Only files this process loaded or wrote are removed; segments synced in since
        then stay for the next load. Stale temp files and old orphans go too.
        """
        with self._lock:
            if self.state == "mismatch":
                return
            ids = self._ids(live)
            counts = self._counts(ids)
            matrix = self._mat[_rows_of(self._starts[ids], counts)]
            spans = packed(
                zip([self._hashes[i] for i in ids.tolist()], counts.tolist(), strict=True)
            )
            replaced = [p for group in self._segments for p in group]
            if self._base:
                replaced.append(self._base[1])
            npy_path = self._write_base(spans, matrix)
            for path in replaced:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            remove_stale(self.cache_dir, npy_path.name)

    def _write_base(self, spans: list[Span], matrix: FloatMatrix) -> Path:
        """Write ``matrix`` as the next base generation (keys file last: the commit point)
        and make it all this cache holds in memory. Raises OSError when it cannot write."""
        self.ensure_dir()
        generation = self._generation + 1
        while (self.cache_dir / f"vectors-{generation:06d}.npy").exists():
            generation += 1
        npy_path = self.cache_dir / f"vectors-{generation:06d}.npy"
        write_group(self.cache_dir / KEYS_FILE, npy_path, self.fingerprint, spans, matrix)
        self._reset()
        self._append(spans, matrix)
        self._base, self._generation = (self.cache_dir / KEYS_FILE, npy_path), generation
        self._disk_rows = int(matrix.shape[0])
        return npy_path

    def adopt(self, rebuilt: VectorCache, live: Collection[str]) -> None:
        """Swap in a rebuild: ``rebuilt``'s ``live`` rows become this cache's new base, then
        every older vector file here (any fingerprint) is deleted. Until the new keys file
        lands, the old cache is intact and serving; a failure leaves it so."""
        with self._lock, rebuilt._lock:
            ids = rebuilt._ids(live)
            counts = rebuilt._counts(ids)
            matrix = rebuilt._mat[_rows_of(rebuilt._starts[ids], counts)]
            spans = packed(
                zip([rebuilt._hashes[i] for i in ids.tolist()], counts.tolist(), strict=True)
            )
            old = [p for p in self._listdir() if OURS.fullmatch(p.name) and p.is_file()]
            self.fingerprint = dict(rebuilt.fingerprint)
            self._generation = max(self._generation, rebuilt._generation)
            npy_path = self._write_base(spans, matrix)
            for path in old:
                if path.name != npy_path.name:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            self.state, self.last_error, self.dropped = "ready", None, []

    def clear(self) -> None:
        """Delete every vector file (any fingerprint) and start empty: the rebuild path."""
        with self._lock:
            for path in [self.cache_dir / KEYS_FILE, *self._listdir()]:
                if path.name == KEYS_FILE or OURS.fullmatch(path.name):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            self._reset()
            self.state, self.last_error, self.dropped = "ready", None, []

    def stats(self) -> dict[str, object]:
        with self._lock:
            return {
                "state": self.state,
                "model": self.fingerprint.get("model"),
                "dim": self._dim,
                "hashes": len(self._hashes),
                "rows": self._n_rows,
                "disk_rows": self._disk_rows,
                "segments": len(self._segments),
                "base": self._base[1].name if self._base else None,
                "dropped": list(self.dropped),
                "last_error": self.last_error,
            }


def _rows_of(starts: IntArray, counts: IntArray) -> IntArray:
    """Row indices of spans given by first row and row count, in order (vectorised)."""
    import numpy as np

    offsets = np.cumsum(counts) - counts
    rows: IntArray = np.arange(int(counts.sum())) + np.repeat(starts - offsets, counts)
    return rows
