"""The reading commands: ``query``, ``days``, ``day``, ``note``, ``status`` and
``reindex``. Each asks the vault's daemon, or with none running answers in-process (said
on stderr), and ``--json`` prints exactly the object the socket method answers.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import BadRequest, WatchError, require_text
from .access import answer, call, config_from_args, daemon_or_none, open_engine, say_in_process
from .client import Client, RemoteError
from .output import (
    EXIT_EMPTY,
    EXIT_OK,
    print_entries,
    print_json,
    print_result,
    print_status,
    shown,
)

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any


def query_command(args: argparse.Namespace) -> int:
    """Through the vault's daemon when one runs; else in-process (said once on stderr)."""
    if isinstance(args.text, list):  # `query --vault v half marathon`: one query of two words
        args.text = " ".join(args.text)
    if not args.text and not args.tags:
        raise BadRequest("give the query TEXT (or --tags TAGS alone to list tagged entries)")
    if args.text == "-":
        stdin()  # refused before a daemon is asked, or the vault read, for nothing
        # The flags are every line's defaults: a bad one (--now garbage, -k 0) is one usage
        # error before stdin is read, as for one query, not the same error on every line.
        from ..retrieval.request import check_request

        check_request({**_line_defaults(args), "q": ""})
    client = daemon_or_none(args)
    if client is not None:
        with client:
            if args.embed is not None:
                warn_if_embedder_differs(client, args.embed)
            warn_start_flags(args)
            if args.text == "-":
                defaults = _line_defaults(args)
                return _batch(lambda req: _remote_query(client, _with(defaults, req)))
            return print_result(_remote_query(client, request_from_args(args)), args.json)
    from ..retrieval.query import run_query
    from ..retrieval.request import QueryRequest

    config = config_from_args(args, in_process=True)
    # A bad flag is told before anything else (not after "answering in-process"): the
    # request's shape, and its time (a --time-range that names no time, a bad --tz).
    req = None if args.text == "-" else QueryRequest.from_dict(request_from_args(args))
    if req is not None:
        from ..retrieval.gate import local_now, resolve_gate

        resolve_gate(req, local_now(req))
    say_in_process(args, config)
    engine = open_engine(config, vectors=True)
    if req is None:
        defaults = _line_defaults(args)
        return _batch(lambda line: run_query(engine, QueryRequest.from_dict(_with(defaults, line))))
    return print_result(run_query(engine, req), args.json)


def _line_defaults(args: argparse.Namespace) -> dict[str, object]:
    """With ``-``, the flags given (``-k``, ``--now``, ``--kinds``…) are the defaults of every
    line's request; a line's own fields win."""
    return {name: value for name, value in request_from_args(args).items() if name != "q"}


def _with(defaults: dict[str, object], line: object) -> object:
    return {**defaults, **line} if isinstance(line, dict) else line


_START_FLAGS = ("include", "exclude", "embed_url", "embed_model", "follow_external_symlinks")


def warn_start_flags(args: argparse.Namespace) -> None:
    """Index flags a running daemon took when it started: given to a query or to ``embed``,
    say so."""
    given = [f"--{name.replace('_', '-')}" for name in _START_FLAGS if getattr(args, name, None)]
    if given:
        print(
            f"wikimem-watch: warning: {', '.join(given)} apply when a daemon starts; the running "
            "daemon answers with its own (restart it with them, or use --in-process)",
            file=sys.stderr,
        )


def warn_if_embedder_differs(client: Client, wanted: str) -> None:
    """``query --embed X`` or ``embed --embed X`` cannot change a running daemon's embedder:
    say so."""
    running = client.call("status")
    have = running.get("embed") if isinstance(running, dict) else None
    if have is not None and have != wanted:
        print(
            f"wikimem-watch: warning: the daemon uses embed={have!r}, not {wanted!r}; "
            "--embed applies to a daemon when it starts (restart it with --embed, or use "
            "--in-process)",
            file=sys.stderr,
        )


def _remote_query(client: Client, req: object) -> dict[str, Any]:
    if not isinstance(req, dict):
        raise RemoteError(-32602, f"a query must be a JSON object, got {type(req).__name__}")
    result = client.call("query", req)
    assert isinstance(result, dict)
    return result


class _NotJson(ValueError):
    """A value Python's json reads and JSON has not (only the line's parse raises it)."""


def _strict_json(text: str) -> Any:
    """``json.loads`` without Python's extensions: NaN, Infinity and a number too large for a
    float are refused (the request could not be sent on, nor answered, as JSON)."""

    def constant(name: str) -> Any:
        raise _NotJson(f"{name} is not a JSON value")

    def number(raw: str) -> float:
        value = float(raw)
        if math.isinf(value):
            raise _NotJson(f"{raw} is too large a number")
        return value

    return json.loads(text, parse_constant=constant, parse_float=number)


def stdin() -> Any:
    """``sys.stdin``, or a usage error when the process has none: started with its stdin
    closed (``query - <&-``), Python sets it to None, and reading it was a traceback."""
    if sys.stdin is None:
        raise BadRequest("stdin is closed: give TEXT, or pipe the input into -")
    return sys.stdin


def _batch(answer_one: Callable[[Any], dict[str, Any]]) -> int:
    """One JSON request per stdin line → exactly one JSON line out per line in, in order, so
    results pair with requests by position (a blank or bad line gets an error object).
    Exit 1 when any line failed."""
    failed = False
    for line in stdin():
        out: dict[str, Any]
        try:
            if not line.strip():
                out = {"error": {"code": -32600, "message": "empty line: expected a JSON object"}}
            else:
                out = answer_one(_strict_json(require_text(line, "line")))
        except json.JSONDecodeError as exc:
            out = {
                "error": {"code": -32700, "message": f"bad JSON: {exc.msg} at column {exc.colno}"}
            }
        except _NotJson as exc:  # NaN, Infinity, 1e999: Python reads them, JSON has none
            out = {"error": {"code": -32700, "message": f"bad JSON: {exc}"}}
        except RecursionError:
            out = {"error": {"code": -32700, "message": "bad JSON: nested too deeply"}}
        except WatchError as exc:
            out = {"error": {"code": exc.code, "message": exc.message}}
        failed = failed or "error" in out
        print(json.dumps(out, ensure_ascii=False), flush=True)
    return EXIT_EMPTY if failed else EXIT_OK


def status_command(args: argparse.Namespace) -> int:
    status = answer(args, "status", {})
    if args.json:
        print_json(status)
    else:
        print_status(status)
    return EXIT_OK


def days_command(args: argparse.Namespace) -> int:
    # a given one is sent: `--start "$UNSET"` was dropped, and every day was listed
    params = {k: v for k, v in (("start", args.start), ("end", args.end)) if v is not None}
    result = answer(args, "days", params)
    days = result["days"]
    if args.json:
        print_json(result)
    elif not days:
        span = f" between {args.start or '…'} and {args.end or '…'}" if params else ""
        print(f"no diary entries{span}")
    for d in [] if args.json else days:
        print(f"{d['date']}  {d['entries']}")
    return EXIT_OK if days else EXIT_EMPTY


def day_command(args: argparse.Namespace) -> int:
    result = answer(args, "day", {"date": args.date})
    if args.json:
        print_json(result)
    elif not result["entries"]:
        print(f"no entries on {result['date']}")
    else:
        print_entries(result["entries"])
    return EXIT_OK if result["entries"] else EXIT_EMPTY


def note_command(args: argparse.Namespace) -> int:
    result = answer(args, "note", {"path": _as_typed(args.path, args.vault)})
    if args.json:
        print_json(result)
    elif not result["entries"]:  # an empty note: said, as ``day`` says an empty day
        print(f"no entries in {shown(result['path'])}")
    else:
        print_entries(result["entries"])
    return EXIT_OK if result["entries"] else EXIT_EMPTY


def _as_typed(path: str, vault: Path | None) -> str:
    """``vault_example/wiki/people.md`` → ``wiki/people.md`` when ``--vault vault_example``
    was given the same way; any other form goes to the daemon as typed (core.notepath).
    A ``..`` in the vault is no reason not to: the rest after VAULT/ is the note in the
    vault, whatever VAULT leads to (``--vault ../v ../v/wiki/people.md`` was said to lead
    outside the vault); a ``..`` in the rest is the daemon's to refuse."""
    if vault is None or Path(path).is_absolute() or Path(vault).is_absolute():
        return path
    given, parts = Path(vault).parts, Path(path).parts
    if len(parts) > len(given) and parts[: len(given)] == given:
        return Path(*parts[len(given) :]).as_posix()
    return path


def reindex_command(args: argparse.Namespace) -> int:
    if args.in_process and not args.dry_run:  # it reindexed the running daemon all the same
        raise BadRequest(
            "reindex --in-process: a rescan is a running daemon's; without one, "
            "--dry-run lists what a scan would index"
        )
    if not args.dry_run:
        stats = call(args, "reindex")  # a rescan is a daemon's: no daemon, nothing to rescan
        if "error" in stats:
            raise WatchError(f"reindex failed: {stats['error']}")
    else:
        stats = answer(args, "reindex", {"dry_run": True})
    if args.json:
        print_json(stats)
        return EXIT_OK
    verb = "a rescan would change" if args.dry_run else "reindexed"
    print(
        f"{verb}: {stats['changed']} changed, {stats['removed']} removed, "
        f"{stats['unchanged']} unchanged, {stats['skipped']} skipped"
        + (f" in {stats['elapsed_s']}s" if "elapsed_s" in stats else "")
    )
    for kind, paths in stats.get("paths", {}).items():
        for path in paths:
            print(f"  {kind:8} {shown(path)}")
    return EXIT_OK


def split_csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def csv_flag(name: str, value: str) -> list[str]:
    """A given ``--paths``/``--tags``/``--kinds``: an empty one (``--paths "$UNSET"``) is an
    error, not a silent "no filter" that searches the whole vault."""
    items = split_csv(value) or []
    if not items:
        raise BadRequest(
            f"--{name} {value!r} names nothing; give a comma-separated list or omit it"
        )
    return items


def request_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The JSON query request the flags describe (only fields that were given)."""
    req: dict[str, object] = {"q": args.text, "k": args.k}
    for name in ("time_range", "now", "tz", "budget_tokens"):
        if getattr(args, name) is not None:
            req[name] = getattr(args, name)
    for name in ("kinds", "paths", "tags"):
        if getattr(args, name) is not None:
            req[name] = csv_flag(name, getattr(args, name))
    if args.no_parse_time:
        req["parse_time"] = False
    if args.no_links:
        req["expand_links"] = False
    if args.explain:
        req["explain"] = True
    return req
