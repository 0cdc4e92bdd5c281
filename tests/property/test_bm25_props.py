"""An incremental index equals a fresh build, and both equal the naive reference."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_bm25 import Keyed, assert_same, naive_bm25, scores_by_key
from tests.unit.test_bulk import layout
from wikimem_watch.core import bm25, bulk

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
    live = Keyed()
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
            live.index.flush(force=True)  # compact now (the engine waits for a threshold)
    fresh = Keyed()
    for key, tokens in docs.items():
        fresh.upsert(key, tokens)
    want = naive_bm25(docs, query, live.index.k1, live.index.b)
    assert_same(scores_by_key(live, query), want)
    assert_same(scores_by_key(fresh, query), want)
    live.index.flush()
    assert_same(scores_by_key(live, query), want)


@settings(max_examples=150, deadline=None)
@given(OPS, st.lists(WORDS, min_size=1, max_size=3))
def test_packing_rare_terms_into_the_base_changes_no_score(
    ops: list[tuple[str, str, list[str]]], query: list[str]
) -> None:
    """With a pack after every second new term (and every term rare), the index still equals
    the naive reference, through packs, copies out of the base and rewrites of it."""
    with patch.object(bm25, "PACK_TERMS", 2), patch.object(bm25, "PACK_POSTINGS", 3):
        live = Keyed()
        docs: dict[str, list[str]] = {}
        for op, key, arg in ops:
            if op == "put":
                live.upsert(key, arg)
                docs[key] = arg
            elif op == "del":
                live.remove(key)
                docs.pop(key, None)
            live.index.flush(force=op == "flush")
        want = naive_bm25(docs, query, live.index.k1, live.index.b)
        assert_same(scores_by_key(live, query), want)
        for key, (slot, _) in live.docs.items():
            got = live.index.matched_terms(slot, query)
            assert got == [t for t in dict.fromkeys(query) if t in docs[key]]


BATCHES = st.lists(st.lists(st.lists(WORDS, max_size=8), min_size=1, max_size=6), max_size=8)


@settings(max_examples=150, deadline=None)
@given(BATCHES, OPS, st.lists(WORDS, min_size=1, max_size=3), st.integers(-1, 8))
def test_an_index_built_in_bulk_equals_one_built_batch_by_batch(
    batches: list[list[list[str]]],
    ops: list[tuple[str, str, list[str]]],
    query: list[str],
    read_after: int,
) -> None:
    """The same batches, in bulk (read once after batch ``read_after``, or never before the
    settle) and one by one: the same postings, statistics and scores, then through edits."""
    with patch.object(bulk, "CHUNK_POSTINGS", 5):
        in_bulk, by_batch = Keyed(), Keyed()
        in_bulk.index.start_bulk()
        docs: dict[str, list[str]] = {}
        for n, batch in enumerate(batches):
            slots = in_bulk.index.add_many(batch)
            assert by_batch.index.add_many(batch) == slots
            for slot, tokens in zip(slots, batch, strict=True):
                for keyed in (in_bulk, by_batch):
                    keyed.docs[f"d{slot}"] = (slot, tokens)
                docs[f"d{slot}"] = tokens
            if n == read_after:
                assert_same(scores_by_key(in_bulk, query), scores_by_key(by_batch, query))
        in_bulk.index.settle()
        assert layout(in_bulk.index) == layout(by_batch.index)
        for op, key, arg in ops:
            for keyed in (in_bulk, by_batch):
                if op == "put":
                    keyed.upsert(key, arg)
                elif op == "del":
                    keyed.remove(key)
                keyed.index.flush(force=op == "flush")
            if op == "put":
                docs[key] = arg
            elif op == "del":
                docs.pop(key, None)
        assert layout(in_bulk.index) == layout(by_batch.index)
        want = naive_bm25(docs, query, in_bulk.index.k1, in_bulk.index.b)
        assert_same(scores_by_key(in_bulk, query), want)
        assert_same(scores_by_key(by_batch, query), want)
