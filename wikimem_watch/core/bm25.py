"""An incremental BM25 inverted index. No I/O; the engine is its only caller.

Documents are added and removed one at a time, and the corpus statistics (document count,
total length, document frequency per term) are kept exact at every step, so the scores after
any edit sequence equal those of a fresh build. Postings live in ``array('i')`` buffers that
numpy reads without copying, which keeps memory near 8 bytes a posting and lets one query
score every candidate with a few vector operations.

Removal marks a document's slot dead (a tombstone) and queues its terms; scoring masks dead
slots, so every query is exact. :meth:`Bm25Index.flush` (called by the engine after each
batch of changes) compacts once the tombstones pass a share of the index, dropping dead
postings from just the touched terms and freeing the slots: an edit costs O(its own terms)
amortised, whatever the size of the corpus (ADR-0014).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
COMPACT_MIN = 1024  # dead slots kept before a compaction is worth its pass
COMPACT_FRACTION = 0.125  # ... or this share of the live documents, whichever is larger


def _stable_order(values: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    """``np.argsort(values, kind="stable")`` for non-negative int32 values, as two 16-bit
    radix passes (numpy radix-sorts 16-bit keys): about twice as fast at 10^6 and more."""
    low = (values & 0xFFFF).astype(np.uint16)
    high = (values >> 16).astype(np.uint16)
    order = np.argsort(low, kind="stable")
    return order[np.argsort(high[order], kind="stable")]


def _counted(keys: I64) -> tuple[I64, I64]:
    """``np.unique(keys, return_counts=True)`` for non-negative keys, by radix passes when
    they fit in 31 bits (a batch's (document, term) keys do until ~10^9 of them)."""
    if keys.size == 0 or int(keys.max()) >= 2**31:
        return np.unique(keys, return_counts=True)
    ordered = keys[_stable_order(keys.astype(np.int32))]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    counts = np.diff(np.append(starts, ordered.size))
    return ordered[starts], counts


class Bm25Index:
    """BM25 (Lucene's non-negative idf) over string-keyed documents."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._term_id: dict[str, int] = {}
        self._terms: list[str] = []
        self._df: list[int] = []
        self._post_slot: list[array[int]] = []
        self._post_tf: list[array[int]] = []
        self._slot_of: dict[str, int] = {}
        self._key_of: list[str | None] = []
        self._doc_terms: list[array[int] | None] = []
        # After a snapshot load, the loaded documents' term ids stay in one flat buffer
        # (``_flat_terms[_flat_at[s]:_flat_at[s + 1]]``) until a slot is removed: building
        # an array per document would cost ~2 µs each at every start (ADR-0015).
        self._flat_terms = np.zeros(0, dtype=np.int32)
        self._flat_at = np.zeros(1, dtype=np.int64)
        self._doc_len = np.zeros(1024, dtype=np.float64)
        self._alive = np.zeros(1024, dtype=bool)
        self._free: list[int] = []
        self._dead: list[int] = []
        self._dirty_terms: set[int] = set()
        self._total_len = 0

    @classmethod
    def from_postings(
        cls,
        keys: Sequence[str],
        terms: Sequence[str],
        counts: npt.NDArray[np.int32],
        slots: npt.NDArray[np.int32],
        tfs: npt.NDArray[np.int32],
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> Bm25Index:
        """An index holding ``keys`` at slots 0..n-1 from term-major postings: term ``t``
        has the next ``counts[t]`` (slot, tf) pairs, slots ascending (a snapshot, ADR-0015).

        The statistics (df, lengths, totals) are recomputed here, never taken on trust; the
        caller has checked shapes and ranges (``snapshot_check.check_postings``).
        """
        index = cls(k1, b)
        n = len(keys)
        index._term_id = {t: i for i, t in enumerate(terms)}
        index._terms = list(terms)
        index._slot_of = {k: i for i, k in enumerate(keys)}
        if len(index._slot_of) != n or len(index._term_id) != len(terms):
            raise ValueError("from_postings: a key or a term appears twice")
        index._key_of = list(keys)
        capacity = max(1024, n)
        index._doc_len = np.zeros(capacity, dtype=np.float64)
        index._doc_len[:n] = np.bincount(slots, weights=tfs, minlength=n)
        index._alive = np.zeros(capacity, dtype=bool)
        index._alive[:n] = True
        index._total_len = int(index._doc_len.sum())
        ends = np.cumsum(counts, dtype=np.int64).tolist()
        starts = [0, *ends[:-1]] if ends else []
        slot_bytes = slots.astype("<i4").tobytes()
        tf_bytes = tfs.astype("<i4").tobytes()
        index._df = counts.tolist()
        index._post_slot = [
            array("i", slot_bytes[a * 4 : e * 4]) for a, e in zip(starts, ends, strict=True)
        ]
        index._post_tf = [
            array("i", tf_bytes[a * 4 : e * 4]) for a, e in zip(starts, ends, strict=True)
        ]
        del slot_bytes, tf_bytes
        # Each document's term ids, ascending: the postings regrouped by slot.
        tids = np.repeat(np.arange(len(terms), dtype=np.int32), counts)
        index._flat_terms = tids[_stable_order(slots)]
        index._flat_at = np.concatenate([[0], np.cumsum(np.bincount(slots, minlength=n))])
        index._doc_terms = [None] * n
        return index

    # ------------------------------------------------------------------ mutation

    def __len__(self) -> int:
        return len(self._slot_of)

    @property
    def avg_doc_len(self) -> float:
        return self._total_len / len(self._slot_of) if self._slot_of else 0.0

    @property
    def capacity(self) -> int:
        """One past the highest slot in use; per-slot arrays kept by callers need this size."""
        return len(self._key_of)

    def slot(self, key: str) -> int | None:
        return self._slot_of.get(key)

    def key(self, slot: int) -> str | None:
        return self._key_of[slot]

    def upsert(self, key: str, tokens: Sequence[str]) -> int:
        """Add (or replace) one document; returns its slot."""
        return self.upsert_many([(key, tokens)])[0]

    def upsert_many(self, docs: Sequence[tuple[str, Sequence[str]]]) -> list[int]:
        """Add (or replace) documents; returns their slots, in order.

        The batch is counted and grouped with a few numpy passes over all its tokens at
        once: term frequencies per document, then postings appended term by term (one
        buffer append per distinct term of the batch, not one per (term, document) pair).
        New terms get ids in the order of their first occurrence, as one by one would.
        """
        if len({key for key, _ in docs}) != len(docs):
            raise ValueError("upsert_many: a key appears twice")
        for key, _ in docs:
            self.remove(key)
        if not docs:
            return []
        lens = [len(tokens) for _, tokens in docs]
        flat = list(chain.from_iterable(tokens for _, tokens in docs))
        term_id = self._term_id
        found = np.fromiter(map(term_id.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))
        new_at = np.flatnonzero(found < 0)
        if new_at.size:  # new terms: numbered in order of first occurrence
            new = list(map(flat.__getitem__, new_at.tolist()))
            self._add_terms(dict.fromkeys(new))
            found[new_at] = list(map(term_id.__getitem__, new))
        slots = [self._free.pop() if self._free else self._new_slot() for _ in docs]
        for (key, _), slot in zip(docs, slots, strict=True):
            self._slot_of[key] = slot
            self._key_of[slot] = key
        at = np.asarray(slots, dtype=np.int64)
        self._doc_len[at] = lens
        self._alive[at] = True
        self._total_len += sum(lens)
        if not flat:
            for slot in slots:
                self._doc_terms[slot] = array("i")
            return slots
        # (document, term) pairs as one sortable key: ascending by document, then term id.
        width = len(self._terms)
        pairs = np.repeat(np.arange(len(docs), dtype=np.int64) * width, lens)
        pairs += found
        pairs, tfs = _counted(pairs)
        doc_of, tids = np.divmod(pairs, width)
        tids32 = tids.astype(np.int32)
        # Each document's distinct term ids, ascending (as a snapshot load has them).
        tid_bytes = tids32.tobytes()
        ends = np.cumsum(np.bincount(doc_of, minlength=len(docs))).tolist()
        start = 0
        for slot, end in zip(slots, ends, strict=True):
            self._doc_terms[slot] = array("i", tid_bytes[start * 4 : end * 4])
            start = end
        # Postings: grouped by term, documents in batch order within a term.
        order = _stable_order(tids32)
        tid_sorted = tids32[order]
        slot_bytes = at[doc_of[order]].astype(np.int32).tobytes()
        tf_bytes = tfs[order].astype(np.int32).tobytes()
        bounds = np.flatnonzero(np.diff(tid_sorted)) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), int(tid_sorted.size)]
        df, post_slot, post_tf = self._df, self._post_slot, self._post_tf
        for tid, a, b in zip(tid_sorted[starts].tolist(), starts, ends, strict=True):
            df[tid] += b - a
            post_slot[tid].frombytes(slot_bytes[a * 4 : b * 4])
            post_tf[tid].frombytes(tf_bytes[a * 4 : b * 4])
        return slots

    def _add_terms(self, terms: Iterable[str]) -> None:
        """Number terms seen for the first time, in the order given."""
        new = list(terms)
        base = len(self._terms)
        self._term_id.update(zip(new, range(base, base + len(new)), strict=True))
        self._terms.extend(new)
        self._df.extend(repeat(0, len(new)))
        self._post_slot.extend([array("i") for _ in new])
        self._post_tf.extend([array("i") for _ in new])

    def remove(self, key: str) -> bool:
        """Remove one document; False when it was not indexed."""
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return False
        tids = self._terms_of(slot)
        assert tids is not None
        for tid in tids:
            self._df[tid] -= 1
        self._dirty_terms.update(tids)
        self._total_len -= int(self._doc_len[slot])
        self._alive[slot] = False
        self._key_of[slot] = None
        self._doc_terms[slot] = None
        self._doc_len[slot] = 0.0
        self._dead.append(slot)
        return True

    def flush(self, force: bool = False) -> None:
        """Compact: drop dead postings from the terms they touched and free their slots.

        Removal leaves a tombstone (the slot stays dead and is masked in :meth:`score`), so
        one edit costs O(its own terms), not O(the posting lists it touches), which grow
        with the corpus. Compaction runs once the dead slots pass ``COMPACT_FRACTION`` of the
        live ones (at least ``COMPACT_MIN``): its cost, linear in the touched lists, is spread
        over that many edits, so an edit costs the same amortised at 10k and 1M entries.
        """
        if not self._dead:
            return
        if not force and len(self._dead) < max(COMPACT_MIN, COMPACT_FRACTION * len(self._slot_of)):
            return
        alive = self._alive
        for tid in self._dirty_terms:
            slots = np.frombuffer(self._post_slot[tid], dtype=np.int32)
            keep = alive[slots]
            if keep.all():
                continue
            tfs = np.frombuffer(self._post_tf[tid], dtype=np.int32)
            self._post_slot[tid] = array("i", slots[keep].tobytes())
            self._post_tf[tid] = array("i", tfs[keep].tobytes())
            if self._df[tid] == 0:
                # Forget the term entirely so the vocabulary never grows from churn alone.
                del self._term_id[self._terms[tid]]
                self._terms[tid] = ""
        self._free.extend(self._dead)
        self._dead.clear()
        self._dirty_terms.clear()

    def _terms_of(self, slot: int) -> array[int] | None:
        """The term ids of the live document at ``slot`` (``None``: no document)."""
        tids = self._doc_terms[slot]
        if tids is None and slot + 1 < len(self._flat_at) and self._alive[slot]:
            a, b = int(self._flat_at[slot]), int(self._flat_at[slot + 1])
            tids = array("i", self._flat_terms[a:b].tobytes())
        return tids

    def _new_slot(self) -> int:
        slot = len(self._key_of)
        self._key_of.append(None)
        self._doc_terms.append(None)
        if slot >= len(self._doc_len):
            grow = len(self._doc_len)
            self._doc_len = np.concatenate([self._doc_len, np.zeros(grow)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        return slot

    # ------------------------------------------------------------------- queries

    def score(self, terms: Iterable[str]) -> tuple[I64, F64]:
        """(slots, scores) of every document matching at least one of ``terms`` (deduplicated)."""
        tids = [
            t for t in dict.fromkeys(self._term_id.get(term) for term in terms) if t is not None
        ]
        if not tids or not self._slot_of:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        n = len(self._slot_of)
        avgdl = self.avg_doc_len or 1.0
        k1, b = self.k1, self.b
        scores = np.zeros(len(self._key_of), dtype=np.float64)
        for tid in tids:
            df = self._df[tid]
            if df == 0:
                continue
            slots = np.frombuffer(self._post_slot[tid], dtype=np.int32)
            tfs = np.frombuffer(self._post_tf[tid], dtype=np.int32).astype(np.float64)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            norm = k1 * (1.0 - b + b * self._doc_len[slots] / avgdl)
            scores[slots] += idf * tfs * (k1 + 1.0) / (tfs + norm)
        if self._dead:
            scores[~self._alive[: len(scores)]] = 0.0
        hit = np.flatnonzero(scores > 0.0)
        return hit.astype(np.int64), scores[hit]

    def matched_terms(self, slot: int, terms: Iterable[str]) -> list[str]:
        """Which of ``terms`` occur in the document at ``slot``, in query order."""
        tids = self._terms_of(slot)
        if tids is None:
            return []
        have = set(tids)
        return [t for t in dict.fromkeys(terms) if self._term_id.get(t, -1) in have]
