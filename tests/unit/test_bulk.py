"""A cold build indexed in bulk (core/bulk.py) equals one indexed batch by batch."""

from __future__ import annotations

import random

import numpy as np
import pytest

from wikimem_watch.core import bulk
from wikimem_watch.core.bm25 import Bm25Index

WORDS = ["cat", "dog", "火锅", "run", "mat", "sun", "moon", "年糕", "a", "b", "c"]


def _docs(rng: random.Random, n: int) -> list[list[str]]:
    words = WORDS + [f"w{i}" for i in range(200)]
    return [rng.choices(words, k=rng.randint(0, 12)) for _ in range(n)]


def _batches(docs: list[list[str]], rng: random.Random) -> list[list[list[str]]]:
    out, at = [], 0
    while at < len(docs):
        size = rng.randint(1, 40)
        out.append(docs[at : at + size])
        at += size
    return out


def layout(index: Bm25Index) -> tuple[object, ...]:
    """What a reader can see: terms and ids, postings, df, lengths, totals."""
    return (
        [(tid, term, *(a.tolist() for a in index.postings(tid))) for tid, term in index.terms()],
        [index._df[tid] for tid, _ in index.terms()],
        index._doc_len[: index.capacity].tolist(),
        index.live_slots().tolist(),
        index.avg_doc_len,
        len(index),
    )


def same_scores(a: Bm25Index, b: Bm25Index, queries: list[list[str]]) -> None:
    for query in queries:
        (sa, va), (sb, vb) = a.score(query), b.score(query)
        assert sa.tolist() == sb.tolist()
        assert va.tolist() == vb.tolist()  # the same bits
        assert a.idf_sum(a.term_ids(query)) == b.idf_sum(b.term_ids(query))
        slots = sa.tolist()[:5] + [0, 10_000]
        assert a.matched_terms_of(slots, query) == b.matched_terms_of(slots, query)


QUERIES = [["cat"], ["火锅", "dog", "w3"], ["w199", "moon", "nothing"], ["a", "b", "c", "a"]]


def _pair(batches: list[list[list[str]]]) -> tuple[Bm25Index, Bm25Index, list[int]]:
    """The same batches added in bulk and one batch at a time; the slots given."""
    bulk_built, plain = Bm25Index(), Bm25Index()
    bulk_built.start_bulk()
    slots = []
    for batch in batches:
        got = bulk_built.add_many(batch)
        assert plain.add_many(batch) == got
        slots += got
    assert bulk_built._bulk is not None
    bulk_built.settle()
    return bulk_built, plain, slots


@pytest.mark.parametrize("chunk", [1, 7, bulk.CHUNK_POSTINGS])
def test_a_bulk_build_equals_one_built_batch_by_batch_and_through_later_edits(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "CHUNK_POSTINGS", chunk)
    rng = random.Random(chunk)
    docs = _docs(rng, 600)
    bulk_built, plain, slots = _pair(_batches(docs, rng))
    assert layout(bulk_built) == layout(plain)
    same_scores(bulk_built, plain, QUERIES)
    # later edits: removals (tombstones, then a compaction), new documents in freed slots
    for step in range(4):
        gone = rng.sample(range(len(docs)), 60)
        for i in gone:
            if slots[i] >= 0:
                for index in (bulk_built, plain):
                    index.remove(slots[i], docs[i])
                slots[i] = -1
        new = _docs(rng, 50)
        got = bulk_built.add_many(new)
        assert plain.add_many(new) == got
        docs += new
        slots += got
        for index in (bulk_built, plain):
            index.flush(force=step % 2 == 1)
        assert layout(bulk_built) == layout(plain)
        same_scores(bulk_built, plain, QUERIES)


def test_a_read_between_batches_sees_every_document_added_so_far() -> None:
    rng = random.Random(5)
    batches = _batches(_docs(rng, 300), rng)
    bulk_built, plain = Bm25Index(), Bm25Index()
    bulk_built.start_bulk()
    for n, batch in enumerate(batches):
        bulk_built.add_many(batch)
        plain.add_many(batch)
        if n in (0, 3, 4, 9):  # a query settles the build; the rest go on as usual
            same_scores(bulk_built, plain, QUERIES)
            assert bulk_built._bulk is None
            assert layout(bulk_built) == layout(plain)
    bulk_built.settle()
    assert layout(bulk_built) == layout(plain)
    same_scores(bulk_built, plain, QUERIES)


def test_wide_values_keep_their_width() -> None:
    """A tf past 255, a batch of more than 65,535 documents and a term in all of them."""
    docs = [["x"] * 300 + ["y"]] + [["y", f"t{i % 3}"] for i in range(70_000)] + [["x"]]
    bulk_built, plain, _ = _pair([docs[:2], docs[2:], [["y"] * 70_000]])
    assert layout(bulk_built) == layout(plain)
    same_scores(bulk_built, plain, [["x"], ["y", "t1"]])
    assert bulk_built.postings(bulk_built._term_id["x"])[1].tolist() == [300, 1]


def test_only_an_index_that_never_held_anything_builds_in_bulk() -> None:
    index = Bm25Index()
    slot = index.add(["a"])
    index.remove(slot, ["a"])
    index.flush(force=True)
    index.start_bulk()
    assert index._bulk is None
    empty = Bm25Index()
    empty.start_bulk()
    empty.settle()  # nothing added: an empty index all the same
    assert layout(empty) == layout(Bm25Index())
    assert empty.score(["a"])[0].size == 0
    assert empty.add(["a", "b"]) == 0
    assert np.array_equal(empty.score(["a"])[0], [0])
