"""An incremental BM25 inverted index over numbered documents (slots). No I/O; the engine is
its only caller.

Documents are added and removed one at a time, and the corpus statistics (document count,
total length, document frequency per term) are kept exact at every step, so the scores after
any edit sequence equal those of a fresh build. A term's postings (slot, tf) live in one
pair of ``array('i')`` buffers that numpy reads without copying, or — for an index loaded
from a snapshot, until the term first changes — as a slice of two flat base arrays (one
object for all terms instead of two per term; ADR-0015). Either way, one query scores every
candidate with a few vector operations.

The index keeps no per-document list of terms: removing a document takes the tokens it was
added with (the engine derives them again from the stored entry, ADR-0018), checked against
the document's length; should they ever disagree, the postings are searched instead.

Removal marks a document's slot dead (a tombstone) and queues its terms; scoring masks dead
slots, so every query is exact. :meth:`Bm25Index.flush` (called by the engine after each
batch of changes) compacts once the tombstones pass a share of the index, dropping dead
postings from just the touched terms and freeing the slots: an edit costs O(its own terms)
amortised, whatever the size of the corpus (ADR-0014).

A cold build (:meth:`Bm25Index.start_bulk`) keeps its postings aside and lays them out as
the base arrays once, when :meth:`Bm25Index.settle` is called or anything first reads
postings or document frequencies (core/bulk.py; ADR-0019, addendum).
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

from .bm25_query import Bm25Queries
from .bulk import BulkPostings, narrowest

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
Tfs = npt.NDArray[np.integer]  # term frequencies: int32, or narrower in the base arrays
COMPACT_MIN = 1024  # dead slots kept before a compaction is worth its pass
COMPACT_FRACTION = 0.125  # ... or this share of the live documents, whichever is larger
# Terms given their own buffers before the rare ones among them are packed: at least this
# many, or an eighth of the vocabulary (so the copies of the base stay O(n log n) overall).
# Two arrays and their buffers cost a rare term ~200 bytes, and a cold build meets most of
# its terms early: waiting for 65,536 of them held ~13 MB of them at 100k entries. Packing
# much more often costs time: a packed term that gains a posting is copied out again.
PACK_TERMS = 16384
PACK_POSTINGS = 64  # a term with at most this many postings is rare

log = logging.getLogger(__name__)


class Bm25Index(Bm25Queries):
    """BM25 (Lucene's non-negative idf) over documents numbered by slot; the reads are
    :class:`~wikimem_watch.core.bm25_query.Bm25Queries`."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._term_id: dict[str, int] = {}
        self._terms: list[str] = []
        self._df: list[int] = []
        # A term's own postings, or None while they are the slice of the base arrays at
        # _base_at[tid], _base_len[tid] long: every term of a snapshot, and the rare terms
        # packed there by ``flush`` (an array object costs more than a rare term's postings).
        self._post_slot: list[array[int] | None] = []
        self._post_tf: list[array[int] | None] = []
        self._base_at = np.zeros(0, dtype=np.int64)
        self._base_len = np.zeros(0, dtype=np.int32)
        self._base_slots = np.zeros(0, dtype=np.int32)
        # The base's term frequencies in the narrowest type that holds them (almost always one
        # byte: 4 of the 8 bytes a posting took; ~7.5 MB at 100k entries; ADR-0015, addendum).
        self._base_tfs: Tfs = np.zeros(0, dtype=np.uint8)
        self._base_garbage = 0  # base postings of terms that have moved out
        self._fresh: set[int] = set()  # terms given their own buffers since the last pack
        self._unsorted: set[int] = set()  # terms whose postings are not in slot order
        self._doc_len = np.zeros(1024, dtype=np.float64)
        self._alive = np.zeros(1024, dtype=bool)
        self._slots = 0  # one past the highest slot ever used
        self._live = 0
        self._free: list[int] = []
        self._dead: list[int] = []
        self._dirty_terms: set[int] = set()
        self._total_len = 0
        self.forgotten = 0  # terms dropped at df 0 (their ids are never given again)
        # One-character query terms (bm25_query): the vocabulary by East-Asian character,
        # indexed up to term id ``_char_indexed``, and unions valid while ``changes`` holds.
        self._char_index: dict[str, list[int]] = {}
        self._char_indexed = 0
        self._char_memo: dict[str, tuple[int, tuple[I32, F64, int] | None]] = {}
        self.changes = 0  # counts add_many, remove and settle: what a union depends on
        # A cold build's postings, not yet in the base (its terms' df are 0 until then).
        self._bulk: BulkPostings | None = None

    @classmethod
    def from_postings(
        cls,
        n_docs: int,
        terms: Sequence[str],
        counts: I32,
        slots: I32,
        tfs: I32,
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> Bm25Index:
        """An index of ``n_docs`` documents at slots 0..n-1 from term-major postings: term
        ``t`` has the next ``counts[t]`` (slot, tf) pairs, slots ascending (a snapshot).

        The arrays are kept as they are (read-only is fine: a term copies its slice out the
        first time it changes). The statistics (df, lengths, totals) are recomputed here,
        never taken on trust; the caller has checked shapes and ranges.
        """
        index = cls(k1, b)
        index._term_id = {t: i for i, t in enumerate(terms)}
        if len(index._term_id) != len(terms):
            raise ValueError("from_postings: a term appears twice")
        index._terms = list(terms)
        index._df = counts.tolist()
        index._post_slot = [None] * len(terms)
        index._post_tf = [None] * len(terms)
        index._base_len = np.array(counts, dtype=np.int32)
        index._base_at = np.cumsum(counts, dtype=np.int64) - index._base_len
        index._base_slots, index._base_tfs = slots, narrowest(tfs)
        capacity = max(1024, n_docs)
        index._doc_len = np.zeros(capacity, dtype=np.float64)
        for at in range(0, slots.size, 1 << 20):  # bounded: weights are converted to float64
            part = slice(at, at + (1 << 20))
            index._doc_len[:n_docs] += np.bincount(slots[part], tfs[part], minlength=n_docs)
        index._alive = np.zeros(capacity, dtype=bool)
        index._alive[:n_docs] = True
        index._slots = index._live = n_docs
        index._total_len = int(index._doc_len.sum())
        return index

    # ------------------------------------------------------------------ mutation

    def __len__(self) -> int:
        return self._live

    @property
    def avg_doc_len(self) -> float:
        return self._total_len / self._live if self._live else 0.0

    @property
    def capacity(self) -> int:
        """One past the highest slot in use; per-slot arrays kept by callers need this size."""
        return self._slots

    def live_slots(self) -> I64:
        """Every slot that holds a document, ascending."""
        return np.flatnonzero(self._alive[: self._slots]).astype(np.int64)

    def alive(self, slot: int) -> bool:
        return 0 <= slot < self._slots and bool(self._alive[slot])

    def start_bulk(self) -> None:
        """Build in bulk from here (an index that never held a term or document; else
        nothing changes): added postings are laid out term-major when :meth:`settle` is
        called, or before anything reads postings, statistics of terms or removes."""
        if not self._terms and not self._slots:
            self._bulk = BulkPostings()

    def settle(self) -> None:
        """End a bulk build: its postings become the base arrays, as a snapshot's do, and
        the index goes on as an ordinary one. Nothing to do otherwise."""
        bulk, self._bulk = self._bulk, None
        if bulk is None:
            return
        self.changes += 1
        counts, slots, tfs = bulk.build(len(self._terms))
        self._df = counts.tolist()
        self._base_len = counts
        self._base_at = np.cumsum(counts, dtype=np.int64) - counts
        self._base_slots, self._base_tfs = slots, tfs

    def _settled(self) -> None:
        if self._bulk is not None:  # before anything reads postings or df
            self.settle()

    def add(self, tokens: Sequence[str]) -> int:
        """Add one document; returns its slot."""
        return self.add_many([tokens])[0]

    def add_many(self, docs: Sequence[Sequence[str]]) -> list[int]:
        """Add documents; returns their slots, in order.

        The batch is counted with numpy, and postings are appended term by term, not
        document by document: one buffer append per distinct term of the batch instead of
        one per (term, document) pair, and no per-document ``Counter`` (ADR-0019).
        """
        self.changes += 1
        new_from = self._slots
        reuse = [self._free.pop() for _ in range(min(len(self._free), len(docs)))]
        slots = reuse + self._new_slots(len(docs) - len(reuse))
        if not docs:
            return slots
        # In slot order, so each term's appended postings ascend; new terms get their ids
        # in order of first occurrence, as one document at a time would give them.
        order = sorted(range(len(docs)), key=slots.__getitem__)
        ranked = [docs[i] for i in order]
        lengths = np.fromiter(map(len, ranked), np.int64, len(ranked))
        in_slot_order = np.array([slots[i] for i in order], dtype=np.int64)
        tokens = list(chain.from_iterable(ranked))
        keys = np.fromiter(map(self._term_id.get, tokens, repeat(-1)), np.int64, len(tokens))
        new = np.flatnonzero(keys < 0).tolist()
        if new:  # new terms, given ids in order of first occurrence
            unseen = list(map(tokens.__getitem__, new))
            self._new_terms(list(dict.fromkeys(unseen)))
            keys[new] = np.fromiter(map(self._term_id.__getitem__, unseen), np.int64, len(new))
        del tokens
        self._doc_len[in_slot_order] = lengths
        self._alive[in_slot_order] = True
        self._total_len += int(lengths.sum())
        self._live += len(docs)
        if not keys.size:
            return slots
        # One key per token, (term, rank of its document): sorted, equal keys are one
        # posting and their count its tf, in term order and then slot order.
        n = len(docs)
        keys *= n
        keys += np.repeat(np.arange(n, dtype=np.int64), lengths)
        if len(self._terms) * n < 2**31:  # the same numbers, sorted as int32: ~40% faster
            keys = np.sort(keys.astype(np.int32)).astype(np.int64)
        else:
            keys.sort()
        first = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        tfs = np.diff(np.append(first, keys.size)).astype(np.int32)
        keys = keys[first]
        tids = keys // n
        posting_slots = in_slot_order[keys - tids * n].astype(np.int32)
        # Only a reused slot can fall below a term's last posting (never in a cold scan).
        reused = min(slots) < new_from
        if self._bulk is not None and not reused:  # above every posting kept so far
            self._bulk.add(tids, posting_slots, tfs)
            return slots
        self._settled()  # (a bulk build frees no slot: never needed)
        self._append(tids, posting_slots, tfs, reused=reused)
        return slots

    def _append(self, tids: I64, slots: I32, tfs: I32, *, reused: bool) -> None:
        """Append postings sorted by term (then slot) to each term's own buffers; ``reused``:
        some slots may lie below postings the terms already have."""
        cuts = np.flatnonzero(tids[1:] != tids[:-1]) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.append(cuts, tids.size).tolist()
        slot_bytes = memoryview(slots.tobytes())
        tf_bytes = memoryview(tfs.tobytes())
        df, unsorted, post_slot, post_tf = self._df, self._unsorted, self._post_slot, self._post_tf
        firsts = slots[starts].tolist()
        for tid, a, b, low in zip(
            tids[starts].tolist(), starts.tolist(), ends, firsts, strict=True
        ):
            df[tid] += b - a
            own_slots, own_tfs = post_slot[tid], post_tf[tid]
            if own_slots is None or own_tfs is None:
                own_slots, own_tfs = self._own(tid)
            if reused and own_slots and own_slots[-1] > low:
                unsorted.add(tid)  # a reused slot below the term's last one
            own_slots.frombytes(slot_bytes[4 * a : 4 * b])
            own_tfs.frombytes(tf_bytes[4 * a : 4 * b])

    def _new_terms(self, terms: list[str]) -> None:
        """Give ids to terms seen for the first time (distinct), in their order."""
        first, n = len(self._terms), len(terms)
        tids = range(first, first + n)
        self._term_id.update(zip(terms, tids, strict=True))
        self._terms += terms
        self._df += [0] * n
        if self._bulk is not None:  # their postings will be slices of the base
            self._post_slot += [None] * n
            self._post_tf += [None] * n
            return
        self._post_slot += [array("i") for _ in tids]
        self._post_tf += [array("i") for _ in tids]
        self._fresh.update(tids)

    def _own(self, tid: int) -> tuple[array[int], array[int]]:
        """The term's postings as its own buffers (copied out of the base the first time)."""
        own_slots, own_tfs = self._post_slot[tid], self._post_tf[tid]
        if own_slots is None or own_tfs is None:
            a = int(self._base_at[tid])
            b = a + int(self._base_len[tid])
            own_slots = array("i", self._base_slots[a:b].tobytes())
            own_tfs = array("i", self._base_tfs[a:b].astype(np.int32).tobytes())
            self._base_garbage += b - a
            self._fresh.add(tid)
            self._post_slot[tid], self._post_tf[tid] = own_slots, own_tfs
        return own_slots, own_tfs

    def postings(self, tid: int) -> tuple[I32, Tfs]:
        """(slots, tfs) of one term, dead slots included, without copying (the tfs of a
        term in the base arrays may be of a narrower integer type)."""
        self._settled()
        own_slots, own_tfs = self._post_slot[tid], self._post_tf[tid]
        if own_slots is None or own_tfs is None:
            a = int(self._base_at[tid])
            b = a + int(self._base_len[tid])
            return self._base_slots[a:b], self._base_tfs[a:b]
        return np.frombuffer(own_slots, dtype=np.int32), np.frombuffer(own_tfs, dtype=np.int32)

    def terms(self) -> Iterator[tuple[int, str]]:
        """(term id, term) of every term a live document holds."""
        self._settled()
        df = self._df
        return ((tid, term) for tid, term in enumerate(self._terms) if term and df[tid] > 0)

    def remove(self, slot: int, tokens: Sequence[str]) -> None:
        """Remove the document at ``slot``; ``tokens`` are the ones it was added with."""
        if not self.alive(slot):
            raise KeyError(f"no document at slot {slot}")
        self._settled()
        self.changes += 1
        counts = Counter(tokens)
        tids = [self._term_id.get(t, -1) for t in counts]
        if len(tokens) != self._doc_len[slot] or -1 in tids or not self._holds(slot, tids):
            log.warning("slot %d: tokens differ from the indexed ones; searching postings", slot)
            tids = self._scan_terms(slot)
        for tid in tids:
            self._df[tid] -= 1
        self._dirty_terms.update(tids)
        self._total_len -= int(self._doc_len[slot])
        self._alive[slot] = False
        self._doc_len[slot] = 0.0
        self._live -= 1
        self._dead.append(slot)

    def _holds(self, slot: int, tids: list[int]) -> bool:
        """Whether every term in ``tids`` has a posting at ``slot`` (checks the first one
        only when there are many: a cheap guard, not a proof)."""
        return all(self._has(tid, slot) for tid in tids[:2])

    def _has(self, tid: int, slot: int) -> bool:
        slots, _ = self.postings(tid)
        if tid in self._unsorted:
            return bool((slots == slot).any())
        at = int(np.searchsorted(slots, slot))
        return at < slots.size and int(slots[at]) == slot

    def _scan_terms(self, slot: int) -> list[int]:
        """Every term with a posting at ``slot``: a pass over all postings (a fallback)."""
        return [tid for tid, _ in self.terms() if self._has(tid, slot)]

    def flush(self, force: bool = False) -> None:
        """Compact: drop dead postings from the terms they touched and free their slots.

        Removal leaves a tombstone (the slot stays dead and is masked in :meth:`score`), so
        one edit costs O(its own terms), not O(the posting lists it touches), which grow
        with the corpus. Compaction runs once the dead slots pass ``COMPACT_FRACTION`` of the
        live ones (at least ``COMPACT_MIN``): its cost, linear in the touched lists, is spread
        over that many edits, so an edit costs the same amortised at 10k and 1M entries.
        """
        if self._bulk is not None:
            return  # nothing fresh nor dead in a bulk build
        if len(self._fresh) >= max(PACK_TERMS, len(self._terms) >> 3):
            self._pack()
        if not self._dead:
            return
        if not force and len(self._dead) < max(COMPACT_MIN, COMPACT_FRACTION * self._live):
            return
        alive = self._alive
        forgotten = self.forgotten
        for tid in self._dirty_terms:
            slots, tfs = self.postings(tid)
            keep = alive[slots]
            if keep.all():
                continue
            if self._post_slot[tid] is None:  # its slice of the base is garbage from now on
                self._base_garbage += slots.size
            self._post_slot[tid] = array("i", slots[keep].tobytes())
            self._post_tf[tid] = array("i", tfs[keep].astype(np.int32).tobytes())
            if self._df[tid] == 0:
                # Forget the term entirely so the vocabulary never grows from churn alone.
                del self._term_id[self._terms[tid]]
                self._terms[tid] = ""
                self.forgotten += 1
                self._unsorted.discard(tid)
        self._free.extend(self._dead)
        self._dead.clear()
        self._dirty_terms.clear()
        # A forgotten term still holds its id's entries in every per-term list: churn (an
        # editor's autosaves of half-typed words, numbers) would grow them for good. Once
        # they outnumber the live terms, renumber (in a flush that forgot terms, so the
        # callers that keep term ids, which watch ``forgotten``, drop them).
        held = len(self._terms) - len(self._term_id)
        if self.forgotten > forgotten and held > max(PACK_TERMS, len(self._term_id)):
            self._renumber()

    def _pack(self) -> None:
        """Move the rare terms among those given their own buffers since the last pack into
        the base arrays: two ``array`` objects cost ~200 bytes, a rare term's postings a few.
        The base is appended to (rewritten once half of it belongs to terms that left)."""
        small = [t for t in self._fresh if len(self._post_slot[t] or ()) <= PACK_POSTINGS]
        self._fresh.clear()
        if not small:
            return
        if 2 * self._base_garbage > self._base_slots.size:
            self._rebase()
        grow = len(self._terms) - self._base_at.size
        if grow > 0:
            self._base_at = np.concatenate([self._base_at, np.zeros(grow, dtype=np.int64)])
            self._base_len = np.concatenate([self._base_len, np.zeros(grow, dtype=np.int32)])
        lengths = np.array([len(self._post_slot[t] or ()) for t in small], dtype=np.int32)
        tids = np.array(small, dtype=np.int64)
        self._base_len[tids] = lengths
        self._base_at[tids] = self._base_slots.size + np.cumsum(lengths, dtype=np.int64) - lengths
        slots = np.frombuffer(b"".join(self._post_slot[t] or b"" for t in small), np.int32)
        tfs = narrowest(np.frombuffer(b"".join(self._post_tf[t] or b"" for t in small), np.int32))
        self._base_slots = np.concatenate([self._base_slots, slots])
        self._base_tfs = np.concatenate([self._base_tfs, tfs])  # the wider of the two types
        for t in small:
            self._post_slot[t] = self._post_tf[t] = None

    def _renumber(self) -> None:
        """Give the terms still held ids 0..n-1 in their order, dropping the forgotten ones
        from every per-term list (and their postings from the base)."""
        self._rebase()  # forgotten terms have left the base: it keeps only the terms in it
        keep = [tid for tid, term in enumerate(self._terms) if term]
        new_id = np.full(len(self._terms), -1, dtype=np.int64)
        new_id[keep] = np.arange(len(keep), dtype=np.int64)
        self._terms = [self._terms[t] for t in keep]
        self._term_id = {term: i for i, term in enumerate(self._terms)}
        self._df = [self._df[t] for t in keep]
        self._post_slot = [self._post_slot[t] for t in keep]
        self._post_tf = [self._post_tf[t] for t in keep]
        based = np.asarray(keep, dtype=np.int64)
        based = based[based < self._base_at.size]
        base_at = np.zeros(len(keep), dtype=np.int64)
        base_len = np.zeros(len(keep), dtype=np.int32)
        base_at[new_id[based]] = self._base_at[based]
        base_len[new_id[based]] = self._base_len[based]
        self._base_at, self._base_len = base_at, base_len
        self._fresh = {int(new_id[t]) for t in self._fresh if new_id[t] >= 0}
        self._unsorted = {int(new_id[t]) for t in self._unsorted if new_id[t] >= 0}
        self._char_index, self._char_indexed = {}, 0
        self._char_memo.clear()
        self.changes += 1

    def _rebase(self) -> None:
        """The base arrays without the postings of terms that have moved out of them."""
        based = np.array(
            [
                t
                for t in range(min(len(self._terms), self._base_at.size))
                if self._post_slot[t] is None
            ],
            dtype=np.int64,
        )
        lengths = self._base_len[based].astype(np.int64)
        starts = np.repeat(self._base_at[based] - (np.cumsum(lengths) - lengths), lengths)
        rows = starts + np.arange(int(lengths.sum()), dtype=np.int64)
        self._base_slots, self._base_tfs = self._base_slots[rows], self._base_tfs[rows]
        self._base_at[based] = np.cumsum(lengths) - lengths
        self._base_garbage = 0

    def _new_slots(self, n: int) -> list[int]:
        """``n`` slots never used before (the per-slot arrays doubled as needed)."""
        first = self._slots
        self._slots += n
        while self._slots > len(self._doc_len):
            grow = len(self._doc_len)
            self._doc_len = np.concatenate([self._doc_len, np.zeros(grow)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        return list(range(first, self._slots))
