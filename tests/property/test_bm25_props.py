"""An incremental index equals a fresh build, and both equal the naive reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_bm25 import assert_same, naive_bm25, scores_by_key
from wikimem_watch.core.bm25 import Bm25Index

WORDS = st.sampled_from(["cat", "dog", "火锅", "run", "mat", "sun", "moon", "年糕"])
DOC = st.lists(WORDS, min_size=1, max_size=8)
KEYS = st.sampled_from([f"f{i}" for i in range(6)])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), KEYS, DOC),
        st.tuples(st.just("del"), KEYS, st.just([])),
        st.tuples(st.just("mv"), KEYS, KEYS.map(lambda k: [k])),
        st.tuples(st.just("flush"), st.just(""), st.just([])),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(OPS, st.lists(WORDS, min_size=1, max_size=3))
def test_incremental_index_equals_rebuild_and_reference(
    ops: list[tuple[str, str, list[str]]], query: list[str]
) -> None:
    live = Bm25Index()
    docs: dict[str, list[str]] = {}
    for op, key, arg in ops:
        if op == "put":
            live.upsert(key, arg)
            docs[key] = arg
        elif op == "del":
            live.remove(key)
            docs.pop(key, None)
        elif op == "mv" and key in docs and arg[0] not in docs:
            live.remove(key)
            live.upsert(arg[0], docs[key])
            docs[arg[0]] = docs.pop(key)
        elif op == "flush":
            live.flush(force=True)  # compact now (the engine's flush waits for a threshold)
    fresh = Bm25Index()
    for key, tokens in docs.items():
        fresh.upsert(key, tokens)
    want = naive_bm25(docs, query, live.k1, live.b)
    assert_same(scores_by_key(live, query), want)
    assert_same(scores_by_key(fresh, query), want)
    live.flush()
    assert_same(scores_by_key(live, query), want)


BATCHES = st.lists(
    st.one_of(
        st.dictionaries(KEYS, st.lists(WORDS, max_size=8), max_size=5).map(
            lambda d: sorted(d.items())
        ),
        st.tuples(st.just("del"), KEYS),
    ),
    max_size=12,
)


def _layout(index: Bm25Index) -> tuple[object, ...]:
    """Everything the index holds, by key and term (slots as keys, term lists as sets)."""
    postings = {
        term: sorted(
            (index.key(s), t)
            for s, t in zip(index._post_slot[tid], index._post_tf[tid], strict=True)
            if index.key(s) is not None
        )
        for term, tid in index._term_id.items()
    }
    docs = {
        key: (float(index._doc_len[slot]), sorted(index._terms[t] for t in index._terms_of(slot)))
        for key, slot in index._slot_of.items()
    }
    df = {term: index._df[tid] for term, tid in index._term_id.items() if index._df[tid]}
    return postings, docs, df, index._total_len


@settings(max_examples=150, deadline=None)
@given(BATCHES, st.lists(WORDS, min_size=1, max_size=3))
def test_batched_upserts_equal_one_at_a_time_and_the_reference(
    steps: list[object], query: list[str]
) -> None:
    batched, single = Bm25Index(), Bm25Index()
    docs: dict[str, list[str]] = {}
    for step in steps:
        if isinstance(step, tuple):
            batched.remove(step[1])
            single.remove(step[1])
            docs.pop(step[1], None)
            continue
        assert isinstance(step, list)
        slots = batched.upsert_many(step)
        assert [batched.key(s) for s in slots] == [key for key, _ in step]
        for key, tokens in step:
            single.upsert(key, tokens)
            docs[key] = tokens
    assert _layout(batched) == _layout(single)
    assert batched._terms == single._terms  # new terms numbered by first occurrence
    want = naive_bm25(docs, query, batched.k1, batched.b)
    assert_same(scores_by_key(batched, query), want)
