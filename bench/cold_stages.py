"""Where a cold build's time goes, in one process, and its peak RSS in a fresh one.

    python bench/cold_stages.py --sizes 10000,100000 --scans 3

For each size, a fresh process builds the index of a vault of ``bench/gen_vault.py`` (via
``bench/index.py``'s cache) ``--scans`` times with the scan helper off (``Engine.scan`` inside
``no_gc()``, as ``bench/index.py``'s "one process" column), timing the stages inside each scan:
``_prepare`` (read, hash, parse, tokenize), ``_swap`` and, inside it, ``add_many``,
``store.put``, ``flush`` and ``settle`` (the bulk layout, ADR-0019 addendum). A second fresh
process builds once and reports wall and CPU time and ``ru_maxrss`` (ADR-0018's addendum
measured the peak this way), then writes the index snapshot and reports its time, the peak
with it and the resident memory after it (ADR-0015's addendum). To compare two trees, run
it from each (``PYTHONPATH``) in turn. Medians; nothing here asserts a time.
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
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _one_process() -> Any:
    from wikimem_watch.config import load_config
    from wikimem_watch.core import scan
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import no_gc

    scan.PARALLEL_MIN_ITEMS = sys.maxsize  # the helper off: the stages are this process's

    def build(vault: str) -> Any:
        engine = Engine(load_config(vault, {"snapshot": False}))
        with no_gc():
            engine.scan()
        return engine

    return build


def stages(vault: str, scans: int) -> dict[str, float]:
    """Median seconds of each stage over ``scans`` cold scans in this process."""
    from wikimem_watch.core import bm25, engine, store

    acc: dict[str, float] = defaultdict(float)

    def timed(owner: Any, name: str) -> None:
        inner: Callable[..., Any] = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                acc[name] += time.perf_counter() - t0

        setattr(owner, name, wrapper)

    for owner, name in [
        (engine.Engine, "_prepare"),
        (engine.Engine, "_swap"),
        (bm25.Bm25Index, "add_many"),
        (bm25.Bm25Index, "flush"),
        (bm25.Bm25Index, "settle"),
        (store.EntryStore, "put"),
    ]:
        timed(owner, name)
    build = _one_process()
    runs: dict[str, list[float]] = defaultdict(list)
    for _ in range(scans):
        acc.clear()
        t0 = time.perf_counter()
        build(vault)
        runs["scan"].append(time.perf_counter() - t0)
        for name, seconds in acc.items():
            runs[name].append(seconds)
    return {name: round(statistics.median(v), 3) for name, v in runs.items()}


def peak(vault: str) -> dict[str, float]:
    """One cold build in this (fresh) process: wall, CPU, peak RSS; then the index snapshot
    written (``write_snapshot``, as the daemon does once idle): its time, the peak with it
    and the resident memory after it."""
    from wikimem_watch.core.snapshot import write_snapshot

    build = _one_process()
    t0, c0 = time.perf_counter(), time.process_time()
    engine = build(vault)
    out = {
        "wall_s": round(time.perf_counter() - t0, 3),
        "cpu_s": round(time.process_time() - c0, 3),
        "peak_rss_mb": _peak_mb(),
    }
    with tempfile.TemporaryDirectory(prefix="wmw-stages-") as tmp:
        t0 = time.perf_counter()
        write_snapshot(engine, Path(tmp) / "index.snapshot")
        out["snapshot_write_s"] = round(time.perf_counter() - t0, 3)
    out["peak_rss_with_write_mb"] = _peak_mb()
    out["rss_after_write_mb"] = _rss_mb()
    return out


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _rss_mb() -> float:
    """VmRSS (Linux), in MB; NaN elsewhere."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return float("nan")
    return next(
        (round(int(x.split()[1]) / 1024, 1) for x in lines if x.startswith("VmRSS")), float("nan")
    )


def _child(*argv: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *argv], check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, float] = json.loads(out.splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--scans", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, vault, scans = args.child
        print(json.dumps(stages(vault, int(scans)) if kind == "stages" else peak(vault)))
        return 0
    sys.path.insert(0, str(ROOT))
    from bench.index import vault_for

    for size in (int(s) for s in args.sizes.split(",")):
        vault = str(vault_for(size, 0, args.workdir))
        report = {"entries": size, **_child("stages", vault, str(args.scans))}
        report.update(_child("peak", vault, "1"))
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
