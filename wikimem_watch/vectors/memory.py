"""The in-memory side of the vector cache: one float32 matrix, a hash index, brute-force search.

``VectorMatrix`` holds each content hash's rows once (a hash's chunks are contiguous rows),
however many files on disk hold it, and counts for each hash how many of those files do
(``refs``), so the cache can tell live rows on disk from dead ones without reading a file.
It does no I/O and takes no lock: ``VectorCache`` owns both.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING

from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.files import Span, packed

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    IntArray = npt.NDArray[np.int64]

__all__ = ["VectorMatrix", "rows_of"]


class VectorMatrix:
    """Content hash → rows, grown in place (capacity × 1.25, so appends are amortised O(1))."""

    def __init__(self, dim: int) -> None:
        import numpy as np

        self.dim = dim
        self.mat: FloatMatrix = np.zeros((0, max(dim, 1)), dtype=np.float32)
        self.starts: IntArray = np.zeros(0, dtype=np.int64)
        self.refs: IntArray = np.zeros(0, dtype=np.int64)  # files on disk holding each hash
        self.n_rows = 0
        self.hashes: list[str] = []
        self.hid: dict[str, int] = {}

    def append(self, spans: list[Span], matrix: FloatMatrix) -> None:
        """Add the rows of hashes not held yet (hashes already held are skipped)."""
        import numpy as np

        spans = [s for s in spans if s[0] not in self.hid]
        if not spans:
            return
        counts = np.array([n for _, _, n in spans], dtype=np.int64)
        rows = rows_of(np.array([s for _, s, _ in spans], dtype=np.int64), counts)
        self.dim = self.dim or int(matrix.shape[1])
        need = self.n_rows + len(rows)
        if need > self.mat.shape[0] or self.mat.shape[1] != self.dim:
            capacity = max(need + need // 8, self.mat.shape[0] * 5 // 4, 64)
            grown = np.zeros((capacity, self.dim), np.float32)
            grown[: self.n_rows] = self.mat[: self.n_rows]
            self.mat = grown
        self.mat[self.n_rows : need] = matrix[rows]
        self.starts = np.concatenate([self.starts, self.n_rows + np.cumsum(counts) - counts])
        self.refs = np.concatenate([self.refs, np.zeros(len(spans), dtype=np.int64)])
        for h, _, _ in spans:
            self.hid[h] = len(self.hashes)
            self.hashes.append(h)
        self.n_rows = need

    def ref(self, hashes: Iterable[str], delta: int) -> None:
        """Count one more (``delta`` 1) or one fewer (-1) file on disk holding ``hashes``."""
        ids = self.ids(hashes)
        self.refs[ids] += delta

    def live_rows_on_disk(self, live: Iterable[str]) -> int:
        """Rows of the ``live`` hashes that some file on disk holds (each hash once)."""
        ids = self.ids(live)
        ids = ids[self.refs[ids] > 0]
        return int(self.counts(ids).sum())

    def gather(self, hashes: Sequence[str]) -> tuple[list[Span], FloatMatrix]:
        """The rows of ``hashes`` (held ones, first occurrence, in the given order), packed."""
        import numpy as np

        order = [self.hid[h] for h in dict.fromkeys(hashes) if h in self.hid]
        ids = np.array(order, dtype=np.int64)
        counts = self.counts(ids)
        matrix = np.ascontiguousarray(self.mat[rows_of(self.starts[ids], counts)])
        spans = packed(zip([self.hashes[i] for i in order], counts.tolist(), strict=True))
        return spans, matrix

    # -- search ----------------------------------------------------------------------------

    def ids(self, hashes: Iterable[str]) -> IntArray:
        """Sorted, deduplicated ids of the held ``hashes`` (O(n) through a mask)."""
        import numpy as np

        found = np.fromiter(map(self.hid.get, hashes, repeat(-1)), dtype=np.int64)
        mask = np.zeros(len(self.hashes), dtype=bool)
        mask[found[found >= 0]] = True
        return np.flatnonzero(mask)

    def counts(self, ids: IntArray) -> IntArray:
        import numpy as np

        ends: IntArray = np.append(self.starts[1:], self.n_rows)[ids]
        return ends - self.starts[ids]

    def best(self, query: FloatMatrix, ids: IntArray) -> FloatMatrix:
        """Best-chunk cosine of ``query`` for each hash id in ``ids``."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).ravel()
        if q.shape[0] != self.dim:
            raise EmbedError(f"query has dim {q.shape[0]}, the cache holds dim {self.dim}")
        if len(ids) * 4 >= len(self.hashes):  # dense: one matrix-vector product
            scores = self.mat[: self.n_rows] @ q
            if self.n_rows > len(self.hashes):  # some hash has several chunks
                scores = np.maximum.reduceat(scores, self.starts)
            best: FloatMatrix = scores[ids]
            return best
        starts, counts = self.starts[ids], self.counts(ids)
        offsets = np.cumsum(counts) - counts
        best = np.maximum.reduceat(self.mat[rows_of(starts, counts)] @ q, offsets)
        return best

    def search(
        self, query: FloatMatrix, hashes: Collection[str] | None, k: int
    ) -> list[tuple[str, float]]:
        """Top ``k`` (hash, best-chunk cosine), restricted to ``hashes`` when given."""
        import numpy as np

        ids = np.arange(len(self.hashes)) if hashes is None else self.ids(hashes)
        if not len(ids) or k <= 0:
            return []
        best = self.best(query, ids)
        k = min(k, len(ids))
        top = np.argpartition(-best, k - 1)[:k]
        ranked = sorted(top.tolist(), key=lambda i: (-best[i], self.hashes[ids[i]]))
        return [(self.hashes[ids[i]], float(best[i])) for i in ranked]

    def cosines(self, query: FloatMatrix, hashes: Iterable[str]) -> dict[str, float]:
        """Best-chunk cosine for each of ``hashes`` that is held (others are absent)."""
        ids = self.ids(hashes)
        if not len(ids):
            return {}
        best = self.best(query, ids)
        return {self.hashes[i]: float(s) for i, s in zip(ids.tolist(), best, strict=True)}


def rows_of(starts: IntArray, counts: IntArray) -> IntArray:
    """Row indices of spans given by first row and row count, in order (vectorised)."""
    import numpy as np

    offsets = np.cumsum(counts) - counts
    rows: IntArray = np.arange(int(counts.sum())) + np.repeat(starts - offsets, counts)
    return rows
