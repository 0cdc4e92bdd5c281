"""Hybrid query latency (BM25 + cosine fusion) at 10k and 100k vectors, query embedding apart.

    /work/venv/bin/python bench/hybrid_latency.py --sizes 10000,100000

Uses the synthetic vaults of bench/index.py (cached in the same work dir) and a 384-dim
deterministic `HashEmbedder`, so every entry has a vector without a model: the search cost
depends on rows and dim, not on which model made them. The query vector is computed first
(`warm`) and timed apart, as the issue asks; the ranked query is then timed through the same
`run_query` the daemon calls, BM25-only and hybrid, on the same 200 queries.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.index import sample_queries, vault_for  # noqa: E402
from wikimem_watch.config import load_config  # noqa: E402
from wikimem_watch.core.engine import Engine  # noqa: E402
from wikimem_watch.retrieval.query import run_query  # noqa: E402
from wikimem_watch.retrieval.request import QueryRequest  # noqa: E402
from wikimem_watch.vectors.hash_embedder import HashEmbedder  # noqa: E402
from wikimem_watch.vectors.service import VectorService  # noqa: E402


def pct(samples: list[float], q: float) -> float:
    return sorted(samples)[min(len(samples) - 1, int(q * len(samples)))] * 1000


def measure(size: int, workdir: Path, n_queries: int) -> dict[str, float]:
    vault = vault_for(size, 0, workdir)
    with tempfile.TemporaryDirectory() as cache:
        engine = Engine(load_config(vault, {"cache_dir": cache, "embed": "hash"}))
        engine.scan()
        service = VectorService(HashEmbedder(dim=384), Path(cache), batch_size=512)
        service.open()
        service.sync.sync(engine.embedding_inputs())
        engine.vectors = service
        entries = list(engine.entries.values())
        queries = sample_queries(entries, n_queries, 0, lambda e: engine.tokenizer(e.text))
        embed_s = []
        for q in queries:
            t0 = time.perf_counter()
            service.warm(q)
            embed_s.append(time.perf_counter() - t0)
        out: dict[str, float] = {"rows": float(service.cache.stats()["rows"])}  # type: ignore[arg-type]
        for name, vector in (("bm25", 0.0), ("hybrid", 1.0)):
            samples = []
            for q in queries:
                req = QueryRequest.from_dict(
                    {
                        "q": q,
                        "parse_time": False,
                        "expand_links": False,
                        "weights": {"vector": vector},
                    }
                )
                t0 = time.perf_counter()
                run_query(engine, req)
                samples.append(time.perf_counter() - t0)
            out[f"{name}_p50"], out[f"{name}_p95"] = pct(samples, 0.5), pct(samples, 0.95)
        out["embed_p50"] = statistics.median(embed_s) * 1000
        return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench")
    args = ap.parse_args()
    print("| entries | vector rows | BM25 p50 / p95 (ms) | hybrid p50 / p95 (ms) | embed (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        r = measure(size, args.workdir, args.queries)
        print(
            f"| {size:,} | {int(r['rows']):,} | {r['bm25_p50']:.2f} / {r['bm25_p95']:.2f} | "
            f"{r['hybrid_p50']:.2f} / {r['hybrid_p95']:.2f} | {r['embed_p50']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
