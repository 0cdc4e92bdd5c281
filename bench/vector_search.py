"""Whole-matrix vector search: exact float32 against binary codes + a float32 re-rank.

    python bench/vector_search.py --rows 300000,1000000 --queries 100 --noise 0.8,1.6

Builds a `VectorMatrix` (the cache's in-memory side) of N 384-d unit vectors and asks it for
the 10 nearest hashes of each query, once exactly (`quantize_rows` above N) and once through
binary codes (`quantize_rows` 0), as `VectorService.cosines` does for the entries that may
join BM25's candidates. The vectors are synthetic but shaped like sentence embeddings: a
shared offset (every cosine is positive), 4,096 topic directions, and per-row noise; a query
is a fresh draw, so its ten nearest are decided among a topic's rows by their noise alone
(harder for binary codes than a query that repeats a stored text); more noise is closer to
random vectors, the worst case for binary codes. Prints p50/p95 per mode, recall@10 against
exact, and the bytes the codes take. Figures: docs/benchmarks.md; the decision:
docs/adr/0007-hybrid-fusion.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wikimem_watch.vectors.files import packed
from wikimem_watch.vectors.memory import VectorMatrix

DIM = 384


class Space:
    """Embedding-like vectors: a shared offset (every cosine is positive), topic directions,
    and per-row noise. ``draw`` makes rows; a query is one more draw, not a stored row."""

    def __init__(self, rng: np.random.Generator, noise: float, topics: int = 4096) -> None:
        self.rng, self.noise = rng, noise
        self.offset = rng.standard_normal(DIM).astype(np.float32) * 2.0
        self.topics = rng.standard_normal((topics, DIM)).astype(np.float32)

    def draw(self, rows: int) -> np.ndarray:
        out = np.empty((rows, DIM), dtype=np.float32)
        for start in range(0, rows, 65536):
            n = min(65536, rows - start)
            block = self.topics[self.rng.integers(0, len(self.topics), n)] + self.offset
            block += self.rng.standard_normal((n, DIM)).astype(np.float32) * self.noise
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            out[start : start + n] = block
        return out


def matrix(mat: np.ndarray) -> VectorMatrix:
    m = VectorMatrix(DIM)
    spans = packed((f"h{i:07d}", 1) for i in range(mat.shape[0]))
    m.append(spans, mat)
    return m


def run(rows: int, queries: int, seed: int, noise: float) -> dict[str, float]:
    space = Space(np.random.default_rng(seed), noise)
    m = matrix(space.draw(rows))
    qs = space.draw(queries)
    out: dict[str, float] = {"rows": rows, "noise": noise}
    m.quantize_rows = rows + 1
    exact, t_exact = [], []
    for q in qs:
        t0 = time.perf_counter()
        exact.append({h for h, _ in m.search(q, None, 10)})
        t_exact.append(time.perf_counter() - t0)
    m.quantize_rows = 0
    m.search(qs[0], None, 10)  # codes are made on first use
    t_codes, recall = [], []
    for q, want in zip(qs, exact, strict=True):
        t0 = time.perf_counter()
        got = {h for h, _ in m.search(q, None, 10)}
        t_codes.append(time.perf_counter() - t0)
        recall.append(len(got & want) / 10)
    for name, samples in (("exact", t_exact), ("codes", t_codes)):
        ordered = sorted(samples)
        out[f"{name}_p50_ms"] = round(statistics.median(samples) * 1000, 2)
        out[f"{name}_p95_ms"] = round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)
    out["recall_at_10"] = round(statistics.fmean(recall), 3)
    out["codes_mb"] = round(rows * ((DIM + 63) // 64) * 8 / 1e6, 1)
    out["floats_mb"] = round(rows * DIM * 4 / 1e6, 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="300000,1000000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", default="0.8,1.6", help="per-row noise against unit topics")
    args = ap.parse_args()
    for rows in (int(r) for r in args.rows.split(",")):
        for noise in (float(x) for x in args.noise.split(",")):
            print(run(rows, args.queries, args.seed, noise), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
