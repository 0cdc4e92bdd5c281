"""Retrieval quality on the LoCoMo development half, through the batch CLI.

    python bench/locomo.py                       # BM25 only, time parsing off
    python bench/locomo.py --parse-time          # gate on time words, now = asked_at
    python bench/locomo.py --set stop_words=false --set k1=1.5
    python bench/locomo.py --req '{"weights": {"recency": 0.1}}'

Each conversation vault is queried by one `wikimem-watch query --vault V --json -` process
(the same code path users run); a hit counts when its `source` is one of the question's
evidence turn ids. Prints Recall@5, Recall@10 and MRR per category and over categories 1-4
(category 5, adversarial, is reported apart). The data is read from ../shared and never copied.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from wikimem_watch.timeparse import parse_time_range

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "bench" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_CALENDAR = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:19|20)\d\d\b", re.I
)


def names_calendar_date(question: str, asked_at: str) -> bool:
    """True when the time parser opens a window on an absolute date (a month name or a year)."""
    found = parse_time_range(question, now=datetime.fromisoformat(f"{asked_at}T12:00"))
    return found is not None and bool(_CALENDAR.search(found.matched))


def run_conversation(
    vault: Path, questions: list[dict[str, object]], extra: dict[str, object], env: dict[str, str]
) -> list[dict[str, object]]:
    lines = []
    for q in questions:
        req: dict[str, object] = {
            "q": q["question"],
            "k": 10,
            "now": f"{q['asked_at']}T12:00:00",
            "parse_time": False,
            "expand_links": False,
        }
        req.update(extra)
        lines.append(json.dumps(req))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wikimem_watch",
            "query",
            "--in-process",
            "--vault",
            str(vault),
            "--json",
            "-",
        ],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    results = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    if len(results) != len(questions):
        raise SystemExit(f"{vault}: {len(results)} results for {len(questions)} questions")
    return results


def score(
    questions: list[dict[str, object]], results: list[dict[str, object]]
) -> dict[str, list[float]]:
    """Per category: lists of (R@5, R@10, RR) triples flattened into three keyed lists."""
    rows: dict[str, list[float]] = defaultdict(list)
    for q, res in zip(questions, results, strict=True):
        evidence = set(q["evidence"])  # type: ignore[arg-type]
        if not evidence:
            continue
        if "error" in res:
            raise SystemExit(f"error for {q['qid']}: {res['error']}")
        sources = [h.get("source") for h in res["hits"]]  # type: ignore[union-attr]
        cat = int(q["category"])  # type: ignore[call-overload]
        rr = next((1.0 / (i + 1) for i, s in enumerate(sources) if s in evidence), 0.0)
        rows[f"{cat}:r5"].append(len(evidence & set(sources[:5])) / len(evidence))
        rows[f"{cat}:r10"].append(len(evidence & set(sources[:10])) / len(evidence))
        rows[f"{cat}:mrr"].append(rr)
        if cat != 5 and names_calendar_date(str(q["question"]), str(q["asked_at"])):
            rows["dated:r5"].append(rows[f"{cat}:r5"][-1])
            rows["dated:r10"].append(rows[f"{cat}:r10"][-1])
            rows["dated:mrr"].append(rr)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--parse-time", action="store_true", help="read time words (now = asked_at)")
    ap.add_argument("--req", default="{}", help="extra JSON fields for every request")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="config override via WIKIMEM_WATCH_<FIELD> (e.g. k1=1.5)",
    )
    ap.add_argument("--only", help="comma-separated question ids (for debugging)")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    args = ap.parse_args()
    extra: dict[str, object] = json.loads(args.req)
    if args.parse_time:
        extra["parse_time"] = True
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    for item in args.set:
        key, _, value = item.partition("=")
        env[f"WIKIMEM_WATCH_{key.upper()}"] = value
    questions = [json.loads(x) for x in (args.data / "questions.jsonl").read_text().splitlines()]
    if args.only:
        wanted = set(args.only.split(","))
        questions = [q for q in questions if q["qid"] in wanted]
    by_conv: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in questions:
        by_conv[str(q["conv_id"])].append(q)
    rows: dict[str, list[float]] = defaultdict(list)
    for conv, qs in sorted(by_conv.items()):
        results = run_conversation(args.data / "vaults" / conv, qs, extra, env)
        for key, vals in score(qs, results).items():
            rows[key].extend(vals)
    summary = summarise(rows)
    if args.json:
        print(json.dumps(summary))
    else:
        print_table(summary)
    return 0


def summarise(rows: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Means per category, over categories 1-4, and over the questions that name a date."""
    groups: dict[str, list[str]] = {name: [str(cat)] for cat, name in CATEGORIES.items()}
    groups["overall(1-4)"] = ["1", "2", "3", "4"]
    groups["names-a-date"] = ["dated"]
    out: dict[str, dict[str, float]] = {}
    for name, keys in groups.items():
        vals = {
            m: [v for k in keys for v in rows.get(f"{k}:{m}", [])] for m in ("r5", "r10", "mrr")
        }
        if vals["r10"]:
            out[name] = {"n": len(vals["r10"]), **{m: sum(v) / len(v) for m, v in vals.items()}}
    return out


def print_table(summary: dict[str, dict[str, float]]) -> None:
    print(f"{'category':14} {'n':>5} {'R@5':>7} {'R@10':>7} {'MRR':>7}")
    for name, s in summary.items():
        print(f"{name:14} {int(s['n']):5d} {s['r5']:7.3f} {s['r10']:7.3f} {s['mrr']:7.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
