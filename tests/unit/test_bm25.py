from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from wikimem_watch.core.bm25 import Bm25Index


def naive_bm25(
    docs: dict[str, list[str]], query: list[str], k1: float = 1.2, b: float = 0.75
) -> dict[str, float]:
    """A textbook BM25 (Lucene idf), written out loop by loop as the reference."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n if n else 0.0
    out: dict[str, float] = {}
    for key, tokens in docs.items():
        counts = Counter(tokens)
        score = 0.0
        for term in dict.fromkeys(query):
            tf = counts.get(term, 0)
            if not tf:
                continue
            df = sum(1 for d in docs.values() if term in d)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens) / avgdl))
        if score > 0:
            out[key] = score
    return out


def scores_by_key(index: Bm25Index, query: list[str]) -> dict[str, float]:
    slots, scores = index.score(query)
    return {str(index.key(int(s))): float(v) for s, v in zip(slots, scores, strict=True)}


def assert_same(got: dict[str, float], want: dict[str, float]) -> None:
    assert set(got) == set(want)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-9)


DOCS = {
    "a": "the cat sat on the mat".split(),
    "b": "the dog ate the cat food food".split(),
    "c": "火锅 好吃 火锅".split(),
    "d": "nothing in common here at all really".split(),
}


def test_scores_match_the_naive_reference() -> None:
    index = Bm25Index(k1=1.2, b=0.75)
    for key, tokens in DOCS.items():
        index.upsert(key, tokens)
    for query in (["cat"], ["cat", "food"], ["火锅"], ["missing"], ["cat", "cat"]):
        assert_same(scores_by_key(index, query), naive_bm25(DOCS, query))


def test_remove_and_replace_keep_statistics_exact() -> None:
    index = Bm25Index()
    for key, tokens in DOCS.items():
        index.upsert(key, tokens)
    index.remove("b")
    index.upsert("a", "a cat again".split())
    docs = {**DOCS, "a": "a cat again".split()}
    del docs["b"]
    # Before and after the flush that drops dead postings, scores are identical.
    assert_same(scores_by_key(index, ["cat", "the"]), naive_bm25(docs, ["cat", "the"]))
    index.flush()
    assert_same(scores_by_key(index, ["cat", "the"]), naive_bm25(docs, ["cat", "the"]))
    assert len(index) == 3
    assert index.avg_doc_len == pytest.approx(sum(map(len, docs.values())) / 3)


def test_freed_slots_are_reused_without_stale_postings() -> None:
    index = Bm25Index()
    index.upsert("x", ["alpha"])
    slot = index.slot("x")
    index.remove("x")
    index.flush(force=True)
    index.upsert("y", ["beta"])
    assert index.slot("y") == slot  # compaction freed the slot
    assert scores_by_key(index, ["alpha"]) == {}
    assert set(scores_by_key(index, ["beta"])) == {"y"}


def test_a_removal_leaves_a_tombstone_until_enough_have_gathered() -> None:
    from wikimem_watch.core.bm25 import COMPACT_MIN

    index = Bm25Index()
    index.upsert_many([(f"d{i}", ["common", f"w{i}"]) for i in range(10)])
    index.remove("d3")
    index.flush()  # one tombstone is far below the threshold: no pass over "common"
    assert len(np.frombuffer(index._post_slot[index._term_id["common"]], dtype=np.int32)) == 10
    assert "d3" not in scores_by_key(index, ["common"])  # masked: queries stay exact
    index.upsert("d3", ["common", "again"])
    assert index.slot("d3") == 10  # a tombstoned slot is not reused before compaction
    for i in range(COMPACT_MIN):
        index.upsert(f"n{i}", ["x"])
        index.remove(f"n{i}")
    index.flush()
    assert len(np.frombuffer(index._post_slot[index._term_id["common"]], dtype=np.int32)) == 10


def test_empty_index_and_empty_query_score_nothing() -> None:
    index = Bm25Index()
    slots, scores = index.score(["x"])
    assert slots.size == 0 and scores.size == 0
    index.upsert("a", ["x"])
    assert index.score([])[0].size == 0


def test_matched_terms_follow_query_order() -> None:
    index = Bm25Index()
    slot = index.upsert("a", ["cat", "mat", "sat"])
    assert index.matched_terms(slot, ["sat", "dog", "cat", "sat"]) == ["sat", "cat"]


def test_removing_an_unknown_key_is_false() -> None:
    assert Bm25Index().remove("nope") is False


def test_index_grows_past_its_initial_capacity() -> None:
    index = Bm25Index()
    for i in range(3000):
        index.upsert(f"d{i}", ["common", f"t{i}"])
    slots, scores = index.score(["t2999"])
    assert [index.key(int(s)) for s in slots] == ["d2999"]
    assert np.all(scores > 0)
