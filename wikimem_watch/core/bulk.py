"""The postings of a cold build, kept as they come and laid out term by term once (ADR-0019,
addendum).

An index that grows from nothing appends each batch's postings to every term's own buffers
(two ``array.frombytes`` per distinct term of a batch: ~820k calls at 100k entries) and
later packs the rare terms into the base arrays. A fresh build needs neither: here each
batch's postings are kept as they are (sorted by term, then slot), and
:meth:`BulkPostings.build` writes the term-major base arrays of
:meth:`~.bm25.Bm25Index.from_postings` at the end, one vector scatter per batch. The
batches come in slot order, so each term's postings come out ascending.

Memory: a batch keeps its terms and their posting counts (4 + 2 bytes per distinct term)
and, per posting, its slot as an offset from the batch's first slot and its term frequency,
in the narrowest integers that hold them (usually 2 + 1 bytes, against the 4 + 1 of the
base, whose tfs also take the narrowest type that holds them all). Batches are joined into
chunks of ~256k postings, each array large enough for a mapping of its own (ADR-0018's
threshold), so the build returns a chunk's memory to the system as soon as it is written;
the base arrays are taken in small pages. The transient at the end (the base arrays and
what is left of the chunks) stays under the peak of the appends it replaces (at 100k
entries: ~12.5 MB of base and ~12.5 MB of chunks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


def narrow_type(limit: int) -> type[np.integer]:
    """The narrowest unsigned type that holds 0..``limit`` (int32 past uint16)."""
    for dtype in (np.uint8, np.uint16):
        if limit <= np.iinfo(dtype).max:
            return dtype
    return np.int32


def _narrow(values: npt.NDArray[np.integer], limit: int) -> npt.NDArray[np.integer]:
    """``values`` (all in 0..``limit``) in the narrowest unsigned type that holds ``limit``."""
    return values.astype(narrow_type(limit))


def narrowest(values: npt.NDArray[np.integer]) -> npt.NDArray[np.integer]:
    """Non-negative ``values`` in the narrowest type that holds them (themselves when that
    is already their type)."""
    dtype = narrow_type(int(values.max()) if values.size else 0)
    return values if values.dtype == dtype else values.astype(dtype)


def _small_pages(size: int, dtype: type[np.integer] = np.int32) -> npt.NDArray[np.integer]:
    """An empty int32 array whose pages become resident as they are written: without the
    2 MB pages numpy asks for above 4 MiB, whose first write brings in the whole page (the
    scatter writes into every one of them from the first chunk, ~19 MB at 100k entries,
    while the chunks it reads are still resident)."""
    core = getattr(np, "_core", None) or np.core  # numpy 2, else 1.x
    set_huge = getattr(core.multiarray, "_set_madvise_hugepage", None)
    if set_huge is None:
        return np.empty(size, dtype=dtype)
    was = set_huge(False)
    try:
        return np.empty(size, dtype=dtype)
    finally:
        set_huge(was)


CHUNK_POSTINGS = 1 << 18  # batches joined in a chunk: 512 kB of slot offsets, usually


@dataclass(slots=True)
class _Chunk:
    """Batches of postings, one after the other: per batch (distinct terms, postings,
    first slot) in ``batches``; per distinct term of a batch its id and posting count; per
    posting its slot minus its batch's first slot, and its tf."""

    batches: list[tuple[int, int, int]]
    tids: npt.NDArray[np.int32]
    runs: npt.NDArray[np.integer]
    slots: npt.NDArray[np.integer]
    tfs: npt.NDArray[np.integer]


class BulkPostings:
    """Postings of batches of new documents, to be laid out term-major once."""

    def __init__(self) -> None:
        self._chunks: list[_Chunk] = []
        self._open: list[_Chunk] = []  # batches not joined into a chunk yet
        self._open_size = 0
        self._df = np.zeros(1024, dtype=np.int64)  # postings per term id so far
        self.size = 0  # postings held
        self._max_tf = 0

    def add(self, tids: I64, slots: I32, tfs: I32) -> None:
        """Keep one batch's postings, sorted by term id and then slot; every slot lies above
        the slots of the batches before (a cold build only takes new slots)."""
        if not tids.size:
            return
        cuts = np.flatnonzero(tids[1:] != tids[:-1]) + 1
        starts = np.concatenate([[0], cuts])
        terms = tids[starts]
        runs = np.diff(np.append(starts, tids.size))
        top = int(terms[-1]) + 1
        if top > self._df.size:
            grown = np.zeros(max(top, 2 * self._df.size), dtype=np.int64)
            grown[: self._df.size] = self._df
            self._df = grown
        self._df[terms] += runs
        self._max_tf = max(self._max_tf, int(tfs.max()))
        first = int(slots.min())
        self._open.append(
            _Chunk(
                [(int(terms.size), int(tids.size), first)],
                terms.astype(np.int32),
                _narrow(runs, int(runs.max())),
                _narrow(slots - first, int(slots.max()) - first),
                _narrow(tfs, int(tfs.max())),
            )
        )
        self.size += int(tids.size)
        self._open_size += int(tids.size)
        if self._open_size >= CHUNK_POSTINGS:
            self._join()

    def _join(self) -> None:
        """The open batches as one chunk (arrays of mixed widths take the widest)."""
        parts, self._open, self._open_size = self._open, [], 0
        if parts:
            self._chunks.append(
                _Chunk(
                    [b for p in parts for b in p.batches],
                    np.concatenate([p.tids for p in parts]),
                    np.concatenate([p.runs for p in parts]),
                    np.concatenate([p.slots for p in parts]),
                    np.concatenate([p.tfs for p in parts]),
                )
            )

    def build(self, n_terms: int) -> tuple[I32, I32, npt.NDArray[np.integer]]:
        """(postings per term, slots, tfs) term-major for term ids 0..``n_terms``-1, as
        :meth:`~.bm25.Bm25Index.from_postings` takes them, the tfs in the narrowest type
        that holds them; empties this object."""
        self._join()
        counts = np.zeros(n_terms, dtype=np.int64)
        held = min(n_terms, self._df.size)
        counts[:held] = self._df[:held]
        fill = np.cumsum(counts) - counts  # where each term's next posting goes
        out_slots = _small_pages(self.size)
        out_tfs = _small_pages(self.size, narrow_type(self._max_tf))
        self._chunks.reverse()
        while self._chunks:
            chunk = self._chunks.pop()  # in the order added, each freed once written
            pair_at = post_at = 0
            for n_pairs, n_posts, first_slot in chunk.batches:
                tids = chunk.tids[pair_at : pair_at + n_pairs]
                runs = chunk.runs[pair_at : pair_at + n_pairs].astype(np.int64)
                at = np.cumsum(runs) - runs  # each term's first posting within the batch
                dest = np.repeat(fill[tids] - at, runs)
                dest += np.arange(n_posts, dtype=np.int64)
                posts = slice(post_at, post_at + n_posts)
                out_slots[dest] = chunk.slots[posts] + np.int32(first_slot)
                out_tfs[dest] = chunk.tfs[posts]
                fill[tids] += runs
                pair_at += n_pairs
                post_at += n_posts
            del chunk
        self._df = np.zeros(0, dtype=np.int64)
        self.size = self._max_tf = 0
        return counts.astype(np.int32), out_slots.astype(np.int32, copy=False), out_tfs
