"""What one edit costs the vector side, at each vault size: the sync an applied batch starts.

    python bench/vector_edits.py --sizes 10000,100000 --edits 20

One process per size: an ``Engine`` with the built-in ``hash`` embedder (no model: it stands
for any embedder, and costs ~0.1 ms a text) scans a vault of ``bench/gen_vault.py`` (via
``bench/index.py``'s cache, copied so the edits never touch it), embeds every entry, then
appends one entry to a diary file ``--edits`` times. Each edit is applied
(``Engine.apply``), then ``Engine.sync_vectors`` queues its sync: the figures are that call
(on the daemon's writer thread it holds the next edit back) and the background sync until
idle. Every other edit is synced the way an edit was before ADR-0020's deltas, looking at
every key (the engine's record of fresh keys dropped), so both ways meet the same load.
Medians in milliseconds; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(source: str, edits: int) -> dict[str, float]:
    """In this process: the medians of ``edits`` edits each way."""
    sys.path.insert(0, str(ROOT))
    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.vectors.service import open_vectors

    work = Path(tempfile.mkdtemp(prefix="wmw-vedits-"))
    try:
        vault = work / "vault"
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".wikimem"))
        config = load_config(vault, {"embed": "hash", "cache_dir": work / "cache"})
        engine = Engine(config)
        engine.scan()
        service = open_vectors(config)
        assert service is not None
        service.open()
        engine.vectors = service
        engine.sync_vectors()  # every key: the first sync after a start
        assert service.sync.wait_idle(3600)
        day = sorted((vault / "diary").iterdir())[-1]
        rel = day.relative_to(vault).as_posix()
        times: dict[str, list[float]] = {
            k: [] for k in ("apply", "call", "bg", "call_all", "bg_all")
        }
        for i in range(2 * edits):
            every_key = i % 2 == 1
            with day.open("a", encoding="utf-8") as f:
                f.write(f"\n## 23:{i % 60:02d}\nedit {i}: a new line about kites and tea\n")
            t0 = time.perf_counter()
            engine.apply([rel])
            t1 = time.perf_counter()
            if every_key:
                engine._fresh_vector_keys = None  # as before the deltas: look at every key
            engine.sync_vectors()
            t2 = time.perf_counter()
            assert service.sync.wait_idle(600)
            t3 = time.perf_counter()
            suffix = "_all" if every_key else ""
            if not every_key:
                times["apply"].append(t1 - t0)
            times["call" + suffix].append(t2 - t1)
            times["bg" + suffix].append(t3 - t2)
        service.close()
        return {
            "entries": float(len(engine.entries)),
            **{k: round(statistics.median(v) * 1000.0, 3) for k, v in times.items()},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]))))
        return 0
    sys.path.insert(0, str(ROOT))
    from bench.index import vault_for

    print("| entries | apply | sync call: changed keys / every key | background: changed / every |")
    print("|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        vault = vault_for(size, 0, args.workdir)
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(vault), str(args.edits)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.splitlines()[-1])
        print(
            f"| {int(r['entries']):,} | {r['apply']:.1f} ms | {r['call']:.2f} / "
            f"{r['call_all']:.1f} ms | {r['bg']:.1f} / {r['bg_all']:.1f} ms |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
