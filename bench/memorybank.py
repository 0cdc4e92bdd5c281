"""Retrieval quality on the MemoryBank development half (Chinese and English), in-process.

    python bench/memorybank.py                           # BM25, time on and off, both languages
    python bench/memorybank.py --hybrid --cache /tmp/mb-vectors   # + hybrid rows (needs [local])
    python bench/memorybank.py --set jieba=true --lang cn
    python bench/memorybank.py --req '{"weights": {"recency": 0}}' --misses

Each person's diary vault is indexed by one `Engine` and asked its own questions through
`run_query` (the code path every shell uses), with `now` = the question's `asked_at`. A hit
counts when its `source` (the turn id in the entry's metadata comment) is an evidence turn.
Prints R@1, R@3, R@5 and MRR over all questions, over those that name a calendar date
("5月4日", "May 4th", by a regex of this script, not by the product's parser) and over the
rest. The data is read from ../shared and never copied; vectors are cached under --cache.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "bench" / "memorybank"
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
NAMES_A_DATE = re.compile(
    rf"\d{{1,2}}\s*月\s*\d{{1,2}}\s*[日号]|\b(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b", re.I
)


def load_questions(data: Path, lang: str) -> dict[str, list[dict[str, Any]]]:
    by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (data / lang / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            by_user[q["user"]].append(q)
    return by_user


def build_engine(vault: Path, overrides: dict[str, object], cache: Path | None) -> Engine:
    cfg: dict[str, object] = dict(overrides)
    if cache is not None:
        cfg.update({"cache_dir": cache, "embed": "local"})
    engine = Engine(load_config(vault, cfg))
    engine.scan()
    if cache is not None:
        from wikimem_watch.vectors.local_embedder import LocalEmbedder
        from wikimem_watch.vectors.service import VectorService

        service = VectorService(LocalEmbedder(), cache)
        service.open()
        service.sync.sync(engine.embedding_inputs())
        engine.vectors = service
    return engine


def ask(engine: Engine, q: dict[str, Any], extra: dict[str, Any]) -> list[str]:
    req = {"q": q["question"], "k": 10, "now": f"{q['asked_at']}T12:00:00", **extra}
    res = run_query(engine, QueryRequest.from_dict(req))
    return [str(h.get("source")) for h in res["hits"]]  # type: ignore[union-attr]


def score(sources: list[str], evidence: set[str]) -> dict[str, float]:
    rr = next((1.0 / (i + 1) for i, s in enumerate(sources) if s in evidence), 0.0)
    row = {f"r{n}": len(evidence & set(sources[:n])) / len(evidence) for n in (1, 3, 5)}
    return {**row, "mrr": rr}


def evaluate(
    engines: dict[str, Engine],
    by_user: dict[str, list[dict[str, Any]]],
    extra: dict[str, Any],
    misses: bool,
) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for user, qs in by_user.items():
        for q in qs:
            if not q["evidence"]:
                continue  # a question with no labelled evidence cannot be scored
            sources = ask(engines[user], q, extra)
            row = score(sources, set(q["evidence"]))
            dated = bool(NAMES_A_DATE.search(q["question"]))
            groups["all"].append(row)
            groups["dated" if dated else "undated"].append(row)
            if misses and row["r1"] < 1.0:
                print(f"  miss {q['qid']}: {q['question']}  want {q['evidence']} got {sources[:3]}")
    return {
        name: {"n": len(rows), **{m: sum(r[m] for r in rows) / len(rows) for m in rows[0]}}
        for name, rows in groups.items()
        if rows
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--lang", default="cn,en", help="cn, en or both (default)")
    ap.add_argument("--hybrid", action="store_true", help="add hybrid rows (needs [local])")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/memorybank-vectors"))
    ap.add_argument("--req", default="{}", help="extra JSON fields for every request")
    ap.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="config override"
    )
    ap.add_argument("--misses", action="store_true", help="print questions missed at rank 1")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON lines")
    args = ap.parse_args()
    overrides: dict[str, object] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = json.loads(value) if value[:1] in '0123456789-tf[{"' else value
    base: dict[str, Any] = json.loads(args.req)
    for lang in args.lang.split(","):
        by_user = load_questions(args.data, lang)
        vaults = args.data / lang / "vaults"
        modes: list[tuple[str, dict[str, Any], bool]] = [
            ("bm25, time on", {"weights": {"vector": 0}}, False),
            ("bm25, time off", {"weights": {"vector": 0}, "parse_time": False}, False),
        ]
        if args.hybrid:
            modes += [
                ("hybrid, time on", {}, True),
                ("hybrid, time off", {"parse_time": False}, True),
            ]
        engines: dict[bool, dict[str, Engine]] = {}
        for name, extra, hybrid in modes:
            if hybrid not in engines:
                cache = args.cache / lang if hybrid else None
                engines[hybrid] = {
                    u: build_engine(vaults / u, overrides, cache / u if cache else None)
                    for u in by_user
                }
            if args.misses:
                print(f"{lang} {name}:")
            summary = evaluate(engines[hybrid], by_user, {**extra, **base}, args.misses)
            if args.json:
                print(json.dumps({"lang": lang, "mode": name, **summary}))
            else:
                print_table(f"{lang} {name}", summary)
    return 0


def print_table(title: str, summary: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'questions':10} {'n':>4} {'R@1':>6} {'R@3':>6} {'R@5':>6} {'MRR':>6}")
    for name in ("all", "dated", "undated"):
        s = summary.get(name)
        if s:
            print(
                f"{name:10} {int(s['n']):4d} {s['r1']:6.3f} {s['r3']:6.3f} {s['r5']:6.3f} "
                f"{s['mrr']:6.3f}"
            )


if __name__ == "__main__":
    raise SystemExit(main())
