"""The read side of the BM25 index: scores, matched terms and the information of a text.

A mixin of :class:`~wikimem_watch.core.bm25.Bm25Index`, which owns the postings and the
statistics; nothing here changes them (a cold build's postings are laid out first, as any
read does: ``_settled``).

A query term that is one East-Asian character ("猫", "车", "밥") is scored as that character,
not as a term of its own: the text indexes CJK, kana and Hangul runs as bigrams, so a
character inside a sentence exists only inside them ("的猫", "猫生"). Its postings are the
union of the postings of every one- and two-character term that holds it, its tf the
character's count (read from the bigrams it starts and ends), its df the documents of the
union (ADR-0002, addendum). Nothing more is indexed for it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .tokenize import EAST_SCRIPTS, compiled

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]

# One character of a script the tokenizer cuts into bigrams; its lowest code point.
_EAST = f"[{EAST_SCRIPTS}]"
_EAST_LOWEST = "\u1100"

MAX_CHARS = 16  # one-character terms a query scores as characters (the rest as terms)
CHAR_MEMO_SIZE = 64  # characters whose union is remembered until the index changes


def is_char_term(term: str) -> bool:
    """A query term that is one East-Asian character (scored as the character, above)."""
    return len(term) == 1 and term >= _EAST_LOWEST and compiled(_EAST).match(term) is not None


class Bm25Queries:
    """Reads over the index's state (declared here for the type checker)."""

    k1: float
    b: float
    _term_id: dict[str, int]
    _df: list[int]
    _live: int
    _slots: int
    _doc_len: F64
    _alive: npt.NDArray[np.bool_]
    _dead: list[int]
    _unsorted: set[int]
    _terms: list[str]
    _post_slot: list[array[int] | None]
    _post_tf: list[array[int] | None]
    _base_at: I64
    _base_len: I32
    _base_slots: I32
    _base_tfs: npt.NDArray[np.integer]
    _char_index: dict[str, list[int]]
    _char_indexed: int
    _char_memo: dict[str, tuple[int, tuple[I32, F64, int] | None]]
    changes: int

    if TYPE_CHECKING:

        @property
        def avg_doc_len(self) -> float: ...

        def _settled(self) -> None: ...

        def postings(self, tid: int) -> tuple[I32, npt.NDArray[np.integer]]: ...

        def alive(self, slot: int) -> bool: ...

    def score(self, terms: Iterable[str]) -> tuple[I64, F64]:
        """(slots, scores) of every document matching at least one of ``terms`` (deduplicated)."""
        self._settled()
        if not self._live:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        distinct = list(dict.fromkeys(terms))
        as_chars = self._expanded_chars(distinct)
        found = [got for term in distinct if (got := self._query_postings(term, term in as_chars))]
        if not found:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        n = self._live
        avgdl = self.avg_doc_len or 1.0
        k1, b = self.k1, self.b
        scores = np.zeros(self._slots, dtype=np.float64)
        for slots, tf_ints, df in found:
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            # idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl)), in place: two
            # arrays the size of the postings instead of six (a common term's are MBs), the
            # same operations in the same order, so the same bits.
            denom = self._doc_len[slots]
            denom *= b
            denom /= avgdl
            denom += 1.0 - b
            denom *= k1
            tfs = tf_ints.astype(np.float64)
            denom += tfs
            tfs *= idf
            tfs *= k1 + 1.0
            tfs /= denom
            scores[slots] += tfs
        if self._dead:
            scores[~self._alive[: len(scores)]] = 0.0
        hit = np.flatnonzero(scores > 0.0)
        return hit.astype(np.int64), scores[hit]

    @staticmethod
    def _expanded_chars(distinct: list[str]) -> frozenset[str]:
        """The query's one-character terms scored as characters: the first ``MAX_CHARS``
        (a query of many spaced characters is rare, and each costs a union of postings)."""
        return frozenset([t for t in distinct if is_char_term(t)][:MAX_CHARS])

    def _query_postings(
        self, term: str, as_char: bool = False
    ) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.number], int] | None:
        """(slots, tfs, df) a query term is scored by, or None when no document holds it.
        The caller has settled the index (a cold build's df are 0 until then)."""
        if as_char:
            return self._char_postings(term)
        tid = self._term_id.get(term)
        if tid is None or self._df[tid] == 0:
            return None
        slots, tfs = self.postings(tid)
        return slots, tfs, self._df[tid]

    def _char_postings(self, char: str) -> tuple[I32, F64, int] | None:
        """One East-Asian character as a term: the union of the postings of the terms that
        hold it (sorted slots), its count in each document, and the live documents.

        A character inside a run starts one bigram and ends another, so its count is the
        larger of the two sums (a lone character, a term of its own, counts in both): exact
        unless, in one document, it both begins a run and ends one (then one short a time).
        Remembered until the index changes (a query scores it, then names its matches)."""
        memo = self._char_memo.get(char)
        if memo is not None and memo[0] == self.changes:
            return memo[1]
        parts = []
        for tid in self._char_term_ids(char):
            if self._df[tid]:
                slots, counts = self.postings(tid)
                term = self._terms[tid]
                parts.append((slots, counts, term[0] == char, term[-1] == char))
        found: tuple[I32, F64, int] | None = None
        if parts:
            held, at = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
            sums = [
                np.bincount(at, weights=np.concatenate([p[1] * p[side] for p in parts]))
                for side in (2, 3)  # as the first character of its terms, as the last
            ]
            tfs: F64 = np.maximum(sums[0], sums[1]).astype(np.float64)
            live = held[self._alive[held]] if self._dead else held
            found = (held.astype(np.int32), tfs, int(live.size)) if live.size else None
        if len(self._char_memo) >= CHAR_MEMO_SIZE:
            self._char_memo.clear()
        self._char_memo[char] = (self.changes, found)
        return found

    def _char_term_ids(self, char: str) -> list[int]:
        """Ids of the one- and two-character East-Asian terms holding ``char``, from one
        index of the vocabulary by character. Term ids are never given again (a dropped
        term's name becomes ""), so the index is extended by the terms added since; it is
        rebuilt only after ``flush`` renumbers the terms (which empties it)."""
        terms, index, done = self._terms, self._char_index, self._char_indexed
        if done < len(terms):
            # The East-Asian terms found by C-level iteration; the loop is over those only.
            unigram_or_bigram = compiled(f"{_EAST}{{1,2}}").fullmatch
            east = compress(range(done, len(terms)), map(unigram_or_bigram, terms[done:]))
            for tid in east:
                term = terms[tid]
                index.setdefault(term[0], []).append(tid)
                if len(term) == 2 and term[1] != term[0]:
                    index.setdefault(term[1], []).append(tid)
            self._char_indexed = len(terms)
        return index.get(char, [])

    def information(self, terms: Iterable[str]) -> float:
        """The sum of the idf of the distinct ``terms`` the index holds: how much a text with
        these terms says, in the units BM25 scores in (ADR-0009 §11)."""
        return self.idf_sum(self.term_ids(terms))

    def term_ids(self, terms: Iterable[str]) -> array[int]:
        """The ids of the distinct ``terms`` the index holds. An id stays the term's until
        ``forgotten`` (the terms dropped since the start) changes: a flush that drops terms
        may renumber the rest."""
        return array("i", {t for t in map(self._term_id.get, terms) if t is not None})

    def idf_sum(self, tids: Iterable[int]) -> float:
        """The sum of the idf of terms by id, by the current statistics (so exact after any
        edit); a term no live document holds counts 0."""
        self._settled()
        n, df = self._live, self._df
        return sum(
            math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for d in map(df.__getitem__, tids) if d
        )

    def idf_sums(self, groups: Sequence[array[int]]) -> F64:
        """``idf_sum`` of each group of term ids, in one pass over all of them (a query sums
        the terms of every candidate it weighs: ~20 groups of ~20 ids)."""
        self._settled()
        sizes = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
        out = np.zeros(len(groups))
        if not sizes.any():
            return out
        flat = array("i")
        for group in groups:
            flat.extend(group)
        df = np.fromiter(map(self._df.__getitem__, flat), dtype=np.float64, count=len(flat))
        with np.errstate(divide="ignore", invalid="ignore"):
            idf = np.log(1.0 + (self._live - df + 0.5) / (df + 0.5))
        idf[df == 0] = 0.0  # a term no live document holds counts 0, as in idf_sum
        starts = np.cumsum(sizes) - sizes
        held = sizes > 0
        out[held] = np.add.reduceat(idf, starts[held])
        return out

    def matched_terms_of(self, slots: Sequence[int], terms: Iterable[str]) -> list[list[str]]:
        """``matched_terms`` for several documents: one search per term, not per pair."""
        self._settled()
        want = [s if self.alive(s) else -1 for s in slots]
        rows = np.asarray(want, dtype=np.int64)
        out: list[list[str]] = [[] for _ in want]
        distinct = list(dict.fromkeys(terms))
        as_chars = self._expanded_chars(distinct)
        for term in distinct:
            got = self._query_postings(term, term in as_chars) if rows.size else None
            if got is None:
                continue
            held = got[0]  # a character's union is sorted; a term's postings may not be
            if term not in as_chars and self._term_id.get(term, -1) in self._unsorted:
                found = np.isin(rows, held)
            else:
                at = np.minimum(np.searchsorted(held, rows), max(held.size - 1, 0))
                found = (held[at] == rows) if held.size else np.zeros(rows.size, dtype=bool)
            for i in np.flatnonzero(found & (rows >= 0)).tolist():
                out[i].append(term)
        return out

    def matched_terms(self, slot: int, terms: Iterable[str]) -> list[str]:
        """Which of ``terms`` occur in the document at ``slot``, in query order."""
        return self.matched_terms_of([slot], terms)[0]

    def max_tf(self) -> int:
        """The largest term frequency of any posting (dead ones included); 0 for none."""
        self._settled()
        top = int(self._base_tfs.max()) if self._base_tfs.size else 0
        for own in self._post_tf:
            if own:
                top = max(top, int(np.frombuffer(own, dtype=np.int32).max()))
        return top

    def posting_blocks(self, size: int) -> Iterator[tuple[list[str], I32, I32, I32]]:
        """Every term's postings (dead slots, and the terms no live document holds, included:
        a dropped term is ``""``), in term-id order, in blocks of whole terms of about
        ``size`` postings: (terms, postings per term, slots, tfs).

        What a writer streams the whole index with (the snapshot): the base arrays are read
        with one vector gather per block, so no Python object is made per term, and a block's
        arrays are all it holds at a time.
        """
        self._settled()
        n = len(self._terms)
        if not n:
            return
        # The terms with postings of their own, as an array: after a cold build that is
        # every term, and a list of Python ints was ~11 MB of a 100k vault's snapshot write.
        own_len = np.fromiter(
            (-1 if p is None else len(p) for p in self._post_slot), dtype=np.int64, count=n
        )
        own = np.flatnonzero(own_len >= 0)
        lengths = np.zeros(n, dtype=np.int64)
        based = min(n, self._base_len.size)
        lengths[:based] = self._base_len[:based]
        lengths[own] = own_len[own]
        del own_len
        cuts = np.searchsorted(np.cumsum(lengths), np.arange(size, int(lengths.sum()), size))
        bounds = [0, *sorted(set((cuts + 1).tolist()) - {0, n}), n]
        own_at = np.searchsorted(own, bounds).tolist()
        for i in range(len(bounds) - 1):
            t0, t1, o0, o1 = bounds[i], bounds[i + 1], own_at[i], own_at[i + 1]
            per_term = lengths[t0:t1]
            start = np.cumsum(per_term) - per_term  # each term's first posting in the block
            slots = np.empty(int(per_term.sum()), dtype=np.int32)
            tfs = np.empty_like(slots)
            mine = own[o0:o1]
            from_base = np.ones(t1 - t0, dtype=bool)
            from_base[mine - t0] = False
            tids = np.flatnonzero(from_base) + t0
            tids = tids[lengths[tids] > 0]  # (only a term of the base has postings there)
            runs = lengths[tids]
            within = np.arange(int(runs.sum()), dtype=np.int64) - np.repeat(
                np.cumsum(runs) - runs, runs
            )
            src = np.repeat(self._base_at[tids], runs) + within
            dst = np.repeat(start[tids - t0], runs) + within
            slots[dst], tfs[dst] = self._base_slots[src], self._base_tfs[src]
            for t in mine.tolist():
                a, b = int(start[t - t0]), int(start[t - t0] + lengths[t])
                slots[a:b] = np.frombuffer(self._post_slot[t] or b"", dtype=np.int32)
                tfs[a:b] = np.frombuffer(self._post_tf[t] or b"", dtype=np.int32)
            yield self._terms[t0:t1], per_term.astype(np.int32), slots, tfs
