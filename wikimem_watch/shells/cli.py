"""The command line: a thin argparse shell over the engine and the daemon's socket.

Exit codes: 0 ok, 1 no result (or ``check`` found differences), 2 usage, configuration or an
unreachable daemon. Errors print ``wikimem-watch: <message>`` on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from .. import __version__
from ..errors import BadRequest, WatchError

EXIT_OK, EXIT_EMPTY, EXIT_USAGE = 0, 1, 2

EPILOG = """exit status: 0 ok; 1 no result (or `check` found differences);
2 usage, configuration or daemon unreachable."""


def _add_vault(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--vault", type=Path, required=required and False, help="vault directory")
    p.add_argument("--socket", type=Path, help="daemon socket (default: derived from the vault)")


def _add_index_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache-dir", type=Path, help="cache directory (default VAULT/.wikimem)")
    p.add_argument("--include", help="comma-separated globs of notes to index (default: all)")
    p.add_argument("--exclude", help="comma-separated globs of notes to leave out")
    p.add_argument(
        "--embed",
        choices=["none", "local", "http", "hash"],
        help="embedder for hybrid ranking (default none: BM25 only)",
    )
    p.add_argument("--embed-url", help="base URL of an OpenAI-compatible /embeddings endpoint")
    p.add_argument("--embed-model", help="embedding model name")
    p.add_argument(
        "--follow-external-symlinks",
        action="store_true",
        default=None,
        help="index note symlinks whose target is outside the vault (default: skip them)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wikimem-watch",
        description="A live BM25 (+ optional embeddings) index over a Markdown memory vault.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    q = sub.add_parser(
        "query", help="search the vault (through the daemon, else in-process)", epilog=EPILOG
    )
    _add_vault(q)
    _add_index_flags(q)
    q.add_argument("text", metavar="TEXT", help="the query, or - to read JSON requests from stdin")
    q.add_argument("--json", action="store_true", help="print the result object as JSON")
    q.add_argument("-k", type=int, default=10, help="number of hits (default 10)")
    q.add_argument("--time-range", help="START..END dates (inclusive) or an expression")
    q.add_argument("--now", help="reference time for time words (ISO, default: now)")
    q.add_argument("--tz", help="time zone for time words (IANA name)")
    q.add_argument("--no-parse-time", action="store_true", help="do not read time words in TEXT")
    q.add_argument("--kinds", help="comma-separated: diary, wiki")
    q.add_argument("--paths", help="comma-separated path prefixes or globs")
    q.add_argument("--tags", help="comma-separated tags")
    q.add_argument("--budget-tokens", type=int, help="cut the hits to this token budget")
    q.add_argument("--no-links", action="store_true", help="no one-hop link expansion")
    q.add_argument("--explain", action="store_true", help="per-hit score breakdown")
    q.add_argument("--in-process", action="store_true", help="do not use a running daemon")

    t = sub.add_parser("parse-time", help="show the window a time expression opens", epilog=EPILOG)
    t.add_argument("text", metavar="TEXT")
    t.add_argument("--now", help="reference time (ISO, default: now)")
    t.add_argument("--tz", help="IANA time zone name")
    t.add_argument("--json", action="store_true", help="print JSON (null when no window)")

    from .commands import add_daemon_commands

    add_daemon_commands(sub, _add_vault, _add_index_flags)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        parser.error(f"--log-level {args.log_level!r}: expected DEBUG, INFO, WARNING or ERROR")
    logging.basicConfig(level=level, format="wikimem-watch: %(levelname)s %(message)s")
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except WatchError as exc:
        print(f"wikimem-watch: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def split_csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def request_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The JSON query request the flags describe (only fields that were given)."""
    req: dict[str, object] = {"q": args.text, "k": args.k}
    if args.time_range:
        req["time_range"] = args.time_range
    for name in ("now", "tz", "budget_tokens"):
        if getattr(args, name) is not None:
            req[name] = getattr(args, name)
    for name in ("kinds", "paths", "tags"):
        if getattr(args, name):
            req[name] = split_csv(getattr(args, name))
    if args.no_parse_time:
        req["parse_time"] = False
    if args.no_links:
        req["expand_links"] = False
    if args.explain:
        req["explain"] = True
    return req


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


def parse_time_command(args: argparse.Namespace) -> int:
    from ..timeparse import parse_time_range

    now = None
    if args.now:
        try:
            now = datetime.fromisoformat(args.now)
        except ValueError:
            raise BadRequest(
                f"--now {args.now!r} is not ISO-8601 (e.g. 2026-07-24T15:00)"
            ) from None
    try:
        found = parse_time_range(args.text, now=now, tz=args.tz)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if args.json:
        print(json.dumps(found.to_dict() if found else None, ensure_ascii=False))
    elif found is None:
        print("no time expression")
    else:
        times = f" {found.start_time or ''}-{found.end_time or ''}" if found.start_time else ""
        print(
            f"{found.start} .. {found.end}{times}  matched {found.matched!r}  rest {found.rest!r}"
        )
    return EXIT_OK if found else EXIT_EMPTY
