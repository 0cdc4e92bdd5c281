from __future__ import annotations

import math
from array import array
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


class Keyed:
    """Documents by name over the slot-numbered index, as the engine keeps them: the tokens
    a document was added with are what removing it takes."""

    def __init__(self, index: Bm25Index | None = None) -> None:
        self.index = index or Bm25Index()
        self.docs: dict[str, tuple[int, list[str]]] = {}

    def upsert(self, key: str, tokens: list[str]) -> int:
        self.remove(key)
        slot = self.index.add(tokens)
        self.docs[key] = (slot, tokens)
        return slot

    def remove(self, key: str) -> bool:
        if key not in self.docs:
            return False
        slot, tokens = self.docs.pop(key)
        self.index.remove(slot, tokens)
        return True

    def key(self, slot: int) -> str:
        return next(k for k, (s, _) in self.docs.items() if s == slot)


def scores_by_key(keyed: Keyed, query: list[str]) -> dict[str, float]:
    slots, scores = keyed.index.score(query)
    return {keyed.key(int(s)): float(v) for s, v in zip(slots, scores, strict=True)}


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
    index = Keyed(Bm25Index(k1=1.2, b=0.75))
    for key, tokens in DOCS.items():
        index.upsert(key, tokens)
    for query in (["cat"], ["cat", "food"], ["火锅"], ["missing"], ["cat", "cat"]):
        assert_same(scores_by_key(index, query), naive_bm25(DOCS, query))


def test_remove_and_replace_keep_statistics_exact() -> None:
    index = Keyed()
    for key, tokens in DOCS.items():
        index.upsert(key, tokens)
    index.remove("b")
    index.upsert("a", "a cat again".split())
    docs = {**DOCS, "a": "a cat again".split()}
    del docs["b"]
    # Before and after the flush that drops dead postings, scores are identical.
    assert_same(scores_by_key(index, ["cat", "the"]), naive_bm25(docs, ["cat", "the"]))
    index.index.flush()
    assert_same(scores_by_key(index, ["cat", "the"]), naive_bm25(docs, ["cat", "the"]))
    assert len(index.index) == 3
    assert index.index.avg_doc_len == pytest.approx(sum(map(len, docs.values())) / 3)


def test_freed_slots_are_reused_without_stale_postings() -> None:
    index = Keyed()
    slot = index.upsert("x", ["alpha"])
    index.remove("x")
    index.index.flush(force=True)
    assert index.upsert("y", ["beta"]) == slot  # compaction freed the slot
    assert scores_by_key(index, ["alpha"]) == {}
    assert set(scores_by_key(index, ["beta"])) == {"y"}


def _postings(index: Bm25Index, term: str) -> int:
    return len(index.postings(index._term_id[term])[0])


def test_a_removal_leaves_a_tombstone_until_enough_have_gathered() -> None:
    from wikimem_watch.core.bm25 import COMPACT_MIN

    index = Keyed()
    for i in range(10):
        index.upsert(f"d{i}", ["common", f"w{i}"])
    index.remove("d3")
    index.index.flush()  # one tombstone is far below the threshold: no pass over "common"
    assert _postings(index.index, "common") == 10
    assert "d3" not in scores_by_key(index, ["common"])  # masked: queries stay exact
    assert index.upsert("d3", ["common", "again"]) == 10  # not reused before compaction
    for i in range(COMPACT_MIN):
        index.upsert(f"n{i}", ["x"])
        index.remove(f"n{i}")
    index.index.flush()
    assert _postings(index.index, "common") == 10


def test_empty_index_and_empty_query_score_nothing() -> None:
    index = Bm25Index()
    slots, scores = index.score(["x"])
    assert slots.size == 0 and scores.size == 0
    index.add(["x"])
    assert index.score([])[0].size == 0


def test_matched_terms_follow_query_order() -> None:
    index = Bm25Index()
    slot = index.add(["cat", "mat", "sat"])
    assert index.matched_terms(slot, ["sat", "dog", "cat", "sat"]) == ["sat", "cat"]


def test_removing_an_empty_slot_is_an_error() -> None:
    with pytest.raises(KeyError):
        Bm25Index().remove(0, ["x"])


def test_index_grows_past_its_initial_capacity() -> None:
    index = Keyed()
    for i in range(3000):
        index.upsert(f"d{i}", ["common", f"t{i}"])
    slots, scores = index.index.score(["t2999"])
    assert [index.key(int(s)) for s in slots] == ["d2999"]
    assert np.all(scores > 0)


def test_removal_with_other_tokens_than_were_added_still_removes_the_right_postings() -> None:
    """The engine derives a removed entry's tokens again; should they ever differ, the
    postings are searched instead, and the statistics stay exact."""
    index = Keyed()
    for key, tokens in DOCS.items():
        index.upsert(key, tokens)
    slot, _ = index.docs.pop("a")
    index.index.remove(slot, ["wrong", "tokens"])
    docs = {k: v for k, v in DOCS.items() if k != "a"}
    assert_same(scores_by_key(index, ["cat", "the"]), naive_bm25(docs, ["cat", "the"]))
    index.index.flush(force=True)
    assert_same(scores_by_key(index, ["cat", "the"]), naive_bm25(docs, ["cat", "the"]))


def test_an_index_from_postings_scores_like_one_built_and_changes_like_one() -> None:
    built = Keyed()
    for key, tokens in DOCS.items():
        built.upsert(key, tokens)
    terms = sorted({t for tokens in DOCS.values() for t in tokens})
    keys = list(DOCS)
    counts, slots, tfs = [], [], []
    for term in terms:
        have = [(n, DOCS[k].count(term)) for n, k in enumerate(keys) if term in DOCS[k]]
        counts.append(len(have))
        slots += [n for n, _ in have]
        tfs += [tf for _, tf in have]
    as_i32 = lambda v: np.array(v, dtype=np.int32)  # noqa: E731
    loaded = Keyed(
        Bm25Index.from_postings(len(keys), terms, as_i32(counts), as_i32(slots), as_i32(tfs))
    )
    loaded.docs = {k: (n, DOCS[k]) for n, k in enumerate(keys)}
    for query in (["cat"], ["cat", "food", "火锅"]):
        assert_same(scores_by_key(loaded, query), scores_by_key(built, query))
    for index in (built, loaded):
        index.upsert("a", ["cat", "again"])
        index.remove("c")
        index.index.flush(force=True)
    assert_same(scores_by_key(loaded, ["cat", "火锅"]), scores_by_key(built, ["cat", "火锅"]))
    assert loaded.index.matched_terms(loaded.docs["b"][0], ["food", "cat", "x"]) == ["food", "cat"]


def test_matched_terms_of_several_documents_agree_with_one_at_a_time() -> None:
    index = Keyed()
    for key, tokens in DOCS.items():
        index.upsert(key, tokens)
    index.remove("b")
    index.upsert("b", ["food", "cat"])  # a later slot: "cat" postings stay ascending
    slots = [s for s, _ in index.docs.values()] + [99]
    query = ["cat", "food", "火锅", "nope", "cat"]
    want = [index.index.matched_terms(s, query) for s in slots]
    assert index.index.matched_terms_of(slots, query) == want
    assert want[-1] == [] and ["cat", "food"] in want


def test_information_sums_the_idf_of_distinct_known_terms() -> None:
    index = Bm25Index()
    docs = [["tea", "cake"], ["tea", "tea", "bread"], ["tea", "jam"], ["coffee"]]
    for doc in docs:
        index.add(doc)

    def idf(term: str) -> float:
        n, df = len(docs), sum(term in d for d in docs)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    got = index.information(["tea", "jam", "jam", "unknown"])
    assert got == pytest.approx(idf("tea") + idf("jam"))
    assert index.information([]) == 0.0
    index.remove(2, ["tea", "jam"])  # statistics follow the edit: jam is gone, tea rarer
    docs.pop(2)
    assert index.information(["tea", "jam"]) == pytest.approx(idf("tea"))


def test_idf_sums_of_many_groups_equal_one_sum_per_group() -> None:
    index = Bm25Index()
    for doc in [["tea", "cake"], ["tea", "bread"], ["jam"], ["coffee", "tea"], ["jam", "x"]]:
        index.add(doc)
    index.remove(2, ["jam"])  # jam keeps a document, x none after the next removal
    index.remove(4, ["jam", "x"])
    words = [["tea", "jam"], [], ["cake", "bread", "coffee"], ["jam"], ["x", "tea"], []]
    held = [index.term_ids(["tea", "jam", "cake", "bread", "coffee", "x"])] + [
        index.term_ids(w) for w in words
    ]
    raw = [array("i", [index._term_id[t] for t in ("jam", "x", "tea") if t in index._term_id])]
    groups = [*held, *raw]
    want = [index.idf_sum(g) for g in groups]
    assert index.idf_sums(groups).tolist() == pytest.approx(want, rel=1e-12)
    assert index.idf_sums([]).tolist() == []
    assert index.idf_sums([array("i")]).tolist() == [0.0]


def test_posting_blocks_hold_every_term_s_postings_whatever_its_buffers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A bulk build (every term in the base), then edits: terms copied out of the base, new
    # terms in buffers of their own, rare ones packed back at the base's end, one dropped.
    from wikimem_watch.core import bm25

    monkeypatch.setattr(bm25, "PACK_TERMS", 4)
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)]
    index = Bm25Index()
    index.start_bulk()
    index.add_many([list(rng.choice(words, size=8)) for _ in range(40)])
    keyed = Keyed(index)
    for n in range(30):
        keyed.upsert(f"new{n}", [*rng.choice(words, size=5), f"fresh{n % 9}"])
    keyed.upsert("gone", ["lonely"])
    keyed.remove("gone")
    index.flush(force=True)
    assert index.forgotten == 1 and any(s is not None for s in index._post_slot)
    assert any(s is None for s in index._post_slot)
    want = [(index._terms[t], *index.postings(t)) for t in range(len(index._terms))]
    for size in (1, 7, 50, 10**6):
        blocks = list(index.posting_blocks(size))
        assert blocks and (size < 10**6 or len(blocks) == 1)
        names = [t for b in blocks for t in b[0]]
        assert names == [w[0] for w in want]
        per_term = np.concatenate([b[1] for b in blocks])
        assert per_term.tolist() == [w[1].size for w in want]
        assert np.concatenate([b[2] for b in blocks]).tolist() == [
            s for w in want for s in w[1].tolist()
        ]
        assert np.concatenate([b[3] for b in blocks]).tolist() == [
            f for w in want for f in w[2].tolist()
        ]
        # Whole terms, a block ending with the term that reaches ``size`` postings.
        assert all(b[2].size - int(b[1][-1]) < size for b in blocks)


def test_the_base_keeps_term_frequencies_in_the_narrowest_type_that_holds_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wikimem_watch.core import bm25

    monkeypatch.setattr(bm25, "PACK_TERMS", 1)
    docs = {"a": ["tea", "jam"], "b": ["tea"] * 300 + ["cake"], "c": ["jam", "cake", "cake"]}
    index = Bm25Index()
    index.start_bulk()
    slots = index.add_many(list(docs.values()))
    keyed = Keyed(index)
    keyed.docs = {k: (s, t) for (k, t), s in zip(docs.items(), slots, strict=True)}
    index.settle()
    assert index._base_tfs.dtype == np.uint16  # a tf of 300 does not fit a byte
    # A rare new term with a tf past 65,535, packed into the base: it widens to hold it.
    docs["d"] = ["scone"] * 70_000
    keyed.upsert("d", docs["d"])
    index.flush(force=True)
    assert index._post_slot[index._term_id["scone"]] is None  # packed into the base
    assert index._base_tfs.dtype == np.int32
    for query in (["tea"], ["cake", "jam"], ["scone", "tea"]):
        assert_same(scores_by_key(keyed, query), naive_bm25(docs, query))
    # A copy of a term out of the base (an edit) keeps its tfs exact.
    keyed.upsert("b", ["tea"] * 299)
    docs["b"] = ["tea"] * 299
    assert_same(scores_by_key(keyed, ["tea", "cake"]), naive_bm25(docs, ["tea", "cake"]))


def test_one_cjk_character_is_scored_as_the_character_in_every_bigram_that_holds_it() -> None:
    """A sentence is indexed as bigrams, so "猫" in "我的猫生病了" is only in "的猫" and "猫生";
    the query "猫" must find it, scored as the character (its count, the documents that
    hold it) would be if each character were a term of its own."""
    from wikimem_watch.core.tokenize import tokenize

    texts = {
        "sick": "今天我的猫生病了",  # inside a run: 的猫, 猫生
        "zoo": "动物园里有熊猫和小猫头鹰",  # twice inside: 熊猫 猫和, 小猫 猫头
        "alone": "a 猫 b",  # a lone character: a term of its own
        "car": "我买了一辆新车",
        "none": "下雨了",
    }
    docs = {key: tokenize(text) for key, text in texts.items()}
    index = Keyed()
    for key, tokens in docs.items():
        index.upsert(key, tokens)
    # The reference: textbook BM25 with the character's own count and the documents' lengths.
    lengths = {k: len(t) for k, t in docs.items()}
    n, avgdl = len(docs), sum(lengths.values()) / len(docs)
    holding = [k for k in texts if "猫" in texts[k]]
    idf = math.log(1 + (n - len(holding) + 0.5) / (len(holding) + 0.5))
    want = {}
    for key in holding:
        tf = texts[key].count("猫")
        want[key] = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[key] / avgdl))
    assert_same(scores_by_key(index, ["猫"]), want)
    assert set(scores_by_key(index, ["车"])) == {"car"}
    assert index.index.matched_terms(index.docs["sick"][0], ["猫", "下雨"]) == ["猫"]
    index.remove("zoo")  # a tombstone: the union must not count it
    assert set(scores_by_key(index, ["猫"])) == {"sick", "alone"}
    assert index.index.score(["狗"])[0].size == 0


def test_terms_that_churn_through_the_index_leave_no_per_term_memory_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An editor's autosaves index half-typed words that the next save removes: each such
    # term is forgotten at compaction, and its id must not be held in every per-term list
    # (nor its postings in the base) for as long as the daemon runs.
    from wikimem_watch.core import bm25

    monkeypatch.setattr(bm25, "PACK_TERMS", 8)
    monkeypatch.setattr(bm25, "COMPACT_MIN", 4)
    index = Bm25Index()
    index.start_bulk()
    index.add_many([["猫咪", "base", f"b{i}"] for i in range(6)])  # a base, as a snapshot
    keyed = Keyed(index)
    for i in range(6):
        keyed.docs[f"b{i}"] = (i, ["猫咪", "base", f"b{i}"])
    assert scores_by_key(keyed, ["猫"])  # the character index is built before the churn
    docs = {k: t for k, (_, t) in keyed.docs.items()}
    for n in range(2000):
        key = f"note{n % 5}"
        docs[key] = ["common", f"typed{n}", f"half{n}", "小猫" if n % 2 else "base"]
        keyed.upsert(key, docs[key])
        index.flush()
    assert index.forgotten > 3000
    held = len(docs) * 4 + 8
    assert len(index._terms) <= held and len(index._df) <= held
    assert len(index._post_slot) <= held and index._base_at.size <= held
    assert index._base_slots.size <= 4 * held
    for query in (["common"], ["base"], ["b3"], ["typed1999", "half1998"], ["小猫"]):
        assert_same(scores_by_key(keyed, query), naive_bm25(docs, query))
    assert set(scores_by_key(keyed, ["猫"])) == {
        k for k, t in docs.items() if "猫咪" in t or "小猫" in t
    }
