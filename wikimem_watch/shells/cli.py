"""The command line: a thin argparse shell over the engine and the daemon's socket.

Exit codes: 0 ok, 1 no result (nothing found, a note, day or item not there, or ``check``
found differences), 2 usage, configuration or an unreachable daemon. Errors print
``wikimem-watch: <message>`` on stderr, never a traceback.

Every command's parser is defined here, and each names its handler as ``module.function``
in this package, imported only when the command runs. A run builds the parser of the one
command it names; the parser of every command is built only when that one cannot settle
the arguments alone (the top-level ``--help``, a usage error), so what is printed never
depends on the shortcut, and a command that talks to a running daemon pays for neither the
other commands' parsers nor their modules (ADR-0012).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__
from ..errors import NotFound, WatchError
from . import output
from .output import EXIT_EMPTY, EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any, NoReturn

LOG_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}

Handler = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """No abbreviated options: ``--k 3`` was read as ``--kinds 3``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


EPILOG = """exit status: 0 ok; 1 no result (nothing found, the note, day or item named is not
there, or `check` found differences); 2 usage, configuration or daemon unreachable."""
ANSWERED = "(through the daemon, else in-process)"


def _path(value: str) -> Path:
    """A path flag's value. An empty one (``--vault "$UNSET"``) is refused: as ``Path("")``
    it was the working directory, which was then served, indexed or written into."""
    if not value:
        raise argparse.ArgumentTypeError("an empty path (an unset variable?)")
    return Path(value)


def _add_vault(p: Parser) -> None:
    p.add_argument("--vault", type=_path, help="vault directory")
    p.add_argument("--socket", type=_path, help="daemon socket (default: derived from the vault)")


def _add_index_flags(p: Parser) -> None:
    p.add_argument("--cache-dir", type=_path, help="cache directory (default VAULT/.wikimem)")
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
        action=argparse.BooleanOptionalAction,  # --no-…: a true from env or file, turned off
        default=None,
        help="index note symlinks whose target is outside the vault (default: skip them)",
    )


def _add_reading_flags(p: Parser) -> None:
    p.add_argument("--json", action="store_true", help="print the socket method's JSON object")
    p.add_argument("--in-process", action="store_true", help="do not use a running daemon")


def _register(sub: Any, name: str, help_: str, handler: str) -> Parser:
    """A command's parser with ``--vault``/``--socket``; ``handler`` is ``module.function``."""
    p: Parser = sub.add_parser(name, help=help_, description=help_, epilog=EPILOG)
    _add_vault(p)
    p.set_defaults(handler=handler)
    return p


def _query(sub: Any) -> None:
    help_ = f"search the vault {ANSWERED}"
    q = sub.add_parser("query", help=help_, description=help_, epilog=EPILOG)
    _add_vault(q)
    _add_index_flags(q)
    q.add_argument(
        "text",
        metavar="TEXT",
        nargs="*",
        help="the query (several words need no quotes; none with --tags lists the tagged "
        "entries), or - to read JSON requests from stdin (the flags below are defaults of "
        "each line's fields)",
    )
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
    q.set_defaults(handler="reading.query_command")


def _parse_time(sub: Any) -> None:
    help_ = "show the window of days a time expression opens (calendar words; no vault needed)"
    t = sub.add_parser("parse-time", help=help_, description=help_, epilog=EPILOG)
    t.add_argument(
        "text", metavar="TEXT", nargs="+", help="the expression (several words need no quotes)"
    )
    t.add_argument("--now", help="reference time (ISO, default: now)")
    t.add_argument("--tz", help="IANA time zone name")
    t.add_argument("--json", action="store_true", help="print JSON (null when no window)")
    t.set_defaults(handler="commands.parse_time_command")


def _serve(sub: Any) -> None:
    s = _register(sub, "serve", "run the daemon for a vault", "commands.serve_command")
    s.add_argument("vault_pos", metavar="VAULT", nargs="?", type=_path, help="vault directory")
    _add_index_flags(s)
    s.add_argument(
        "--poll",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="poll instead of native file events",
    )
    s.add_argument(
        "--quiet", action="store_true", help="print nothing when ready (problems still logged)"
    )
    s.add_argument(
        "--debounce-ms", type=int, help="quiet time before applying changes (0-10000, default 25)"
    )
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
        action=argparse.BooleanOptionalAction,
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


def _status(sub: Any) -> None:
    help_ = f"counts, skipped files, warnings {ANSWERED}"
    _add_reading_flags(_register(sub, "status", help_, "reading.status_command"))


def _reindex(sub: Any) -> None:
    help_ = "make the daemon rescan the whole vault"
    p = _register(sub, "reindex", help_, "reading.reindex_command")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list what a rescan would change, applying nothing (in-process without a daemon)",
    )
    _add_reading_flags(p)


def _days(sub: Any) -> None:
    d = _register(sub, "days", f"dates with entry counts {ANSWERED}", "reading.days_command")
    d.add_argument("--start", help="first date (YYYY-MM-DD)")
    d.add_argument("--end", help="last date (YYYY-MM-DD)")
    _add_reading_flags(d)


def _day(sub: Any) -> None:
    d = _register(sub, "day", f"the entries of one date {ANSWERED}", "reading.day_command")
    d.add_argument("date", metavar="DATE", help="YYYY-MM-DD")
    _add_reading_flags(d)


def _note(sub: Any) -> None:
    n = _register(sub, "note", f"the entries of one note {ANSWERED}", "reading.note_command")
    n.add_argument(
        "path",
        metavar="PATH",
        help="wiki/people.md, ./wiki/people.md, VAULT/wiki/people.md, an absolute path in the "
        "vault, or a note name as in a link: wiki/people, people",
    )
    _add_reading_flags(n)


def _stop(sub: Any) -> None:
    st = _register(sub, "stop", "stop the vault's daemon", "commands.stop_command")
    st.add_argument("--wait", type=float, default=10.0, help="seconds to wait (default 10)")


def _check(sub: Any) -> None:
    help_ = "compare the daemon's index with a fresh scan"
    c = _register(sub, "check", help_, "commands.check_command")
    c.description = (
        f"{help_} of the notes it indexes (the daemon's --include, --exclude and "
        "--follow-external-symlinks, whatever is given here)"
    )
    _add_index_flags(c)
    c.add_argument(
        "--wait", type=float, default=10.0, help="seconds to wait for quiet (default 10)"
    )
    c.add_argument("--verbose", action="store_true", help="also print the vault's parse warnings")


def _embed(sub: Any) -> None:
    help_ = f"fill the vector cache {ANSWERED}"
    e = _register(sub, "embed", help_, "commands.embed_command")
    _add_index_flags(e)
    e.add_argument(
        "--rebuild",
        action="store_true",
        help="re-embed everything (after a model change); resumable",
    )
    e.add_argument("--in-process", action="store_true", help="do not use a running daemon")


def _provenance(p: Parser) -> None:
    p.add_argument("--owner", help="who is writing, e.g. agent:companion")
    p.add_argument("--source", help="where it came from, e.g. a conversation id")
    p.add_argument("--in-process", action="store_true", help="do not use a running daemon")


def _write(sub: Any) -> None:
    help_ = f"write into the vault safely {ANSWERED}"
    w = sub.add_parser("write", help=help_, description=help_, epilog=EPILOG)
    wsub = w.add_subparsers(dest="write_kind", required=True, metavar="KIND")
    help_ = "append a ## HH:MM entry to diary/YYYY-MM-DD.md, in time order"
    d = wsub.add_parser("diary", help=help_, description=help_, epilog=EPILOG)
    _add_vault(d)
    d.add_argument("text", metavar="TEXT", help="the entry text, or - to read it from stdin")
    d.add_argument("--date", help="YYYY-MM-DD (default: the local date of --ts, or today)")
    d.add_argument("--time", help="HH:MM (default: the local time of --ts, or now)")
    d.add_argument(
        "--ts", help="ISO-8601 instant of the event (default: --date and --time, else now)"
    )
    d.add_argument("--tz", help="IANA time zone for the date and time (default: local)")
    _provenance(d)
    d.set_defaults(handler="writing.diary_command")
    help_ = "add or replace the ## NAME item of wiki/FILE.md"
    u = wsub.add_parser("wiki", help=help_, description=help_, epilog=EPILOG)
    _add_vault(u)
    u.add_argument("file", metavar="FILE", help="lowercase slug: the file is wiki/FILE.md")
    u.add_argument(
        "name",
        metavar="NAME",
        help="the item's name (any language; no [[ ]] : | #); it finds its heading case "
        "aside (milk: ## Milk), and the note's title names the prose before its first ##",
    )
    u.add_argument("text", metavar="TEXT", help="the item's text, or - to read it from stdin")
    u.add_argument("--ts", help="ISO-8601 time of the fact (default: now)")
    _provenance(u)
    u.set_defaults(handler="writing.wiki_command")
    help_ = "remove the ## NAME item from wiki/FILE.md"
    x = wsub.add_parser("delete", help=help_, description=help_, epilog=EPILOG)
    _add_vault(x)
    x.add_argument("file", metavar="FILE")
    x.add_argument("name", metavar="NAME", help="the item's name, found as `write wiki` finds it")
    _provenance(x)
    x.set_defaults(handler="writing.delete_command")


def _journal(sub: Any) -> None:
    help_ = "the vault's journal.jsonl (every write and applied external change), as JSON lines"
    j = sub.add_parser("journal", help=help_, description=help_, epilog=EPILOG)
    _add_vault(j)
    j.add_argument("--limit", type=int, default=20, help="last N lines (default 20)")
    j.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    j.set_defaults(handler="writing.journal_command")


def _watch_changes(sub: Any) -> None:
    help_ = (
        "print the running daemon's index changes as JSON lines, as they happen (subscribe),"
        " until the daemon ends the stream (said on stderr, exit 2)"
    )
    c = sub.add_parser("watch-changes", help=help_, description=help_, epilog=EPILOG)
    _add_vault(c)
    c.add_argument("--q", help="only changes whose entries match these words")
    c.add_argument("--paths", help="comma-separated path prefixes or globs")
    c.add_argument("--kinds", help="comma-separated: diary, wiki")
    c.set_defaults(handler="writing.watch_command")


def _mcp(sub: Any) -> None:
    help_ = "serve the vault's tools to an agent over MCP (stdio; needs the [mcp] extra)"
    _add_index_flags(_register(sub, "mcp", help_, "mcp.mcp_command"))


# Each command and the function that adds its parser, in the order ``--help`` lists them.
COMMANDS: dict[str, Callable[[Any], None]] = {
    "query": _query,
    "parse-time": _parse_time,
    "serve": _serve,
    "status": _status,
    "reindex": _reindex,
    "days": _days,
    "day": _day,
    "note": _note,
    "stop": _stop,
    "check": _check,
    "embed": _embed,
    "write": _write,
    "journal": _journal,
    "watch-changes": _watch_changes,
    "mcp": _mcp,
}


class _NeedsEveryCommand(Exception):
    """Raised by a one-command parser for what only the full parser may answer."""


class _OneCommandParser(Parser):
    """The top level holding one command's parser. Its own help and usage errors would
    list, or fail to recognise, the other commands, so it hands them to the full parser
    (a command's own ``--help`` and errors come from that command's parser, the same in
    both)."""

    def error(self, message: str) -> NoReturn:
        raise _NeedsEveryCommand(message)

    def print_help(self, file: Any = None) -> None:
        raise _NeedsEveryCommand("help")


def build_parser(only: str | None = None) -> Parser:
    """The parser of every command, or with ``only`` the top level with that command alone."""
    parser = (Parser if only is None else _OneCommandParser)(
        prog="wikimem-watch",
        description="A live BM25 (+ optional embeddings) index over a Markdown memory vault.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(sub)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse with the parser of the first argument that names a command, falling back to
    the parser of every command for what that one cannot settle (same output either way)."""
    named = next((a for a in argv if a in COMMANDS), None)
    try:
        if named is None:
            raise _NeedsEveryCommand("no command named")
        args = build_parser(named).parse_args(argv)
    except _NeedsEveryCommand:
        args = build_parser().parse_args(argv)
    if str(args.log_level).upper() not in LOG_LEVELS:
        build_parser().error(
            f"--log-level {args.log_level!r}: expected DEBUG, INFO, WARNING or ERROR"
        )
    return args


def handler_of(args: argparse.Namespace) -> Handler:
    """Import the module of the command's handler (``module.function``) and return it."""
    from importlib import import_module

    module, name = str(args.handler).rsplit(".", 1)
    found: Handler = getattr(import_module(f"{__package__}.{module}"), name)
    return found


def open_standard_fds() -> None:
    """Put ``/dev/null`` on a standard descriptor that is closed (``2>&-``), before anything
    opens a file. The first file opened took its number, and what goes to descriptor 2 (a
    log line, the scan helper's errors) went into whichever file held it then; and with
    ``sys.stderr`` None, a message printed to stderr went to stdout, ahead of a ``--json``
    answer or into MCP's JSON-RPC stream. A closed stderr now drops what is said on it."""
    import os

    for fd in (0, 1, 2):  # in order: each open below takes the lowest free number
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def main(argv: Sequence[str] | None = None) -> int:
    open_standard_fds()
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    output.LOG_LEVEL = LOG_LEVELS[str(args.log_level).upper()]  # set up by paths that log
    try:
        return handler_of(args)(args)
    except WatchError as exc:
        print(f"wikimem-watch: {exc.message}", file=sys.stderr)
        # A note, day or item that is not there is "no result", as an empty answer is; a
        # script can tell it from a daemon that does not answer (2).
        return EXIT_EMPTY if exc.code == NotFound.code else EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
