"""A million entries (or what fits): cold build, ready from the index snapshot, RSS, query
p50/p95 plain / windowed / with vectors, edit → searchable, and quantised vector search.

    .venv/bin/python bench/million.py --entries 1000000
    .venv/bin/python bench/million.py --entries 300000 --vectors 300000

Each phase runs in its own process so its peak RSS is its own: ``build`` (cold scan, write
the snapshot, queries, one edited file applied and searched), ``ready`` (a fresh process
that starts from the snapshot, as the daemon and a one-shot query do, then the queries
again), ``vectors`` (384-d float32 vectors; exact search against binary codes with a float
re-rank of the top candidates, and int8 with a float re-rank; recall@10 against exact).

Vectors: a random projection of each entry's BM25 terms (term → Gaussian 384-d, summed by
tf, normalised): text-dependent and clustered like the texts, without a model (embedding a
million texts is the embedder's cost, not the index's). The vector search here is measured
on its own (numpy over a float32 memmap and in-RAM codes); ``hybrid`` = BM25 query +
vector search, both timed per query.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIM = 384
RERANK = 200  # float re-rank of this many quantised candidates


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _pcts(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


def _queries(engine: Any, n: int) -> list[str]:
    from bench.index import sample_queries

    slots = engine.index.live_slots()
    entries = [engine.slot_entry(int(s)) for s in slots[:: max(1, slots.size // 20000)]]
    return sample_queries(entries, n, 0, lambda e: engine.tokenizer(e.text))


def _time_queries(engine: Any, queries: list[str]) -> dict[str, object]:
    """p50/p95 through ``run_query`` (what the daemon calls), as bench/index.py: plain, and
    windowed to the diary's last 365 days."""
    from bench.index import _request, query_variants
    from wikimem_watch.retrieval.query import run_query

    out: dict[str, object] = {}
    variants = query_variants()
    for name in ("plain", "window365"):
        samples = []
        for q in queries:
            req = _request(q, **variants[name])
            t0 = time.perf_counter()
            run_query(engine, req)
            samples.append(time.perf_counter() - t0)
        out[name] = _pcts(samples)
    return out


def phase_build(vault: Path, snap_dir: Path, n_queries: int) -> dict[str, object]:
    from bench.index import measure_apply
    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import no_gc, write_snapshot

    config = load_config(vault, {"snapshot_dir": str(snap_dir)})
    engine = Engine(config)
    t0 = time.perf_counter()
    with no_gc():
        engine.scan()
    out: dict[str, object] = {"build_s": round(time.perf_counter() - t0, 2)}
    out["entries"], out["files"] = len(engine.entries), len(engine.files)
    out["rss_after_build_mb"] = _rss_mb()
    assert config.snapshot_path is not None
    t0 = time.perf_counter()
    size = write_snapshot(engine, config.snapshot_path)
    out["snapshot_write_s"], out["snapshot_mb"] = round(time.perf_counter() - t0, 2), size / 1e6
    out["queries"] = _time_queries(engine, _queries(engine, n_queries))
    apply = measure_apply(engine, vault, 30)
    out["edit_apply_ms"] = {"p50_ms": apply["p50_ms"], "p95_ms": apply["p95_ms"]}
    out["peak_rss_mb"] = _rss_mb()
    return out


def phase_ready(vault: Path, snap_dir: Path, n_queries: int) -> dict[str, object]:
    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import scan_with_snapshot

    t0 = time.perf_counter()
    engine = Engine(load_config(vault, {"snapshot_dir": str(snap_dir)}))
    stats = scan_with_snapshot(engine, save=False)
    out: dict[str, object] = {"ready_s": round(time.perf_counter() - t0, 2)}
    out["reread_files"] = len(stats.changed)
    out["rss_ready_mb"] = _rss_mb()
    out["queries"] = _time_queries(engine, _queries(engine, n_queries))
    out["peak_rss_mb"] = _rss_mb()
    return out


def phase_vectors(vault: Path, snap_dir: Path, rows: int, n_queries: int) -> dict[str, object]:
    import numpy as np

    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import scan_with_snapshot

    engine = Engine(load_config(vault, {"snapshot_dir": str(snap_dir)}))
    scan_with_snapshot(engine, save=False)
    index = engine.index
    rng = np.random.default_rng(0)
    terms = [tid for tid, _ in index.terms()]
    proj = rng.standard_normal((max(terms, default=0) + 1, DIM), dtype=np.float32)
    rows = min(rows, index.capacity)
    path = Path(tempfile.mkdtemp(prefix="wmw-vec-")) / "vectors.npy"
    mat = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, DIM))
    t0 = time.perf_counter()
    for tid in terms:  # vectors = tf-weighted sum of term projections
        slots, tf_ints = index.postings(tid)
        keep = slots < rows
        if keep.any():
            tfs = tf_ints[keep]
            mat[slots[keep]] += tfs[:, None] * proj[tid]  # a term's slots are distinct
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    mat /= np.maximum(norms, 1e-9)
    mat.flush()
    out: dict[str, object] = {"rows": rows, "make_vectors_s": round(time.perf_counter() - t0, 1)}
    codes = np.packbits(mat > 0, axis=1)  # binary: 48 bytes a row
    int8 = np.clip(np.round(mat * 127 / max(float(np.abs(mat).max()), 1e-9)), -127, 127)
    int8 = int8.astype(np.int8)
    out["binary_mb"], out["int8_mb"] = codes.nbytes / 1e6, int8.nbytes / 1e6
    words = codes.view(np.uint64)  # 6 words a row: XOR + popcount a word at a time
    qrows = rng.choice(rows, size=n_queries, replace=False)
    res: dict[str, list[float]] = {"exact": [], "binary": [], "int8": []}
    recall: dict[str, list[float]] = {"binary": [], "int8": []}
    for r in qrows:
        q = mat[r] + rng.standard_normal(DIM).astype(np.float32) * 0.02
        q /= np.linalg.norm(q)
        t0 = time.perf_counter()
        exact = np.argpartition(-(mat @ q), 10)[:10]
        res["exact"].append(time.perf_counter() - t0)
        qcode = np.packbits(q > 0)
        t0 = time.perf_counter()
        ham = np.bitwise_count(np.bitwise_xor(words, qcode.view(np.uint64))).sum(axis=1)
        cand = np.argpartition(ham, RERANK)[:RERANK]
        cand = np.sort(cand)  # ascending rows: one pass over the memmap
        top = cand[np.argsort(-(mat[cand] @ q))[:10]]  # float re-rank of the candidates
        res["binary"].append(time.perf_counter() - t0)
        recall["binary"].append(len(set(top.tolist()) & set(exact.tolist())) / 10)
        t0 = time.perf_counter()
        approx = int8 @ np.round(q * 127).astype(np.int8).astype(np.int32)
        cand = np.sort(np.argpartition(-approx, RERANK)[:RERANK])
        top = cand[np.argsort(-(mat[cand] @ q))[:10]]
        res["int8"].append(time.perf_counter() - t0)
        recall["int8"].append(len(set(top.tolist()) & set(exact.tolist())) / 10)
    for name, samples in res.items():
        out[f"{name}_search"] = _pcts(samples)
    for name, values in recall.items():
        out[f"{name}_recall_at_10"] = round(statistics.fmean(values), 3)
    out["peak_rss_mb"] = _rss_mb()
    del mat
    path.unlink()
    return out


def _child(phase: str, args: argparse.Namespace, vault: Path, snap: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--vault", str(vault), "--snap", str(snap)]
    cmd += ["--entries", str(args.entries), "--vectors", str(args.vectors)]
    cmd += ["--queries", str(args.queries)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--vectors", type=int, default=0, help="vector rows (0: --entries)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench"
    )
    parser.add_argument("--phases", default="build,ready,vectors", help="which phases to run")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--vault", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--snap", type=Path, help="snapshot directory (kept between runs)")
    args = parser.parse_args()
    args.vectors = args.vectors or args.entries
    if args.phase:
        run = {
            "build": lambda: phase_build(args.vault, args.snap, args.queries),
            "ready": lambda: phase_ready(args.vault, args.snap, args.queries),
            "vectors": lambda: phase_vectors(args.vault, args.snap, args.vectors, args.queries),
        }[args.phase]
        print(json.dumps(run()))
        return 0
    from bench.index import vault_for

    args.workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    vault = vault_for(args.entries, 0, args.workdir)
    report: dict[str, Any] = {"entries": args.entries, "vault_s": round(time.perf_counter() - t0)}
    snap = args.snap or Path(tempfile.mkdtemp(prefix="wmw-snap-"))
    for phase in args.phases.split(","):
        report[phase] = _child(phase, args, vault, snap)
        print(json.dumps({phase: report[phase]}), file=sys.stderr, flush=True)
    if "ready" in report and "vectors" in report:
        ready = report["ready"]["queries"]["plain"]["p50_ms"]
        vec = report["vectors"]["binary_search"]["p50_ms"]
        report["hybrid_p50_ms_estimate"] = round(ready + vec, 2)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
