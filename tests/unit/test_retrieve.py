from __future__ import annotations

import math

import numpy as np
import pytest

from wikimem_watch.retrieval.fusion import (
    budget_cut,
    normalise_max,
    normalise_minmax,
    recency,
    top_k,
)


def test_max_normalisation_keeps_the_weakest_real_match_above_zero() -> None:
    out = normalise_max(np.array([4.0, 2.0, 0.5]))
    assert out.tolist() == [1.0, 0.5, 0.125]


@pytest.mark.parametrize("values", [[3.0], [2.0, 2.0, 2.0]])
def test_one_candidate_or_all_equal_normalise_to_one(values: list[float]) -> None:
    assert normalise_max(np.array(values)).tolist() == [1.0] * len(values)
    assert normalise_minmax(np.array(values)).tolist() == [1.0] * len(values)


def test_minmax_floor_and_absent_values() -> None:
    raw = np.array([0.9, 0.7, 0.8, 0.0])
    present = np.array([True, True, True, False])
    out = normalise_minmax(raw, present)
    assert out[0] == pytest.approx(1.0) and out[1] == pytest.approx(0.1) and out[3] == 0.0
    assert normalise_minmax(np.array([]), np.array([], dtype=bool)).size == 0


def test_recency_halves_per_half_life_and_ignores_unknown_times() -> None:
    out = recency(np.array([0.0, 30.0, 60.0, math.nan, -5.0]), 30.0)
    assert out[0] == 1.0 and out[1] == pytest.approx(0.5) and out[2] == pytest.approx(0.25)
    assert out[3] == 0.0 and out[4] == 1.0


def test_top_k_orders_by_score_then_tiebreak_key() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9])
    keys = ["c", "b", "a", "d", "a"]
    assert top_k(scores, 3, lambda i: keys[i]).tolist() == [4, 1, 2]
    assert top_k(scores, 10, lambda i: keys[i]).tolist() == [4, 1, 2, 0, 3]
    assert top_k(np.array([]), 3).size == 0


def test_budget_cut_is_a_prefix_that_always_keeps_the_first() -> None:
    assert budget_cut([50, 10, 10], 5) == 1
    assert budget_cut([5, 10, 10], 15) == 2
    assert budget_cut([5, 10, 10], None) == 3


def test_with_previous_reads_the_score_of_the_candidate_before() -> None:
    from wikimem_watch.retrieval.fusion import with_previous

    prev = np.array([-1, 0, 1, -1, 3, 2], dtype=np.int64)  # slot → the slot before it
    slots = np.array([1, 2, 4, 5], dtype=np.int64)  # slot 0 and 3 do not match the query
    raw = np.array([2.0, 4.0, 1.0, 3.0])
    got = with_previous(slots, raw, prev, 0.5)
    # 1 ← 0 (not a candidate): 0; 2 ← 1: 0.5 × 2; 4 ← 3 (not a candidate): 0; 5 ← 2: 0.5 × 4
    assert got.tolist() == [0.0, 1.0, 0.0, 2.0]
    assert with_previous(slots, raw, prev, 0.0).tolist() == [0.0] * 4
    assert with_previous(slots[:0], raw[:0], prev, 0.5).size == 0
    # An entry before that ended with a question gives its answer the ``question`` share.
    asks = np.array([False, False, True, False, False, False])
    assert with_previous(slots, raw, prev, 0.5, asks, 1.5).tolist() == [0.0, 1.0, 0.0, 6.0]
    assert with_previous(slots, raw, prev, 0.0, asks, 1.5).tolist() == [0.0, 0.0, 0.0, 6.0]


def test_best_first_is_the_set_a_stable_sort_keeps() -> None:
    from wikimem_watch.retrieval.fusion import best_first

    rng = np.random.default_rng(7)
    for size, n in ((10, 3), (500, 200), (1000, 1000), (5, 50)):
        scores = rng.integers(0, 6, size).astype(np.float64)  # many ties at the cut
        want = np.sort(np.argsort(-scores, kind="stable")[:n])
        assert best_first(scores, n).tolist() == want.tolist()
