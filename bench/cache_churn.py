"""How much the vector cache writes per edit, and how many texts get embedded per edit.

Run (from the repository root)::

    .venv/bin/python bench/cache_churn.py --rows 10000,20000 --edits 12000
    .venv/bin/python bench/cache_churn.py --rows 100000 --edits 20000
    .venv/bin/python bench/cache_churn.py --model --rows 20000,100000,1000000
    .venv/bin/python bench/cache_churn.py --machines 1,2 --edits 40

Bytes (the real ``VectorCache`` and ``VectorSync`` in this process, ``HashEmbedder`` of
``--dim`` 64 like ``--embed hash``): a base of N rows, then ``--edits`` edits, each one
``sync`` of the live set as the daemon does it: half append a new entry (one new row), half
rewrite an existing entry (one new row, one dead). Every byte the cache writes is counted
twice, by the cache (``bytes_written``) and by a wrapper around ``atomic_write``, and is
reported in *rows' worth* (bytes / (4 × dim)), with the merges and base rewrites done.
The writes of a base rewrite are amortised only over the edits run: choose ``--edits`` past
one cycle (``max_dead_fraction`` × N / 0.5 edits) to include one, or use ``--model``.

``--model`` runs the merge policy alone (``policy.next_step`` on row counts, no files) over
several full cycles, counting rows written per edit (keys and headers excluded): the
amortised figure for sizes too large to run for real.

``--machines``: two real daemons on two copies of a vault kept in step by a copy loop
(``bench/sync_sim.py``), against one counting stub embedding server; embedded texts per edit.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from wikimem_watch import atomic  # noqa: E402
from wikimem_watch.vectors import cache_groups, files, peers  # noqa: E402
from wikimem_watch.vectors.cache import VectorCache  # noqa: E402
from wikimem_watch.vectors.hash_embedder import HashEmbedder  # noqa: E402
from wikimem_watch.vectors.policy import MergePolicy, next_step  # noqa: E402
from wikimem_watch.vectors.sync import VectorSync  # noqa: E402


def key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class CountingWrites:
    """Counts the bytes of every ``atomic_write`` of the vector side (independently of the
    cache's own count), in each module that calls it."""

    USERS = (files, cache_groups, peers)

    def __init__(self) -> None:
        self.bytes = 0
        self.files = 0
        self._real = atomic.atomic_write

    def __enter__(self) -> CountingWrites:
        def counted(path: Path, data: bytes) -> None:
            self.bytes += len(data)
            self.files += 1
            self._real(path, data)

        for module in self.USERS:
            module.atomic_write = counted  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        for module in self.USERS:
            module.atomic_write = self._real  # type: ignore[attr-defined]


def measure_bytes(rows: int, edits: int, dim: int, seed: int = 0) -> dict[str, float]:
    """Bytes written per edit by the real cache at ``rows`` live rows."""
    rng = np.random.default_rng(seed)
    emb = HashEmbedder(dim=dim)
    with tempfile.TemporaryDirectory() as tmp:
        cache = VectorCache(Path(tmp), emb.fingerprint)
        cache.load()
        base = rng.standard_normal((rows, dim)).astype(np.float32)
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        live = {key(f"entry {i}"): f"entry {i}" for i in range(rows)}
        cache.add({h: base[i : i + 1] for i, h in enumerate(live)})
        cache.compact(live)
        sync = VectorSync(emb, cache)
        sync.sync(live)  # the once-after-load maintenance
        before_cache, calls = cache.bytes_written, 0
        started = time.perf_counter()
        names = list(live)
        with CountingWrites() as counted:
            for i in range(edits):
                text = f"edit {i} of the vault"
                if i % 2 and names:  # rewrite an existing entry: its old row dies
                    old = names.pop(int(rng.integers(len(names))))
                    del live[old]
                live[key(text)] = text
                names.append(key(text))
                calls += sync.sync(live)
                if i == edits // 2:
                    mid = cache.stats()
        elapsed = time.perf_counter() - started
        stats = cache.stats()
        row_bytes = 4 * dim
        return {
            "rows": rows,
            "edits": edits,
            "embedded_per_edit": calls / edits,
            "rows_worth_per_edit": counted.bytes / edits / row_bytes,
            "cache_count_agrees": float(counted.bytes == cache.bytes_written - before_cache),
            "files_written": counted.files,
            "groups_at_end": float(
                str(stats["segments"]).isdigit() and int(str(stats["segments"])) + 1
            ),
            "disk_rows_mid": float(str(mid["disk_rows"])),
            "disk_rows_end": float(str(stats["disk_rows"])),
            "ms_per_edit": 1000 * elapsed / edits,
        }


def model_rows(rows: int, edits: int, policy: MergePolicy) -> dict[str, float]:
    """Rows written per edit by the policy alone (no files): half appends, half rewrites."""
    groups: dict[str, int] = {"base": rows}
    dead = 0
    written = rewrites = merges = 0
    for i in range(edits):
        groups[f"s{i:09d}"] = 1
        written += 1
        dead += i % 2
        while (step := next_step(list(groups.items()), dead, policy)) is not None:
            if step.kind == "base":
                live = sum(groups.values()) - dead
                groups, dead = {f"b{i:09d}": live}, 0
                written += live
                rewrites += 1
            else:
                merged = sum(groups.pop(n) for n in step.names)
                groups[f"m{i:09d}"] = merged
                written += merged
                merges += 1
    return {
        "rows": rows,
        "edits": edits,
        "rows_per_edit": written / edits,
        "base_rewrites": rewrites,
        "merges": merges,
        "groups_at_end": len(groups),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="10000,20000")
    parser.add_argument("--edits", type=int, default=12000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--model", action="store_true")
    parser.add_argument("--machines", default="")
    parser.add_argument("--grace", type=float, default=3.0, help="peer grace, s (0: off)")
    args = parser.parse_args()
    if args.machines:
        from sync_sim import run_machines

        for machines in [int(m) for m in args.machines.split(",")]:
            print(run_machines(machines, args.edits, grace_s=args.grace))
        return
    for rows in [int(r) for r in args.rows.split(",")]:
        if args.model:
            print(model_rows(rows, args.edits, MergePolicy()))
        else:
            print(measure_bytes(rows, args.edits, args.dim))


if __name__ == "__main__":
    main()
