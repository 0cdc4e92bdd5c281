"""Ranking arithmetic: signal normalisation, recency decay, fusion, top-k and the token budget.

Pure functions over numpy arrays of per-candidate scores; the engine gathers the signals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Weights:
    """Weights of the fused score. BM25 is never switched off (a zero weight is refused)."""

    bm25: float = 1.0
    vector: float = 0.0
    recency: float = 0.0
    previous: float = 0.0
    question: float = 0.0  # ``previous`` when the entry before asked a question (ADR-0009 §10)
    information: float = 0.0  # how much an entry says, among the best candidates (§11)

    def as_dict(self) -> dict[str, float]:
        return {
            "bm25": self.bm25,
            "vector": self.vector,
            "recency": self.recency,
            "previous": self.previous,
            "question": self.question,
            "information": self.information,
        }


def normalise_max(raw: F64) -> F64:
    """Scale positive scores into (0, 1] by the best one.

    Unlike min-max this never sends the weakest real match to zero, and one candidate or a
    set of equal scores all get 1.0 instead of a division by zero.
    """
    if raw.size == 0:
        return raw.copy()
    hi = float(raw.max())
    return raw / hi if hi > 0.0 else np.zeros_like(raw)


def normalise_minmax(raw: F64, present: npt.NDArray[np.bool_] | None = None) -> F64:
    """Min-max over the candidates that have the signal, into [0.1, 1]; absent ones get 0.

    The 0.1 floor keeps a weak but real match above a candidate that lacks the signal; ties
    and a single candidate map to 1.0.
    """
    out = np.zeros_like(raw)
    mask = np.ones(raw.shape, dtype=bool) if present is None else present
    if not mask.any():
        return out
    vals = raw[mask]
    lo, hi = float(vals.min()), float(vals.max())
    out[mask] = 1.0 if hi - lo < 1e-12 else 0.1 + 0.9 * (vals - lo) / (hi - lo)
    return out


def with_previous(
    slots: I64,
    raw: F64,
    prev: npt.NDArray[np.int32],
    weight: float,
    asks: npt.NDArray[np.bool_] | None = None,
    question: float = 0.0,
) -> F64:
    """``weight`` × the BM25 score of the entry before each candidate in its day file, or
    ``question`` × that score when the entry before ended with a question (``asks``).

    A diary entry is read with the one before it, as its vector is (ADR-0008): "Yes, twice!"
    answers the question above it, and an answer owes more to its question than to an
    ordinary neighbour. ``slots`` are the candidates, ascending; ``prev`` (and ``asks``) are
    per slot (-1: no entry before). Only candidates (entries that match the query themselves)
    get the term: the entry before sharpens a match, it never makes one. Costs
    O(candidates · log candidates), whatever the size of the index.
    """
    if (weight <= 0 and question <= 0) or slots.size == 0:
        return np.zeros(slots.size)
    before = prev[slots]
    at = np.minimum(np.searchsorted(slots, before), slots.size - 1)
    found = (before >= 0) & (slots[at] == before)
    share = np.full(slots.size, weight)
    if asks is not None:
        share[found & asks[np.maximum(before, 0)]] = question
    return np.where(found, share * raw[at], 0.0)


def recency(age_days: F64, half_life_days: float) -> F64:
    """``exp(-Δt/τ)`` with τ chosen so the factor halves every ``half_life_days``.

    Unknown times (NaN) get 0: an item without a time neither gains nor decays. Future
    times count as age 0.
    """
    tau = half_life_days / math.log(2.0)
    out = np.clip(age_days, 0.0, None)  # in place from here: one array, not five
    np.negative(out, out=out)
    out /= tau
    np.exp(out, out=out)
    return np.nan_to_num(out, copy=False, nan=0.0)


def best_first(scores: F64, n: int, tiebreak: Callable[[int], str] | None = None) -> I64:
    """Indices of the ``n`` best ``scores``, in index order. Of the scores tied at the cut,
    those first by ``tiebreak(index)`` (an entry's id: the same in a live index and a fresh
    scan, where slot order is not), else the first ones. O(len) where a sort is O(len · log):
    at 1M entries a query has ~90k BM25 candidates, and a sort took ~6 ms."""
    if scores.size <= n:
        return np.arange(scores.size, dtype=np.int64)
    cut = np.partition(scores, scores.size - n)[scores.size - n]  # the n-th best score
    chosen = scores > cut
    tied = np.flatnonzero(scores == cut)
    room = n - int(chosen.sum())
    if tiebreak is not None and tied.size > room:  # keys only for the ties at the cut
        tied = np.array(sorted(tied.tolist(), key=tiebreak), dtype=np.int64)
    chosen[tied[:room]] = True
    # A mask, not ``np.union1d``: its ``np.unique`` imports ``numpy.ma`` on first use,
    # ~10-25 ms of a one-shot query.
    return np.flatnonzero(chosen).astype(np.int64)


def top_k(scores: F64, k: int, tiebreak: Callable[[int], str] | None = None) -> I64:
    """Indices of the ``k`` best scores, best first; ties broken by ``tiebreak(index)``.

    The tie-break key is computed only for the candidates at or above the k-th score, so a
    query with 50k candidates builds a handful of keys, not 50k.
    """
    n = scores.size
    if n == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        cut = float(scores[np.argpartition(-scores, k - 1)[k - 1]])
        idx = np.flatnonzero(scores >= cut)
    else:
        idx = np.arange(n)
    if tiebreak is None:
        order = np.lexsort((idx, -scores[idx]))
    else:
        keyed = sorted(range(idx.size), key=lambda j: (-scores[idx[j]], tiebreak(int(idx[j]))))
        order = np.array(keyed, dtype=np.int64)
    return idx[order][:k].astype(np.int64)


def budget_cut(costs: Sequence[int], budget_tokens: int | None) -> int:
    """How many items (a prefix) fit the budget; the first is always kept."""
    if budget_tokens is None:
        return len(costs)
    used = 0
    for i, cost in enumerate(costs):
        if i > 0 and used + cost > budget_tokens:
            return i
        used += cost
    return len(costs)
