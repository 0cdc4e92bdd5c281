"""Benchmarks for the core index: cold build, query latency, one-file apply and peak RSS,
each beside ``bm25s`` (and ``rank_bm25`` up to 10k entries) on the same corpus and tokens.

Run (from the repository root)::

    /work/venv/bin/python bench/index.py --sizes 1000,10000,100000 --json /tmp/bench-index.json

Vaults come from :mod:`bench.gen_vault` and are cached under ``--workdir`` (default: a
``wikimem-bench`` folder in the temp dir), keyed by size, seed and the generator's source.
Each size is measured in a fresh child process, so peak RSS is per size; inside the child our
engine runs first, so ``peak RSS`` is ours alone, and the references run after it.

The cold build (read, parse, tokenize and index every file: ``Engine.scan``) is measured both
ways, alternately: with the scan helper process where it is possible (the default, ADR-0019)
and in one process. Its peer is bm25s from the same texts (the text we index per entry) with
bm25s's own tokenizer and index; the two are run alternately once more for the ratio, so both
meet the same load. To profile one size, run the child directly, e.g.::

    /work/venv/bin/python -m cProfile -s cumtime bench/index.py --child 100000 \\
        --vault /tmp/wikimem-bench/vault-100000-s0

Queries are 2–4 terms drawn from the corpus's own tokens (English and Chinese mixed), run
through ``run_query`` with ``expand_links`` off and ``parse_time`` off unless a row says so.
The references see exactly the same document and query tokens (``wikimem_watch.core.tokenize``).
Nothing here asserts a time: it prints a Markdown report and optionally writes JSON.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
END_DAY = date(2026, 11, 28)
NOW = "2026-11-28T21:00:00+08:00"
WARMUP_QUERIES = 10
APPLY_EDITS = 50

BM25_ONLY = {  # agreement check only: every signal but BM25 off
    "bm25": 1.0,
    "vector": 0.0,
    "recency": 0.0,
    "previous": 0.0,
    "question": 0.0,
    "information": 0.0,
}

Result = dict[str, Any]


# ---------------------------------------------------------------------------- measuring


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


def _percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean in milliseconds."""
    ordered = sorted(samples_s)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": _ms(statistics.median(ordered)),
        "p95_ms": _ms(p95),
        "mean_ms": _ms(statistics.fmean(ordered)),
    }


def _time_each(items: Sequence[Any], call: Callable[[Any], object]) -> list[float]:
    """Wall time of ``call(item)`` for each item, after a short warm-up on the first few."""
    for item in items[:WARMUP_QUERIES]:
        call(item)
    out = []
    for item in items:
        started = time.perf_counter()
        call(item)
        out.append(time.perf_counter() - started)
    return out


def _peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident set size of this process so far, or (``RUSAGE_CHILDREN``) of its largest
    child, the scan helper (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(who).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _rss_mb() -> float | None:
    """Current resident set size, where /proc is available."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024), 1)


# ------------------------------------------------------------------------------ queries


def sample_queries(
    docs: Sequence[Any], count: int, seed: int, terms_of: Callable[[Any], list[str]]
) -> list[str]:
    """``count`` queries of 2–4 distinct corpus tokens: mostly from one entry, and about half
    the time one more term from another entry, so English and Chinese terms mix.

    ``terms_of(doc)`` tokenizes one document on demand, so no corpus-sized token list is held
    while our peak RSS is being measured."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        doc = list(dict.fromkeys(terms_of(rng.choice(docs))))
        if not doc:
            continue
        terms = rng.sample(doc, min(len(doc), rng.randint(1, 3)))
        if rng.random() < 0.5 or len(terms) < 2:
            other = terms_of(rng.choice(docs))
            if other:
                terms.append(rng.choice(other))
        terms = list(dict.fromkeys(terms))
        if len(terms) >= 2:
            out.append(" ".join(terms[:4]))
    return out


def _request(q: str, **extra: object) -> Any:
    from wikimem_watch.retrieval.request import QueryRequest

    body: dict[str, object] = {
        "q": q,
        "k": 10,
        "now": NOW,
        "parse_time": False,
        "expand_links": False,
    }
    body.update(extra)
    return QueryRequest.from_dict(body)


def query_variants() -> dict[str, dict[str, object]]:
    """Name → extra request fields. The window is the last 365 days of the diary."""
    window = [(END_DAY - timedelta(days=364)).isoformat(), END_DAY.isoformat()]
    return {
        "plain": {},
        "window365": {"time_range": window},
        "plain+links": {"expand_links": True},
        "window365+links": {"time_range": window, "expand_links": True},
        "plain+parse_time": {"parse_time": True},
    }


# ------------------------------------------------------------------------ our engine


def _cold_build(vault: Path, *, helper: bool) -> tuple[Any, float, float, float]:
    """One cold ``Engine(load_config(vault)).scan()``: (engine, wall s, CPU s here, CPU s of
    the scan helper). ``helper`` False keeps the scan in this process (core/scan.py)."""
    from wikimem_watch.config import load_config
    from wikimem_watch.core import scan
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import no_gc

    threshold = scan.PARALLEL_MIN_ITEMS
    if not helper:
        scan.PARALLEL_MIN_ITEMS = sys.maxsize
    try:
        gc.collect()
        children = _children_cpu()
        started, cpu_started = time.perf_counter(), time.process_time()
        engine = Engine(load_config(vault))
        with no_gc():  # as the daemon's and a one-shot's initial scan (ADR-0015)
            engine.scan()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        scan.PARALLEL_MIN_ITEMS = threshold
    return engine, wall, cpu, _children_cpu() - children


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_build(vault: Path, repeats: int) -> tuple[Any, Result]:
    """Cold builds, alternately with the scan helper (the default, where it is possible) and
    in one process; returns the last engine and the timings (medians of ``repeats`` each)."""
    from wikimem_watch.core.scan import helper_kind

    runs: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    engine: Any = None
    for i in range(repeats):
        for helper in (True, False) if i % 2 == 0 else (False, True):
            engine = None
            engine, wall, cpu, helper_cpu = _cold_build(vault, helper=helper)
            runs[helper].append((wall, cpu, helper_cpu))
    counts = engine.counts()

    def median(helper: bool, k: int) -> float:
        return round(statistics.median(run[k] for run in runs[helper]), 4)

    return engine, {
        "first_s": round(runs[True][0][0], 4),
        "median_s": median(True, 0),
        "cpu_median_s": median(True, 1),
        "helper_cpu_median_s": median(True, 2),
        "one_process_median_s": median(False, 0),
        "helper_possible": helper_kind(10**9) is not None,  # a fork, or a new interpreter
        "helper_runs": sum(run[2] > 0 for run in runs[True]),  # the load may rule it out
        "repeats": repeats,
        "entries": len(engine.entries),
        "diary": counts["diary"],
        "wiki": counts["wiki"],
        "files": len(engine.files),
        "terms": len(engine.index._term_id),
    }


def measure_queries(engine: Any, queries: Sequence[str]) -> Result:
    from wikimem_watch.retrieval.query import run_query

    out: Result = {}
    for name, extra in query_variants().items():
        requests = [_request(q, **extra) for q in queries]
        hits: list[int] = []

        def call(req: Any, hits: list[int] = hits) -> None:
            hits.append(len(run_query(engine, req)["hits"]))  # type: ignore[arg-type]

        out[name] = _percentiles(_time_each(requests, call))
        out[name]["mean_hits"] = round(statistics.fmean(hits), 2)
    candidates = [engine.index.score(engine.tokenizer(q))[0].size for q in queries]
    out["mean_candidates"] = round(statistics.fmean(candidates), 1)
    out["raw_score_top10"] = _percentiles(
        _time_each(queries, lambda q: _raw_top10(engine, engine.tokenizer(q)))
    )
    return out


def _raw_top10(engine: Any, terms: list[str]) -> object:
    """The index alone: score every candidate, then an unordered top 10 (no result dicts)."""
    import numpy as np

    slots, scores = engine.index.score(terms)
    if scores.size > 10:
        return slots[np.argpartition(-scores, 9)[:10]]
    return slots


def measure_apply(engine: Any, vault: Path, edits: int = APPLY_EDITS) -> Result:
    """Edit one diary file on disk, then time ``engine.apply([path])``; median of ``edits``."""
    diary = sorted(p for p in engine.files if p.startswith("diary/"))
    rel = diary[len(diary) // 2]
    path = vault / rel
    original = path.read_text(encoding="utf-8")
    times: list[float] = []
    try:
        for i in range(edits):
            path.write_text(original + f"\nEdited {i}: one more coffee 咖啡 note.\n", "utf-8")
            started = time.perf_counter()
            stats = engine.apply([rel])
            times.append(time.perf_counter() - started)
            if stats.changed != [rel]:
                raise RuntimeError(f"edit {i} of {rel!r} was not applied: {stats!r}")
    finally:
        path.write_text(original, encoding="utf-8")
        engine.apply([rel])
    return {"path": rel, "entries_in_file": len(engine.files[rel].slots), **_percentiles(times)}


def measure_ours(vault: Path, repeats: int, queries_n: int, seed: int) -> tuple[Result, Any]:
    """Build, query and apply; peak RSS is read before any reference work allocates."""
    from wikimem_watch.core.tokenize import tokenize

    result: Result = {"rss_baseline_mb": _rss_mb()}
    engine, result["build"] = measure_build(vault, repeats)
    result["rss_after_build_mb"] = _rss_mb()
    # Entries are built from the store only when drawn: the full list is made after our
    # peak RSS is read, for the references.
    sample = _Lazy(engine)
    queries = sample_queries(sample, queries_n, seed, lambda e: tokenize(e.text))
    result["queries"] = measure_queries(engine, queries)
    result["apply"] = measure_apply(engine, vault)
    result["peak_rss_mb"] = _peak_rss_mb()
    # The helper is a fork: its peak counts the pages it shares with this process too.
    result["helper_peak_rss_mb"] = _peak_rss_mb(resource.RUSAGE_CHILDREN)
    entries = list(engine.entries.values())
    texts = _doc_texts(engine, entries)
    started = time.perf_counter()
    docs = [tokenize(t) for t in texts]
    result["tokenize_corpus_s"] = round(time.perf_counter() - started, 4)
    if sum(map(len, docs)) != engine.index._total_len:  # the references must see our texts
        raise RuntimeError("the texts given to the references are not the ones indexed")
    result["index_only_s"] = round(_index_only(docs), 4)
    refs = {"ids": [e.id for e in entries], "docs": docs, "queries": queries, "texts": texts}
    return result, (engine, refs)


class _Lazy(Sequence[Any]):
    """The engine's entries in slot order, each built when indexed."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.slots = engine.index.live_slots()

    def __len__(self) -> int:
        return int(self.slots.size)

    def __getitem__(self, i: Any) -> Any:
        return self.engine.slot_entry(int(self.slots[i]))


def _doc_texts(engine: Any, entries: Sequence[Any]) -> list[str]:
    """The text the engine indexes for each entry, from its own helpers (the heading field
    and the question the entry before it ended with, ADR-0009), so both sides see the same."""
    from wikimem_watch.core.facts import asked_before, indexed_text

    config = engine.config
    by_path: dict[str, list[Any]] = {}
    for entry in entries:
        by_path.setdefault(entry.path, []).append(entry)
    asked: dict[str, str] = {}
    for same_file in by_path.values():
        questions = asked_before(same_file) if config.question_context else [""] * len(same_file)
        asked.update(zip((e.id for e in same_file), questions, strict=True))
    return [indexed_text(e, config.heading_weight, asked[e.id]) for e in entries]


def _index_only(docs: Sequence[list[str]]) -> float:
    """Our ``Bm25Index`` alone over pre-tokenized docs: the like-for-like of ``bm25s.index``."""
    from wikimem_watch.core.bm25 import Bm25Index

    gc.collect()
    started = time.perf_counter()
    index = Bm25Index()
    for start in range(0, len(docs), 4096):  # as Engine.scan does: bulk, in bounded chunks
        index.add_many(docs[start : start + 4096])
    index.flush()
    return time.perf_counter() - started


# ------------------------------------------------------------------------ references


def measure_bm25s(engine: Any, refs: dict[str, Any]) -> Result:
    import bm25s

    docs, queries, ids = refs["docs"], refs["queries"], refs["ids"]
    cfg = engine.config
    gc.collect()
    started = time.perf_counter()
    retriever = bm25s.BM25(k1=cfg.k1, b=cfg.b)
    retriever.index(docs, show_progress=False)
    index_s = time.perf_counter() - started
    # The terms our query path scores: particle bigrams left out (retrieval.query).
    from wikimem_watch.retrieval.query import content_terms

    qtokens = [content_terms(engine.tokenizer(q)) for q in queries]

    def retrieve(tokens: list[str]) -> tuple[Any, Any]:
        docs, scores = retriever.retrieve([tokens], k=10, show_progress=False)
        return docs[0], scores[0]

    result: Result = {"index_s": round(index_s, 4), **_percentiles(_time_each(qtokens, retrieve))}
    result.update(_agreement(engine, queries, [retrieve(t) for t in qtokens], ids))
    return result


def measure_side_by_side(vault: Path, texts: Sequence[str], repeats: int) -> Result:
    """Our cold build and bm25s's tokenize + index of the same texts, alternated, so both
    meet the same load on a shared machine; medians of ``repeats`` each."""
    from wikimem_watch.config import load_config

    cfg = load_config(vault)
    ours: list[float] = []
    theirs: list[float] = []
    load = os.getloadavg()[0]
    for i in range(repeats):
        for side in ("ours", "bm25s") if i % 2 == 0 else ("bm25s", "ours"):
            if side == "ours":
                ours.append(_cold_build(vault, helper=True)[1])
            else:
                theirs.append(_bm25s_tokenize_index(texts, cfg.k1, cfg.b))
    return {
        "ours_s": round(statistics.median(ours), 4),
        "bm25s_tokenize_index_s": round(statistics.median(theirs), 4),
        "ratio": round(statistics.median(ours) / statistics.median(theirs), 3),
        "loadavg": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def _bm25s_tokenize_index(texts: Sequence[str], k1: float, b: float) -> float:
    """bm25s from the same texts: its own tokenizer (English stop words, the same Snowball
    stemmer), then its index — the peer of our whole cold build (which also parses)."""
    import bm25s
    import Stemmer

    gc.collect()
    started = time.perf_counter()
    tokens = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False
    )
    bm25s.BM25(k1=k1, b=b).index(tokens, show_progress=False)
    return time.perf_counter() - started


def _agreement(
    engine: Any, queries: Sequence[str], theirs: Sequence[tuple[Any, Any]], ids: list[str]
) -> dict[str, float]:
    """How well our plain top 10 matches bm25s's: the share of its (positive-score) ids we also
    return, and the share of queries whose top-10 raw BM25 scores agree (ties make ids differ),
    over the queries without a one-character East-Asian term (scored as the character,
    ADR-0002 addendum, which bm25s has no term for)."""
    import numpy as np

    from wikimem_watch.core.bm25_query import is_char_term
    from wikimem_watch.retrieval.query import run_query

    shares, agree, compared = [], 0, 0
    for q, (docs, scores) in zip(queries, theirs, strict=True):
        if any(is_char_term(t) for t in engine.tokenizer(q)):
            continue  # one East-Asian character: we score the character, bm25s its unigram
        hits: list[dict[str, Any]] = run_query(
            engine, _request(q, explain=True, weights=BM25_ONLY)
        )["hits"]  # type: ignore[assignment]
        positive = [(ids[int(d)], float(s)) for d, s in zip(docs, scores, strict=True) if s > 0]
        want = {i for i, _ in positive}
        shares.append(len({h["id"] for h in hits} & want) / max(1, len(want)))
        ours_raw = sorted((h["explain"]["bm25_raw"] for h in hits), reverse=True)
        theirs_raw = sorted((s for _, s in positive), reverse=True)
        # bm25s's "lucene" scores drop BM25's constant (k1 + 1) factor: compare score shapes.
        same = len(ours_raw) == len(theirs_raw) and (
            not ours_raw
            or np.allclose(
                np.divide(ours_raw, ours_raw[0]), np.divide(theirs_raw, theirs_raw[0]), rtol=1e-3
            )
        )
        agree += int(same)
        compared += 1
    return {
        "top10_id_overlap": round(statistics.fmean(shares), 3) if shares else 0.0,
        "top10_score_agreement": round(agree / max(1, compared), 3),
        "agreement_queries": compared,
    }


def measure_rank_bm25(engine: Any, refs: dict[str, Any]) -> Result:
    from rank_bm25 import BM25Okapi

    gc.collect()
    started = time.perf_counter()
    okapi = BM25Okapi(refs["docs"], k1=engine.config.k1, b=engine.config.b)
    index_s = time.perf_counter() - started
    qtokens = [engine.tokenizer(q) for q in refs["queries"]]
    return {"index_s": round(index_s, 4), **_percentiles(_time_each(qtokens, okapi.get_scores))}


def run_child(vault: Path, size: int, args: argparse.Namespace) -> Result:
    """Everything for one size, in this process: ours first, then the references."""
    # Import before the RSS baseline so that the baseline includes the package and numpy.
    for module in ("wikimem_watch.core.engine", "wikimem_watch.retrieval.query", "numpy"):
        importlib.import_module(module)
    if args.force_helper:
        from wikimem_watch.core import scan

        scan._cpu_free = lambda: True  # type: ignore[assignment]  # the load may say no

    result, (engine, refs) = measure_ours(vault, args.repeats, args.queries, args.seed)
    out: Result = {"size": size, "ours": result}
    out["bm25s"] = measure_bm25s(engine, refs)
    out["side_by_side"] = measure_side_by_side(vault, refs["texts"], args.repeats)
    if size <= args.rank_bm25_max:
        out["rank_bm25"] = measure_rank_bm25(engine, refs)
    out["peak_rss_all_mb"] = _peak_rss_mb()
    return out


# ---------------------------------------------------------------------------- parent


def vault_for(size: int, seed: int, workdir: Path) -> Path:
    """A generated vault for ``size``, reused when the generator and seed are unchanged."""
    from bench.gen_vault import generate

    source = (ROOT / "bench" / "gen_vault.py").read_bytes()
    stamp_text = f"{size} {seed} {hashlib.sha256(source).hexdigest()}"
    vault = workdir / f"vault-{size}-s{seed}"
    stamp = vault / ".bench-stamp"
    if stamp.is_file() and stamp.read_text() == stamp_text:
        return vault
    started = time.perf_counter()
    generate(vault, size, seed)
    stamp.write_text(stamp_text)
    print(f"generated {vault} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return vault


def spawn_child(vault: Path, size: int, args: argparse.Namespace) -> Result:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        str(size),
        "--vault",
        str(vault),
        "--repeats",
        str(args.repeats),
        "--queries",
        str(args.queries),
        "--seed",
        str(args.seed),
        "--rank-bm25-max",
        str(args.rank_bm25_max),
        *(["--force-helper"] if args.force_helper else []),
    ]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    result: Result = json.loads(done.stdout)
    return result


def _ratio(ours: float, theirs: float | None) -> str:
    return f"{ours / theirs:.2f}" if theirs else "–"


def _fmt(result: Result | None, key: str) -> str:
    return f"{result[key]:.3f}" if result else "–"


def render(results: Sequence[Result]) -> str:
    """The Markdown report: build, apply and memory, query latency, agreement with bm25s."""
    return "\n".join([*_build_table(results), "", *_query_table(results)])


def _build_table(results: Sequence[Result]) -> list[str]:
    lines = [
        "### Cold build against bm25s tokenize + index of the same texts (seconds, medians, "
        "alternated in one process)",
        "",
        "| entries | files | terms | ours | bm25s tokenize+index | ours/bm25s | loadavg |",
        "|" + "---:|" * 7,
    ]
    for r in results:
        build, side = r["ours"]["build"], r["side_by_side"]
        lines.append(
            f"| {r['size']:,} | {build['files']:,} | {build['terms']:,} | {side['ours_s']:.3f} "
            f"| {side['bm25s_tokenize_index_s']:.3f} | **{side['ratio']:.2f}** "
            f"| {side['loadavg'][0]}–{side['loadavg'][1]} |"
        )
    lines += [
        "",
        "### Cold build, both ways, and the index alone (seconds; index-only rows are "
        "pre-tokenized, like bm25s)",
        "",
        "| entries | first | median | CPU here | CPU helper | helper used | one process "
        "| tokenize corpus | ours index only | bm25s index | ours/bm25s | rank_bm25 index |",
        "|" + "---:|" * 12,
    ]
    for r in results:
        o, b, k = r["ours"], r["bm25s"], r.get("rank_bm25")
        build = o["build"]
        lines.append(
            f"| {r['size']:,} | {build['first_s']:.3f} | {build['median_s']:.3f} "
            f"| {build['cpu_median_s']:.3f} | {build['helper_cpu_median_s']:.3f} "
            f"| {build['helper_runs']}/{build['repeats']} "
            f"| {build['one_process_median_s']:.3f} "
            f"| {o['tokenize_corpus_s']:.3f} | {o['index_only_s']:.3f} | {b['index_s']:.3f} "
            f"| {_ratio(o['index_only_s'], b['index_s'])} | {_fmt(k, 'index_s')} |"
        )
    lines += [
        "",
        "### Apply one edited diary file (ms) and memory (MB)",
        "",
        "| entries | entries in file | apply p50 | apply p95 | RSS baseline | RSS after build "
        "| peak RSS ours | peak RSS scan helper | peak RSS incl. refs |",
        "|" + "---:|" * 9,
    ]
    for r in results:
        o = r["ours"]
        lines.append(
            f"| {r['size']:,} | {o['apply']['entries_in_file']} | {o['apply']['p50_ms']:.2f} "
            f"| {o['apply']['p95_ms']:.2f} | {o['rss_baseline_mb']} | {o['rss_after_build_mb']} "
            f"| {o['peak_rss_mb']} | {o['helper_peak_rss_mb']} | {r['peak_rss_all_mb']} |"
        )
    return lines


def _query_table(results: Sequence[Result]) -> list[str]:
    lines = [
        "### Query latency (ms; k=10, 2–4 terms; ours/bm25s = our p50 / bm25s p50)",
        "",
        "| entries | query | p50 | p95 | mean hits | bm25s p50 | ours/bm25s | rank_bm25 p50 |",
        "|---:|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        q, b, k = r["ours"]["queries"], r["bm25s"], r.get("rank_bm25")
        for name in [*query_variants(), "raw_score_top10"]:
            v = q[name]
            lines.append(
                f"| {r['size']:,} | {name} | {v['p50_ms']:.3f} | {v['p95_ms']:.3f} "
                f"| {v.get('mean_hits', '–')} | {b['p50_ms']:.3f} "
                f"| {_ratio(v['p50_ms'], b['p50_ms'])} | {_fmt(k, 'p50_ms')} |"
            )
    lines += [
        "",
        "### Candidates and agreement with bm25s (plain query, top 10)",
        "",
        "| entries | mean candidates / query | id overlap | raw-score agreement | compared |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        b = r["bm25s"]
        lines.append(
            f"| {r['size']:,} | {r['ours']['queries']['mean_candidates']:,} "
            f"| {b['top10_id_overlap']} | {b['top10_score_agreement']} "
            f"| {b.get('agreement_queries', '–')} |"
        )
    return lines


def _parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected sizes like 1000,10000") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive sizes like 1000,10000")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_parse_sizes, default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3, help="cold builds per size (median)")
    parser.add_argument("--queries", type=int, default=200, help="queries per variant")
    parser.add_argument("--seed", type=int, default=0, help="vault and query seed")
    parser.add_argument("--workdir", type=Path, help="where generated vaults are cached")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--rank-bm25-max", type=int, default=10_000, help="skip rank_bm25 above")
    parser.add_argument("--in-process", action="store_true", help="no child process per size")
    parser.add_argument(
        "--force-helper",
        action="store_true",
        help="start the scan helper even when the load average says no CPU is free",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--vault", type=Path, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    args = build_parser().parse_args(argv)
    if args.repeats < 1 or args.queries < 1:
        raise SystemExit("bench/index.py: --repeats and --queries must be >= 1")
    if args.child is not None:
        vault = args.vault or vault_for(args.child, args.seed, _workdir(args))
        print(json.dumps(run_child(vault, args.child, args)))
        return 0
    results = []
    for size in args.sizes:
        vault = vault_for(size, args.seed, _workdir(args))
        print(f"measuring {size:,} entries …", file=sys.stderr)
        if args.in_process:
            results.append(run_child(vault, size, args))
        else:
            results.append(spawn_child(vault, size, args))
    print(f"wikimem_watch at {_revision()}; {os.cpu_count()} CPUs; loadavg {os.getloadavg()}\n")
    print(render(results))
    if args.json:
        report = {"revision": _revision(), "results": results}
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


def _revision() -> str:
    """The commit measured, marked dirty when the package has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "wikimem_watch"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (dirty)" if dirty else "")


def _workdir(args: argparse.Namespace) -> Path:
    workdir: Path = args.workdir or Path(tempfile.gettempdir()) / "wikimem-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


if __name__ == "__main__":
    raise SystemExit(main())
