"""The command line: a thin argparse shell over the engine and the daemon's socket.

Exit codes: 0 ok, 1 no result (or ``check`` found differences), 2 usage, configuration or an
unreachable daemon. Errors print ``wikimem-watch: <message>`` on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__
from ..errors import WatchError
from . import output
from .commands import (
    check_command,
    embed_command,
    parse_time_command,
    serve_command,
    stop_command,
)
from .mcp import mcp_command
from .output import EXIT_OK, EXIT_USAGE
from .reading import (
    day_command,
    days_command,
    note_command,
    query_command,
    reindex_command,
    status_command,
)
from .writing import add_write_commands

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any

LOG_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}

AddFlags = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]


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

    add_daemon_commands(sub, _add_vault, _add_index_flags)
    add_write_commands(sub, _add_vault)
    m = _register(
        sub,
        _add_vault,
        "mcp",
        "serve the vault's tools to an agent over MCP (stdio; needs the [mcp] extra)",
        mcp_command,
    )
    _add_index_flags(m)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = LOG_LEVELS.get(str(args.log_level).upper())
    if level is None:
        parser.error(f"--log-level {args.log_level!r}: expected DEBUG, INFO, WARNING or ERROR")
    output.LOG_LEVEL = level  # logging is set up by the paths that log (engine, daemon)
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


def add_daemon_commands(
    sub: Any, add_vault: Callable[..., None], add_index_flags: AddFlags
) -> None:
    """Register handlers on the parsers ``cli.build_parser`` made, and the daemon commands."""
    sub.choices["query"].set_defaults(handler=query_command)
    sub.choices["parse-time"].set_defaults(handler=parse_time_command)

    s = _register(sub, add_vault, "serve", "run the daemon for a vault", serve_command)
    s.add_argument("vault_pos", metavar="VAULT", nargs="?", type=Path, help="vault directory")
    add_index_flags(s)
    s.add_argument("--poll", action="store_true", help="poll instead of native file events")
    s.add_argument(
        "--quiet", action="store_true", help="print nothing when ready (problems still logged)"
    )
    s.add_argument("--debounce-ms", type=int, help="quiet time before applying changes")
    s.add_argument(
        "--safety-rescan-s",
        type=float,
        default=300.0,
        help="seconds between cheap stat-only rescans (0: off; default 300)",
    )
    s.add_argument("--log-level", default=argparse.SUPPRESS, help="DEBUG, INFO, WARNING, ERROR")
    s.add_argument(
        "--idle-timeout-s", type=float, help="close a connection idle this long (default 60)"
    )
    s.add_argument("--max-connections", type=int, help="open connections at once (default 256)")
    s.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="also serve HTTP + JSON on a loopback address (bearer token; docs/protocol.md)",
    )
    s.add_argument(
        "--http-allow-remote",
        action="store_true",
        default=None,
        help="allow --http on a non-loopback address (reachable from other machines)",
    )
    s.add_argument(
        "--http-cors-origins", help="comma-separated browser origins allowed to call --http"
    )
    s.add_argument("--max-request-bytes", type=int, help="longest request line (default 1 MiB)")
    s.add_argument(
        "--max-buffered-bytes",
        type=int,
        help="unfinished request bytes held across all connections (default 32 MiB)",
    )

    answered = "(through the daemon, else in-process)"
    p = _register(
        sub, add_vault, "status", f"counts, skipped files, warnings {answered}", status_command
    )
    _add_reading_flags(p)
    p = _register(
        sub, add_vault, "reindex", "make the daemon rescan the whole vault", reindex_command
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list what a rescan would change, applying nothing (in-process without a daemon)",
    )
    _add_reading_flags(p)
    d = _register(sub, add_vault, "days", f"dates with entry counts {answered}", days_command)
    d.add_argument("--start", help="first date (YYYY-MM-DD)")
    d.add_argument("--end", help="last date (YYYY-MM-DD)")
    _add_reading_flags(d)
    d = _register(sub, add_vault, "day", f"the entries of one date {answered}", day_command)
    d.add_argument("date", metavar="DATE", help="YYYY-MM-DD")
    _add_reading_flags(d)
    n = _register(sub, add_vault, "note", f"the entries of one note {answered}", note_command)
    n.add_argument(
        "path",
        metavar="PATH",
        help="wiki/people.md, ./wiki/people.md, VAULT/wiki/people.md, an absolute path in the "
        "vault, or a note name as in a link: wiki/people, people",
    )
    _add_reading_flags(n)
    st = _register(sub, add_vault, "stop", "stop the vault's daemon", stop_command)
    st.add_argument("--wait", type=float, default=10.0, help="seconds to wait (default 10)")
    c = _register(
        sub, add_vault, "check", "compare the daemon's index with a fresh scan", check_command
    )
    add_index_flags(c)
    c.add_argument("--wait", type=float, default=10.0, help="seconds to wait for quiet")
    c.add_argument("--verbose", action="store_true", help="also print the vault's parse warnings")
    e = _register(
        sub,
        add_vault,
        "embed",
        "fill the vector cache (through the daemon, else in-process)",
        embed_command,
    )
    add_index_flags(e)
    e.add_argument(
        "--rebuild",
        action="store_true",
        help="re-embed everything (after a model change); resumable",
    )
    e.add_argument("--in-process", action="store_true", help="do not use a running daemon")


def _add_reading_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the socket method's JSON object")
    p.add_argument("--in-process", action="store_true", help="do not use a running daemon")


def _register(
    sub: Any, add_vault: Callable[..., None], name: str, help_: str, handler: Handler
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help_, description=help_, epilog=EPILOG)
    add_vault(p)
    p.set_defaults(handler=handler)
    return p
