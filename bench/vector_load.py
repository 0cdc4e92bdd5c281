"""A vector cache of N rows loaded from its files: load time, peak RSS, search p50 (ADR-0021).

    .venv/bin/python bench/vector_load.py --rows 300000,1000000 --dir /tmp/vector_load
    .venv/bin/python bench/vector_load.py --phase compact --rows 1000000 --dir /tmp/vector_load

For each N: ``build`` writes a real cache of N 384-d rows through ``VectorCache`` (``add``
in segments of 65,536 rows, then ``maintain``, so there is a base and the policy's merges;
skipped when ``--dir``/N already holds one), then a fresh process (its peak RSS its own)
``load``s it and asks what ``VectorService.cosines`` asks for each query: the 50 nearest
hashes of the whole cache (binary codes and a float32 re-rank above 200k rows, ADR-0007)
and the exact cosines of a 200-hash BM25 pool. The first query (which codes the rows) is
timed apart. ``--phase compact`` (not part of ``all``) loads a copy and rewrites its base
without 1% of the rows, as ``maintain`` does: time and peak RSS. ``--src DIR`` imports
``wikimem_watch`` from DIR (e.g. an export of main), to measure before and after on the
same files. Prints one JSON line per N.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIM = 384
SEGMENT = 65536
FINGERPRINT = {"model": "bench-random", "dim": DIM}


def _status_mb() -> dict[str, float]:
    """RssAnon / RssFile of this process now (Linux), in MB."""
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "VmRSS"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def build(cache_dir: Path, rows: int) -> dict[str, object]:
    import numpy as np

    from bench.vector_search import Space
    from wikimem_watch.vectors.cache import VectorCache

    space = Space(np.random.default_rng(0), 1.2)
    cache = VectorCache(cache_dir, FINGERPRINT)
    cache.load()
    t0 = time.perf_counter()
    for start in range(0, rows, SEGMENT):
        part = space.draw(min(SEGMENT, rows - start))
        cache.add({f"{start + i:016x}": part[i] for i in range(len(part))})
    merges = cache.maintain([f"{i:016x}" for i in range(rows)])
    stats = cache.stats()
    return {
        "build_s": round(time.perf_counter() - t0, 1),
        "merges": merges,
        "segments": stats["segments"],
        "disk_rows": stats["disk_rows"],
    }


def measure(cache_dir: Path, rows: int, n_queries: int) -> dict[str, object]:
    import numpy as np

    from wikimem_watch.vectors.cache import VectorCache

    t0 = time.perf_counter()
    cache = VectorCache(cache_dir, FINGERPRINT)
    cache.load()
    out: dict[str, object] = {"load_s": round(time.perf_counter() - t0, 2)}
    out["rss_after_load_mb"] = _status_mb()
    assert cache.stats()["rows"] == rows, cache.stats()
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((n_queries + 1, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    samples: list[float] = []
    first = 0.0
    checksum = 0.0
    for i, q in enumerate(queries):
        pool = [f"{r:016x}" for r in rng.choice(rows, size=200, replace=False)]
        t = time.perf_counter()
        found = dict(cache.search(q, None, 50))
        found.update(cache.cosines(q, pool))
        spent = time.perf_counter() - t
        checksum += sum(found.values())
        if i == 0:
            first = spent
        else:
            samples.append(spent)
    out["first_query_s"] = round(first, 2)
    out["query_p50_ms"] = round(statistics.median(samples) * 1000, 2)
    out["result_checksum"] = repr(checksum)  # before and after must print the same
    out["rss_end_mb"] = _status_mb()
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def compact(cache_dir: Path, rows: int) -> dict[str, object]:
    """Load a copy of the cache, then rewrite its base without the last 1% of the rows (as
    ``maintain`` does once enough rows have died): the time and the peak RSS."""
    import shutil
    import tempfile

    from wikimem_watch.vectors.cache import VectorCache

    with tempfile.TemporaryDirectory(dir=cache_dir.parent) as tmp:
        copy = Path(tmp) / "cache"
        shutil.copytree(cache_dir, copy)
        cache = VectorCache(copy, FINGERPRINT)
        cache.load()
        loaded_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        t0 = time.perf_counter()
        cache.compact([f"{i:016x}" for i in range(rows - rows // 100)])
        out: dict[str, object] = {"compact_s": round(time.perf_counter() - t0, 2)}
        out["rows_after"] = cache.stats()["rows"]
        out["peak_rss_after_load_mb"] = loaded_mb
        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="300000,1000000")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/vector_load"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--src", type=Path, default=ROOT, help="import wikimem_watch from here")
    ap.add_argument("--phase", choices=["all", "build", "measure", "compact"], default="all")
    args = ap.parse_args()
    sys.path[:0] = [str(args.src), str(ROOT)]
    for rows in [int(r) for r in args.rows.split(",")]:
        cache_dir = args.dir / str(rows)
        if args.phase == "build":
            print(json.dumps({"rows": rows, **build(cache_dir, rows)}), flush=True)
            continue
        if args.phase == "compact":
            print(json.dumps({"rows": rows, **compact(cache_dir, rows)}), flush=True)
            continue
        if args.phase == "measure":
            print(json.dumps({"rows": rows, **measure(cache_dir, rows, args.queries)}))
            continue
        for phase in ["build"] * (not cache_dir.exists()) + ["measure"]:
            cmd = [sys.executable, __file__, "--phase", phase, "--rows", str(rows)]
            cmd += ["--dir", str(args.dir), "--queries", str(args.queries), "--src", str(args.src)]
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
