"""The in-memory side of the vector cache: one float32 matrix, a hash index, brute-force search.

``VectorMatrix`` holds each content hash's rows once (a hash's chunks are contiguous rows),
however many files on disk hold it, and counts for each hash how many of those files do
(``refs``), so the cache can tell live rows on disk from dead ones without reading a file.
It takes no lock (``VectorCache`` owns it) and reads no cache file: the cache streams a
file's rows into ``reserve``d slots and ``commit``s the trusted ones. Where the rows live is
``rows.py``: a large matrix in an unlinked scratch file of the cache directory, mapped, so
its float32 rows are page cache rather than the process's heap (ADR-0021); every pass over
the rows (coding, the mean, a dense product above ``QUANTIZE_ROWS``) lets the pages it read
go, and rows read at random (the re-rank, cosines, ``gather``) are copied out by ``take``.

Above ``QUANTIZE_ROWS`` rows, a search of the whole matrix (the nearest entries, which may
join BM25's candidates) first ranks rows by the Hamming distance of binary codes (one sign
bit a dimension, after subtracting the rows' mean: 48 bytes a 384-d row), then scores the
best ``rerank_rows`` of them exactly in float32 (ADR-0007). Cosines of named hashes (BM25's
candidates) are always exact.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.files import Span, packed
from wikimem_watch.vectors.rows import RowStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    IntArray = npt.NDArray[np.int64]

__all__ = ["QUANTIZE_ROWS", "RERANK_MIN", "VectorMatrix", "rows_of"]

# Exact search costs one pass over rows × dim floats (~15 ms at 100k × 384, growing
# linearly); binary codes read 1/32 of that. Below this size exact is fast and simpler.
QUANTIZE_ROWS = 200_000
RERANK_MIN = 1024  # rows re-scored in float32 after the binary pass (at least 64 × k)
SCAN_ROWS = 65536  # rows a pass over the matrix handles at a time (bounded temporaries)


class VectorMatrix:
    """Content hash → rows, grown in place (capacity × 1.25, so appends are amortised O(1))."""

    def __init__(self, dim: int, scratch_dir: Path | None = None) -> None:
        import numpy as np

        self.dim = dim
        self.store = RowStore(dim, scratch_dir)  # anonymous memory, or a map (``rows.py``)
        self.starts: IntArray = np.zeros(0, dtype=np.int64)
        self.refs: IntArray = np.zeros(0, dtype=np.int64)  # files on disk holding each hash
        self.n_rows = 0
        self.hashes: list[str] = []
        self.hid: dict[str, int] = {}
        self.quantize_rows = QUANTIZE_ROWS
        self._codes: npt.NDArray[np.uint64] | None = None  # binary codes of rows [:_coded]
        self._center: FloatMatrix | None = None  # the mean the codes are taken against
        self._coded = 0

    @property
    def mat(self) -> FloatMatrix:
        """Every row slot (``capacity × dim``); rows ``[:n_rows]`` are held."""
        return self.store.array

    def append(self, spans: list[Span], matrix: FloatMatrix) -> None:
        """Add the rows of hashes not held yet (hashes already held are skipped)."""
        import numpy as np

        spans = [s for s in spans if s[0] not in self.hid]
        if not spans:
            return
        counts = np.array([n for _, _, n in spans], dtype=np.int64)
        rows = rows_of(np.array([s for _, s, _ in spans], dtype=np.int64), counts)
        tail = self.reserve(len(rows), int(matrix.shape[1]))
        for start in range(0, len(rows), SCAN_ROWS):  # bounded temporaries
            end = min(start + SCAN_ROWS, len(rows))
            tail[start:end] = matrix[rows[start:end]]
            self.settle(start, end)
        self._commit(packed(zip([h for h, _, _ in spans], counts.tolist(), strict=True)))

    def reserve(self, rows: int, dim: int) -> FloatMatrix:
        """Room for ``rows`` more rows: the slots ``[n_rows:n_rows + rows]``, to be filled
        (``settle`` each filled part) and then kept in part by ``commit``."""
        dim = self.dim or dim  # set for good by the first commit
        need = self.n_rows + rows
        if need > self.mat.shape[0] or self.mat.shape[1] != dim:
            capacity = max(need + need // 8, self.mat.shape[0] * 5 // 4, 64)
            self.store.grow(capacity, dim, self.n_rows)
        return self.mat[self.n_rows : need]

    def settle(self, start: int, end: int) -> None:
        """Reserved rows ``[start:end)`` are written: a mapped store lets their pages go."""
        self.store.release(self.n_rows + start, self.n_rows + end)

    def commit(self, spans: list[Span]) -> None:
        """Hold the reserved rows of ``spans`` (rows counted from the first reserved row,
        ascending, as a keys file lists them) whose hashes are not held yet."""
        import numpy as np

        spans = [s for s in spans if s[0] not in self.hid]
        if not spans:
            return
        counts = np.array([n for _, _, n in spans], dtype=np.int64)
        rows = rows_of(np.array([s for _, s, _ in spans], dtype=np.int64), counts)
        tail = self.mat[self.n_rows :]
        if not np.all(np.diff(rows) > 0):  # not as a keys file lists them: one copy
            tail[: len(rows)] = tail[rows]
        elif rows[-1] != len(rows) - 1:  # gaps to close: rows move down, a block at a time
            for start in range(0, len(rows), SCAN_ROWS):
                end = min(start + SCAN_ROWS, len(rows))
                tail[start:end] = tail[rows[start:end]]  # rows[end:] >= end: not yet moved
                self.settle(start, end)
        self._commit(packed(zip([h for h, _, _ in spans], counts.tolist(), strict=True)))

    def _commit(self, spans: list[Span]) -> None:
        import numpy as np

        self.dim = self.dim or int(self.mat.shape[1])
        counts = np.array([n for _, _, n in spans], dtype=np.int64)
        self.starts = np.concatenate([self.starts, self.n_rows + np.cumsum(counts) - counts])
        self.refs = np.concatenate([self.refs, np.zeros(len(spans), dtype=np.int64)])
        for h, _, _ in spans:
            self.hid[h] = len(self.hashes)
            self.hashes.append(h)
        self.n_rows += int(counts.sum())

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
        rows = rows_of(self.starts[ids], counts)
        matrix = np.empty((len(rows), self.mat.shape[1]), dtype=np.float32)
        for start in range(0, len(rows), SCAN_ROWS):
            end = min(start + SCAN_ROWS, len(rows))
            matrix[start:end] = self._take(rows[start:end])
        spans = packed(zip([self.hashes[i] for i in order], counts.tolist(), strict=True))
        return spans, matrix

    def subset(self, hashes: Sequence[str], scratch_dir: Path | None) -> VectorMatrix:
        """A new matrix of the rows of ``hashes`` (held ones, first occurrence, in the given
        order; no refs), copied a block at a time into its own store (a map when large)."""
        import numpy as np

        order = [self.hid[h] for h in dict.fromkeys(hashes) if h in self.hid]
        ids = np.array(order, dtype=np.int64)
        counts = self.counts(ids)
        rows = rows_of(self.starts[ids], counts)
        out = VectorMatrix(self.dim, scratch_dir)
        if not order:
            return out
        tail = out.reserve(len(rows), self.mat.shape[1])
        for start in range(0, len(rows), SCAN_ROWS):
            end = min(start + SCAN_ROWS, len(rows))
            tail[start:end] = self._take(rows[start:end])
            out.settle(start, end)
        out._commit(packed(zip([self.hashes[i] for i in order], counts.tolist(), strict=True)))
        return out

    def spans(self) -> list[Span]:
        """Every held hash's rows, in order (packed from row 0)."""
        import numpy as np

        counts = self.counts(np.arange(len(self.hashes)))
        return packed(zip(self.hashes, counts.tolist(), strict=True))

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
            scores = self.mat[: self.n_rows] @ q  # one call: BLAS's split decides the bits
            if self.n_rows >= self.quantize_rows:  # below, every query reads every row
                self.store.release()
            if self.n_rows > len(self.hashes):  # some hash has several chunks
                scores = np.maximum.reduceat(scores, self.starts)
            best: FloatMatrix = scores[ids]
            return best
        starts, counts = self.starts[ids], self.counts(ids)
        offsets = np.cumsum(counts) - counts
        best = np.maximum.reduceat(self._take(rows_of(starts, counts)) @ q, offsets)
        return best

    def _take(self, rows: IntArray) -> FloatMatrix:
        """A copy of ``rows``. Below ``quantize_rows`` every query reads every row, so a
        mapped store's pages stay resident and are read in place; above, read at random
        without mapping them (``RowStore.take``)."""
        if self.n_rows < self.quantize_rows:
            taken: FloatMatrix = self.mat[rows]
            return taken
        return self.store.take(rows)

    def search(
        self, query: FloatMatrix, hashes: Collection[str] | None, k: int
    ) -> list[tuple[str, float]]:
        """Top ``k`` (hash, best-chunk cosine), restricted to ``hashes`` when given."""
        import numpy as np

        if hashes is None and self.n_rows >= self.quantize_rows and k > 0:
            ids, best = self._nearest_by_codes(query, k)
        else:
            ids = np.arange(len(self.hashes)) if hashes is None else self.ids(hashes)
            if not len(ids) or k <= 0:
                return []
            best = self.best(query, ids)
        k = min(k, len(ids))
        top = np.argpartition(-best, k - 1)[:k]
        ranked = sorted(top.tolist(), key=lambda i: (-best[i], self.hashes[ids[i]]))
        return [(self.hashes[ids[i]], float(best[i])) for i in ranked]

    def _nearest_by_codes(self, query: FloatMatrix, k: int) -> tuple[IntArray, FloatMatrix]:
        """Candidate hash ids and their exact best-chunk cosines: the rows nearest in Hamming
        distance, re-scored in float32 (a hash's score: its best candidate chunk)."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).ravel()
        if q.shape[0] != self.dim:
            raise EmbedError(f"query has dim {q.shape[0]}, the cache holds dim {self.dim}")
        codes, center = self._coded_rows()
        distance = hamming(codes, binary_codes(q[None, :] > center)[0])
        n = min(self.n_rows, max(RERANK_MIN, 64 * k))
        rows = nearest_rows(distance, n)
        scores = self._take(rows) @ q
        owner = np.searchsorted(self.starts, rows, side="right") - 1  # rows ascend: owners too
        first = np.flatnonzero(np.diff(owner, prepend=-1))
        best: FloatMatrix = np.maximum.reduceat(scores, first)
        ids: IntArray = owner[first]
        return ids, best

    def _coded_rows(self) -> tuple[npt.NDArray[np.uint64], FloatMatrix]:
        """Binary codes of every row, one 64-bit word per row and 64 dimensions, stored word
        by word (``codes[w, row]``: a pass reads contiguous memory); only rows added since
        the last call are coded."""
        import numpy as np

        if self._center is None:  # the mean of the rows held when coding starts, kept after
            self._center = self._mean().astype(np.float32)
        if self._codes is None or self._codes.shape[1] < self.n_rows:
            grown = np.zeros(((self.dim + 63) // 64, self.mat.shape[0]), dtype=np.uint64)
            if self._codes is not None:
                grown[:, : self._coded] = self._codes[:, : self._coded]
            self._codes = grown
        for start in range(self._coded, self.n_rows, 65536):  # bounded temporaries
            end = min(start + 65536, self.n_rows)
            self._codes[:, start:end] = binary_codes(self.mat[start:end] > self._center).T
            self.store.release(start, end)
        self._coded = self.n_rows
        return self._codes[:, : self.n_rows], self._center

    def _mean(self) -> npt.NDArray[np.float64]:
        """``mat[:n_rows].mean(axis=0, dtype=float64)``, bit for bit, a block of rows at a
        time (each block's pages released): numpy sums axis 0 row after row, so each block
        is summed onto the running total as its first row."""
        import numpy as np

        total = np.zeros(self.mat.shape[1], dtype=np.float64)
        for start in range(0, self.n_rows, 4096):  # 4096 × 384 float64: 12.6 MB
            end = min(start + 4096, self.n_rows)
            total = np.concatenate([total[None, :], self.mat[start:end]]).sum(axis=0)
            self.store.release(start, end)
        mean: npt.NDArray[np.float64] = total / max(self.n_rows, 1)
        return mean

    def cosines(self, query: FloatMatrix, hashes: Iterable[str]) -> dict[str, float]:
        """Best-chunk cosine for each of ``hashes`` that is held (others are absent)."""
        ids = self.ids(hashes)
        if not len(ids):
            return {}
        best = self.best(query, ids)
        return {self.hashes[i]: float(s) for i, s in zip(ids.tolist(), best, strict=True)}


def nearest_rows(distance: npt.NDArray[np.uint16], n: int) -> IntArray:
    """The ``n`` rows of smallest ``distance``, ascending by row; of the rows at the cut-off
    distance, the first ones. Distances are small integers, so a histogram finds the cut-off
    in one pass (at 1M rows ~2 ms, against ~8 ms for ``argpartition``)."""
    import numpy as np

    counts = np.cumsum(np.bincount(distance))
    cut = int(np.searchsorted(counts, n))  # the smallest distance with n rows at or below it
    chosen = distance < cut
    chosen[np.flatnonzero(distance == cut)[: n - int(chosen.sum())]] = True
    rows: IntArray = np.flatnonzero(chosen)  # a mask: np.union1d would import numpy.ma
    return rows


def rows_of(starts: IntArray, counts: IntArray) -> IntArray:
    """Row indices of spans given by first row and row count, in order (vectorised)."""
    import numpy as np

    offsets = np.cumsum(counts) - counts
    rows: IntArray = np.arange(int(counts.sum())) + np.repeat(starts - offsets, counts)
    return rows


def binary_codes(bits: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
    """Rows of booleans packed into 64-bit words (zero-padded to a whole word)."""
    import numpy as np

    packed_bits = np.packbits(bits, axis=1)
    words = (bits.shape[1] + 63) // 64
    padded = np.zeros((bits.shape[0], words * 8), dtype=np.uint8)
    padded[:, : packed_bits.shape[1]] = packed_bits
    codes: npt.NDArray[np.uint64] = padded.view(np.uint64)
    return codes


def hamming(codes: npt.NDArray[np.uint64], query: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint16]:
    """Bits that differ between ``query`` (one code) and each column of ``codes`` (words ×
    rows, as ``VectorMatrix`` keeps them)."""
    import numpy as np

    distance = np.zeros(codes.shape[1], dtype=np.uint16)  # at most 64 × words
    table = None
    for word, bits in zip(codes, query.tolist(), strict=True):
        diff = np.bitwise_xor(word, np.uint64(bits))
        if hasattr(np, "bitwise_count"):  # numpy >= 2.0
            distance += np.bitwise_count(diff)
        else:  # a byte table: the same counts, a little slower
            if table is None:
                table = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(1)
            distance += table[diff.view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.uint16)
    return distance
