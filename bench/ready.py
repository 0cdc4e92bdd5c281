"""A start from the index snapshot, BM25-only and with an embedder configured, in-process.

    python bench/ready.py --sizes 100000 --runs 3
    python bench/ready.py --sizes 1000000 --runs 1 --workdir /tmp/store/bench

Each start is a fresh process that builds an ``Engine`` and runs ``scan_with_snapshot`` (what a
one-shot query and, through the same restore, the daemon do), with nothing changed on disk:
wall time to ready and peak RSS. ``embed = "hash"`` stands for any embedder: the engine keeps
each entry's vector key (ADR-0020), and no vector is loaded, so the figures are the engine's
side alone. The snapshot is made first (a cold scan) and, for the embedder rows, once more by
a first start that adds the keys (reported as ``first``). Vaults come from ``bench/gen_vault.py``
via ``bench/index.py``'s cache. Nothing here asserts a time.
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

ROOT = Path(__file__).resolve().parent.parent


def start(vault: str, embed: str, snap: str) -> dict[str, float]:
    """One start in this process: seconds to ready, files re-read, peak RSS (MB)."""
    sys.path.insert(0, str(ROOT))
    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import scan_with_snapshot

    began = time.perf_counter()
    engine = Engine(load_config(vault, {"snapshot_dir": snap, "embed": embed}))
    stats = scan_with_snapshot(engine)
    return {
        "ready_s": time.perf_counter() - began,
        "reread": len(stats.changed),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _child(vault: Path, embed: str, snap: Path) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", str(vault), embed, str(snap)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(start(*args.child)))
        return 0
    sys.path.insert(0, str(ROOT))
    from bench.index import vault_for

    print("| entries | embed | first start | ready (median) | peak RSS MB (median) |")
    print("|---:|:---|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        vault = vault_for(size, 0, args.workdir)
        snap = Path(tempfile.mkdtemp(prefix="wmw-ready-"))
        _child(vault, "none", snap)  # the snapshot, from a cold scan
        for embed in ("none", "hash"):
            first = _child(vault, embed, snap)
            runs = [_child(vault, embed, snap) for _ in range(args.runs)]
            ready = statistics.median(r["ready_s"] for r in runs)
            rss = statistics.median(r["peak_rss_mb"] for r in runs)
            print(f"| {size:,} | {embed} | {first['ready_s']:.2f} s | {ready:.2f} s | {rss:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
