"""What the command line prints: result tables, entry lists, progress, and exit codes.

Pure presentation over the JSON objects every shell shares; no engine, no socket.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_EMPTY, EXIT_USAGE = 0, 1, 2
LOG_LEVEL = 30  # set from --log-level by ``cli.main``


def use_logging() -> None:
    """Configure logging (the only place that does) before a path that logs: an in-process
    engine or the daemon. A command that only talks to a daemon never imports it."""
    import logging

    logging.basicConfig(level=LOG_LEVEL, format="wikimem-watch: %(levelname)s %(message)s")


def print_json(obj: object) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=None))


def print_entries(entries: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        print_json(entries)
    else:
        for e in entries:
            when = " ".join(x for x in (e.get("date"), e.get("time")) if x) or "-"
            print(f"{when:16}  {e['path']}:{e['line']}  {e['heading']}")
            print(f"        {' '.join(str(e['text']).split())[:110]}")
    return 0 if entries else 1


def _window_line(gate: dict[str, object], result: dict[str, object]) -> str:
    notes = []
    if result.get("widened"):
        notes.append(f"widened ±{gate['widened_days']} days")
    if gate.get("fallback") == "empty":
        notes.append("no entries: not applied")
    else:
        notes.append(f"{gate['entries']} entries")
    return f"window {gate['start']} .. {gate['end']} [{gate['source']}] ({', '.join(notes)})"


def _print_hit(hit: dict[str, object], indent: str) -> None:
    when = " ".join(str(x) for x in (hit.get("date"), hit.get("time")) if x) or "-"
    score = hit.get("score")
    score_s = f"{score:6.3f}" if isinstance(score, float) else "     -"
    text = " ".join(str(hit["text"]).split())
    print(f"{indent}{score_s}  {when:16}  {hit['path']}:{hit['line']}  {hit['heading']}")
    print(f"{indent}        {text[:110]}{'…' if len(text) > 110 else ''}")
    explain = hit.get("explain")
    if isinstance(explain, dict) and "bm25_raw" in explain:
        w = explain["weights"]
        cos = explain["cosine"]
        print(
            f"{indent}        bm25 {explain['bm25_own']:.3f} + previous "
            f"{explain['bm25_previous']:.3f} → {explain['bm25_norm']:.2f}×{w['bm25']:g}"
            f"  cosine {'-' if cos is None else f'{cos:.3f}'}"
            f" → {explain['cosine_norm']:.2f}×{w['vector']:g}"
            f"  recency {explain['recency']:.3f}×{w['recency']:g}"
            f"  terms {','.join(explain['matched_terms'])}"
        )


def print_result(result: dict[str, object], as_json: bool) -> int:
    hits = result.get("hits")
    assert isinstance(hits, list)
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return EXIT_OK if hits else EXIT_EMPTY
    gate = result.get("time_range")
    if isinstance(gate, dict):
        print(_window_line(gate, result))
    if not hits:
        print("no results")
        return EXIT_EMPTY
    outside = False
    for hit in hits:
        if hit.get("in_window") is not True and isinstance(gate, dict) and not outside:
            outside = gate.get("fallback") is None
            if outside:
                print("-- outside the window --")
        _print_hit(hit, "")
        for context in hit.get("linked", []):
            _print_hit(context, "  ↳ ")
    if result.get("cut"):
        print(f"(first {len(hits)} of {gate['entries'] if isinstance(gate, dict) else '?'})")
    return EXIT_OK


def progress(done: int, pending: int) -> None:
    total = done + pending
    width = 30
    filled = width * done // total if total else width
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end="", file=sys.stderr)


def print_vectors(status: dict[str, Any]) -> None:
    print(
        f"vectors  {status.get('state')}  {status.get('rows', 0)} rows  dim {status.get('dim')}  "
        f"model {status.get('model') or status.get('embedder')}"
        + (f"  last error: {status['last_error']}" if status.get("last_error") else "")
    )
