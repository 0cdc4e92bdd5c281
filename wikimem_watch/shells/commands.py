"""Command handlers: each turns parsed flags into engine or socket calls and prints."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..core.engine import Engine
from ..errors import ConfigError, DaemonUnavailable, WatchError
from ..retrieval.query import run_query
from ..retrieval.request import QueryRequest
from ..vectors.sync import open_vectors
from .client import Client, RemoteError, connect

AddFlags = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]


def config_from_args(args: argparse.Namespace) -> Config:
    if args.vault is None:
        raise ConfigError("--vault DIR is required")
    flags = {
        name: getattr(args, name, None)
        for name in (
            "cache_dir",
            "include",
            "exclude",
            "embed",
            "embed_url",
            "embed_model",
            "socket",
            "follow_external_symlinks",
            "idle_timeout_s",
            "max_connections",
            "max_request_bytes",
            "max_buffered_bytes",
        )
    }
    return load_config(args.vault, flags)


def open_engine(config: Config, *, vectors: bool = False) -> Engine:
    """An in-process engine over a fresh scan; with ``vectors``, the configured embeddings
    component reads the vector cache as it is (in-process queries never embed the vault)."""
    engine = Engine(config)
    engine.scan()
    if vectors:
        engine.vectors = open_vectors(config)
    return engine


def query_command(args: argparse.Namespace) -> int:
    """Through the vault's daemon when one runs; else in-process (said once on stderr)."""
    from .cli import print_result, request_from_args

    client = _daemon_or_none(args)
    if client is None and not args.in_process:
        print(
            f"wikimem-watch: no daemon running for {args.vault}; answering in-process",
            file=sys.stderr,
        )
    if client is not None:
        with client:
            if args.text == "-":
                return _batch(lambda req: _remote_query(client, req))
            return print_result(_remote_query(client, request_from_args(args)), args.json)
    engine = open_engine(config_from_args(args), vectors=True)
    if args.text == "-":
        return _batch(lambda req: run_query(engine, QueryRequest.from_dict(req)))
    req = QueryRequest.from_dict(request_from_args(args))
    return print_result(run_query(engine, req), args.json)


def _remote_query(client: Client, req: object) -> dict[str, Any]:
    if not isinstance(req, dict):
        raise RemoteError(-32602, f"a query must be a JSON object, got {type(req).__name__}")
    result = client.call("query", req)
    assert isinstance(result, dict)
    return result


def _batch(answer: Callable[[Any], dict[str, Any]]) -> int:
    """One JSON request per stdin line → one JSON result per stdout line, in order."""
    for line in sys.stdin:
        if not line.strip():
            continue
        out: dict[str, Any]
        try:
            out = answer(json.loads(line))
        except json.JSONDecodeError as exc:
            out = {
                "error": {"code": -32700, "message": f"bad JSON: {exc.msg} at column {exc.colno}"}
            }
        except WatchError as exc:
            out = {"error": {"code": exc.code, "message": exc.message}}
        print(json.dumps(out, ensure_ascii=False), flush=True)
    return 0


def add_daemon_commands(
    sub: Any, add_vault: Callable[..., None], add_index_flags: AddFlags
) -> None:
    """Register handlers on the parsers ``cli.build_parser`` made, and the daemon commands."""
    from .cli import parse_time_command

    sub.choices["query"].set_defaults(handler=query_command)
    sub.choices["parse-time"].set_defaults(handler=parse_time_command)

    s = _register(sub, add_vault, "serve", "run the daemon for a vault", serve_command)
    s.add_argument("vault_pos", metavar="VAULT", nargs="?", type=Path, help="vault directory")
    add_index_flags(s)
    s.add_argument("--poll", action="store_true", help="poll instead of native file events")
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
    s.add_argument("--max-request-bytes", type=int, help="longest request line (default 1 MiB)")
    s.add_argument(
        "--max-buffered-bytes",
        type=int,
        help="unfinished request bytes held across all connections (default 32 MiB)",
    )

    for name, help_, handler in (
        ("status", "the daemon's state, counts, skipped files and warnings", status_command),
        ("reindex", "make the daemon rescan the whole vault", reindex_command),
    ):
        p = _register(sub, add_vault, name, help_, handler)
        p.add_argument("--json", action="store_true", help="print the JSON object")
    d = _register(sub, add_vault, "days", "dates with entry counts", days_command)
    d.add_argument("--start", help="first date (YYYY-MM-DD)")
    d.add_argument("--end", help="last date (YYYY-MM-DD)")
    d.add_argument("--json", action="store_true", help="print JSON")
    d = _register(sub, add_vault, "day", "the entries of one date", day_command)
    d.add_argument("date", metavar="DATE", help="YYYY-MM-DD")
    d.add_argument("--json", action="store_true", help="print JSON")
    n = _register(sub, add_vault, "note", "the entries of one note", note_command)
    n.add_argument("path", metavar="PATH", help="vault-relative path, e.g. wiki/people.md")
    n.add_argument("--json", action="store_true", help="print JSON")
    st = _register(sub, add_vault, "stop", "stop the vault's daemon", stop_command)
    st.add_argument("--wait", type=float, default=10.0, help="seconds to wait (default 10)")
    c = _register(
        sub, add_vault, "check", "compare the daemon's index with a fresh scan", check_command
    )
    add_index_flags(c)
    c.add_argument("--wait", type=float, default=10.0, help="seconds to wait for quiet")
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


# --------------------------------------------------------------------------- daemon commands


def _connect(args: argparse.Namespace) -> Client:
    """A client for ``--socket`` (or WIKIMEM_SOCK), else for ``--vault``'s daemon."""
    if args.socket is not None:
        return Client(args.socket)
    if args.vault is None:
        env = os.environ.get("WIKIMEM_SOCK")
        if env:
            return Client(Path(env).expanduser())
        raise ConfigError("give --vault DIR (or --socket PATH) to reach a daemon")
    config = config_from_args(args)
    try:
        return connect(config)
    except DaemonUnavailable:
        raise DaemonUnavailable(
            f"no daemon is running for vault {str(config.vault)!r} "
            f"(start one with: wikimem-watch serve {config.vault})"
        ) from None


def _daemon_or_none(args: argparse.Namespace) -> Client | None:
    """The vault's daemon, or None when none runs and the command can work in-process."""
    if args.in_process:
        return None
    try:
        return _connect(args)
    except DaemonUnavailable:
        if args.vault is None:
            raise
        return None


def _call(
    args: argparse.Namespace, method: str, params: dict[str, object] | None = None
) -> dict[str, Any]:
    with _connect(args) as client:
        return _obj(client.call(method, params))


def _obj(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DaemonUnavailable(f"the daemon sent {type(value).__name__} where an object belongs")
    return value


def _print_json(obj: object) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=None))


def serve_command(args: argparse.Namespace) -> int:
    from ..daemon.service import Daemon

    vault = args.vault_pos or args.vault
    if vault is None:
        raise ConfigError("serve needs a vault: wikimem-watch serve VAULT")
    if args.vault_pos and args.vault and Path(args.vault_pos) != Path(args.vault):
        raise ConfigError(f"two vaults given: {args.vault_pos} and {args.vault}")
    args.vault = Path(vault)
    config = config_from_args(args)
    flags: dict[str, object] = {}
    if args.poll:
        flags["poll"] = True
    if args.debounce_ms is not None:
        flags["debounce_ms"] = args.debounce_ms
    if flags:
        config = replace(config, **flags)  # type: ignore[arg-type]
    daemon = Daemon(config, safety_rescan_s=args.safety_rescan_s)
    return daemon.run()


def status_command(args: argparse.Namespace) -> int:
    status = _call(args, "status")
    if args.json:
        _print_json(status)
        return 0
    entries = status["entries"]
    print(f"{status['state']}  vault {status['vault']}  pid {status['pid']} on {status['host']}")
    print(f"socket   {status['socket']}  ({status['watcher']} watcher)")
    print(
        f"index    {status['files']} files, {entries['diary']} diary + {entries['wiki']} wiki "
        f"entries, generation {status['generation']}, pending {status['pending']}"
    )
    print(f"links    {status['unresolved_links']} unresolved")
    for item in status["skipped"]:
        print(f"skipped  {item['path']}: {item['reason']}")
    for path, warnings in sorted(status["warnings"].items()):
        for warning in warnings:
            print(f"warning  {path}: {warning}")
    for warning in status.get("config_warnings", []):
        print(f"config   {warning}")
    print(f"vectors  {status['vectors'].get('state')}")
    return 0


def days_command(args: argparse.Namespace) -> int:
    params = {k: v for k, v in (("start", args.start), ("end", args.end)) if v}
    days = _call(args, "days", params)["days"]
    if args.json:
        _print_json(days)
    for d in [] if args.json else days:
        print(f"{d['date']}  {d['entries']}")
    return 0 if days else 1


def _print_entries(entries: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        _print_json(entries)
    else:
        for e in entries:
            when = " ".join(x for x in (e.get("date"), e.get("time")) if x) or "-"
            print(f"{when:16}  {e['path']}:{e['line']}  {e['heading']}")
            print(f"        {' '.join(str(e['text']).split())[:110]}")
    return 0 if entries else 1


def day_command(args: argparse.Namespace) -> int:
    return _print_entries(_call(args, "day", {"date": args.date})["entries"], args.json)


def note_command(args: argparse.Namespace) -> int:
    return _print_entries(_call(args, "note", {"path": args.path})["entries"], args.json)


def reindex_command(args: argparse.Namespace) -> int:
    stats = _call(args, "reindex")
    if "error" in stats:
        raise DaemonUnavailable(f"reindex failed: {stats['error']}")
    _print_json(stats) if args.json else print(
        f"reindexed: {stats['changed']} changed, {stats['removed']} removed, "
        f"{stats['unchanged']} unchanged, {stats['skipped']} skipped in {stats['elapsed_s']}s"
    )
    return 0


def stop_command(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        path = client.path
        reply = _obj(client.call("shutdown"))
    deadline = time.monotonic() + args.wait
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if path.exists():
        raise DaemonUnavailable(f"daemon pid {reply['pid']} is still stopping after {args.wait}s")
    print(f"stopped daemon pid {reply['pid']}")
    return 0


def check_command(args: argparse.Namespace) -> int:
    """Compare the daemon's index with a fresh in-process scan: 0 equal, 1 different."""
    config = config_from_args(args)
    with _connect(args) as client:
        deadline = time.monotonic() + args.wait
        while True:
            status = _obj(client.call("status"))
            quiet = status["state"] == "ready" and status["pending"] == 0
            if quiet or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        remote = _obj(client.call("file_digests"))
    local = open_engine(config)
    if remote["digest"] == local.digest() and remote["skipped"] == local.skipped:
        print(
            f"ok: {len(local.files)} files, {len(local.entries)} entries, digest {local.digest()}"
        )
        return 0
    theirs: dict[str, str] = remote["files"]
    ours = local.file_digests()
    lines = [f"missing in daemon: {p}" for p in sorted(set(ours) - set(theirs))]
    lines += [f"stale in daemon:   {p}" for p in sorted(set(theirs) - set(ours))]
    lines += [
        f"differs:           {p}"
        for p in sorted(p for p in ours if theirs.get(p, ours[p]) != ours[p])
    ]
    skipped = set(remote["skipped"].items()) ^ set(local.skipped.items())
    lines += [f"skipped differs:   {p}" for p in sorted({p for p, _ in skipped})]
    print(f"daemon index differs from a fresh scan ({len(lines)} files):")
    print("\n".join(f"  {line}" for line in lines))
    return 1


def _register(
    sub: Any, add_vault: Callable[..., None], name: str, help_: str, handler: Handler
) -> argparse.ArgumentParser:
    from .cli import EPILOG

    p: argparse.ArgumentParser = sub.add_parser(name, help=help_, epilog=EPILOG)
    add_vault(p)
    p.set_defaults(handler=handler)
    return p


def embed_command(args: argparse.Namespace) -> int:
    """Embed what the cache lacks (all with --rebuild), with a progress line on stderr."""
    client = _daemon_or_none(args)
    if client is not None:
        with client:
            status = _obj(client.call("embed", {"rebuild": bool(args.rebuild)}))
            while status.get("busy"):  # queued or running; a failure ends it with pending > 0
                _progress(int(status.get("rows") or 0), int(status.get("pending") or 0))
                time.sleep(0.5)
                status = _obj(_obj(client.call("status"))["vectors"])
        print(file=sys.stderr)
        _print_vectors(status)
        return 0 if status.get("state") == "ready" else 1
    config = config_from_args(args)
    if config.embed == "none":
        raise ConfigError(
            "no embedder configured: pass --embed local|http (or set it in config.toml)"
        )
    engine = open_engine(config, vectors=True)
    if engine.vectors is None:
        raise ConfigError(f"the {config.embed!r} embedder could not start (see the warning above)")
    sync = engine.vectors.sync
    sync.on_progress = lambda done, total: _progress(done, total - done)
    try:
        sync.sync(engine.embedding_inputs(), rebuild=args.rebuild)
    finally:
        print(file=sys.stderr)
    _print_vectors(engine.vectors.status())
    return 0


def _progress(done: int, pending: int) -> None:
    total = done + pending
    width = 30
    filled = width * done // total if total else width
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end="", file=sys.stderr)


def _print_vectors(status: dict[str, Any]) -> None:
    print(
        f"vectors  {status.get('state')}  {status.get('rows', 0)} rows  dim {status.get('dim')}  "
        f"model {status.get('model') or status.get('embedder')}"
        + (f"  last error: {status['last_error']}" if status.get("last_error") else "")
    )
