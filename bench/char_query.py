"""One-character CJK query latency (ADR-0002 addendum) beside a two-character one.

    python bench/char_query.py --sizes 10000,100000 --runs 20

Uses the synthetic vaults of bench/index.py (cached in the same work dir). A one-character
term ("猫") is scored as the character: the union of the postings of every term holding it,
from the vocabulary's character index. Per size, in one process after the scan: the first
building the vocabulary's character index; the first query of the character in the most
terms and of a middling one (their unions made), the median of ``--runs`` repeats each (a
union is remembered until the index changes), and the common one again after an edit to
one file (which forgets the unions); a two-character query for comparison. Nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.index import vault_for  # noqa: E402
from wikimem_watch.config import load_config  # noqa: E402
from wikimem_watch.core.engine import Engine  # noqa: E402
from wikimem_watch.retrieval.query import run_query  # noqa: E402
from wikimem_watch.retrieval.request import QueryRequest  # noqa: E402


def _ms(engine: Engine, q: str) -> float:
    started = time.perf_counter()
    run_query(engine, QueryRequest(q=q, expand_links=False, parse_time=False))
    return (time.perf_counter() - started) * 1000


def _common_and_rare(engine: Engine) -> tuple[str, str]:
    """The East-Asian characters in the most and the fewest terms of the vocabulary."""
    engine.index.score(["的"])  # builds the character index
    index = engine.index._char_index
    ranked = sorted(index, key=lambda c: len(index[c]))
    return ranked[-1], ranked[len(ranked) // 2]


def measure(size: int, workdir: Path, runs: int) -> dict[str, object]:
    vault = vault_for(size, 0, workdir)
    engine = Engine(load_config(vault, {"snapshot": False}))
    engine.scan()
    started = time.perf_counter()
    common, rare = _common_and_rare(engine)
    index_ms = (time.perf_counter() - started) * 1000
    out: dict[str, object] = {"entries": size, "terms": len(engine.index._terms)}
    out["char_index_first_ms"] = round(index_ms, 1)
    engine.index._char_memo.clear()  # each character's first union below is timed
    for name, q in (("common", common), ("rare", rare), ("bigram", "咖啡")):
        first = _ms(engine, q)
        warm = statistics.median(_ms(engine, q) for _ in range(runs))
        out[name] = {"q": q, "first_ms": round(first, 2), "p50_ms": round(warm, 2)}
    diary = sorted((vault / "diary").iterdir())[0]
    engine.apply([str(diary.relative_to(vault))])  # unchanged: the index is untouched
    text = diary.read_text(encoding="utf-8")
    try:
        diary.write_text(text + "\n## 23:59\n\nbench edit 猫\n", encoding="utf-8")
        engine.apply([str(diary.relative_to(vault))])
        out["common_after_edit_ms"] = round(_ms(engine, common), 2)
    finally:
        diary.write_text(text, encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench"
    )  # bench/index.py's
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        print(measure(size, args.workdir, args.runs), flush=True)


if __name__ == "__main__":
    main()
