"""Index snapshot store, side by side: our snapshot file (ADR-0015) against SQLite FTS5.

For one generated vault: build the engine cold, then

- ours: write the snapshot; load it into a fresh engine (read, check, restore); query p50;
- FTS5: write the same entries (an ``entries`` table and an FTS5 table over our own
  tokens, space-joined, so both rank the same terms); "ready" = open the database and read
  the file table (what a start must do before it can answer); query p50 with FTS5's
  ``bm25()`` (top 10, rows fetched); top-10 agreement with ours; and, if FTS5 were only the
  store of an in-memory index, the time to read every entry row back (postings cannot be
  read out of FTS5 cheaply, so they would be re-tokenised: that time is also given).

Run (from the repository root)::

    .venv/bin/python bench/snapshot_store.py --sizes 10000,100000 --queries 200
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def _fts_write(engine: Any, db: Path, heading_weight: int) -> float:
    from wikimem_watch.core.facts import indexed_text

    started = time.perf_counter()
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute(
        "CREATE TABLE files(path TEXT PRIMARY KEY, mtime_ns INT, size INT, hash TEXT, n INT)"
    )
    con.execute(
        "CREATE TABLE entries(rowid INTEGER PRIMARY KEY, id TEXT, path TEXT, heading TEXT, "
        "line INT, text TEXT, hash TEXT, date TEXT, time TEXT, meta TEXT)"
    )
    con.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(terms, "
        "tokenize = \"unicode61 remove_diacritics 0 tokenchars '''-_'\")"
    )
    rows, fts = [], []
    for n, (rel, rec) in enumerate(engine.files.items()):
        mtime, size, _ = rec.stat or (-1, -1, True)
        con.execute(
            "INSERT INTO files VALUES (?,?,?,?,?)",
            (rel, mtime, size, rec.text_hash, len(rec.slots)),
        )
        for e in engine.entries_of(rel):
            rowid = len(rows) + 1
            meta = json.dumps([e.ts, e.owner, e.source, e.tags, e.title])
            rows.append(
                (rowid, e.id, e.path, e.heading, e.line, e.text, e.hash, e.date, e.time, meta)
            )
            terms = engine.tokenizer(indexed_text(e, heading_weight))
            fts.append((rowid, " ".join(terms)))
        del n
    con.executemany("INSERT INTO entries VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    con.executemany("INSERT INTO fts(rowid, terms) VALUES (?,?)", fts)
    con.commit()
    con.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    con.commit()
    con.close()
    return time.perf_counter() - started


def _fts_query(con: sqlite3.Connection, terms: list[str]) -> list[str]:
    if not terms:
        return []
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms))
    cur = con.execute(
        "SELECT e.id, e.text FROM fts JOIN entries e ON e.rowid = fts.rowid "
        "WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 10",
        (match,),
    )
    return [row[0] for row in cur.fetchall()]


def measure(vault: Path, queries_n: int) -> dict[str, object]:
    from bench.index import sample_queries
    from wikimem_watch.config import load_config
    from wikimem_watch.core.engine import Engine
    from wikimem_watch.core.snapshot import no_gc, read_snapshot, write_snapshot
    from wikimem_watch.core.tokenize import tokenize

    work = Path(tempfile.mkdtemp(prefix="wmw-store-"))
    config = load_config(vault, {"snapshot_dir": str(work / "snap")})
    engine = Engine(config)
    engine.scan()
    path = config.snapshot_path
    assert path is not None
    out: dict[str, object] = {"entries": len(engine.entries), "files": len(engine.files)}

    started = time.perf_counter()
    size = write_snapshot(engine, path)
    out["ours_write_s"] = round(time.perf_counter() - started, 3)
    out["ours_mb"] = round(size / 1e6, 1)
    gc.collect()
    fresh = Engine(config)
    started = time.perf_counter()
    with no_gc():
        snap = read_snapshot(path, fresh)
        assert snap is not None
        fresh.restore(snap.files, snap.store, snap.index)
    out["ours_load_s"] = round(time.perf_counter() - started, 3)
    del snap

    entries = list(engine.entries.values())
    queries = sample_queries(entries, queries_n, 0, lambda e: tokenize(e.text))
    qterms = [engine.tokenizer(q) for q in queries]

    def ours_top(terms: list[str]) -> list[str]:
        import numpy as np

        slots, scores = fresh.index.score(terms)
        top = slots[np.argsort(-scores, kind="stable")[:10]]
        return [fresh.slot_id(int(s)) for s in top]

    times = []
    ours_hits = []
    for terms in qterms:
        t = time.perf_counter()
        ours_hits.append(ours_top(terms))
        times.append(time.perf_counter() - t)
    out["ours_query_p50_ms"] = _p50_ms(times)

    db = work / "fts.sqlite"
    out["fts5_write_s"] = round(_fts_write(engine, db, config.heading_weight), 3)
    out["fts5_mb"] = round(os.path.getsize(db) / 1e6, 1)
    started = time.perf_counter()
    con = sqlite3.connect(db)
    files = con.execute("SELECT path, mtime_ns, size FROM files").fetchall()
    out["fts5_ready_s"] = round(time.perf_counter() - started, 3)
    assert len(files) == len(engine.files)
    times, overlap = [], []
    for terms, mine in zip(qterms, ours_hits, strict=True):
        t = time.perf_counter()
        theirs = _fts_query(con, terms)
        times.append(time.perf_counter() - t)
        if mine:
            overlap.append(len(set(mine) & set(theirs)) / len(mine))
    out["fts5_query_p50_ms"] = _p50_ms(times)
    out["fts5_top10_overlap"] = round(statistics.fmean(overlap), 3) if overlap else None
    started = time.perf_counter()
    rows = con.execute("SELECT * FROM entries").fetchall()
    out["fts5_read_rows_s"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    for row in rows:
        engine.tokenizer(row[5])
    out["retokenise_s"] = round(time.perf_counter() - started, 3)
    con.close()
    return out


def main() -> int:
    from bench.index import vault_for

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000", help="entries per vault")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-bench"
    )
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    for size in (int(s) for s in args.sizes.split(",")):
        vault = vault_for(size, 0, args.workdir)
        print(json.dumps(measure(vault, args.queries)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
