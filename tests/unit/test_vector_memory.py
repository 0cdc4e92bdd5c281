from __future__ import annotations

import numpy as np
import pytest

from wikimem_watch.vectors.files import packed
from wikimem_watch.vectors.memory import RERANK_MIN, VectorMatrix, binary_codes, hamming


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _matrix(rows: int, dim: int = 96, seed: int = 0) -> tuple[VectorMatrix, np.ndarray]:
    """Every third hash has two chunks (rows), the rest one."""
    rng = np.random.default_rng(seed)
    mat = _unit(rng.standard_normal((rows, dim)) + rng.standard_normal(dim) * 0.5)
    sizes, total = [], 0
    while total < rows:
        n = min(2 if len(sizes) % 3 == 0 else 1, rows - total)
        sizes.append(n)
        total += n
    m = VectorMatrix(dim)
    m.append(packed((f"h{i:05d}", n) for i, n in enumerate(sizes)), mat)
    return m, mat


def test_codes_with_every_row_reranked_equal_exact_search() -> None:
    m, mat = _matrix(RERANK_MIN // 2)
    query = mat[7]
    exact = m.search(query, None, 20)
    m.quantize_rows = 0
    assert m.search(query, None, 20) == exact


def test_codes_find_a_stored_row_first_and_report_exact_cosines() -> None:
    m, mat = _matrix(RERANK_MIN * 3, seed=1)
    m.quantize_rows = 0
    for row in (5, 1000, len(mat) - 1):
        found = m.search(mat[row], None, 10)
        owner = int(np.searchsorted(m.starts, row, side="right") - 1)
        assert found[0][0] == m.hashes[owner]
        assert found[0][1] == pytest.approx(1.0, abs=1e-5)
        assert dict(found) == pytest.approx(m.cosines(mat[row], [h for h, _ in found]))


def test_rows_appended_after_coding_are_coded_too() -> None:
    m, _ = _matrix(RERANK_MIN * 2, seed=2)
    m.quantize_rows = 0
    m.search(np.ones(96, dtype=np.float32) / np.sqrt(96), None, 5)  # codes made here
    new = _unit(np.random.default_rng(9).standard_normal((1, 96)))
    m.append(packed([("late", 1)]), new)
    assert m.search(new[0], None, 3)[0][0] == "late"


def test_hamming_counts_differing_bits_with_or_without_bitwise_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    bits = rng.random((50, 130)) > 0.5
    codes = np.ascontiguousarray(binary_codes(bits).T)
    query = binary_codes(bits[:1])[0]
    want = (bits != bits[0]).sum(axis=1)
    assert hamming(codes, query).tolist() == want.tolist()
    monkeypatch.delattr(np, "bitwise_count", raising=False)  # numpy < 2.0 has none
    assert hamming(codes, query).tolist() == want.tolist()


def test_nearest_rows_are_the_n_smallest_distances_first_rows_at_the_cut() -> None:
    from wikimem_watch.vectors.memory import nearest_rows

    rng = np.random.default_rng(3)
    for size, n in ((100, 10), (5000, 1024), (64, 64)):
        distance = rng.integers(0, 40, size).astype(np.uint16)
        want = np.sort(np.argsort(distance, kind="stable")[:n])
        assert nearest_rows(distance, n).tolist() == want.tolist()
