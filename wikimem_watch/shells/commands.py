"""Command handlers: each turns parsed flags into socket calls (or, with no daemon, calls on an
in-process engine) and prints.

Talking to a daemon needs only the standard library, the client and the protocol: the engine,
numpy, markdown-it and watchdog are imported inside the in-process paths, so a command that
reaches a running daemon starts in tens of milliseconds (ADR-0012).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..config import Config, load_config
from ..errors import BadRequest, ConfigError, DaemonUnavailable, WatchError
from .client import Client, RemoteError, connect
from .output import (
    EXIT_EMPTY,
    EXIT_OK,
    print_entries,
    print_json,
    print_result,
    print_vectors,
    progress,
    use_logging,
)

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    from typing import Any

    from ..core.engine import Engine


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
            "http",
            "http_allow_remote",
            "http_cors_origins",
        )
    }
    return load_config(args.vault, flags)


def open_engine(config: Config, *, vectors: bool = False) -> Engine:
    """An in-process engine over a fresh scan; with ``vectors``, the configured embeddings
    component reads the vector cache as it is (in-process queries never embed the vault)."""
    from ..core.engine import Engine
    from ..vectors.service import open_vectors

    use_logging()
    engine = Engine(config)
    engine.scan()
    if vectors:
        engine.vectors = open_vectors(config)
    return engine


def query_command(args: argparse.Namespace) -> int:
    """Through the vault's daemon when one runs; else in-process (said once on stderr)."""
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
    from ..retrieval.query import run_query
    from ..retrieval.request import QueryRequest

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


def serve_command(args: argparse.Namespace) -> int:
    from ..daemon.service import Daemon

    use_logging()
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
    daemon = Daemon(
        config, safety_rescan_s=args.safety_rescan_s, announce=None if args.quiet else _announce
    )
    return daemon.run()


def _announce(line: str, problem: bool) -> None:
    print(f"wikimem-watch: {line}", file=sys.stderr if problem else sys.stdout, flush=True)


def status_command(args: argparse.Namespace) -> int:
    status = _call(args, "status")
    if args.json:
        print_json(status)
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
        print_json(days)
    for d in [] if args.json else days:
        print(f"{d['date']}  {d['entries']}")
    return 0 if days else 1


def day_command(args: argparse.Namespace) -> int:
    return print_entries(_call(args, "day", {"date": args.date})["entries"], args.json)


def note_command(args: argparse.Namespace) -> int:
    return print_entries(_call(args, "note", {"path": args.path})["entries"], args.json)


def reindex_command(args: argparse.Namespace) -> int:
    stats = _call(args, "reindex")
    if "error" in stats:
        raise DaemonUnavailable(f"reindex failed: {stats['error']}")
    print_json(stats) if args.json else print(
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


def embed_command(args: argparse.Namespace) -> int:
    """Embed what the cache lacks (all with --rebuild), with a progress line on stderr."""
    client = _daemon_or_none(args)
    if client is not None:
        with client:
            status = _obj(client.call("embed", {"rebuild": bool(args.rebuild)}))
            while status.get("busy"):  # queued or running; a failure ends it with pending > 0
                progress(int(status.get("rows") or 0), int(status.get("pending") or 0))
                time.sleep(0.5)
                status = _obj(_obj(client.call("status"))["vectors"])
        print(file=sys.stderr)
        print_vectors(status)
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
    sync.on_progress = lambda done, total: progress(done, total - done)
    try:
        sync.sync(engine.embedding_inputs(), rebuild=args.rebuild)
    finally:
        print(file=sys.stderr)
    print_vectors(engine.vectors.status())
    return 0


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


def parse_time_command(args: argparse.Namespace) -> int:
    from ..timeparse import parse_time_range

    now = None
    if args.now:
        try:
            from datetime import datetime

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
