"""CLI commands of the write path: ``write diary|wiki|delete``, ``journal [--follow]`` and
``watch-changes`` (ADR-0016). Thin: each is one socket call (or, for ``write`` and ``journal``
without a daemon, the same write implementation or journal reader in-process). Their
parsers are in ``cli``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from ..daemon.protocol import encode_request
from ..errors import BadRequest, DaemonUnavailable
from .access import config_from_args, connect_args, daemon_or_none
from .client import Client, call_sent
from .output import EXIT_OK, print_json
from .reading import csv_flag, stdin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FOLLOW_POLL_S = 0.5


def _text(args: argparse.Namespace) -> str:
    return stdin().read() if args.text == "-" else str(args.text)


def _write(args: argparse.Namespace, method: str, params: dict[str, object]) -> int:
    """Through the daemon when one runs; else the same write in-process (not indexed)."""
    params = {k: v for k, v in params.items() if v is not None}
    if args.in_process:
        _refuse_beside_a_daemon(args)
    client = daemon_or_none(args)
    if client is None:
        from .inprocess import local_answer

        if not args.in_process:
            print(f"wikimem-watch: no daemon for {args.vault}; writing in-process", file=sys.stderr)
        result = local_answer(config_from_args(args), method, params)
    else:
        with client:
            result = call_sent(client, method, params)
    print_json(result)
    return EXIT_OK


def _refuse_beside_a_daemon(args: argparse.Namespace) -> None:
    """``write --in-process`` while a daemon serves the vault would race it (writes go through
    the daemon, ADR-0016): the note was written, then journaled twice, once as an external
    edit. Refused, naming the way that works."""
    try:
        client = connect_args(args)
    except DaemonUnavailable:
        return
    client.close()
    raise BadRequest(
        f"write --in-process: a daemon serves {args.vault or 'this vault'}; "
        "write through it (drop --in-process) so the write is searchable when it returns"
    )


def diary_command(args: argparse.Namespace) -> int:
    params = {"text": _text(args), "date": args.date, "time": args.time, "ts": args.ts}
    params.update(tz=args.tz, owner=args.owner, source=args.source)
    if args.tz is None:
        params.update(_local_day_and_time(args))
    return _write(args, "append_diary", params)


def _local_day_and_time(args: argparse.Namespace) -> dict[str, object]:
    """The day and time of the entry in this command's own time zone (not the daemon's,
    which may run with another ``TZ``): what an in-process write would file it under."""
    return local_when(args.date, args.time, args.ts)


def local_when(date: str | None, time_: str | None, ts: str | None) -> dict[str, object]:
    """``date``, ``time`` and ``ts`` of a diary entry in this process's time zone, by the
    daemon's own rule (``stamps.when``): without ``ts``, an entry filed at another day or
    time than now happened then, and one filed now keeps the precise moment."""
    from ..daemon.stamps import when
    from ..errors import BadRequest

    try:
        ts, day, hhmm = when(ts, date, time_, None)
    except BadRequest:
        return {}  # the daemon's own check names what is wrong with it
    return {"date": date or day, "time": time_ or hhmm, "ts": ts}  # as given, else found


def wiki_command(args: argparse.Namespace) -> int:
    params = {"file": args.file, "name": args.name, "text": _text(args), "ts": args.ts}
    params.update(owner=args.owner, source=args.source)
    return _write(args, "upsert_wiki", params)


def delete_command(args: argparse.Namespace) -> int:
    params = {"file": args.file, "name": args.name, "owner": args.owner, "source": args.source}
    return _write(args, "delete_wiki", params)


def journal_command(args: argparse.Namespace) -> int:
    """The last ``--limit`` lines; with ``--follow``, then every new line (tail -f)."""
    if not 1 <= args.limit <= 10_000:
        raise BadRequest(f"--limit must be in [1, 10000], got {args.limit}")
    read = _journal_reader(args)
    page = read(None, args.limit)
    while True:
        for entry in page["entries"]:
            print(json.dumps(entry, ensure_ascii=False), flush=True)
        if page.get("skipped"):
            n = page["skipped"]
            print(
                f"wikimem-watch: skipped {n} journal line(s) that are not JSON objects",
                file=sys.stderr,
            )
        if not args.follow:
            return EXIT_OK
        time.sleep(FOLLOW_POLL_S) if not page["entries"] else None
        page = read(page["cursor"], 1000)


def _journal_reader(
    args: argparse.Namespace,
) -> Callable[[int | str | None, int], dict[str, Any]]:
    try:
        client = connect_args(args)
    except DaemonUnavailable:
        if args.vault is None:
            raise
        from ..daemon.journal import read_journal

        root = config_from_args(args).vault
        return lambda since, limit: read_journal(root, since, limit)

    def remote(since: int | str | None, limit: int) -> dict[str, Any]:
        params: dict[str, object] = {"limit": limit}
        if since is not None:
            params["since"] = since
        result = client.call("journal", params)
        assert isinstance(result, dict)
        return result

    return remote


def watch_command(args: argparse.Namespace) -> int:
    """Subscribe and print each ``changed`` notification's params as a JSON line."""
    params: dict[str, object] = {}
    if args.q is not None:  # `--q "$UNSET"` was dropped: every change, not the ones asked for
        if not args.q.strip():
            raise BadRequest(f"--q {args.q!r} names nothing; give words to match or omit it")
        params["q"] = args.q
    for name in ("paths", "kinds"):  # an empty one is an error, as for query
        if getattr(args, name) is not None:
            params[name] = csv_flag(name, getattr(args, name))
    with connect_args(args) as client:
        generation = _print_changes(client, params)
    # The stream has no end of its own: the daemon closed it, stopping or dropping a
    # subscriber too far behind. Ending with 0 and nothing said hid the changes missed.
    raise DaemonUnavailable(
        f"the daemon closed the subscription (it stopped, or this reader fell more than 256 "
        f"changes behind): changes after generation {generation} were not printed"
    )


def _print_changes(client: Client, params: dict[str, object]) -> object:
    """Subscribe on ``client``'s connection and print each change until the daemon closes
    it; the generation of the last change printed (or of the subscription)."""
    sock = client._sock
    sock.settimeout(None)
    sock.sendall(encode_request("subscribe", params, 1))
    with sock.makefile("rb") as reader:
        reply = json.loads(reader.readline() or b"null")
        if not isinstance(reply, dict) or "result" not in reply:
            message = reply.get("error", {}).get("message") if isinstance(reply, dict) else None
            raise DaemonUnavailable(f"subscribe failed: {message or reply!r}")
        print(json.dumps(reply["result"]), file=sys.stderr, flush=True)
        generation = reply["result"].get("generation")
        for line in reader:
            message = json.loads(line)
            if isinstance(message, dict) and message.get("method") == "changed":
                print(json.dumps(message["params"], ensure_ascii=False), flush=True)
                generation = message["params"].get("generation", generation)
    return generation
