"""A million entries (or what fits): cold build, ready from the index snapshot, RSS, query
p50/p95 plain / windowed, edit → searchable, and the vector cache's search.

    .venv/bin/python bench/million.py --entries 1000000
    .venv/bin/python bench/million.py --entries 300000 --phases vectors --snap DIR

Each phase runs in its own process so its peak RSS is its own: ``build`` (cold scan, write
the snapshot, queries, one edited file applied and searched), ``ready`` (a fresh process
that starts from the snapshot, as the daemon and a one-shot query do, then the queries
again), ``vectors`` (384-d float32 vectors in the cache's own ``VectorMatrix``: exact search
against binary codes with a float32 re-rank, ADR-0007; recall@10 of the second against the
first; the exact cosines of a 200-entry BM25 pool), ``cache`` (every entry's vector
written through ``VectorCache`` into ``<snap>/vectors``, kept for later runs), ``hybrid`` (a
process that starts as the daemon does: the snapshot with an embedder's vector keys, the
vector cache loaded from its files, then hybrid queries through ``run_query`` at
``weights.vector`` 1.5, each timed whole; the query vector is made from the query's terms as
the entries' are, so the model's time is left out; its peak RSS is the whole process's).

Vectors: a random projection of each entry's BM25 terms (term → Gaussian 384-d, summed by
tf, normalised): text-dependent and clustered like the texts, without a model (embedding a
million texts is the embedder's cost, not the index's). ``hybrid_p50_ms_estimate`` = plain
BM25 query p50 + nearest-50 search p50 + pool cosines p50, beside the ``hybrid`` phase's
measured p50. ``--snap`` keeps the snapshot for a later run.
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
VECTOR_FINGERPRINT = {"model": "bench-projection", "dim": DIM}


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


WEIGHTS: dict[str, float] = {}  # --weights: added to every query's


def _time_queries(engine: Any, queries: list[str]) -> dict[str, object]:
    """p50/p95 through ``run_query`` (what the daemon calls), as bench/index.py: plain, and
    windowed to the diary's last 365 days."""
    from bench.index import _request, query_variants
    from wikimem_watch.retrieval.query import run_query

    out: dict[str, object] = {}
    variants = query_variants()
    for name in ("plain", "window365"):
        samples = []
        fields = dict(variants[name])
        fields["weights"] = {**dict(fields.get("weights") or {}), **WEIGHTS}  # type: ignore[call-overload]
        for q in queries:
            req = _request(q, **fields)
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


def _term_vectors(index: Any, proj: Any, mat: Any) -> None:
    """Fill ``mat`` (one row per slot, as many as it has) with each entry's vector: the
    tf-weighted sum of its terms' projections, normalised."""
    import numpy as np

    rows = mat.shape[0]
    for tid, _ in index.terms():
        slots, tfs = index.postings(tid)
        keep = slots < rows
        if keep.any():
            mat[slots[keep]] += tfs[keep][:, None] * proj[tid]  # a term's slots are distinct
    mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-9)


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
    _term_vectors(index, proj, mat)
    mat.flush()
    out: dict[str, object] = {"rows": rows, "make_vectors_s": round(time.perf_counter() - t0, 1)}
    out.update(_search(mat, rng, n_queries))
    out["peak_rss_mb"] = _rss_mb()
    del mat
    path.unlink()
    return out


def _engine_with_keys(vault: Path, snap_dir: Path) -> Any:
    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import scan_with_snapshot

    engine = Engine(load_config(vault, {"snapshot_dir": str(snap_dir), "embed": "hash"}))
    scan_with_snapshot(engine)  # the first start with an embedder saves the keys
    return engine


def _projection(engine: Any) -> tuple[dict[str, int], Any]:
    import numpy as np

    ids = {term: tid for tid, term in engine.index.terms()}
    rng = np.random.default_rng(0)
    proj = rng.standard_normal((max(ids.values(), default=0) + 1, DIM), dtype=np.float32)
    return ids, proj


def phase_cache(vault: Path, snap_dir: Path) -> dict[str, object]:
    """Every entry's vector written through ``VectorCache`` (segments of 65,536 rows, then
    ``maintain``: a base), keyed as the engine keys them, in ``<snap>/vectors``; kept between
    runs (delete the folder to make it again). The model is a random projection of an entry's
    terms, tf-weighted; the query vector is made the same way."""
    import numpy as np

    from wikimem_watch.core.vector_keys import hex_keys
    from wikimem_watch.vectors.cache import VectorCache

    cache_dir = snap_dir / "vectors"
    if (cache_dir / "vectors.keys.jsonl").exists():
        return {"kept": str(cache_dir)}
    engine = _engine_with_keys(vault, snap_dir)
    index = engine.index
    ids, proj = _projection(engine)
    t0 = time.perf_counter()
    mat = np.zeros((index.capacity, DIM), dtype=np.float32)
    _term_vectors(index, proj, mat)
    live = index.live_slots()
    keys = hex_keys(engine.vector_keys.raw[live])
    cache = VectorCache(cache_dir, VECTOR_FINGERPRINT)
    cache.load()
    for start in range(0, live.size, 65536):
        rows = mat[live[start : start + 65536]]
        cache.add({keys[start + i]: rows[i] for i in range(len(rows))})
    cache.maintain(keys)
    return {"write_s": round(time.perf_counter() - t0, 1), **cache.stats()}


def phase_hybrid(vault: Path, snap_dir: Path, n_queries: int) -> dict[str, object]:
    """Hybrid queries through ``run_query``, each timed whole, in a process that starts as the
    daemon does: the engine from the snapshot with an embedder's vector keys (ADR-0020), the
    vector cache of ``phase_cache`` loaded from its files (rows off the heap, ADR-0021; binary
    codes and a float32 re-rank above 200k rows, ADR-0007), and a query vector made as the
    entries' are. Peak RSS is this whole process's."""
    import numpy as np

    from bench.index import _request
    from wikimem_watch.retrieval.query import run_query
    from wikimem_watch.vectors.cache import VectorCache

    t0 = time.perf_counter()
    engine = _engine_with_keys(vault, snap_dir)
    out: dict[str, object] = {"ready_s": round(time.perf_counter() - t0, 2)}
    ids, proj = _projection(engine)
    t0 = time.perf_counter()
    cache = VectorCache(snap_dir / "vectors", VECTOR_FINGERPRINT)
    cache.load()
    out["load_vectors_s"] = round(time.perf_counter() - t0, 1)
    out["vectors"] = cache.stats()["hashes"]
    out["rss_ready_mb"] = _rss_mb()

    class Signal:  # what ``VectorService.cosines`` does, with the projection as the model
        def cosines(
            self, text: str, hashes: list[str], limit: int, within: list[str] | None = None
        ) -> dict[str, float]:
            q = np.zeros(DIM, dtype=np.float32)
            for term in engine.tokenizer(text):
                if term in ids:
                    q += proj[ids[term]]
            q /= max(float(np.linalg.norm(q)), 1e-9)
            found = dict(cache.search(q, within, limit))
            found.update(cache.cosines(q, hashes))
            return found

        def warm(self, text: str) -> None:
            return None

    signal = Signal()
    queries = _queries(engine, n_queries)
    weights = {"vector": 1.5, **WEIGHTS}
    run_query(engine, _request(queries[0], weights=weights), signal)  # codes: untimed
    samples = []
    for q in queries:
        req = _request(q, weights=weights)
        t = time.perf_counter()
        result = run_query(engine, req, signal)
        samples.append(time.perf_counter() - t)
        assert result["embedding_used"], "the vectors took part"
    out["hybrid"] = _pcts(samples)
    out["peak_rss_mb"] = _rss_mb()
    return out


def _search(mat: Any, rng: Any, n_queries: int) -> dict[str, object]:
    """The vector cache's own search (``VectorMatrix``): exact against binary codes with a
    float32 re-rank (ADR-0007), recall@10 of the second against the first, and the exact
    cosines of a 200-entry BM25 pool, as ``run_query`` asks for them."""
    import numpy as np

    from wikimem_watch.vectors.memory import VectorMatrix

    rows = mat.shape[0]
    m = VectorMatrix(DIM)
    t0 = time.perf_counter()
    for start in range(0, rows, 65536):  # as the cache loads its segments
        part = np.asarray(mat[start : start + 65536])
        m.append([(f"{i:08d}", i - start, 1) for i in range(start, start + len(part))], part)
    out: dict[str, object] = {"load_matrix_s": round(time.perf_counter() - t0, 1)}
    out["matrix_mb"] = m.mat.nbytes / 1e6
    out["quantize_rows"] = m.quantize_rows
    samples: dict[str, list[float]] = {"exact": [], "binary": [], "pool200": []}
    recall: list[float] = []
    coded = m.quantize_rows
    m.search(mat[0], None, 50)  # codes are made on the first coded search: not timed
    for r in rng.choice(rows, size=n_queries, replace=False):
        q = mat[r] + rng.standard_normal(DIM).astype(np.float32) * 0.02
        q /= np.linalg.norm(q)
        m.quantize_rows = rows + 1
        t = time.perf_counter()
        exact = m.search(q, None, 50)  # 50: the nearest run_query asks for at k = 10
        samples["exact"].append(time.perf_counter() - t)
        m.quantize_rows = coded
        t = time.perf_counter()
        approx = m.search(q, None, 50)
        samples["binary"].append(time.perf_counter() - t)
        recall.append(len({h for h, _ in approx[:10]} & {h for h, _ in exact[:10]}) / 10)
        pool = [f"{i:08d}" for i in rng.choice(rows, size=200, replace=False)]
        t = time.perf_counter()
        m.cosines(q, pool)
        samples["pool200"].append(time.perf_counter() - t)
    for name, values in samples.items():
        out[f"{name}_search"] = _pcts(values)
    out["binary_recall_at_10"] = round(statistics.fmean(recall), 3)
    return out


def _child(phase: str, args: argparse.Namespace, vault: Path, snap: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--vault", str(vault), "--snap", str(snap)]
    cmd += ["--entries", str(args.entries), "--vectors", str(args.vectors)]
    cmd += ["--queries", str(args.queries), "--weights", json.dumps(WEIGHTS)]
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
    parser.add_argument(
        "--phases", default="build,ready,vectors,cache,hybrid", help="which phases to run"
    )
    parser.add_argument(
        "--weights", default="{}", help="weights for every query, e.g. '{\"information\": 0}'"
    )
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--vault", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--snap", type=Path, help="snapshot directory (kept between runs)")
    args = parser.parse_args()
    args.vectors = args.vectors or args.entries
    WEIGHTS.update(json.loads(args.weights))
    if args.phase:
        run = {
            "build": lambda: phase_build(args.vault, args.snap, args.queries),
            "ready": lambda: phase_ready(args.vault, args.snap, args.queries),
            "vectors": lambda: phase_vectors(args.vault, args.snap, args.vectors, args.queries),
            "cache": lambda: phase_cache(args.vault, args.snap),
            "hybrid": lambda: phase_hybrid(args.vault, args.snap, args.queries),
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
        pool = report["vectors"]["pool200_search"]["p50_ms"]
        report["hybrid_p50_ms_estimate"] = round(ready + vec + pool, 2)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
